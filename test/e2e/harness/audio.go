package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/testenv"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// ToneWAV is seconds of a 330 Hz tone as a 16-bit mono WAV file.
func ToneWAV(rate int, seconds float64) []byte {
	n := int(float64(rate) * seconds)
	b := make([]byte, 44+2*n)
	copy(b, "RIFF")
	binary.LittleEndian.PutUint32(b[4:], uint32(36+2*n))
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)
	binary.LittleEndian.PutUint16(b[20:], 1)
	binary.LittleEndian.PutUint16(b[22:], 1)
	binary.LittleEndian.PutUint32(b[24:], uint32(rate))
	binary.LittleEndian.PutUint32(b[28:], uint32(2*rate))
	binary.LittleEndian.PutUint16(b[32:], 2)
	binary.LittleEndian.PutUint16(b[34:], 16)
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], uint32(2*n))
	for i := range n {
		binary.LittleEndian.PutUint16(b[44+2*i:], uint16(int16(8000*math.Sin(2*math.Pi*330*float64(i)/float64(rate)))))
	}
	return b
}

// Probed is what ffprobe reads of a stream.
type Probed struct {
	Codec    string
	Rate     int
	Channels int
	Bitrate  int
	Seconds  float64
}

// FFprobeBytes writes data to a file and has ffprobe read it; input are
// ffprobe's options for raw formats (-f mulaw -ar 8000 ...).
func FFprobeBytes(t *testing.T, data []byte, ext string, input ...string) Probed {
	t.Helper()
	ffprobe := testenv.NeedTool(t, "ffprobe")
	path := filepath.Join(t.TempDir(), "stream."+ext)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-v", "error", "-show_entries", "stream=codec_name,sample_rate,channels,bit_rate:format=duration", "-of", "json"}, input...)
	out, err := exec.Command(ffprobe, append(args, path)...).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", ext, err)
	}
	var p struct {
		Streams []struct {
			Codec      string `json:"codec_name"`
			SampleRate string `json:"sample_rate"`
			Channels   int    `json:"channels"`
			BitRate    string `json:"bit_rate"`
		} `json:"streams"`
		Format struct {
			Duration string `json:"duration"`
		} `json:"format"`
	}
	if err := json.Unmarshal(out, &p); err != nil || len(p.Streams) == 0 {
		t.Fatalf("ffprobe %s: %s %v", ext, out, err)
	}
	s := p.Streams[0]
	r := Probed{Codec: s.Codec, Channels: s.Channels}
	r.Rate, _ = strconv.Atoi(s.SampleRate)
	r.Bitrate, _ = strconv.Atoi(s.BitRate)
	r.Seconds, _ = strconv.ParseFloat(p.Format.Duration, 64)
	return r
}

// SSEEvents reads OpenAI's speech SSE: the audio of its delta events,
// concatenated, and its done event.
func SSEEvents(t *testing.T, body []byte) ([]byte, map[string]any) {
	t.Helper()
	var audio []byte
	var done map[string]any
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		switch ev["type"] {
		case "speech.audio.delta":
			b, err := base64.StdEncoding.DecodeString(ev["audio"].(string))
			if err != nil {
				t.Fatal(err)
			}
			audio = append(audio, b...)
		case "speech.audio.done":
			done = ev
		}
	}
	return audio, done
}

// ESpeakVoice makes a provider fake speak real speech: the eSpeak plugin
// process (its own, not the gateway's) renders the text in another
// voice and at another speed than the gateway's references, and its word
// events are the fake's known alignment, the truth the gateway's aligned
// timestamps are measured against.
type ESpeakVoice struct {
	p     sdk.Provider
	voice string
	speed float64
	mu    sync.Mutex
	spans map[string][]fakeupstream.Span
}

// NewESpeakVoice serves a cloud fake's voice from the real eSpeak plugin
// (bin/plugins/voxgate-espeak, started in-process through the SDK) with
// the eSpeak voice and speed given.
func NewESpeakVoice(t *testing.T, voice string, speed float64) *ESpeakVoice {
	return &ESpeakVoice{p: sdktest.StartPlugin(t, filepath.Join(BinDir(t), "plugins", "voxgate-espeak")), voice: voice, speed: speed, spans: map[string][]fakeupstream.Span{}}
}

// Speak renders text with eSpeak and keeps its word times as the truth
// a test compares the gateway's timestamps with.
func (v *ESpeakVoice) Speak(text string, _ float64) ([]int16, int, []fakeupstream.Span, error) {
	resp, err := v.p.Synthesize(context.Background(), &sdk.SynthesizeRequest{Model: "espeak-ng", Voice: v.voice, Text: text, Speed: v.speed, Format: sdk.FormatPCM, Timestamps: true})
	if err != nil {
		return nil, 0, nil, err
	}
	mt, err := audio.ParseMediaType(resp.MediaType)
	if err != nil {
		return nil, 0, nil, err
	}
	samples := make([]int16, len(resp.Audio)/2)
	for i := range samples {
		samples[i] = int16(binary.LittleEndian.Uint16(resp.Audio[2*i:]))
	}
	spans := make([]fakeupstream.Span, len(resp.Timestamps))
	for i, w := range resp.Timestamps {
		spans[i] = fakeupstream.Span{Text: w.Text, Start: w.Start, End: w.End}
	}
	if len(spans) != len(strings.Fields(text)) {
		return nil, 0, nil, fmt.Errorf("eSpeak timed %d words of %d", len(spans), len(strings.Fields(text)))
	}
	v.mu.Lock()
	v.spans[text] = spans
	v.mu.Unlock()
	return samples, mt.Rate, spans, nil
}

// Truth is the word times of the last rendering of text.
func (v *ESpeakVoice) Truth(text string) []fakeupstream.Span {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.spans[text]
}

// DecodeAudio decodes base64 audio of mediaType (PCM or WAV) and returns
// its duration in seconds.
func DecodeAudio(t *testing.T, b64, mediaType string) float64 {
	t.Helper()
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := PCMSeconds(t, mediaType, data)
	return d
}

// LongText returns about n characters of varied prose: sentences of
// different lengths with clauses, so the splitter has every kind of
// boundary to choose from.
func LongText(n int) string {
	sentences := []string{
		"The harbour was quiet before dawn, and the fishing boats rocked gently at their moorings.",
		"Nobody spoke.",
		"Gulls circled overhead, calling to one another; far off, a bell rang twice, then once more.",
		"She counted the boats: seven, eight, nine.",
		"When the sun finally rose, the water turned from grey to gold, and the first engines coughed into life.",
	}
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(sentences[i%len(sentences)])
	}
	return b.String()[:strings.LastIndexByte(b.String()[:n], '.')+1]
}

// PCMSeconds returns the duration of a clip of 16-bit mono PCM or WAV and
// its RMS, failing the test on anything else.
func PCMSeconds(t *testing.T, mediaType string, data []byte) (float64, float64) {
	t.Helper()
	var rate int
	var pcm []byte
	switch {
	case strings.HasPrefix(mediaType, "audio/pcm;rate="):
		fmt.Sscanf(strings.TrimPrefix(mediaType, "audio/pcm;rate="), "%d", &rate)
		pcm = data
	case mediaType == "audio/wav":
		data = Unmarked(data)
		if len(data) < 44 || string(data[:4]) != "RIFF" || string(data[8:12]) != "WAVE" {
			t.Fatalf("not a WAV file: % x", data[:min(len(data), 16)])
		}
		rate = int(binary.LittleEndian.Uint32(data[24:28]))
		if ch := binary.LittleEndian.Uint16(data[22:24]); ch != 1 {
			t.Fatalf("WAV has %d channels", ch)
		}
		pcm = data[44:]
	default:
		t.Fatalf("unexpected media type %q", mediaType)
	}
	if rate <= 0 || len(pcm)%2 != 0 {
		t.Fatalf("bad PCM: rate %d, %d bytes", rate, len(pcm))
	}
	var sum float64
	for i := 0; i+1 < len(pcm); i += 2 {
		v := float64(int16(binary.LittleEndian.Uint16(pcm[i:]))) / 32768
		sum += v * v
	}
	n := len(pcm) / 2
	return float64(n) / float64(rate), math.Sqrt(sum / math.Max(1, float64(n)))
}

package inworld

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

type answer struct {
	status int
	header http.Header
	body   []byte
}

// call sends a request with the given headers ("" values are left out).
func call(t *testing.T, s *Server, method, path string, headers map[string]string, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

func auth() map[string]string {
	return map[string]string{"Authorization": "Basic " + Key, "Content-Type": "application/json"}
}

const okBody = `{"text":"Hello world.","voiceId":"Dennis","modelId":"inworld-tts-1.5-max","audioConfig":{"audioEncoding":"PCM","sampleRateHertz":24000}}`

func errorOf(t *testing.T, a answer) status {
	t.Helper()
	var st status
	if err := json.Unmarshal(a.body, &st); err != nil || st.Message == "" || st.Details == nil {
		t.Fatalf("%d %s is not a gRPC status envelope", a.status, a.body)
	}
	return st
}

func TestWireFormat(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	with := func(old, new string) string { return strings.Replace(okBody, old, new, 1) }
	tests := []struct {
		name    string
		headers map[string]string
		body    string
		status  int
		code    int
		msgHas  string
	}{
		{"no auth", map[string]string{"Content-Type": "application/json"}, okBody, 401, 16, "missing Authorization"},
		{"bearer scheme", map[string]string{"Authorization": "Bearer " + Key, "Content-Type": "application/json"}, okBody, 401, 16, "must be Basic"},
		{"wrong key", map[string]string{"Authorization": "Basic bm9wZTpub3Bl", "Content-Type": "application/json"}, okBody, 401, 16, "invalid authorization"},
		{"unknown field", auth(), with(`"text"`, `"speed":2,"text"`), 400, 3, `unknown field "speed"`},
		{"unknown audio field", auth(), with(`"audioEncoding"`, `"format":"x","audioEncoding"`), 400, 3, `unknown field "format"`},
		{"unknown model", auth(), with("inworld-tts-1.5-max", "inworld-tts-9"), 400, 3, "Unknown model"},
		{"no model", auth(), with(`"modelId":"inworld-tts-1.5-max",`, ""), 400, 3, "modelId is required"},
		{"empty text", auth(), with("Hello world.", " "), 400, 3, "text is required"},
		{"text too long", auth(), with("Hello world.", strings.Repeat("a", MaxText+1)), 400, 3, "at most 2000"},
		{"unknown voice", auth(), with("Dennis", "Nobody"), 404, 5, "not found"},
		{"bad encoding", auth(), with("PCM", "AIFF"), 400, 3, "enum field audioEncoding"},
		{"mulaw not rendered", auth(), with("PCM", "MULAW"), 400, 3, "this fake"},
		{"opus at 24 kHz not rendered", auth(), with("PCM", "OGG_OPUS"), 400, 3, "this fake"},
		{"bit rate", auth(), with(`"sampleRateHertz":24000`, `"sampleRateHertz":24000,"bitRate":16000`), 400, 3, "bitRate"},
		{"rate too high", auth(), with("24000", "96000"), 400, 3, "sampleRateHertz"},
		{"mp3 rate too low", auth(), with(`"PCM","sampleRateHertz":24000`, `"MP3","sampleRateHertz":8000`), 400, 3, "between 16000"},
		{"speaking rate", auth(), with(`"sampleRateHertz":24000`, `"sampleRateHertz":24000,"speakingRate":2`), 400, 3, "speakingRate"},
		{"temperature", auth(), with(`"text"`, `"temperature":3,"text"`), 400, 3, "temperature"},
		{"timestamp type", auth(), with(`"text"`, `"timestampType":"SENTENCE","text"`), 400, 3, "timestampType"},
		{"delivery mode", auth(), with(`"text"`, `"deliveryMode":"WILD","text"`), 400, 3, "deliveryMode"},
		{"not JSON", auth(), "{", 400, 3, "invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{SynthesizePath, StreamPath} {
				a := call(t, s, "POST", path, tt.headers, tt.body)
				st := errorOf(t, a)
				if a.status != tt.status || st.Code != tt.code || !strings.Contains(st.Message, tt.msgHas) {
					t.Errorf("%s: %d %s; want %d, code %d, with %q", path, a.status, a.body, tt.status, tt.code, tt.msgHas)
				}
			}
		})
	}
	if a := call(t, s, "GET", "/tts/v1/nothing", auth(), ""); a.status != 404 || errorOf(t, a).Code != 5 {
		t.Errorf("unknown path: %d %s", a.status, a.body)
	}
}

// TestSnakeCase: the gRPC gateway takes the proto's field names as well.
func TestSnakeCase(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	body := `{"text":"Hello world.","voice_id":"Dennis","model_id":"inworld-tts-1","audio_config":{"audio_encoding":"LINEAR16","sample_rate_hertz":16000},"timestamp_type":"WORD"}`
	a := call(t, s, "POST", SynthesizePath, auth(), body)
	if a.status != 200 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	var out struct {
		AudioContent  []byte `json:"audioContent"`
		TimestampInfo struct {
			WordAlignment struct {
				Words []string `json:"words"`
			} `json:"wordAlignment"`
		} `json:"timestampInfo"`
	}
	if err := json.Unmarshal(a.body, &out); err != nil {
		t.Fatal(err)
	}
	clip, err := sdktest.Decode("audio/wav", out.AudioContent)
	if err != nil || clip.SampleRate != 16000 {
		t.Errorf("clip %+v, %v", clip, err)
	}
	if got := strings.Join(out.TimestampInfo.WordAlignment.Words, " "); got != "Hello world." {
		t.Errorf("words %q", got)
	}
}

func TestSynthesize(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	text := "Hello there, world."
	for _, tt := range []struct {
		config, mediaType string
		speed             float64
	}{
		{`{"audioEncoding":"PCM","sampleRateHertz":22050}`, "audio/pcm;rate=22050", 1},
		{`{"audioEncoding":"WAV","sampleRateHertz":24000,"speakingRate":1.5}`, "audio/wav", 1.5},
		{`{"audioEncoding":"LINEAR16"}`, "audio/wav", 1},
		{`{"audioEncoding":"MP3","sampleRateHertz":44100,"bitRate":128000}`, "audio/mpeg", 1},
		{`{"audioEncoding":"MP3","sampleRateHertz":22050,"bitRate":64000}`, "audio/mpeg", 1},
		{`{"audioEncoding":"FLAC","sampleRateHertz":16000}`, "audio/flac", 1},
		{`{"audioEncoding":"OGG_OPUS","sampleRateHertz":48000,"bitRate":32000}`, "audio/ogg;codecs=opus", 1},
		{`{}`, "audio/mpeg", 1}, // MP3 by default
	} {
		body := `{"text":"` + text + `","voiceId":"Ashley","modelId":"inworld-tts-1.5-mini","timestampType":"WORD","audioConfig":` + tt.config + `}`
		a := call(t, s, "POST", SynthesizePath, auth(), body)
		if a.status != 200 || a.header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: %d %s", tt.config, a.status, a.body)
		}
		var out struct {
			AudioContent string `json:"audioContent"`
			Usage        struct {
				ProcessedCharactersCount int    `json:"processedCharactersCount"`
				ModelID                  string `json:"modelId"`
			} `json:"usage"`
			TimestampInfo struct {
				WordAlignment struct {
					Words  []string  `json:"words"`
					Starts []float64 `json:"wordStartTimeSeconds"`
					Ends   []float64 `json:"wordEndTimeSeconds"`
				} `json:"wordAlignment"`
			} `json:"timestampInfo"`
		}
		if err := json.Unmarshal(a.body, &out); err != nil {
			t.Fatal(err)
		}
		audio, err := base64.StdEncoding.DecodeString(out.AudioContent)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(audio, s.LastAnswer()) {
			t.Errorf("%s: LastAnswer is not the answer", tt.config)
		}
		clip, err := sdktest.Decode(tt.mediaType, audio)
		if err != nil {
			t.Fatalf("%s: %v", tt.config, err)
		}
		u := fakeupstream.Speak(text, tt.speed)
		if (clip.Format == "pcm" || clip.Format == "wav") && math.Abs(clip.Seconds()-u.Seconds) > 0.001 {
			t.Errorf("%s: %.3f s, want %.3f", tt.config, clip.Seconds(), u.Seconds)
		}
		if clip.Format == "wav" && tt.config == `{"audioEncoding":"LINEAR16"}` && clip.SampleRate != DefaultRate {
			t.Errorf("default rate %d", clip.SampleRate)
		}
		wa := out.TimestampInfo.WordAlignment
		if len(wa.Words) != 3 || wa.Words[1] != "there," || wa.Starts[2] != u.Words[2].Start || wa.Ends[2] != u.Words[2].End {
			t.Errorf("%s: word alignment %+v", tt.config, wa)
		}
		if out.Usage.ProcessedCharactersCount != len(text) || out.Usage.ModelID != "inworld-tts-1.5-mini" {
			t.Errorf("usage %+v", out.Usage)
		}
	}
}

// readLines reads the JSON lines of a stream answer.
func readLines(t *testing.T, body []byte) []map[string]json.RawMessage {
	t.Helper()
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

type chunk struct {
	AudioContent  []byte `json:"audioContent"`
	TimestampInfo *struct {
		CharacterAlignment struct {
			Characters []string `json:"characters"`
		} `json:"characterAlignment"`
	} `json:"timestampInfo"`
}

func TestStream(t *testing.T) {
	s := New(t, fakeupstream.Options{ChunkSize: 3001})
	text := "Streams arrive one JSON line at a time."
	u := fakeupstream.Speak(text, 1)
	for _, tt := range []struct {
		encoding, mediaType string
		headers             int // chunks that start with a RIFF header
	}{
		{"PCM", "audio/pcm;rate=16000", 0},
		{"WAV", "audio/wav", 1},
		{"MP3", "audio/mpeg", 0},
	} {
		body := `{"text":"` + text + `","voiceId":"Alex","modelId":"inworld-tts-1.5-mini","timestampType":"CHARACTER","audioConfig":{"audioEncoding":"` + tt.encoding + `","sampleRateHertz":16000}}`
		a := call(t, s, "POST", StreamPath, auth(), body)
		if a.status != 200 {
			t.Fatalf("%s: %d %s", tt.encoding, a.status, a.body)
		}
		lines := readLines(t, a.body)
		if len(lines) < 2 {
			t.Fatalf("%s: %d lines", tt.encoding, len(lines))
		}
		var audio []byte
		var chars, riffs int
		for _, l := range lines {
			var c chunk
			if err := json.Unmarshal(l["result"], &c); err != nil {
				t.Fatal(err)
			}
			if tt.encoding != "MP3" && len(c.AudioContent)%2 != 0 {
				t.Errorf("%s: a chunk of %d bytes", tt.encoding, len(c.AudioContent))
			}
			if bytes.HasPrefix(c.AudioContent, []byte("RIFF")) {
				riffs++
			}
			audio = append(audio, c.AudioContent...)
			if c.TimestampInfo != nil {
				chars += len(c.TimestampInfo.CharacterAlignment.Characters)
			}
		}
		if riffs != tt.headers || chars != len(u.Chars) {
			t.Errorf("%s: %d headers, %d characters timed; want %d, %d", tt.encoding, riffs, chars, tt.headers, len(u.Chars))
		}
		clip, err := sdktest.Decode(tt.mediaType, audio)
		if err != nil {
			t.Fatalf("%s: %v", tt.encoding, err)
		}
		if tt.encoding != "MP3" && math.Abs(clip.Seconds()-u.Seconds) > 0.001 {
			t.Errorf("%s: %.3f s, want %.3f", tt.encoding, clip.Seconds(), u.Seconds)
		}
	}
	// LINEAR16: every chunk a playable WAV of its own.
	body := strings.Replace(okBody, `"PCM"`, `"LINEAR16"`, 1)
	a := call(t, s, "POST", StreamPath, auth(), body)
	for i, l := range readLines(t, a.body) {
		var c chunk
		_ = json.Unmarshal(l["result"], &c)
		if _, err := sdktest.Decode("audio/wav", c.AudioContent); err != nil {
			t.Errorf("LINEAR16 chunk %d: %v", i, err)
		}
	}
}

func TestFaults(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "2"})
	a := call(t, s, "POST", StreamPath, auth(), okBody)
	if st := errorOf(t, a); a.status != 429 || st.Code != 8 || a.header.Get("Retry-After") != "2" {
		t.Errorf("%d %s %v", a.status, a.body, a.header)
	}
	s.FailNext(1, fakeupstream.Fault{Status: 503, Message: "down"})
	a = call(t, s, "POST", SynthesizePath, auth(), okBody)
	if st := errorOf(t, a); a.status != 503 || st.Code != 14 || st.Message != "down" {
		t.Errorf("%d %s", a.status, a.body)
	}
	if a := call(t, s, "POST", SynthesizePath, auth(), okBody); a.status != 200 {
		t.Errorf("after the faults: %d", a.status)
	}
	if s.Calls() != 3 || s.CallsTo(SynthesizePath) != 2 {
		t.Errorf("calls %d, to synthesize %d", s.Calls(), s.CallsTo(SynthesizePath))
	}
}

func TestVoicesAndClone(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	wav := fakeupstream.WAVHeader(16000, 3200)
	wav = append(wav, make([]byte, 3200)...)
	body := `{"display_name":"My Narrator","langCode":"EN_US","voiceSamples":[{"audioData":"` + base64.StdEncoding.EncodeToString(wav) + `","transcription":"hi"}],"description":"calm","tags":["x"],"audioProcessingConfig":{"removeBackgroundNoise":true}}`
	a := call(t, s, "POST", ClonePath, auth(), body)
	var out struct {
		Voice struct {
			VoiceID     string `json:"voiceId"`
			DisplayName string `json:"displayName"`
			Source      string `json:"source"`
		} `json:"voice"`
		Validated []struct {
			Transcription string `json:"transcription"`
		} `json:"audioSamplesValidated"`
	}
	if err := json.Unmarshal(a.body, &out); err != nil || a.status != 200 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	if !strings.HasPrefix(out.Voice.VoiceID, "fake_workspace__my_narrator") || out.Voice.Source != "IVC" || len(out.Validated) != 1 {
		t.Errorf("clone answer %s", a.body)
	}
	synth := strings.Replace(okBody, "Dennis", out.Voice.VoiceID, 1)
	if a := call(t, s, "POST", SynthesizePath, auth(), synth); a.status != 200 {
		t.Errorf("synthesis with the clone: %d %s", a.status, a.body)
	}
	for _, bad := range []string{
		`{"displayName":"x","langCode":"EN_US","voiceSamples":[]}`,
		`{"displayName":"x","langCode":"EN","voiceSamples":[{"audioData":"UklGRg=="}]}`,
		`{"displayName":"x","langCode":"EN_US","voiceSamples":[{"audioData":"aGVsbG8gd29ybGQ="}]}`,
		`{"displayName":"x","langCode":"EN_US","voiceSamples":[{"audioData":"!!"}]}`,
		`{"langCode":"EN_US","voiceSamples":[{"audioData":"aGVsbG8="}]}`,
		`{"displayName":"x","langCode":"EN_US","voiceSamples":[{"audio":"aGVsbG8="}]}`,
	} {
		if a := call(t, s, "POST", ClonePath, auth(), bad); a.status != 400 || errorOf(t, a).Code != 3 {
			t.Errorf("%s: %d %s", bad, a.status, a.body)
		}
	}

	type list struct {
		Voices []struct {
			VoiceID  string `json:"voiceId"`
			LangCode string `json:"langCode"`
			Gender   string `json:"gender"`
		} `json:"voices"`
		NextPageToken string `json:"nextPageToken"`
	}
	var whole list
	a = call(t, s, "GET", VoicesPath, auth(), "")
	if err := json.Unmarshal(a.body, &whole); err != nil || len(whole.Voices) != 5 || whole.NextPageToken != "" {
		t.Fatalf("%d %s", a.status, a.body)
	}
	s.SetPageSize(2)
	var ids []string
	tok := ""
	for range 5 {
		var page list
		a := call(t, s, "GET", VoicesPath+"?pageSize=100&pageToken="+tok, auth(), "")
		if err := json.Unmarshal(a.body, &page); err != nil {
			t.Fatal(err)
		}
		for _, v := range page.Voices {
			ids = append(ids, v.VoiceID)
		}
		if tok = page.NextPageToken; tok == "" {
			break
		}
	}
	if len(ids) != 5 || ids[0] != VoiceDennis || ids[4] != out.Voice.VoiceID {
		t.Errorf("paged ids %v", ids)
	}
}

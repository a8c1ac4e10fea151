package dialects

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestOfficialSDKs runs the official openai and @elevenlabs/elevenlabs-js
// SDKs, unmodified and pinned by test/sdkclients/package-lock.json
// (installed by `make test`), against a real gateway with eSpeak and the
// provider fakes behind it: clips in every format the gateway makes,
// speed, streams and SSE (in the SDKs' default mp3 on eSpeak too, which
// the gateway converts from eSpeak's PCM stream), with-timestamps, the voices and models lists, and
// an error whose message the SDK shows. The clips the OpenAI SDK received
// are decoded with ffprobe.
func TestOfficialSDKs(t *testing.T) {
	t.Parallel()
	dir := harness.Path(t, "test", "sdkclients")
	node, err := exec.LookPath("node")
	_, e1 := os.Stat(filepath.Join(dir, "node_modules", "openai"))
	_, e2 := os.Stat(filepath.Join(dir, "node_modules", "@elevenlabs", "elevenlabs-js"))
	if err != nil || e1 != nil || e2 != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node or test/sdkclients/node_modules missing (make test installs them): %v %v %v", err, e1, e2)
		}
		t.Skip("node or test/sdkclients/node_modules missing: run `make test`")
	}
	d := startDialects(t, "")
	saved := d.Do("POST", "/v1/voices", "acme", map[string]any{"title": "Storyteller", "provider": "espeak", "model": "espeak-ng", "voice_id": "en"}).Voice(t).ID
	cmd := exec.Command(node, "clients.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "VOXGATE_BASE="+harness.ValidatingProxy(t, d.Base), "VOXGATE_KEY="+d.Keys["acme"], "VOXGATE_SAVED_VOICE="+saved)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("clients: %v\n%s\n%s\ngateway warnings and errors:\n%s", err, out, stderr, d.Warnings())
	}
	type drained struct{ Chunks, Bytes int }
	var res struct {
		OpenAI struct {
			Clips map[string]struct {
				ContentType string
				Bytes       int
				Base64      string
			}
			Speed  struct{ Normal, Double int }
			Stream drained
			SSE    struct {
				Deltas, Bytes int
				Done          map[string]int
			}
			SSEMp3 struct {
				Deltas int
				Done   map[string]int
				Base64 string
			}
			Models          []string
			Retrieve        []string
			RetrieveMissing struct {
				Status              int
				Code, Type, Message string
			}
			Error struct {
				Status               int
				Code, Param, Message string
			}
			AAC struct {
				Status               int
				Code, Param, Message string
			}
		}
		ElevenLabs struct {
			Clips map[string]int
			More  map[string]struct {
				Bytes  int
				Base64 string
			}
			Speed         struct{ Normal, Double int }
			Stream        drained
			StreamDefault struct {
				Chunks, Bytes int
				Base64        string
			}
			Timestamps struct {
				AudioBytes int
				Characters string
				Ends       []float64
			}
			StreamTimestamps struct {
				Chunks     int
				Characters string
				Starts     []float64
				Base64     string
			}
			Search struct {
				Found    []string
				Total    int
				Pages    [][]string
				Personal [][]string
			}
			Voice struct {
				Alias, Saved []string
			}
			VoiceMissing struct {
				Status  int
				Message string
			}
			Voices, Models []string
			Error          struct {
				Status  int
				Message string
			}
		}
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("clients output %s: %v", out, err)
	}
	o, el := res.OpenAI, res.ElevenLabs

	want := map[string]struct {
		ct, codec string
		rate      int
	}{
		"mp3":  {"audio/mpeg", "mp3", 0},
		"wav":  {"audio/wav", "pcm_s16le", 0},
		"pcm":  {"audio/pcm;rate=24000", "", 24000},
		"opus": {"audio/ogg;codecs=opus", "opus", 48000},
		"flac": {"audio/flac", "flac", 0},
	}
	for f, w := range want {
		c := o.Clips[f]
		if c.ContentType != w.ct || c.Bytes < 2000 {
			t.Errorf("openai %s: %s, %d bytes", f, c.ContentType, c.Bytes)
			continue
		}
		data, _ := base64.StdEncoding.DecodeString(c.Base64)
		dur, rate, channels := probe(t, f, data)
		if dur < 0.8 || dur > 6 || channels != 1 || (w.rate != 0 && rate != w.rate) {
			t.Errorf("openai %s decodes as %.2fs at %d Hz, %d channels", f, dur, rate, channels)
		}
	}
	if o.Speed.Double == 0 || o.Speed.Double > o.Speed.Normal*3/4 {
		t.Errorf("openai speed %+v", o.Speed)
	}
	if o.Stream.Bytes < 2000 {
		t.Errorf("openai stream %+v", o.Stream)
	}
	if o.SSE.Deltas < 1 || o.SSE.Bytes < 2000 || o.SSE.Done["input_tokens"] != len("Events please.") {
		t.Errorf("openai sse %+v", o.SSE)
	}
	// SSE in the SDK's default mp3, on eSpeak: converted from its PCM.
	if mp3, _ := base64.StdEncoding.DecodeString(o.SSEMp3.Base64); o.SSEMp3.Deltas < 1 || o.SSEMp3.Done["input_tokens"] != len("Events in the default format.") || len(mp3) < 2000 {
		t.Errorf("openai sse mp3: %d deltas, %d bytes, done %v", o.SSEMp3.Deltas, len(mp3), o.SSEMp3.Done)
	} else if dur, rate, channels := probe(t, "mp3", mp3); dur < 0.8 || dur > 6 || rate != 22050 || channels != 1 {
		t.Errorf("openai sse mp3 decodes as %.2fs at %d Hz, %d channels", dur, rate, channels)
	}
	for _, m := range []string{"tts-1", "espeak/espeak-ng", "openai/tts-1", "elevenlabs/eleven_multilingual_v2"} {
		if !slices.Contains(o.Models, m) {
			t.Errorf("openai models %v lack %s", o.Models, m)
		}
	}
	if !slices.Equal(o.Retrieve, []string{"espeak/espeak-ng", "tts-1"}) {
		t.Errorf("openai models.retrieve: %v", o.Retrieve)
	}
	// The SDK shows the message (not "(no body)"): OpenAI's error shape.
	if m := o.RetrieveMissing; m.Status != 404 || m.Code != "not_found" || m.Type != "not_found_error" || !strings.Contains(m.Message, `"no-such-model" does not exist`) {
		t.Errorf("openai models.retrieve of a missing model: %+v", m)
	}
	if o.Error.Status != 400 || o.Error.Code != "validation_failed" || o.Error.Param != "response_format" || !strings.Contains(o.Error.Message, "response_format") {
		t.Errorf("openai error %+v", o.Error)
	}

	if a := o.AAC; a.Status != 422 || a.Param != "response_format" || !strings.Contains(a.Message, "aac") {
		t.Errorf("openai aac: %+v", a)
	}
	for f, want := range map[string]struct {
		probe string
		rate  int
	}{"ulaw_8000": {"ulaw", 8000}, "alaw_8000": {"alaw", 8000}, "opus_48000_64": {"opus", 48000}, "mp3_22050_32": {"mp3", 22050}} {
		c := el.More[f]
		data, _ := base64.StdEncoding.DecodeString(c.Base64)
		if len(data) < 1000 {
			t.Errorf("elevenlabs %s: %d bytes", f, len(data))
			continue
		}
		if dur, rate, channels := probe(t, want.probe, data); dur < 0.8 || dur > 6 || rate != want.rate || channels != 1 {
			t.Errorf("elevenlabs %s decodes as %.2fs at %d Hz, %d channels", f, dur, rate, channels)
		}
	}
	if el.Clips["mp3_44100_128"] < 2000 || el.Clips["pcm_22050"] < 20000 || el.Clips["pcm_16000"] >= el.Clips["pcm_22050"] {
		t.Errorf("elevenlabs clips %v", el.Clips)
	}
	if el.Speed.Double == 0 || el.Speed.Double > el.Speed.Normal*3/4 {
		t.Errorf("elevenlabs speed %+v", el.Speed)
	}
	if el.Stream.Bytes < 2000 {
		t.Errorf("elevenlabs stream %+v", el.Stream)
	}
	// The SDK's default stream (mp3_44100_128) on eSpeak: converted.
	if mp3, _ := base64.StdEncoding.DecodeString(el.StreamDefault.Base64); el.StreamDefault.Chunks < 1 || len(mp3) < 2000 {
		t.Errorf("elevenlabs default stream: %d chunks, %d bytes", el.StreamDefault.Chunks, len(mp3))
	} else if dur, rate, channels := probe(t, "mp3", mp3); dur < 0.8 || dur > 6 || rate != 44100 || channels != 1 {
		t.Errorf("elevenlabs default stream decodes as %.2fs at %d Hz, %d channels", dur, rate, channels)
	}
	ts := el.Timestamps
	if ts.AudioBytes < 2000 || ts.Characters != "Timed characters." || len(ts.Ends) != len(ts.Characters) || ts.Ends[len(ts.Ends)-1] <= 0 {
		t.Errorf("elevenlabs timestamps %+v", ts)
	}
	// stream/with-timestamps, read by the SDK's own parser: several
	// objects whose audio joins into the clip and whose alignments join
	// into the text, in time order.
	st := el.StreamTimestamps
	pcm, _ := base64.StdEncoding.DecodeString(st.Base64)
	if st.Chunks < 2 || st.Characters != "Timed characters, streamed." || len(st.Starts) != len(st.Characters) || len(pcm) < 20000 || len(pcm)%2 != 0 {
		t.Errorf("elevenlabs stream with timestamps: %d chunks, %d bytes, %q, %v", st.Chunks, len(pcm), st.Characters, st.Starts)
	} else if !slices.IsSorted(st.Starts) || st.Starts[len(st.Starts)-1] <= 0 {
		t.Errorf("elevenlabs stream with timestamps: starts %v", st.Starts)
	}
	if s := el.Search; !slices.Equal(s.Found, []string{"narrator"}) || s.Total != 1 {
		t.Errorf("elevenlabs voices.search narrat: %+v", s)
	}
	if p := el.Search.Pages; len(p) != 3 || !slices.Equal(p[0], []string{"alloy"}) || !slices.Equal(p[1], []string{"narrator"}) || !slices.Equal(p[2], []string{saved}) {
		t.Errorf("elevenlabs voices.search pages of one by name: %v", p)
	}
	if p := el.Search.Personal; len(p) != 1 || !slices.Equal(p[0], []string{saved, "cloned"}) {
		t.Errorf("elevenlabs voices.search personal: %v", p)
	}
	if v := el.Voice; !slices.Equal(v.Alias, []string{"narrator", "premade"}) || !slices.Equal(v.Saved, []string{saved, "Storyteller", "cloned"}) {
		t.Errorf("elevenlabs voices.get: %+v", v)
	}
	if m := el.VoiceMissing; m.Status != 404 || !strings.Contains(m.Message, "voice_not_found") {
		t.Errorf("elevenlabs voices.get of a missing voice: %+v", m)
	}
	if !slices.Contains(el.Voices, "alloy") || !slices.Contains(el.Voices, "narrator") || !slices.Contains(el.Models, "espeak/espeak-ng") {
		t.Errorf("elevenlabs voices %v models %v", el.Voices, el.Models)
	}
	if el.Error.Status != 422 || !strings.Contains(el.Error.Message, "text_too_long") || !strings.Contains(el.Error.Message, "6000") {
		t.Errorf("elevenlabs error %+v", el.Error)
	}
}

// probe decodes a clip with ffprobe and returns its duration in seconds,
// sample rate and channels. Raw PCM is read as 16-bit mono at 24 kHz,
// which is what OpenAI's pcm promises.
func probe(t *testing.T, format string, data []byte) (float64, int, int) {
	t.Helper()
	var raw []string
	switch format {
	case "pcm":
		raw = []string{"-f", "s16le", "-ar", "24000", "-ac", "1"}
	case "ulaw":
		raw = []string{"-f", "mulaw", "-ar", "8000", "-ac", "1"}
	case "alaw":
		raw = []string{"-f", "alaw", "-ar", "8000", "-ac", "1"}
	}
	p := harness.FFprobeBytes(t, data, format, raw...)
	return p.Seconds, p.Rate, p.Channels
}

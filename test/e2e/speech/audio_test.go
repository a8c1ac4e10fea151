package speech

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/internal/testenv"
	"github.com/voxgate/voxgate/internal/testplugin/calllog"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestWholeClipProcessingOverHTTP checks volumeDbfs and output on real
// eSpeak clips through the speech endpoint.
func TestWholeClipProcessingOverHTTP(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	text := "Whole clip processing happens on the server, after synthesis."
	raw := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text))
	rawDur, _ := harness.PCMSeconds(t, raw.Header.Get("Content-Type"), raw.Body)
	// eSpeak's pauses vary by some tens of milliseconds from call to call,
	// so durations of separate requests agree only this closely; the audio
	// package's own tests check exact length preservation.
	const tol = 0.1
	for _, target := range []float64{-12, -20, -35} {
		r := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text, "volumeDbfs", target, "output", map[string]any{"format": "wav"}))
		if r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		c, err := audio.Decode(r.Body, r.Header.Get("Content-Type"))
		if err != nil {
			t.Fatal(err)
		}
		if got := audio.RMSDbfs(c); math.Abs(got-target) > 0.5 {
			t.Errorf("target %.0f dBFS: measured %.2f", target, got)
		}
		if audio.PeakDbfs(c) >= 0 {
			t.Errorf("target %.0f: clipped", target)
		}
	}
	r := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text, "output", map[string]any{"format": "mp3", "sampleRate": 16000, "bitrate": 64}))
	if r.Status != 200 || r.Header.Get("Content-Type") != "audio/mpeg" {
		t.Fatalf("mp3: %d %s", r.Status, r.Header.Get("Content-Type"))
	}
	c, err := audio.Decode(r.Body, "audio/mpeg")
	if err != nil {
		t.Fatal(err)
	}
	if c.Rate != 16000 || math.Abs(c.Seconds()-rawDur) > tol {
		t.Errorf("mp3 decodes to %d Hz, %.3fs (source %.3fs)", c.Rate, c.Seconds(), rawDur)
	}
	r = tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text, "output", map[string]any{"format": "pcm", "sampleRate": 48000}))
	if r.Header.Get("Content-Type") != "audio/pcm;rate=48000" {
		t.Errorf("pcm resample: %s", r.Header.Get("Content-Type"))
	}
	if d, _ := harness.PCMSeconds(t, r.Header.Get("Content-Type"), r.Body); math.Abs(d-rawDur) > tol {
		t.Errorf("resampled duration %.3f vs %.3f", d, rawDur)
	}

	// Every bad value gets its own validation entry.
	p := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text, "volumeDbfs", 5)).Problem(t, 400, "validation_failed")
	harness.AssertPaths(t, p, "volumeDbfs")
	p = tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text, "output", map[string]any{"format": "ogg"})).Problem(t, 400, "validation_failed")
	harness.AssertPaths(t, p, "output.format")
	p = tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text, "output", map[string]any{"format": "wav", "sampleRate": -1})).Problem(t, 400, "validation_failed")
	harness.AssertPaths(t, p, "output.sampleRate")
	p = tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text, "output", map[string]any{"format": "wav", "bitrate": 128})).Problem(t, 400, "validation_failed")
	harness.AssertPaths(t, p, "output.bitrate")
	p = tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text, "volumeDbfs", -80, "output", map[string]any{"format": "mp3", "sampleRate": 7000, "bitrate": 1000})).Problem(t, 400, "validation_failed")
	harness.AssertPaths(t, p, "volumeDbfs", "output.sampleRate", "output.bitrate")
}

// wavFirstConfig runs the test kit with WAV as its models' default format,
// like a provider whose answers are WAV files.
const wavFirstConfig = `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
providers:
  testkit:
    plugin: %BIN%/testplugins/voxgate-testplugin
    managed: true
    output_formats: "wav,pcm"
orgs:
  acme:
    providers:
      testkit: {enabled: true}
`

// TestProcessingKeepsTheDefaultFormat checks that speed and volumeDbfs
// change the audio but not its container: without `output`, a processed
// clip comes in the format the client gets without processing (WAV
// here), although the gateway asks the provider for PCM to decode it.
func TestProcessingKeepsTheDefaultFormat(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, wavFirstConfig)
	body := func(extra ...any) map[string]any {
		b := map[string]any{"model": "testkit/basic", "voice": "alpha", "text": "one two three four"}
		for i := 0; i+1 < len(extra); i += 2 {
			b[extra[i].(string)] = extra[i+1]
		}
		return b
	}
	plain := tg.Do("POST", "/v1/audio/speech", "acme", body())
	if plain.Status != 200 || plain.Header.Get("Content-Type") != "audio/wav" {
		t.Fatalf("unprocessed: %d %q", plain.Status, plain.Header.Get("Content-Type"))
	}
	src, err := audio.Decode(plain.Body, "audio/wav")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		extra []any
		want  string
		secs  float64
	}{
		{"speed", []any{"speed", 2}, "audio/wav", src.Seconds() / 2},
		{"volumeDbfs", []any{"volumeDbfs", -20}, "audio/wav", src.Seconds()},
		{"both", []any{"speed", 0.5, "volumeDbfs", -30}, "audio/wav", src.Seconds() * 2},
		{"output wins", []any{"speed", 2, "output", map[string]any{"format": "pcm"}}, "audio/pcm;rate=16000", src.Seconds() / 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := tg.Do("POST", "/v1/audio/speech", "acme", body(tt.extra...))
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if ct := r.Header.Get("Content-Type"); ct != tt.want {
				t.Fatalf("Content-Type %q, want %q", ct, tt.want)
			}
			c, err := audio.Decode(r.Body, tt.want)
			if err != nil {
				t.Fatalf("the %s answer does not decode: %v", tt.want, err)
			}
			if c.Rate != src.Rate || math.Abs(c.Seconds()-tt.secs) > 0.002 {
				t.Errorf("%d Hz, %.3fs; want %d Hz, %.3fs", c.Rate, c.Seconds(), src.Rate, tt.secs)
			}
		})
	}
}

const slotsConfig = `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
providers:
  testkit:
    plugin: %BIN%/testplugins/voxgate-testplugin
    managed: true
    timeout: 3s
    call_log: %DIR%/calls.jsonl
orgs:
  acme:
    providers:
      testkit: {enabled: true}
  globex:
    providers:
      testkit: {enabled: true}
limits:
  whole_clip_concurrency: 1
  whole_clip_wait: 200ms
`

// TestWholeClipConcurrency checks the per-organization bound on requests
// with whole-clip processing: past it a request waits whole_clip_wait for
// a turn, then gets 429 rate_limited with Retry-After; other
// organizations and requests without processing are not held up, and the
// turn comes back when the request holding it ends.
func TestWholeClipConcurrency(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, slotsConfig)
	body := func(extra ...any) map[string]any {
		b := map[string]any{"model": "testkit/basic", "voice": "alpha", "text": "one two", "volumeDbfs": -20}
		for i := 0; i+1 < len(extra); i += 2 {
			b[extra[i].(string)] = extra[i+1]
		}
		return b
	}
	// The hanging request holds acme's one turn until the provider's
	// timeout; it is sent with a client of its own, off the test goroutine.
	hung := make(chan int, 1)
	go func() {
		data, _ := json.Marshal(body("providerOptions", map[string]any{"hang": true}))
		req, _ := http.NewRequest("POST", tg.Base+"/v1/audio/speech", bytes.NewReader(data))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tg.Keys["acme"])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			hung <- 0
			return
		}
		resp.Body.Close()
		hung <- resp.StatusCode
	}()
	// It holds the turn once the provider has its call.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		calls, _ := calllog.Read(filepath.Join(tg.Dir, "calls.jsonl"))
		if len(calls) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hanging request never reached the provider")
		}
	}
	r := tg.Do("POST", "/v1/audio/speech", "acme", body())
	r.Problem(t, 429, "rate_limited")
	if ra := r.Header.Get("Retry-After"); ra == "" {
		t.Error("429 without Retry-After")
	}
	// The IETF RateLimit fields name the bound: one request at once.
	if p, l := r.Header.Get("RateLimit-Policy"), r.Header.Get("RateLimit"); p != `"org-whole-clip";q=1;qu="concurrent-requests"` || !strings.HasPrefix(l, `"org-whole-clip";r=0;t=`) {
		t.Errorf("RateLimit-Policy %q, RateLimit %q", p, l)
	}
	if r := tg.Do("POST", "/v1/audio/speech", "globex", body()); r.Status != 200 {
		t.Errorf("another organization: %d %s", r.Status, r.Body)
	}
	plain := body()
	delete(plain, "volumeDbfs")
	if r := tg.Do("POST", "/v1/audio/speech", "acme", plain); r.Status != 200 {
		t.Errorf("no processing: %d %s", r.Status, r.Body)
	}
	if status := <-hung; status != 504 {
		t.Errorf("hanging request: %d, want 504", status)
	}
	if r := tg.Do("POST", "/v1/audio/speech", "acme", body()); r.Status != 200 {
		t.Errorf("after the turn came back: %d %s", r.Status, r.Body)
	}
}

// TestOutputFormatsOverHTTP asks for every output format over HTTP and has
// ffprobe read each answer: its codec, rate, channels and duration must
// match the request and the Content-Type. AAC, which this build cannot
// produce, is a 422 naming the formats it can.
func TestOutputFormatsOverHTTP(t *testing.T) {
	t.Parallel()
	ffprobe := testenv.NeedTool(t, "ffprobe")
	tg := harness.Start(t, harness.SpeechConfig)
	text := "Every format carries the same words."
	ref := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text, "output", map[string]any{"format": "wav"}))
	src, err := audio.Decode(ref.Body, ref.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		output      map[string]any
		contentType string
		codec       string
		rate        int
		raw         []string // ffprobe's options for a raw answer
	}{
		{map[string]any{"format": "opus"}, "audio/ogg;codecs=opus", "opus", 48000, nil},
		{map[string]any{"format": "opus", "bitrate": 16}, "audio/ogg;codecs=opus", "opus", 48000, nil},
		{map[string]any{"format": "flac"}, "audio/flac", "flac", 22050, nil},
		{map[string]any{"format": "flac", "sampleRate": 16000}, "audio/flac", "flac", 16000, nil},
		{map[string]any{"format": "ulaw"}, "audio/PCMU;rate=8000", "pcm_mulaw", 8000, []string{"-f", "mulaw", "-ar", "8000", "-ac", "1"}},
		{map[string]any{"format": "alaw", "sampleRate": 8000}, "audio/PCMA;rate=8000", "pcm_alaw", 8000, []string{"-f", "alaw", "-ar", "8000", "-ac", "1"}},
		{map[string]any{"format": "mp3", "sampleRate": 24000}, "audio/mpeg", "mp3", 24000, nil},
	} {
		t.Run(tt.contentType+"/"+tt.codec, func(t *testing.T) {
			// Leveled too, so every answer is processed; eSpeak's timing
			// varies by tens of milliseconds between calls, hence the
			// duration's tolerance.
			r := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text, "output", tt.output, "volumeDbfs", -20))
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if ct := r.Header.Get("Content-Type"); ct != tt.contentType {
				t.Errorf("Content-Type %q, want %q", ct, tt.contentType)
			}
			path := filepath.Join(t.TempDir(), "answer")
			if err := os.WriteFile(path, r.Body, 0o600); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"-v", "error", "-print_format", "json", "-show_streams"}, tt.raw...)
			out, err := exec.Command(ffprobe, append(args, path)...).Output()
			if err != nil {
				t.Fatalf("ffprobe: %v", err)
			}
			var probe struct {
				Streams []struct {
					CodecName  string `json:"codec_name"`
					SampleRate string `json:"sample_rate"`
					Channels   int    `json:"channels"`
					Duration   string `json:"duration"`
				}
			}
			if err := json.Unmarshal(out, &probe); err != nil || len(probe.Streams) != 1 {
				t.Fatalf("ffprobe: %s %v", out, err)
			}
			s := probe.Streams[0]
			d, _ := strconv.ParseFloat(s.Duration, 64)
			if s.CodecName != tt.codec || s.SampleRate != strconv.Itoa(tt.rate) || s.Channels != 1 || math.Abs(d-src.Seconds()) > 0.15 {
				t.Errorf("ffprobe: %+v; want %s, %d Hz, mono, about %.2fs", s, tt.codec, tt.rate, src.Seconds())
			}
		})
	}
	p := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text, "output", map[string]any{"format": "aac"})).Problem(t, 422, "output_format_unsupported")
	harness.AssertPaths(t, p, "output.format")
	if !strings.Contains(p.Detail, "opus") || !strings.Contains(p.Detail, "flac") {
		t.Errorf("detail %q does not name the supported formats", p.Detail)
	}
	conv := map[string]any{"model": "espeak/espeak-ng", "turns": []any{map[string]any{"voice": "en", "text": "One."}, map[string]any{"voice": "de", "text": "Zwei."}},
		"output": map[string]any{"format": "flac"}}
	if r := tg.Do("POST", "/v1/audio/conversation", "acme", conv); r.Status != 200 || r.Header.Get("Content-Type") != "audio/flac" {
		t.Errorf("conversation as FLAC: %d %s", r.Status, r.Header.Get("Content-Type"))
	}
	conv["output"] = map[string]any{"format": "aac"}
	tg.Do("POST", "/v1/audio/conversation", "acme", conv).Problem(t, 422, "output_format_unsupported")
}

// TestRawPCMOnlyWhenAskedFor: a clip whose provider answers raw PCM by
// default (testkit lists pcm first, as most cloud plugins do) is answered
// as WAV when the request names no format: the provider's samples,
// untouched, behind a header, so that `curl -o x.wav` plays and a client
// can tell the clip's duration. PCM is answered when asked for; a stream
// stays in the provider's streaming format.
func TestRawPCMOnlyWhenAskedFor(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	body := func(extra ...any) map[string]any {
		b := map[string]any{"model": "testkit/test", "voice": "alpha", "text": "one two three four"}
		for i := 0; i+1 < len(extra); i += 2 {
			b[extra[i].(string)] = extra[i+1]
		}
		return b
	}
	raw := tg.Do("POST", "/v1/audio/speech", "acme", body("output", map[string]any{"format": "pcm"}))
	if raw.Status != 200 || !strings.HasPrefix(raw.Header.Get("Content-Type"), "audio/pcm;rate=") {
		t.Fatalf("asked for pcm: %d %q", raw.Status, raw.Header.Get("Content-Type"))
	}
	wav := tg.Do("POST", "/v1/audio/speech", "acme", body())
	if wav.Status != 200 || wav.Header.Get("Content-Type") != "audio/wav" {
		t.Fatalf("no format asked: %d %q", wav.Status, wav.Header.Get("Content-Type"))
	}
	if len(wav.Body) < 44 || !bytes.Equal(harness.Unmarked(wav.Body)[44:], raw.Body) {
		t.Errorf("the wav answer is not the provider's samples behind a header: %d bytes, pcm %d", len(wav.Body), len(raw.Body))
	}
	c, err := audio.Decode(wav.Body, "audio/wav")
	mt, _ := audio.ParseMediaType(raw.Header.Get("Content-Type"))
	if err != nil || c.Rate != mt.Rate || len(c.Samples) != len(raw.Body)/2 {
		t.Errorf("the wav answer decodes to %+v, %v", c, err)
	}
	var env struct {
		MediaType string `json:"mediaType"`
		Audio     []byte `json:"audio"`
	}
	tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", body()).JSON(t, &env)
	if env.MediaType != "audio/wav" || !bytes.Equal(harness.Unmarked(env.Audio), harness.Unmarked(wav.Body)) {
		t.Errorf("with-timestamps: %q, %d bytes", env.MediaType, len(env.Audio))
	}
	s := tg.Do("POST", "/v1/audio/speech/stream", "acme", body())
	if s.Status != 200 || !strings.HasPrefix(s.Header.Get("Content-Type"), "audio/pcm;rate=") {
		t.Errorf("stream: %d %q", s.Status, s.Header.Get("Content-Type"))
	}
}

package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
	"github.com/voxgate/voxgate/internal/testplugin/calllog"
)

// speechConfig runs the real eSpeak plugin and the test-kit plugin.
const speechConfig = `
server:
  listen: 127.0.0.1:0
  max_body_bytes: 65536
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
  health_interval: 1s
providers:
  espeak: {plugin: voxgate-espeak, managed: true, instances: 1, credits_per_1k_chars: 2}
  testkit:
    plugin: %BIN%/testplugins/voxgate-testplugin
    managed: true
    timeout: 2s
    call_log: %DIR%/calls.jsonl
    max_text_chars: "100"
    timestamps: native
orgs:
  acme:
    providers:
      espeak: {enabled: true}
      testkit: {enabled: true}
  globex:
    providers:
      espeak: {enabled: false}
`

func speechBody(text string, extra ...any) map[string]any {
	b := map[string]any{"model": "espeak/espeak-ng", "voice": "en", "text": text}
	for i := 0; i+1 < len(extra); i += 2 {
		b[extra[i].(string)] = extra[i+1]
	}
	return b
}

// pcmSeconds returns the duration of a clip of 16-bit mono PCM or WAV and
// its RMS, failing the test on anything else.
func pcmSeconds(t *testing.T, mediaType string, data []byte) (float64, float64) {
	t.Helper()
	var rate int
	var pcm []byte
	switch {
	case strings.HasPrefix(mediaType, "audio/pcm;rate="):
		fmt.Sscanf(strings.TrimPrefix(mediaType, "audio/pcm;rate="), "%d", &rate)
		pcm = data
	case mediaType == "audio/wav":
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

// lastLog returns the newest log row of org.
func (tg *testGateway) lastLog(org string) apiLogRow {
	tg.t.Helper()
	tg.flushLogs()
	var p logPage
	tg.do("GET", "/v1/logs?limit=1", org, nil).json(tg.t, &p)
	if len(p.Data) != 1 {
		tg.t.Fatalf("no log row for %s", org)
	}
	return p.Data[0]
}

func TestSpeechClipFromESpeak(t *testing.T) {
	tg := startGateway(t, speechConfig)
	text := "Hello world, this is voxgate speaking."
	r := tg.do("POST", "/v1/audio/speech", "acme", speechBody(text))
	if r.status != 200 {
		t.Fatalf("speech: %d %s", r.status, r.body)
	}
	// No output format asked for: a WAV file, which any player opens and
	// whose header states its length.
	dur, rms := pcmSeconds(t, r.header.Get("Content-Type"), r.body)
	if r.header.Get("Content-Type") != "audio/wav" || binary.LittleEndian.Uint32(r.body[40:44]) != uint32(len(r.body)-44) {
		t.Errorf("Content-Type = %q, %d bytes", r.header.Get("Content-Type"), len(r.body))
	}
	// ~6 words at eSpeak's 175 wpm: about 2 s; allow a wide band.
	if dur < 1 || dur > 6 || rms < 0.01 {
		t.Errorf("clip of %.2fs, rms %.4f is not plausible speech for %q", dur, rms, text)
	}
	row := tg.lastLog("acme")
	if row.Status != 200 || row.Provider != "espeak" || row.Model != "espeak-ng" || row.VoiceID != "en" || row.CharCount != len(text) ||
		row.CreditsUsed != 1 || row.Path != "/v1/audio/speech" || row.ErrorCode != "" || row.RequestID != r.header.Get("X-Request-Id") {
		t.Errorf("log row = %+v", row)
	}

	// Raw PCM only when asked for, and the same audio.
	r = tg.do("POST", "/v1/audio/speech", "acme", speechBody(text, "output", map[string]any{"format": "pcm"}))
	if r.status != 200 || r.header.Get("Content-Type") != "audio/pcm;rate=22050" {
		t.Fatalf("pcm: %d %s %s", r.status, r.header.Get("Content-Type"), r.body[:min(len(r.body), 200)])
	}
	if d2, _ := pcmSeconds(t, "audio/pcm;rate=22050", r.body); math.Abs(d2-dur) > 0.01 {
		t.Errorf("pcm duration %.3f vs wav %.3f", d2, dur)
	}
}

type tsEnvelope struct {
	Audio      string `json:"audio"`
	MediaType  string `json:"mediaType"`
	Timestamps []struct {
		Text  string  `json:"text"`
		Start float64 `json:"start"`
		End   float64 `json:"end"`
	} `json:"timestamps"`
	Warnings         []string `json:"warnings"`
	Captions         string   `json:"captions"`
	ProviderMetadata struct {
		Voxgate struct {
			TimestampsSource string    `json:"timestamps_source"`
			AlignmentMatch   float64   `json:"alignment_match"`
			AlignmentRef     string    `json:"alignment_reference"`
			Pieces           []float64 `json:"pieces"`
		} `json:"voxgate"`
	} `json:"providerMetadata"`
}

func TestSpeechWithTimestamps(t *testing.T) {
	tg := startGateway(t, speechConfig)
	tests := []struct {
		name  string
		body  map[string]any
		words []string
	}{
		{"plain", speechBody("The quick brown fox jumps over the lazy dog."), strings.Fields("The quick brown fox jumps over the lazy dog")},
		{"pronunciations map back", speechBody("Welcome to Voxgate today.", "pronunciations", map[string]any{"rules": []any{
			map[string]any{"word": "voxgate", "replacement": "vox gate"}}}), []string{"Welcome", "to", "Voxgate", "today"}},
		{"case sensitive rule does not match", speechBody("Welcome to Voxgate.", "pronunciations", map[string]any{"rules": []any{
			map[string]any{"word": "voxgate", "replacement": "vox gate", "caseSensitive": true}}}), []string{"Welcome", "to", "Voxgate"}},
		{"test kit", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "one two three four"}, []string{"one", "two", "three", "four"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tg.do("POST", "/v1/audio/speech/with-timestamps", "acme", tt.body)
			if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
				t.Fatalf("%d %s", r.status, r.body)
			}
			var env tsEnvelope
			r.json(t, &env)
			audio, err := base64.StdEncoding.DecodeString(env.Audio)
			if err != nil {
				t.Fatal(err)
			}
			dur, _ := pcmSeconds(t, env.MediaType, audio)
			var got []string
			prevEnd := 0.0
			for i, ts := range env.Timestamps {
				got = append(got, ts.Text)
				if ts.Start < prevEnd-1e-3 || ts.End < ts.Start || ts.End > dur+0.01 {
					t.Errorf("timestamp %d %+v out of order or outside the %.3fs clip (prev end %.3f)", i, ts, dur, prevEnd)
				}
				prevEnd = ts.End
			}
			if strings.Join(got, " ") != strings.Join(tt.words, " ") {
				t.Errorf("words = %q, want %q", got, tt.words)
			}
			if env.Warnings == nil {
				t.Error("warnings must be an array")
			}
		})
	}
}

func TestSpeechSavedVoiceAndCatalog(t *testing.T) {
	tg := startGateway(t, speechConfig)
	v := tg.do("POST", "/v1/voices", "acme", map[string]any{"title": "German", "provider": "espeak", "model": "espeak-ng", "voice_id": "de"}).voice(t)
	tg.do("POST", "/v1/voices", "acme", map[string]any{"title": "x", "provider": "espeak", "model": "nope", "voice_id": "de"}).problem(t, 422, "unknown_model")
	r := tg.do("POST", "/v1/audio/speech", "acme", map[string]any{"voiceId": v.ID, "text": "Guten Tag"})
	if r.status != 200 {
		t.Fatalf("saved voice speech: %d %s", r.status, r.body)
	}
	if row := tg.lastLog("acme"); row.VoiceRef != v.ID || row.VoiceID != "de" {
		t.Errorf("row voice_ref %q voice_id %q", row.VoiceRef, row.VoiceID)
	}
	// Another org cannot use acme's saved voice.
	tg.do("POST", "/v1/audio/speech", "globex", map[string]any{"voiceId": v.ID, "text": "hi"}).problem(t, 404, "voice_not_found")

	var cat struct {
		Data []struct {
			ID     string `json:"id"`
			Name   string `json:"name"`
			Status string `json:"status"`
			Config struct{ Enabled, BYOK, Managed bool }
			Models []struct {
				ID            string   `json:"id"`
				OutputFormats []string `json:"output_formats"`
				MaxTextChars  int      `json:"max_text_chars"`
				Capabilities  struct{ Streaming, Timestamps, Cloning bool }
			} `json:"models"`
		} `json:"data"`
	}
	tg.do("GET", "/v1/providers", "acme", nil).json(t, &cat)
	if len(cat.Data) != 2 || cat.Data[0].ID != "espeak" || cat.Data[0].Name != "eSpeak NG" || !cat.Data[0].Config.Enabled || !cat.Data[0].Config.Managed ||
		cat.Data[0].Status != "available" || cat.Data[0].Models[0].ID != "espeak-ng" || !cat.Data[0].Models[0].Capabilities.Timestamps ||
		cat.Data[0].Models[0].Capabilities.Cloning || cat.Data[0].Models[0].MaxTextChars != 5000 {
		t.Errorf("catalog = %+v", cat)
	}
	if got := strings.Join(cat.Data[0].Models[0].OutputFormats, ","); got != "wav,pcm,mp3,opus,flac,ulaw,alaw" {
		t.Errorf("catalog output formats %s", got)
	}
	tg.do("GET", "/v1/providers", "globex", nil).json(t, &cat)
	if cat.Data[0].Config.Enabled {
		t.Error("globex sees espeak enabled")
	}
	var voices struct {
		Data []struct{ ID, Name, Language, Gender string } `json:"data"`
	}
	tg.do("GET", "/v1/providers/espeak/voices", "acme", nil).json(t, &voices)
	found := false
	for _, pv := range voices.Data {
		if pv.ID == "en" && pv.Language != "" {
			found = true
		}
	}
	if !found || len(voices.Data) < 20 {
		t.Errorf("espeak voices lack \"en\" (%d voices)", len(voices.Data))
	}
	tg.do("GET", "/v1/providers/nope/voices", "acme", nil).problem(t, 404, "not_found")
	tg.do("GET", "/v1/providers/espeak/voices", "globex", nil).problem(t, 403, "provider_disabled")
}

// TestESpeakLanguageVoices runs README's examples that name eSpeak voices
// by language code (en-gb, en-us), and checks that POST /v1/voices saves
// only voice ids the provider lists, naming close matches otherwise.
func TestESpeakLanguageVoices(t *testing.T) {
	tg := startGateway(t, speechConfig)
	// README, "Conversations".
	r := tg.do("POST", "/v1/audio/conversation/with-timestamps", "acme", map[string]any{
		"model": "espeak/espeak-ng", "gapMs": 250, "split": true,
		"turns": []any{
			map[string]any{"voice": "en-gb", "text": "Shall we begin?"},
			map[string]any{"voice": "en-us", "text": "Yes, let us start the meeting."},
		}})
	var convo struct {
		AudioSegments []struct{ TurnIndex int } `json:"audioSegments"`
		FailedTurns   []any                     `json:"failedTurns"`
	}
	if r.json(t, &convo); r.status != 200 || len(convo.AudioSegments) != 2 || len(convo.FailedTurns) != 0 {
		t.Fatalf("README conversation: %d %s", r.status, r.body[:min(len(r.body), 300)])
	}

	// README, "Voices": saved with en-gb, it speaks.
	v := tg.do("POST", "/v1/voices", "acme", map[string]any{"title": "Narrator", "provider": "espeak", "model": "espeak-ng", "voice_id": "en-gb", "tags": []string{"books"}}).voice(t)
	if r := tg.do("POST", "/v1/audio/speech", "acme", map[string]any{"voiceId": v.ID, "text": "Saved voices work too."}); r.status != 200 || r.header.Get("Content-Type") != "audio/wav" {
		t.Fatalf("saved en-gb voice: %d %s", r.status, r.body[:min(len(r.body), 300)])
	}
	// A variant through provider_options, on a listed voice id.
	tg.do("POST", "/v1/voices", "acme", map[string]any{"title": "Narrator, f3", "provider": "espeak", "model": "espeak-ng", "voice_id": "en-gb",
		"provider_options": map[string]any{"variant": "f3"}}).voice(t)
	if r := tg.do("POST", "/v1/audio/speech", "acme", map[string]any{"voiceId": v.ID, "text": "A variant."}); r.status != 200 {
		t.Fatalf("saved en-gb voice with variant f3: %d %s", r.status, r.body)
	}

	saved := func() int {
		var page voicePage
		tg.do("GET", "/v1/voices?limit=200", "acme", nil).json(t, &page)
		return len(page.Data)
	}
	before := saved()
	tests := []struct {
		voiceID string
		close   []string // named in the problem, in this order
	}{
		{"en_gb", []string{"en-gb"}},
		{"EN-US", []string{"en-us"}},
		{"en-gb+f3", []string{"en-gb"}},
		{"klingon", []string{"piqd"}}, // eSpeak's Klingon is named so
		{"no-such-voice", nil},
	}
	for _, tt := range tests {
		p := tg.do("POST", "/v1/voices", "acme", map[string]any{"title": "x", "provider": "espeak", "model": "espeak-ng", "voice_id": tt.voiceID}).problem(t, 422, "unknown_voice")
		if len(p.Validation) != 1 || strings.Join(p.Validation[0].Path, ".") != "voice_id" || !strings.Contains(p.Detail, strconv.Quote(tt.voiceID)) {
			t.Errorf("voice_id %q: problem %+v", tt.voiceID, p)
		}
		_, matches, found := strings.Cut(p.Detail, "close matches: ")
		if found != (len(tt.close) > 0) || !strings.HasPrefix(matches, strings.Join(tt.close, ", ")) {
			t.Errorf("voice_id %q: detail %q, want close matches %q", tt.voiceID, p.Detail, tt.close)
		}
	}
	if after := saved(); after != before {
		t.Errorf("%d voices saved by rejected requests", after-before)
	}
}

func TestSpeechErrors(t *testing.T) {
	tg := startGateway(t, strings.Replace(speechConfig, "storage:", "limits: {max_text_chars: 150}\nstorage:", 1))
	tk := func(text string, extra ...any) map[string]any {
		b := map[string]any{"model": "testkit/test", "voice": "alpha", "text": text}
		for i := 0; i+1 < len(extra); i += 2 {
			b[extra[i].(string)] = extra[i+1]
		}
		return b
	}
	tests := []struct {
		name, path, org string
		body            any
		status          int
		code            string
		field           string
	}{
		{"voice conflict", "/v1/audio/speech", "acme", map[string]any{"voiceId": "1b4e28ba-2fa1-11d2-883f-0016d3cca427", "model": "espeak", "voice": "en", "text": "x"}, 400, "voice_conflict", "voiceId"},
		{"no voice", "/v1/audio/speech", "acme", map[string]any{"text": "x"}, 400, "validation_failed", "voiceId"},
		{"model without voice", "/v1/audio/speech", "acme", map[string]any{"model": "espeak", "text": "x"}, 400, "validation_failed", "voice"},
		{"blank text", "/v1/audio/speech", "acme", speechBody("   "), 400, "validation_failed", "text"},
		{"null text", "/v1/audio/speech", "acme", speechBody("x", "text", nil), 400, "validation_failed", "text"},
		{"text wrong type", "/v1/audio/speech", "acme", speechBody("x", "text", 5), 400, "validation_failed", "text"},
		{"unknown field", "/v1/audio/speech", "acme", speechBody("x", "volume", 3), 400, "validation_failed", "volume"},
		{"bad mode", "/v1/audio/speech", "acme", speechBody("x", "mode", "loud"), 400, "validation_failed", "mode"},
		{"inline mode with voiceId", "/v1/audio/speech", "acme", map[string]any{"mode": "inline", "voiceId": "1b4e28ba-2fa1-11d2-883f-0016d3cca427", "text": "x"}, 400, "validation_failed", "mode"},
		{"speed too high", "/v1/audio/speech", "acme", speechBody("x", "speed", 5), 400, "validation_failed", "speed"},
		{"volume too high", "/v1/audio/speech", "acme", speechBody("x", "volumeDbfs", 5), 400, "validation_failed", "volumeDbfs"},
		{"ogg output", "/v1/audio/speech", "acme", speechBody("x", "output", map[string]any{"format": "ogg"}), 400, "validation_failed", "output"},
		{"options not object", "/v1/audio/speech", "acme", speechBody("x", "providerOptions", []int{1}), 400, "validation_failed", "providerOptions"},
		{"empty pronunciation", "/v1/audio/speech", "acme", speechBody("x", "pronunciations", map[string]any{"rules": []any{map[string]any{"word": "", "replacement": "y"}}}), 400, "validation_failed", "pronunciations"},
		{"output on stream", "/v1/audio/speech/stream", "acme", speechBody("x", "output", map[string]any{"format": "wav"}), 400, "param_not_allowed_on_stream", "output"},
		{"volume on stream", "/v1/audio/speech/stream", "acme", speechBody("x", "volumeDbfs", -20), 400, "param_not_allowed_on_stream", "volumeDbfs"},
		{"unknown provider", "/v1/audio/speech", "acme", map[string]any{"model": "nope/x", "voice": "v", "text": "x"}, 422, "unknown_provider", ""},
		{"unknown model", "/v1/audio/speech", "acme", map[string]any{"model": "espeak/nope", "voice": "v", "text": "x"}, 422, "unknown_model", ""},
		{"saved voice missing", "/v1/audio/speech", "acme", map[string]any{"voiceId": "1b4e28ba-2fa1-11d2-883f-0016d3cca427", "text": "x"}, 404, "voice_not_found", ""},
		{"saved voice not uuid", "/v1/audio/speech", "acme", map[string]any{"voiceId": "abc", "text": "x"}, 404, "voice_not_found", ""},
		{"text too long", "/v1/audio/speech", "acme", tk(strings.Repeat("a", 151)), 422, "text_too_long", ""},
		{"only unperformed audio tags", "/v1/audio/speech", "acme", tk("[laughs] [sighs]"), 400, "validation_failed", "text"},
		{"captions on the clip endpoint", "/v1/audio/speech", "acme", speechBody("x", "captions", "srt"), 400, "validation_failed", "captions"},
		{"unknown captions format", "/v1/audio/speech/with-timestamps", "acme", speechBody("x", "captions", "ass"), 400, "validation_failed", "captions"},
		{"no timestamps", "/v1/audio/speech/with-timestamps", "acme", map[string]any{"model": "testkit/basic", "voice": "alpha", "text": "x"}, 503, "timestamps_unavailable", ""},
		{"no streaming", "/v1/audio/speech/stream", "acme", map[string]any{"model": "testkit/basic", "voice": "alpha", "text": "x"}, 501, "streaming_unsupported", ""},

		{"disabled provider", "/v1/audio/speech", "globex", speechBody("hello"), 403, "provider_disabled", ""},
		{"provider not enabled for org", "/v1/audio/speech", "globex", tk("hello"), 403, "provider_disabled", ""},
		{"upstream 500", "/v1/audio/speech", "acme", tk("x", "providerOptions", map[string]any{"fail": map[string]any{"kind": "upstream", "status": 500, "code": "boom"}}), 502, "provider_error", ""},
		{"upstream unavailable", "/v1/audio/speech", "acme", tk("x", "providerOptions", map[string]any{"fail": map[string]any{"kind": "unavailable", "status": 503}}), 503, "provider_unavailable", ""},
		{"provider rejects voice", "/v1/audio/speech", "acme", map[string]any{"model": "espeak", "voice": "zz-nope", "text": "x"}, 422, "provider_rejected_request", ""},
		{"stream fails before audio", "/v1/audio/speech/stream", "acme", tk("x", "providerOptions", map[string]any{"fail": map[string]any{"kind": "upstream", "status": 500, "code": "boom"}}), 502, "provider_error", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tg.do("POST", tt.path, tt.org, tt.body)
			p := r.problem(t, tt.status, tt.code)
			if tt.field != "" {
				ok := false
				for _, v := range p.Validation {
					ok = ok || (len(v.Path) > 0 && v.Path[0] == tt.field)
				}
				if !ok {
					t.Errorf("validation %+v does not name %q", p.Validation, tt.field)
				}
			}
			if tt.code == "provider_error" && (p.Provider != "testkit" || p.UpstreamStatus != 500 || p.UpstreamCode != "boom") {
				t.Errorf("provider fields = %+v", p)
			}
			row := tg.lastLog(tt.org)
			if row.Status != tt.status || row.ErrorCode != tt.code || row.ErrorDetail == "" {
				t.Errorf("log row status %d code %q detail %q", row.Status, row.ErrorCode, row.ErrorDetail)
			}
		})
	}
	// Requests that failed before reaching the provider never called it.
	calls, err := calllog.Read(filepath.Join(tg.dir, "calls.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		if c.Method == "synthesize" || c.Method == "stream" {
			if !strings.Contains(string(c.Options), "fail") {
				t.Errorf("unexpected provider call %+v", c)
			}
		}
	}
}

// TestSpeechStreamPassesBytesThrough proves the gateway relays chunks as
// they come: the plugin sends two chunks and then hangs; the client gets
// those bytes while the plugin is still inside the call. A gateway that
// buffered the stream would deliver nothing until the provider timeout.
func TestSpeechStreamPassesBytesThrough(t *testing.T) {
	tg := startGateway(t, speechConfig)
	// A client that leaves mid-stream stops the provider: this stream would
	// finish on its own in about 1.2 s, well inside the 2 s timeout, so a
	// cancellation seen by the plugin can only come from the disconnect.
	slow := mustJSON(map[string]any{"model": "testkit/test", "voice": "alpha", "text": strings.Repeat("word ", 12),
		"providerOptions": map[string]any{"slow_stream_ms": 100}})
	req, _ := http.NewRequest("POST", tg.base+"/v1/audio/speech/stream", bytes.NewReader(slow))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tg.keys["acme"])
	resp, err := tg.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	if _, err := io.ReadAtLeast(resp.Body, buf, 2); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		calls, _ := calllog.Read(filepath.Join(tg.dir, "calls.jsonl"))
		if last := calls[len(calls)-1]; last.Event == "canceled" && last.Method == "stream" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the plugin call was not cancelled after the client left: %+v", calls[len(calls)-1])
		}
	}

	body, _ := json.Marshal(map[string]any{"model": "testkit/test", "voice": "alpha", "text": "one two three four five",
		"providerOptions": map[string]any{"hang": true, "after_chunks": 2}})
	req, _ = http.NewRequest("POST", tg.base+"/v1/audio/speech/stream", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tg.keys["acme"])
	resp, err = tg.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "audio/pcm;rate=16000" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	n, err := io.ReadAtLeast(resp.Body, buf, 2)
	if err != nil || n == 0 {
		t.Fatalf("no bytes while the plugin is still streaming: %v", err)
	}
	// The plugin is still inside the call: its context has not been
	// cancelled (by the 2 s provider timeout, which is what a buffering
	// gateway would have waited for before sending anything).
	calls, _ := calllog.Read(filepath.Join(tg.dir, "calls.jsonl"))
	if len(calls) == 0 || calls[len(calls)-1].Method != "stream" || calls[len(calls)-1].Event != "" {
		t.Fatalf("bytes arrived only after the plugin call ended: call log %+v", calls)
	}
	resp.Body.Close()

	// A full espeak stream of a long text arrives in many chunks and adds up
	// to a clip of the same length as the whole-clip endpoint's.
	long := strings.Repeat("This sentence is spoken again and again to make a long stream. ", 8)
	req, _ = http.NewRequest("POST", tg.base+"/v1/audio/speech/stream", bytes.NewReader(mustJSON(speechBody(long))))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tg.keys["acme"])
	resp, err = tg.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	reads, total := 0, 0
	br := bufio.NewReaderSize(resp.Body, 1<<20)
	for {
		n, err := br.Read(buf)
		if n > 0 {
			reads++
			total += n
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if reads < 5 || total < 22050*2*10 {
		t.Errorf("stream came in %d reads, %d bytes", reads, total)
	}
	if row := tg.lastLog("acme"); row.Path != "/v1/audio/speech/stream" || row.Status != 200 || row.ErrorCode != "" {
		t.Errorf("stream log row %+v", row)
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func TestPluginCrashIsRestarted(t *testing.T) {
	tg := startGateway(t, speechConfig)
	ok := map[string]any{"model": "testkit/test", "voice": "alpha", "text": "still here"}
	if r := tg.do("POST", "/v1/audio/speech", "acme", ok); r.status != 200 {
		t.Fatalf("before crash: %d %s", r.status, r.body)
	}
	// A crash in the middle of a call fails that call fast with a problem.
	crash := map[string]any{"model": "testkit/test", "voice": "alpha", "text": "x", "providerOptions": map[string]any{"crash": true}}
	r := tg.do("POST", "/v1/audio/speech", "acme", crash)
	r.problem(t, 503, "provider_unavailable")
	// The next request waits for the restarted instance and succeeds.
	if r := tg.do("POST", "/v1/audio/speech", "acme", ok); r.status != 200 {
		t.Fatalf("after crash: %d %s", r.status, r.body)
	}
	// An external kill is noticed and repaired the same way.
	pids := tg.g.PluginPIDs("testkit")
	if len(pids) != 1 {
		t.Fatalf("pids = %v", pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The watcher notices the exit and starts a new process; wait for it
	// (bounded), then the next request succeeds.
	var after []int
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if after = tg.g.PluginPIDs("testkit"); len(after) == 1 && after[0] != pids[0] {
			break
		}
	}
	if len(after) != 1 || after[0] == pids[0] {
		t.Fatalf("pids after restart = %v (killed %d)", after, pids[0])
	}
	if r := tg.do("POST", "/v1/audio/speech", "acme", ok); r.status != 200 {
		t.Fatalf("after kill: %d %s", r.status, r.body)
	}
	if m := tg.metricsBody(); !strings.Contains(string(m), `voxgate_plugin_restarts_total{plugin="testkit"} 2`) {
		t.Errorf("restart metric missing")
	}
}

func TestHangingPluginTimesOutAndOthersProceed(t *testing.T) {
	tg := startGateway(t, speechConfig)
	hang := map[string]any{"model": "testkit/test", "voice": "alpha", "text": "x", "providerOptions": map[string]any{"hang": true}}
	done := make(chan *response, 1)
	go func() { done <- tg.do("POST", "/v1/audio/speech", "acme", hang) }()
	// While the hanging call waits for its 2 s provider timeout, other
	// requests, to the same plugin and to others, are served.
	var wg sync.WaitGroup
	results := make(chan int, 3)
	for _, b := range []map[string]any{speechBody("other providers still work"), {"model": "testkit/test", "voice": "beta", "text": "and the same one"}} {
		wg.Add(1)
		go func() { defer wg.Done(); results <- tg.do("POST", "/v1/audio/speech", "acme", b).status }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); results <- tg.do("GET", "/v1/voices", "acme", nil).status }()
	wg.Wait()
	close(results)
	select {
	case r := <-done:
		t.Fatalf("the hanging call returned (%d) before the others finished", r.status)
	default:
	}
	for st := range results {
		if st != 200 {
			t.Errorf("concurrent request got %d", st)
		}
	}
	r := <-done
	r.problem(t, 504, "provider_timeout")
	tg.flushLogs()
	var p logPage
	tg.do("GET", "/v1/logs?status=504", "acme", nil).json(t, &p)
	if len(p.Data) != 1 || p.Data[0].ErrorCode != "provider_timeout" || p.Data[0].RequestID != r.header.Get("X-Request-Id") {
		t.Errorf("504 rows %+v", p.Data)
	}
}

// TestPluginsDirMissingBinary checks the start-up error names the plugin.
func TestPluginsDirMissingBinary(t *testing.T) {
	_, err := openOnly(t, strings.Replace(speechConfig, "voxgate-espeak", "voxgate-nope", 1))
	if err == nil || !strings.Contains(err.Error(), "providers.espeak.plugin") || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("err = %v", err)
	}
}

// TestGracefulShutdownFinishesInFlight starts a slow stream, shuts the
// gateway down while it runs, and checks the stream completes and its log
// row reached the database.
func TestGracefulShutdownFinishesInFlight(t *testing.T) {
	tg := startGateway(t, speechConfig)
	body := mustJSON(map[string]any{"model": "testkit/test", "voice": "alpha", "text": "one two three four five six",
		"providerOptions": map[string]any{"slow_stream_ms": 100}})
	req, _ := http.NewRequest("POST", tg.base+"/v1/audio/speech/stream", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tg.keys["acme"])
	resp, err := tg.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, 1)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	reqID := resp.Header.Get("X-Request-Id")
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		done <- tg.g.Shutdown(ctx)
	}()
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("in-flight stream cut off by shutdown: %v", err)
	}
	if len(rest) < 16000*2*5/10 { // five more words of at least ~0.1 s each
		t.Fatalf("stream ended early: %d bytes", len(rest))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st, err := bolt.Open(filepath.Join(tg.dir, "voxgate.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, _, _, err := st.ListLogs(context.Background(), "acme", store.LogFilter{}, 10, nil)
	if err != nil || len(rows) != 1 || rows[0].RequestID != reqID || rows[0].Status != 200 {
		t.Fatalf("rows after shutdown %+v %v", rows, err)
	}
}

// TestSpeedWithoutNativeSupport checks the gateway's own time-stretch: a
// model without native speed renders at normal speed and the whole clip is
// stretched (pitch kept), and so is a speed outside a model's native
// range; the stream endpoint refuses such speeds.
func TestSpeedWithoutNativeSupport(t *testing.T) {
	tg := startGateway(t, speechConfig)
	// The test kit's "basic" model has no native speed and no timestamps;
	// "test" has both, so compare their clip lengths at speed 2.
	normal := tg.do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/basic", "voice": "alpha", "text": "one two three four"})
	fast := tg.do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/basic", "voice": "alpha", "text": "one two three four", "speed": 2})
	if normal.status != 200 || fast.status != 200 {
		t.Fatalf("%d %d %s", normal.status, fast.status, fast.body)
	}
	dn, _ := pcmSeconds(t, normal.header.Get("Content-Type"), normal.body)
	df, rms := pcmSeconds(t, fast.header.Get("Content-Type"), fast.body)
	if math.Abs(df-dn/2) > 0.002 || rms < 0.01 {
		t.Errorf("speed 2: %.3fs from %.3fs (rms %.3f)", df, dn, rms)
	}
	calls, _ := calllog.Read(filepath.Join(tg.dir, "calls.jsonl"))
	if last := calls[len(calls)-1]; last.Speed != 0 {
		t.Errorf("the provider was asked for speed %v; it cannot do it", last.Speed)
	}

	// The "test" model honours 0.5 to 2 natively: 1.5 goes to the provider,
	// 3 is rendered at normal speed and stretched, and refused on /stream.
	callsFor := func(speed float64) (float64, float64) {
		r := tg.do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "one two three four", "speed": speed})
		if r.status != 200 {
			t.Fatalf("speed %v: %d %s", speed, r.status, r.body)
		}
		d, _ := pcmSeconds(t, r.header.Get("Content-Type"), r.body)
		calls, _ := calllog.Read(filepath.Join(tg.dir, "calls.jsonl"))
		return calls[len(calls)-1].Speed, d
	}
	sent, _ := callsFor(1.5)
	if sent != 1.5 {
		t.Errorf("speed 1.5 within the native range reached the provider as %v", sent)
	}
	sent, d3 := callsFor(3)
	if sent != 0 || math.Abs(d3-dn/3) > 0.002 {
		t.Errorf("speed 3 beyond the native range: provider asked for %v, clip %.3fs from %.3fs", sent, d3, dn)
	}
	p := tg.do("POST", "/v1/audio/speech/stream", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "x", "speed": 3}).problem(t, 400, "param_not_allowed_on_stream")
	assertPaths(t, p, "speed")
	var cat struct {
		Data []struct {
			ID     string
			Models []struct {
				ID               string      `json:"id"`
				NativeSpeedRange *[2]float64 `json:"native_speed_range"`
			}
		}
	}
	tg.do("GET", "/v1/providers", "acme", nil).json(t, &cat)
	for _, pr := range cat.Data {
		for _, m := range pr.Models {
			switch pr.ID + "/" + m.ID {
			case "testkit/test":
				if m.NativeSpeedRange == nil || *m.NativeSpeedRange != [2]float64{0.5, 2} {
					t.Errorf("testkit/test range %v", m.NativeSpeedRange)
				}
			case "testkit/basic":
				if m.NativeSpeedRange != nil {
					t.Errorf("basic has a speed range %v", m.NativeSpeedRange)
				}
			}
		}
	}
}

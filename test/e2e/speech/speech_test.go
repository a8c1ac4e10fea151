package speech

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
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
	"github.com/voxgate/voxgate/test/e2e/harness"
)

func TestSpeechClipFromESpeak(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	text := "Hello world, this is voxgate speaking."
	r := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text))
	if r.Status != 200 {
		t.Fatalf("speech: %d %s", r.Status, r.Body)
	}
	// No output format asked for: a WAV file, which any player opens and
	// whose header states its length.
	dur, rms := harness.PCMSeconds(t, r.Header.Get("Content-Type"), r.Body)
	if r.Header.Get("Content-Type") != "audio/wav" || binary.LittleEndian.Uint32(harness.Unmarked(r.Body)[40:44]) != uint32(len(harness.Unmarked(r.Body))-44) {
		t.Errorf("Content-Type = %q, %d bytes", r.Header.Get("Content-Type"), len(r.Body))
	}
	// ~6 words at eSpeak's 175 wpm: about 2 s; allow a wide band.
	if dur < 1 || dur > 6 || rms < 0.01 {
		t.Errorf("clip of %.2fs, rms %.4f is not plausible speech for %q", dur, rms, text)
	}
	row := tg.LastLog("acme")
	if row.Status != 200 || row.Provider != "espeak" || row.Model != "espeak-ng" || row.VoiceID != "en" || row.CharCount != len(text) ||
		row.CreditsUsed != 1 || row.Path != "/v1/audio/speech" || row.ErrorCode != "" || row.RequestID != r.Header.Get("X-Request-Id") {
		t.Errorf("log row = %+v", row)
	}

	// Raw PCM only when asked for, and the same audio.
	r = tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text, "output", map[string]any{"format": "pcm"}))
	if r.Status != 200 || r.Header.Get("Content-Type") != "audio/pcm;rate=22050" {
		t.Fatalf("pcm: %d %s %s", r.Status, r.Header.Get("Content-Type"), r.Body[:min(len(r.Body), 200)])
	}
	if d2, _ := harness.PCMSeconds(t, "audio/pcm;rate=22050", r.Body); math.Abs(d2-dur) > 0.01 {
		t.Errorf("pcm duration %.3f vs wav %.3f", d2, dur)
	}
}

func TestSpeechWithTimestamps(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	tests := []struct {
		name  string
		body  map[string]any
		words []string
	}{
		{"plain", harness.SpeechBody("The quick brown fox jumps over the lazy dog."), strings.Fields("The quick brown fox jumps over the lazy dog")},
		{"pronunciations map back", harness.SpeechBody("Welcome to Voxgate today.", "pronunciations", map[string]any{"rules": []any{
			map[string]any{"word": "voxgate", "replacement": "vox gate"}}}), []string{"Welcome", "to", "Voxgate", "today"}},
		{"case sensitive rule does not match", harness.SpeechBody("Welcome to Voxgate.", "pronunciations", map[string]any{"rules": []any{
			map[string]any{"word": "voxgate", "replacement": "vox gate", "caseSensitive": true}}}), []string{"Welcome", "to", "Voxgate"}},
		{"test kit", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "one two three four"}, []string{"one", "two", "three", "four"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", tt.body)
			if r.Status != 200 || r.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			var env harness.TimestampsEnvelope
			r.JSON(t, &env)
			audio, err := base64.StdEncoding.DecodeString(env.Audio)
			if err != nil {
				t.Fatal(err)
			}
			dur, _ := harness.PCMSeconds(t, env.MediaType, audio)
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
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	v := tg.Do("POST", "/v1/voices", "acme", map[string]any{"title": "German", "provider": "espeak", "model": "espeak-ng", "voice_id": "de"}).Voice(t)
	tg.Do("POST", "/v1/voices", "acme", map[string]any{"title": "x", "provider": "espeak", "model": "nope", "voice_id": "de"}).Problem(t, 422, "unknown_model")
	r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"voiceId": v.ID, "text": "Guten Tag"})
	if r.Status != 200 {
		t.Fatalf("saved voice speech: %d %s", r.Status, r.Body)
	}
	if row := tg.LastLog("acme"); row.VoiceRef != v.ID || row.VoiceID != "de" {
		t.Errorf("row voice_ref %q voice_id %q", row.VoiceRef, row.VoiceID)
	}
	// Another org cannot use acme's saved voice.
	tg.Do("POST", "/v1/audio/speech", "globex", map[string]any{"voiceId": v.ID, "text": "hi"}).Problem(t, 404, "voice_not_found")

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
	tg.Do("GET", "/v1/providers", "acme", nil).JSON(t, &cat)
	if len(cat.Data) != 2 || cat.Data[0].ID != "espeak" || cat.Data[0].Name != "eSpeak NG" || !cat.Data[0].Config.Enabled || !cat.Data[0].Config.Managed ||
		cat.Data[0].Status != "available" || cat.Data[0].Models[0].ID != "espeak-ng" || !cat.Data[0].Models[0].Capabilities.Timestamps ||
		cat.Data[0].Models[0].Capabilities.Cloning || cat.Data[0].Models[0].MaxTextChars != 5000 {
		t.Errorf("catalog = %+v", cat)
	}
	if got := strings.Join(cat.Data[0].Models[0].OutputFormats, ","); got != "wav,pcm,mp3,opus,flac,ulaw,alaw" {
		t.Errorf("catalog output formats %s", got)
	}
	tg.Do("GET", "/v1/providers", "globex", nil).JSON(t, &cat)
	if cat.Data[0].Config.Enabled {
		t.Error("globex sees espeak enabled")
	}
	var voices struct {
		Data []struct{ ID, Name, Language, Gender string } `json:"data"`
	}
	tg.Do("GET", "/v1/providers/espeak/voices", "acme", nil).JSON(t, &voices)
	found := false
	for _, pv := range voices.Data {
		if pv.ID == "en" && pv.Language != "" {
			found = true
		}
	}
	if !found || len(voices.Data) < 20 {
		t.Errorf("espeak voices lack \"en\" (%d voices)", len(voices.Data))
	}
	tg.Do("GET", "/v1/providers/nope/voices", "acme", nil).Problem(t, 404, "not_found")
	tg.Do("GET", "/v1/providers/espeak/voices", "globex", nil).Problem(t, 403, "provider_disabled")
}

// TestESpeakLanguageVoices runs README's examples that name eSpeak voices
// by language code (en-gb, en-us), and checks that POST /v1/voices saves
// only voice ids the provider lists, naming close matches otherwise.
func TestESpeakLanguageVoices(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	// README, "Conversations".
	r := tg.Do("POST", "/v1/audio/conversation/with-timestamps", "acme", map[string]any{
		"model": "espeak/espeak-ng", "gapMs": 250, "split": true,
		"turns": []any{
			map[string]any{"voice": "en-gb", "text": "Shall we begin?"},
			map[string]any{"voice": "en-us", "text": "Yes, let us start the meeting."},
		}})
	var convo struct {
		AudioSegments []struct{ TurnIndex int } `json:"audioSegments"`
		FailedTurns   []any                     `json:"failedTurns"`
	}
	if r.JSON(t, &convo); r.Status != 200 || len(convo.AudioSegments) != 2 || len(convo.FailedTurns) != 0 {
		t.Fatalf("README conversation: %d %s", r.Status, r.Body[:min(len(r.Body), 300)])
	}

	// README, "Voices": saved with en-gb, it speaks.
	v := tg.Do("POST", "/v1/voices", "acme", map[string]any{"title": "Narrator", "provider": "espeak", "model": "espeak-ng", "voice_id": "en-gb", "tags": []string{"books"}}).Voice(t)
	if r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"voiceId": v.ID, "text": "Saved voices work too."}); r.Status != 200 || r.Header.Get("Content-Type") != "audio/wav" {
		t.Fatalf("saved en-gb voice: %d %s", r.Status, r.Body[:min(len(r.Body), 300)])
	}
	// A variant through provider_options, on a listed voice id.
	tg.Do("POST", "/v1/voices", "acme", map[string]any{"title": "Narrator, f3", "provider": "espeak", "model": "espeak-ng", "voice_id": "en-gb",
		"provider_options": map[string]any{"variant": "f3"}}).Voice(t)
	if r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"voiceId": v.ID, "text": "A variant."}); r.Status != 200 {
		t.Fatalf("saved en-gb voice with variant f3: %d %s", r.Status, r.Body)
	}

	saved := func() int {
		var page harness.VoicePage
		tg.Do("GET", "/v1/voices?limit=200", "acme", nil).JSON(t, &page)
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
		p := tg.Do("POST", "/v1/voices", "acme", map[string]any{"title": "x", "provider": "espeak", "model": "espeak-ng", "voice_id": tt.voiceID}).Problem(t, 422, "unknown_voice")
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
	t.Parallel()
	tg := harness.Start(t, strings.Replace(harness.SpeechConfig, "storage:", "limits: {max_text_chars: 150}\nstorage:", 1))
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
		{"blank text", "/v1/audio/speech", "acme", harness.SpeechBody("   "), 400, "validation_failed", "text"},
		{"null text", "/v1/audio/speech", "acme", harness.SpeechBody("x", "text", nil), 400, "validation_failed", "text"},
		{"text wrong type", "/v1/audio/speech", "acme", harness.SpeechBody("x", "text", 5), 400, "validation_failed", "text"},
		{"unknown field", "/v1/audio/speech", "acme", harness.SpeechBody("x", "volume", 3), 400, "validation_failed", "volume"},
		{"bad mode", "/v1/audio/speech", "acme", harness.SpeechBody("x", "mode", "loud"), 400, "validation_failed", "mode"},
		{"inline mode with voiceId", "/v1/audio/speech", "acme", map[string]any{"mode": "inline", "voiceId": "1b4e28ba-2fa1-11d2-883f-0016d3cca427", "text": "x"}, 400, "validation_failed", "mode"},
		{"speed too high", "/v1/audio/speech", "acme", harness.SpeechBody("x", "speed", 5), 400, "validation_failed", "speed"},
		{"volume too high", "/v1/audio/speech", "acme", harness.SpeechBody("x", "volumeDbfs", 5), 400, "validation_failed", "volumeDbfs"},
		{"ogg output", "/v1/audio/speech", "acme", harness.SpeechBody("x", "output", map[string]any{"format": "ogg"}), 400, "validation_failed", "output"},
		{"options not object", "/v1/audio/speech", "acme", harness.SpeechBody("x", "providerOptions", []int{1}), 400, "validation_failed", "providerOptions"},
		{"empty pronunciation", "/v1/audio/speech", "acme", harness.SpeechBody("x", "pronunciations", map[string]any{"rules": []any{map[string]any{"word": "", "replacement": "y"}}}), 400, "validation_failed", "pronunciations"},
		{"output on stream", "/v1/audio/speech/stream", "acme", harness.SpeechBody("x", "output", map[string]any{"format": "wav"}), 400, "param_not_allowed_on_stream", "output"},
		{"volume on stream", "/v1/audio/speech/stream", "acme", harness.SpeechBody("x", "volumeDbfs", -20), 400, "param_not_allowed_on_stream", "volumeDbfs"},
		{"unknown provider", "/v1/audio/speech", "acme", map[string]any{"model": "nope/x", "voice": "v", "text": "x"}, 422, "unknown_provider", ""},
		{"unknown model", "/v1/audio/speech", "acme", map[string]any{"model": "espeak/nope", "voice": "v", "text": "x"}, 422, "unknown_model", ""},
		{"saved voice missing", "/v1/audio/speech", "acme", map[string]any{"voiceId": "1b4e28ba-2fa1-11d2-883f-0016d3cca427", "text": "x"}, 404, "voice_not_found", ""},
		{"saved voice not uuid", "/v1/audio/speech", "acme", map[string]any{"voiceId": "abc", "text": "x"}, 404, "voice_not_found", ""},
		{"text too long", "/v1/audio/speech", "acme", tk(strings.Repeat("a", 151)), 422, "text_too_long", ""},
		{"only unperformed audio tags", "/v1/audio/speech", "acme", tk("[laughs] [sighs]"), 400, "validation_failed", "text"},
		{"captions on the clip endpoint", "/v1/audio/speech", "acme", harness.SpeechBody("x", "captions", "srt"), 400, "validation_failed", "captions"},
		{"unknown captions format", "/v1/audio/speech/with-timestamps", "acme", harness.SpeechBody("x", "captions", "ass"), 400, "validation_failed", "captions"},
		{"no timestamps", "/v1/audio/speech/with-timestamps", "acme", map[string]any{"model": "testkit/basic", "voice": "alpha", "text": "x"}, 503, "timestamps_unavailable", ""},
		{"no streaming", "/v1/audio/speech/stream", "acme", map[string]any{"model": "testkit/basic", "voice": "alpha", "text": "x"}, 501, "streaming_unsupported", ""},

		{"disabled provider", "/v1/audio/speech", "globex", harness.SpeechBody("hello"), 403, "provider_disabled", ""},
		{"provider not enabled for org", "/v1/audio/speech", "globex", tk("hello"), 403, "provider_disabled", ""},
		{"upstream 500", "/v1/audio/speech", "acme", tk("x", "providerOptions", map[string]any{"fail": map[string]any{"kind": "upstream", "status": 500, "code": "boom"}}), 502, "provider_error", ""},
		{"upstream unavailable", "/v1/audio/speech", "acme", tk("x", "providerOptions", map[string]any{"fail": map[string]any{"kind": "unavailable", "status": 503}}), 503, "provider_unavailable", ""},
		{"provider rejects voice", "/v1/audio/speech", "acme", map[string]any{"model": "espeak", "voice": "zz-nope", "text": "x"}, 422, "provider_rejected_request", ""},
		{"stream fails before audio", "/v1/audio/speech/stream", "acme", tk("x", "providerOptions", map[string]any{"fail": map[string]any{"kind": "upstream", "status": 500, "code": "boom"}}), 502, "provider_error", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tg.Do("POST", tt.path, tt.org, tt.body)
			p := r.Problem(t, tt.status, tt.code)
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
			row := tg.LastLog(tt.org)
			if row.Status != tt.status || row.ErrorCode != tt.code || row.ErrorDetail == "" {
				t.Errorf("log row status %d code %q detail %q", row.Status, row.ErrorCode, row.ErrorDetail)
			}
		})
	}
	// Requests that failed before reaching the provider never called it.
	calls, err := calllog.Read(filepath.Join(tg.Dir, "calls.jsonl"))
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
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	// A client that leaves mid-stream stops the provider: this stream would
	// finish on its own in about 1.2 s, well inside the 2 s timeout, so a
	// cancellation seen by the plugin can only come from the disconnect.
	slow := harness.MustJSON(map[string]any{"model": "testkit/test", "voice": "alpha", "text": strings.Repeat("word ", 12),
		"providerOptions": map[string]any{"slow_stream_ms": 100}})
	req, _ := http.NewRequest("POST", tg.Base+"/v1/audio/speech/stream", bytes.NewReader(slow))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tg.Keys["acme"])
	resp, err := tg.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	if _, err := io.ReadAtLeast(resp.Body, buf, 2); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		calls, _ := calllog.Read(filepath.Join(tg.Dir, "calls.jsonl"))
		if last := calls[len(calls)-1]; last.Event == "canceled" && last.Method == "stream" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the plugin call was not cancelled after the client left: %+v", calls[len(calls)-1])
		}
	}

	body, _ := json.Marshal(map[string]any{"model": "testkit/test", "voice": "alpha", "text": "one two three four five",
		"providerOptions": map[string]any{"hang": true, "after_chunks": 2}})
	req, _ = http.NewRequest("POST", tg.Base+"/v1/audio/speech/stream", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tg.Keys["acme"])
	resp, err = tg.Client.Do(req)
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
	calls, _ := calllog.Read(filepath.Join(tg.Dir, "calls.jsonl"))
	if len(calls) == 0 || calls[len(calls)-1].Method != "stream" || calls[len(calls)-1].Event != "" {
		t.Fatalf("bytes arrived only after the plugin call ended: call log %+v", calls)
	}
	resp.Body.Close()

	// A full espeak stream of a long text arrives in many chunks and adds up
	// to a clip of the same length as the whole-clip endpoint's.
	long := strings.Repeat("This sentence is spoken again and again to make a long stream. ", 8)
	req, _ = http.NewRequest("POST", tg.Base+"/v1/audio/speech/stream", bytes.NewReader(harness.MustJSON(harness.SpeechBody(long))))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tg.Keys["acme"])
	resp, err = tg.Client.Do(req)
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
	if row := tg.LastLog("acme"); row.Path != "/v1/audio/speech/stream" || row.Status != 200 || row.ErrorCode != "" {
		t.Errorf("stream log row %+v", row)
	}
}

func TestPluginCrashIsRestarted(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	ok := map[string]any{"model": "testkit/test", "voice": "alpha", "text": "still here"}
	if r := tg.Do("POST", "/v1/audio/speech", "acme", ok); r.Status != 200 {
		t.Fatalf("before crash: %d %s", r.Status, r.Body)
	}
	// A crash in the middle of a call fails that call fast with a problem.
	crash := map[string]any{"model": "testkit/test", "voice": "alpha", "text": "x", "providerOptions": map[string]any{"crash": true}}
	r := tg.Do("POST", "/v1/audio/speech", "acme", crash)
	r.Problem(t, 503, "provider_unavailable")
	// The next request waits for the restarted instance and succeeds.
	if r := tg.Do("POST", "/v1/audio/speech", "acme", ok); r.Status != 200 {
		t.Fatalf("after crash: %d %s", r.Status, r.Body)
	}
	// An external kill is noticed and repaired the same way.
	pids := tg.Core.PluginPIDs("testkit")
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
		if after = tg.Core.PluginPIDs("testkit"); len(after) == 1 && after[0] != pids[0] {
			break
		}
	}
	if len(after) != 1 || after[0] == pids[0] {
		t.Fatalf("pids after restart = %v (killed %d)", after, pids[0])
	}
	if r := tg.Do("POST", "/v1/audio/speech", "acme", ok); r.Status != 200 {
		t.Fatalf("after kill: %d %s", r.Status, r.Body)
	}
	if m := tg.MetricsBody(); !strings.Contains(string(m), `voxgate_plugin_restarts_total{plugin="testkit"} 2`) {
		t.Errorf("restart metric missing")
	}
}

func TestHangingPluginTimesOutAndOthersProceed(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	hang := map[string]any{"model": "testkit/test", "voice": "alpha", "text": "x", "providerOptions": map[string]any{"hang": true}}
	done := make(chan *harness.Response, 1)
	go func() { done <- tg.Do("POST", "/v1/audio/speech", "acme", hang) }()
	// While the hanging call waits for its 2 s provider timeout, other
	// requests, to the same plugin and to others, are served.
	var wg sync.WaitGroup
	results := make(chan int, 3)
	for _, b := range []map[string]any{harness.SpeechBody("other providers still work"), {"model": "testkit/test", "voice": "beta", "text": "and the same one"}} {
		wg.Add(1)
		go func() { defer wg.Done(); results <- tg.Do("POST", "/v1/audio/speech", "acme", b).Status }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); results <- tg.Do("GET", "/v1/voices", "acme", nil).Status }()
	wg.Wait()
	close(results)
	select {
	case r := <-done:
		t.Fatalf("the hanging call returned (%d) before the others finished", r.Status)
	default:
	}
	for st := range results {
		if st != 200 {
			t.Errorf("concurrent request got %d", st)
		}
	}
	r := <-done
	r.Problem(t, 504, "provider_timeout")
	tg.FlushLogs()
	var p harness.LogPage
	tg.Do("GET", "/v1/logs?status=504", "acme", nil).JSON(t, &p)
	if len(p.Data) != 1 || p.Data[0].ErrorCode != "provider_timeout" || p.Data[0].RequestID != r.Header.Get("X-Request-Id") {
		t.Errorf("504 rows %+v", p.Data)
	}
}

// TestPluginsDirMissingBinary checks the start-up error names the plugin.
func TestPluginsDirMissingBinary(t *testing.T) {
	t.Parallel()
	_, err := harness.OpenOnly(t, strings.Replace(harness.SpeechConfig, "voxgate-espeak", "voxgate-nope", 1))
	if err == nil || !strings.Contains(err.Error(), "providers.espeak.plugin") || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("err = %v", err)
	}
}

// TestGracefulShutdownFinishesInFlight starts a slow stream, shuts the
// gateway down while it runs, and checks the stream completes and its log
// row reached the database.
func TestGracefulShutdownFinishesInFlight(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	body := harness.MustJSON(map[string]any{"model": "testkit/test", "voice": "alpha", "text": "one two three four five six",
		"providerOptions": map[string]any{"slow_stream_ms": 100}})
	req, _ := http.NewRequest("POST", tg.Base+"/v1/audio/speech/stream", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tg.Keys["acme"])
	resp, err := tg.Client.Do(req)
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
		done <- tg.Core.Shutdown(ctx)
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
	st, err := bolt.Open(filepath.Join(tg.Dir, "voxgate.db"), store.Options{})
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
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	// The test kit's "basic" model has no native speed and no timestamps;
	// "test" has both, so compare their clip lengths at speed 2.
	normal := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/basic", "voice": "alpha", "text": "one two three four"})
	fast := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/basic", "voice": "alpha", "text": "one two three four", "speed": 2})
	if normal.Status != 200 || fast.Status != 200 {
		t.Fatalf("%d %d %s", normal.Status, fast.Status, fast.Body)
	}
	dn, _ := harness.PCMSeconds(t, normal.Header.Get("Content-Type"), normal.Body)
	df, rms := harness.PCMSeconds(t, fast.Header.Get("Content-Type"), fast.Body)
	if math.Abs(df-dn/2) > 0.002 || rms < 0.01 {
		t.Errorf("speed 2: %.3fs from %.3fs (rms %.3f)", df, dn, rms)
	}
	calls, _ := calllog.Read(filepath.Join(tg.Dir, "calls.jsonl"))
	if last := calls[len(calls)-1]; last.Speed != 0 {
		t.Errorf("the provider was asked for speed %v; it cannot do it", last.Speed)
	}

	// The "test" model honours 0.5 to 2 natively: 1.5 goes to the provider,
	// 3 is rendered at normal speed and stretched, and refused on /stream.
	callsFor := func(speed float64) (float64, float64) {
		r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "one two three four", "speed": speed})
		if r.Status != 200 {
			t.Fatalf("speed %v: %d %s", speed, r.Status, r.Body)
		}
		d, _ := harness.PCMSeconds(t, r.Header.Get("Content-Type"), r.Body)
		calls, _ := calllog.Read(filepath.Join(tg.Dir, "calls.jsonl"))
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
	p := tg.Do("POST", "/v1/audio/speech/stream", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "x", "speed": 3}).Problem(t, 400, "param_not_allowed_on_stream")
	harness.AssertPaths(t, p, "speed")
	var cat struct {
		Data []struct {
			ID     string
			Models []struct {
				ID               string      `json:"id"`
				NativeSpeedRange *[2]float64 `json:"native_speed_range"`
			}
		}
	}
	tg.Do("GET", "/v1/providers", "acme", nil).JSON(t, &cat)
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

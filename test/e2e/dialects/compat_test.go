package dialects

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/openaimoderation"
	"github.com/voxgate/voxgate/internal/testplugin/calllog"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// The behaviour docs/compatibility.md promises beyond the spec: the
// hosted service's documented paths, shapes and codes. TestDocExamples
// (docexamples_test.go) runs the documentation's own curl examples.

// TestDocumentedReads: the public health probe, the providers list at the
// documented path and shape, one log row by request id, and the request
// id headers on every kind of response.
func TestDocumentedReads(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)

	// /health needs no key.
	if r := tg.Do("GET", "/health", "", nil); r.Status != 200 || string(r.Body) != `{"status":"ok"}` {
		t.Errorf("/health = %d %s", r.Status, r.Body)
	}

	// The documented providers list: flags at the top level, prefixed
	// model strings.
	var providers struct {
		Data []struct {
			ID                     string
			Name                   string
			Enabled, BYOK, Managed bool
			Models                 []string
		}
	}
	tg.Do("GET", "/v1/audio/providers", "acme", nil).JSON(t, &providers)
	got := map[string]int{}
	for i, p := range providers.Data {
		got[p.ID] = i
	}
	es, ok := got["espeak"]
	if !ok || len(providers.Data) != 2 {
		t.Fatalf("providers %+v", providers.Data)
	}
	if p := providers.Data[es]; p.Name == "" || !p.Enabled || p.BYOK || !p.Managed || len(p.Models) != 1 || p.Models[0] != "espeak/espeak-ng" {
		t.Errorf("espeak entry %+v", p)
	}
	tg.Do("GET", "/v1/audio/providers", "globex", nil).JSON(t, &providers)
	if p := providers.Data[got["espeak"]]; p.ID != "espeak" || p.Enabled {
		t.Errorf("globex's espeak entry %+v: not enabled for globex", p)
	}
	tg.Do("GET", "/v1/audio/providers?x=1", "acme", nil).Problem(t, 400, "validation_failed")
	tg.Do("GET", "/v1/audio/providers", "", nil).Problem(t, 401, "unauthorized")

	// One log row by request id: a generated one, and a client's own.
	r := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody("Logged by id."))
	if r.Status != 200 {
		t.Fatalf("speech: %d %s", r.Status, r.Body)
	}
	id := r.Header.Get("X-Request-Id")
	if _, err := uuid.Parse(id); err != nil || r.Header.Get("X-Speechbase-Request-Id") != id {
		t.Fatalf("request id headers %q / %q", id, r.Header.Get("X-Speechbase-Request-Id"))
	}
	mine := "client-chosen-" + uuid.NewString()[:8]
	tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody("x", "voice", "no-such-voice"), "X-Request-Id", mine)
	tg.FlushLogs()
	var one struct{ Data harness.LogRow }
	tg.Do("GET", "/v1/logs/"+id, "acme", nil).JSON(t, &one)
	if one.Data.RequestID != id || one.Data.Status != 200 || one.Data.Provider != "espeak" || one.Data.CharCount != len("Logged by id.") || one.Data.Path != "/v1/audio/speech" {
		t.Errorf("row %+v", one.Data)
	}
	tg.Do("GET", "/v1/logs/"+mine, "acme", nil).JSON(t, &one)
	if one.Data.RequestID != mine || one.Data.Status < 400 || one.Data.ErrorCode == "" {
		t.Errorf("the failed request's row %+v", one.Data)
	}
	// Another organization's row is 404, like a missing one.
	tg.Do("GET", "/v1/logs/"+id, "globex", nil).Problem(t, 404, "not_found")
	tg.Do("GET", "/v1/logs/"+uuid.NewString(), "acme", nil).Problem(t, 404, "not_found")
	p := tg.Do("GET", "/v1/logs/"+strings.Repeat("x", 200), "acme", nil).Problem(t, 400, "validation_failed")
	if len(p.Validation) != 1 || p.Validation[0].Path[0] != "requestId" {
		t.Errorf("validation %+v", p.Validation)
	}
	tg.Do("GET", "/v1/logs/"+id+"?limit=1", "acme", nil).Problem(t, 400, "validation_failed")

	// Both request id headers on every response: success, problem,
	// unauthorized, unmatched route, method not allowed.
	for _, rr := range []*harness.Response{
		tg.Do("GET", "/health", "", nil),
		tg.Do("GET", "/v1/voices", "", nil),
		tg.Do("GET", "/v1/nothing-here", "acme", nil),
		tg.Do("PATCH", "/v1/logs", "acme", nil),
		tg.Do("GET", "/v1/logs/"+id, "acme", nil),
	} {
		h := rr.Header.Get("X-Request-Id")
		if h == "" || rr.Header.Get("X-Speechbase-Request-Id") != h {
			t.Errorf("status %d: X-Request-Id %q, X-Speechbase-Request-Id %q", rr.Status, h, rr.Header.Get("X-Speechbase-Request-Id"))
		}
	}
}

// lastCall returns the newest synthesize call the test plugin received.
func lastCall(t *testing.T, tg *harness.Gateway) calllog.Call {
	t.Helper()
	calls, err := calllog.Read(filepath.Join(tg.Dir, "calls.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for i := len(calls) - 1; i >= 0; i-- {
		if calls[i].Method == "synthesize" || calls[i].Method == "stream" {
			return calls[i]
		}
	}
	t.Fatal("the plugin received no synthesis call")
	return calllog.Call{}
}

// TestDocumentedRequestShapes: bodies with and without mode, the output
// shorthand, instructions, a saved voice's options merged with the
// request's, and the timestamps modes of the speech endpoints.
func TestDocumentedRequestShapes(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	voiceID := tg.Do("POST", "/v1/voices", "acme", map[string]any{"title": "Kit", "provider": "testkit", "model": "test", "voice_id": "alpha",
		"provider_options": map[string]any{"saved": 1, "both": "voice"}}).Voice(t).ID

	for _, tc := range []struct {
		name string
		body map[string]any
	}{
		{"inline without mode", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "hi"}},
		{"inline with mode", map[string]any{"mode": "inline", "model": "testkit/test", "voice": "alpha", "text": "hi"}},
		{"voice without mode", map[string]any{"voiceId": voiceID, "text": "hi"}},
		{"voice with mode", map[string]any{"mode": "voice", "voiceId": voiceID, "text": "hi"}},
	} {
		if r := tg.Do("POST", "/v1/audio/speech", "acme", tc.body); r.Status != 200 {
			t.Errorf("%s: %d %s", tc.name, r.Status, r.Body)
		}
	}
	p := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"mode": "voice", "model": "testkit/test", "voice": "alpha", "text": "hi"}).Problem(t, 400, "validation_failed")
	if p.Validation[0].Path[0] != "mode" {
		t.Errorf("mode mismatch names %v", p.Validation)
	}

	// output: the string shorthand and the object.
	for _, tc := range []struct {
		output any
		media  string
	}{
		{"mp3", "audio/mpeg"},
		{"wav", "audio/wav"},
		{"pcm", "audio/pcm;rate=16000"},
		{map[string]any{"format": "mp3", "bitrate": 64}, "audio/mpeg"},
	} {
		r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "hi", "output": tc.output})
		if r.Status != 200 || r.Header.Get("Content-Type") != tc.media {
			t.Errorf("output %v: %d %s %s", tc.output, r.Status, r.Header.Get("Content-Type"), r.Body[:min(len(r.Body), 200)])
		}
	}
	for _, tc := range []struct {
		output any
		path   []string
	}{
		{"ogg-vorbis-9000", []string{"output", "format"}},
		{42, []string{"output"}},
		{[]string{"mp3"}, []string{"output"}},
		{map[string]any{"format": "mp3", "colour": "red"}, []string{"output", "colour"}},
		{map[string]any{"format": "mp3", "bitrate": "fast"}, []string{"output", "bitrate"}},
		{map[string]any{"format": "wav", "bitrate": 96}, []string{"output", "bitrate"}},
	} {
		p := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "hi", "output": tc.output}).Problem(t, 400, "validation_failed")
		if len(p.Validation) == 0 || strings.Join(p.Validation[0].Path, ".") != strings.Join(tc.path, ".") {
			t.Errorf("output %v: validation %+v, want path %v", tc.output, p.Validation, tc.path)
		}
	}
	tg.Do("POST", "/v1/audio/speech/stream", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "hi", "output": "mp3"}).Problem(t, 400, "param_not_allowed_on_stream")

	// instructions reach the provider as providerOptions.instructions, and
	// a saved voice's options merge under the request's.
	if r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"voiceId": voiceID, "text": "calm", "instructions": "Speak calmly.",
		"providerOptions": map[string]any{"both": "request", "extra": true}}); r.Status != 200 {
		t.Fatalf("instructions: %d %s", r.Status, r.Body)
	}
	var opts map[string]any
	if err := json.Unmarshal(lastCall(t, tg).Options, &opts); err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"saved": 1.0, "both": "request", "extra": true, "instructions": "Speak calmly."}; !reflect.DeepEqual(opts, want) {
		t.Errorf("options the provider got %v, want %v", opts, want)
	}
	for _, body := range []map[string]any{
		{"model": "testkit/test", "voice": "alpha", "text": "x", "instructions": "a", "providerOptions": map[string]any{"instructions": "b"}},
		{"model": "testkit/test", "voice": "alpha", "text": "x", "instructions": ""},
		{"model": "testkit/test", "voice": "alpha", "text": "x", "instructions": strings.Repeat("i", 4001)},
	} {
		p := tg.Do("POST", "/v1/audio/speech", "acme", body).Problem(t, 400, "validation_failed")
		if p.Validation[0].Path[0] != "instructions" {
			t.Errorf("%v: %+v", body["instructions"], p.Validation)
		}
	}

	// timestamps: on (the default) needs them, auto goes without, off
	// skips them.
	basic := func(mode string) map[string]any {
		b := map[string]any{"model": "testkit/basic", "voice": "alpha", "text": "no timings here"}
		if mode != "" {
			b["timestamps"] = mode
		}
		return b
	}
	tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", basic("")).Problem(t, 503, "timestamps_unavailable")
	tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", basic("on")).Problem(t, 503, "timestamps_unavailable")
	var env struct {
		Audio      string
		MediaType  string
		Timestamps []struct{ Text string }
		Warnings   []string
	}
	tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", basic("auto")).JSON(t, &env)
	if env.Audio == "" || env.Timestamps == nil || len(env.Timestamps) != 0 || len(env.Warnings) != 1 || !strings.Contains(env.Warnings[0], "auto") {
		t.Errorf("auto without timestamps: %+v", env)
	}
	env.Warnings, env.Timestamps = nil, nil
	tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", harness.SpeechBody("Four words are here.", "timestamps", "auto")).JSON(t, &env)
	if len(env.Timestamps) != 4 || len(env.Warnings) != 0 {
		t.Errorf("auto with timestamps: %+v", env)
	}
	env.Timestamps = nil
	tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", harness.SpeechBody("Four words are here.", "timestamps", "off")).JSON(t, &env)
	if env.Audio == "" || env.Timestamps == nil || len(env.Timestamps) != 0 || len(env.Warnings) != 0 {
		t.Errorf("off: %+v", env)
	}
	if r := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody("x", "timestamps", "off")); r.Status != 200 {
		t.Errorf("off on the plain endpoint: %d %s", r.Status, r.Body)
	}
	for _, tc := range []struct{ path, mode string }{
		{"/v1/audio/speech", "on"}, {"/v1/audio/speech/stream", "auto"}, {"/v1/audio/speech/with-timestamps", "sometimes"},
	} {
		p := tg.Do("POST", tc.path, "acme", harness.SpeechBody("x", "timestamps", tc.mode)).Problem(t, 400, "validation_failed")
		if p.Validation[0].Path[0] != "timestamps" {
			t.Errorf("%s %s: %+v", tc.path, tc.mode, p.Validation)
		}
	}
}

// TestDocumentedConversationShapes: turns with and without mode, the split
// answer of the plain endpoint with durationMs, normalizeVolume, and the
// timestamps modes of a conversation.
func TestDocumentedConversationShapes(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	voiceID := tg.Do("POST", "/v1/voices", "acme", map[string]any{"title": "Kit", "provider": "testkit", "model": "test", "voice_id": "beta"}).Voice(t).ID
	turns := []any{
		map[string]any{"mode": "inline", "model": "testkit/test", "voice": "alpha", "text": "First speaker here."},
		map[string]any{"mode": "voice", "voiceId": voiceID, "text": "Second speaker, saved."},
		map[string]any{"model": "testkit/test", "voice": "beta", "text": "Third, no mode."},
	}

	// The plain endpoint with split answers JSON: one segment per turn.
	var split struct {
		AudioSegments []struct {
			Audio      string
			MediaType  string
			DurationMs int64
			TurnIndex  int
			Timestamps any
		}
		Warnings    []string
		FailedTurns []any
	}
	r := tg.Do("POST", "/v1/audio/conversation", "acme", map[string]any{"turns": turns, "split": true, "output": "pcm"})
	if r.Status != 200 || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("split: %d %s", r.Status, r.Header.Get("Content-Type"))
	}
	r.JSON(t, &split)
	if len(split.AudioSegments) != 3 || split.Warnings == nil || split.FailedTurns == nil {
		t.Fatalf("split answer %+v", split)
	}
	rms := make([]float64, 3)
	for i, seg := range split.AudioSegments {
		data, err := base64.StdEncoding.DecodeString(seg.Audio)
		if err != nil {
			t.Fatal(err)
		}
		secs, level := harness.PCMSeconds(t, seg.MediaType, data)
		if seg.TurnIndex != i || seg.Timestamps != nil || seg.DurationMs <= 0 || math.Abs(float64(seg.DurationMs)-secs*1000) > 1 {
			t.Errorf("segment %d: turn %d, %d ms for %.3f s, timestamps %v", i, seg.TurnIndex, seg.DurationMs, secs, seg.Timestamps)
		}
		rms[i] = level
	}
	// Leveled to the default -20 dBFS (RMS 0.1) unless normalizeVolume is
	// false.
	for i, level := range rms {
		if math.Abs(level-0.1) > 0.01 {
			t.Errorf("segment %d RMS %.3f, want 0.1 (-20 dBFS)", i, level)
		}
	}
	r = tg.Do("POST", "/v1/audio/conversation", "acme", map[string]any{"turns": turns, "split": true, "output": "pcm", "normalizeVolume": false})
	r.JSON(t, &split)
	for i, seg := range split.AudioSegments {
		data, _ := base64.StdEncoding.DecodeString(seg.Audio)
		if _, level := harness.PCMSeconds(t, seg.MediaType, data); math.Abs(level-0.1) < 0.02 {
			t.Errorf("segment %d RMS %.3f: leveled although normalizeVolume is false", i, level)
		}
	}
	p := tg.Do("POST", "/v1/audio/conversation", "acme", map[string]any{"turns": turns, "normalizeVolume": false, "volumeDbfs": -16}).Problem(t, 400, "validation_failed")
	if p.Validation[0].Path[0] != "volumeDbfs" {
		t.Errorf("volumeDbfs without leveling: %+v", p.Validation)
	}

	// with-timestamps and split: segments carry durationMs and their
	// timestamps.
	var env struct {
		Timestamps    []struct{ TurnIndex int }
		AudioSegments []struct {
			DurationMs int64
			Timestamps []struct{ Text string }
		}
		Warnings []string
	}
	tg.Do("POST", "/v1/audio/conversation/with-timestamps", "acme", map[string]any{"turns": turns, "split": true, "timestamps": "on", "output": "mp3"}).JSON(t, &env)
	if len(env.AudioSegments) != 3 || env.AudioSegments[0].DurationMs <= 0 || len(env.AudioSegments[0].Timestamps) == 0 || len(env.Timestamps) == 0 {
		t.Errorf("with-timestamps split %+v", env)
	}

	// timestamps modes: a turn of a model without timestamps.
	mixed := []any{turns[0], map[string]any{"model": "testkit/basic", "voice": "alpha", "text": "No timings."}}
	tg.Do("POST", "/v1/audio/conversation/with-timestamps", "acme", map[string]any{"turns": mixed}).Problem(t, 503, "timestamps_unavailable")
	env.Timestamps, env.Warnings = nil, nil
	tg.Do("POST", "/v1/audio/conversation/with-timestamps", "acme", map[string]any{"turns": mixed, "timestamps": "auto"}).JSON(t, &env)
	if len(env.Timestamps) == 0 || len(env.Warnings) != 1 {
		t.Errorf("auto: %+v", env)
	}
	for _, tw := range env.Timestamps {
		if tw.TurnIndex != 0 {
			t.Errorf("a timestamp of turn %d, which has none", tw.TurnIndex)
		}
	}
	env.Timestamps = nil
	tg.Do("POST", "/v1/audio/conversation/with-timestamps", "acme", map[string]any{"turns": turns, "timestamps": "off"}).JSON(t, &env)
	if len(env.Timestamps) != 0 {
		t.Errorf("off: %d timestamps", len(env.Timestamps))
	}
	tg.Do("POST", "/v1/audio/conversation", "acme", map[string]any{"turns": turns, "timestamps": "on"}).Problem(t, 400, "validation_failed")
	p = tg.Do("POST", "/v1/audio/conversation", "acme", map[string]any{"turns": []any{map[string]any{"mode": "voice", "model": "testkit/test", "voice": "alpha", "text": "x"}}}).Problem(t, 400, "validation_failed")
	if strings.Join(p.Validation[0].Path, ".") != "turns.0.mode" {
		t.Errorf("a turn's mode mismatch: %+v", p.Validation)
	}
}

// TestProviderKeysAPI: PUT and DELETE /v1/api-keys/{providerId}. A key is
// checked with a tiny synthesis before it is stored, scoped to the
// organization that stored it, encrypted at rest and never shown again;
// one the provider refuses is not stored and the answer says why.
func TestProviderKeysAPI(t *testing.T) {
	t.Parallel()
	c := harness.StartCloud(t)
	const wrongKey = "xi-initech-wrong-key-3333333333333333"
	c.Secrets = append(c.Secrets, wrongKey)
	voice := c.ElevenLabs.VoiceIDs()[0]
	speak := func(org string) *harness.Response {
		return c.Do("POST", "/v1/audio/speech", org, map[string]any{"model": "elevenlabs", "voice": voice, "text": "Mine."})
	}
	byok := func(org, provider string) bool {
		var list struct {
			Data []struct {
				ID   string
				BYOK bool
			}
		}
		c.Do("GET", "/v1/audio/providers", org, nil).JSON(t, &list)
		for _, p := range list.Data {
			if p.ID == provider {
				return p.BYOK
			}
		}
		t.Fatalf("%s not listed", provider)
		return false
	}
	speak("initech").Problem(t, 403, "no_api_key")
	if byok("initech", "elevenlabs") {
		t.Fatal("initech has no key yet")
	}

	// A key the provider refuses: 400, the provider's answer, no key.
	before := c.ElevenLabs.CallsTo("/v1/voices")
	r := c.Do("PUT", "/v1/api-keys/elevenlabs", "initech", map[string]any{"keyValue": wrongKey})
	p := r.Problem(t, 400, "provider_key_rejected")
	if p.Provider != "elevenlabs" || p.UpstreamStatus != 401 || !strings.Contains(p.Detail, "not stored") {
		t.Errorf("rejection %+v", p)
	}
	if bytes.Contains(r.Body, []byte(wrongKey)) || bytes.Contains(r.Body, []byte(wrongKey[:12])) {
		t.Errorf("the rejection shows the key: %s", r.Body)
	}
	if c.ElevenLabs.CallsTo("/v1/voices") != before+1 {
		t.Error("the key was not checked with the provider")
	}
	speak("initech").Problem(t, 403, "no_api_key")

	// A good key: checked with a tiny synthesis, stored, used.
	synth := c.ElevenLabs.CallsTo("/v1/text-to-speech/" + voice)
	r = c.Do("PUT", "/v1/api-keys/elevenlabs", "initech", map[string]any{"keyValue": harness.AcmeElevenKey})
	if r.Status != 200 {
		t.Fatalf("put: %d %s", r.Status, r.Body)
	}
	var stored struct {
		Data struct {
			ProviderID string
			LastFour   string
			UpdatedAt  time.Time
		}
	}
	r.JSON(t, &stored)
	if stored.Data.ProviderID != "elevenlabs" || stored.Data.LastFour != harness.AcmeElevenKey[len(harness.AcmeElevenKey)-4:] || time.Since(stored.Data.UpdatedAt) > time.Minute {
		t.Errorf("answer %+v", stored.Data)
	}
	if bytes.Contains(r.Body, []byte(harness.AcmeElevenKey)) || bytes.Contains(r.Body, []byte(harness.AcmeElevenKey[:12])) {
		t.Errorf("the answer shows the key: %s", r.Body)
	}
	if n := c.ElevenLabs.CallsTo("/v1/text-to-speech/"+voice) - synth; n != 1 {
		t.Errorf("%d check syntheses, want 1", n)
	}
	if r := speak("initech"); r.Status != 200 {
		t.Fatalf("speech with the stored key: %d %s", r.Status, r.Body)
	}
	if last, _ := c.ElevenLabs.LastRequest(); last.Header.Get("xi-api-key") != harness.AcmeElevenKey {
		t.Error("the provider did not get initech's stored key")
	}
	if !byok("initech", "elevenlabs") || byok("globex", "elevenlabs") {
		t.Error("byok flags: initech has a key now, globex none")
	}
	if row := c.LastLog("initech"); row.Status != 200 || strings.Contains(row.ProviderOptions, harness.AcmeElevenKey) {
		t.Errorf("row %+v", row)
	}
	// GET /v1/api-keys lists the stored key by its last four only, to its
	// own organization only; keys in gateway.yaml are not listed.
	type keyPage struct {
		Data []struct {
			ProviderID string
			LastFour   string
			UpdatedAt  time.Time
		}
		NextCursor string `json:"next_cursor"`
		HasMore    bool   `json:"has_more"`
		Limit      int
	}
	var kp keyPage
	r = c.Do("GET", "/v1/api-keys", "initech", nil)
	r.JSON(t, &kp)
	if len(kp.Data) != 1 || kp.Data[0].ProviderID != "elevenlabs" || kp.Data[0].LastFour != stored.Data.LastFour ||
		!kp.Data[0].UpdatedAt.Equal(stored.Data.UpdatedAt) || kp.HasMore || kp.Limit != 50 {
		t.Errorf("initech's keys: %s", r.Body)
	}
	if bytes.Contains(r.Body, []byte(harness.AcmeElevenKey[:12])) {
		t.Errorf("the list shows the key: %s", r.Body)
	}
	kp = keyPage{}
	r = c.Do("GET", "/v1/api-keys?limit=1", "globex", nil)
	if r.JSON(t, &kp); len(kp.Data) != 0 || kp.HasMore {
		t.Errorf("globex sees keys: %s", r.Body)
	}
	c.Do("GET", "/v1/api-keys?limit=0", "initech", nil).Problem(t, 400, "validation_failed")
	c.Do("GET", "/v1/api-keys?limit=201", "initech", nil).Problem(t, 400, "validation_failed")
	c.Do("GET", "/v1/api-keys?cursor=bm9wZQ", "initech", nil).Problem(t, 400, "invalid_cursor")
	c.Do("GET", "/v1/api-keys?key=x", "initech", nil).Problem(t, 400, "validation_failed")
	c.Do("GET", "/v1/api-keys", "", nil).Problem(t, 401, "unauthorized")

	// Replacing works; removing makes it no_api_key again; twice is 404.
	if r := c.Do("PUT", "/v1/api-keys/elevenlabs", "initech", map[string]any{"keyValue": harness.AcmeElevenKey}); r.Status != 200 {
		t.Fatalf("replace: %d %s", r.Status, r.Body)
	}
	if r := c.Do("DELETE", "/v1/api-keys/elevenlabs", "initech", nil); r.Status != 204 || len(r.Body) != 0 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	speak("initech").Problem(t, 403, "no_api_key")
	c.Do("DELETE", "/v1/api-keys/elevenlabs", "initech", nil).Problem(t, 404, "not_found")
	kp = keyPage{}
	r = c.Do("GET", "/v1/api-keys", "initech", nil)
	if r.JSON(t, &kp); len(kp.Data) != 0 {
		t.Errorf("keys listed after the delete: %s", r.Body)
	}
	// acme's own key was never touched by another organization's.
	if r := speak("acme"); r.Status != 200 {
		t.Fatalf("acme after initech's delete: %d %s", r.Status, r.Body)
	}

	// What may not be stored, and bad input, in the problem shape.
	for _, tc := range []struct {
		name, method, path, org string
		body                    any
		hdr                     []string
		status                  int
		code, field             string
	}{
		{"org may not bring its own", "PUT", "/v1/api-keys/openai", "acme", map[string]any{"keyValue": harness.AcmeElevenKey}, nil, 403, "byok_not_allowed", ""},
		{"provider not enabled", "PUT", "/v1/api-keys/elevenlabs", "globex", map[string]any{"keyValue": harness.AcmeElevenKey}, nil, 403, "provider_disabled", ""},
		{"key in gateway.yaml", "PUT", "/v1/api-keys/openai", "globex", map[string]any{"keyValue": harness.AcmeElevenKey}, nil, 409, "conflict", ""},
		{"unknown provider", "PUT", "/v1/api-keys/nope", "acme", map[string]any{"keyValue": harness.AcmeElevenKey}, nil, 404, "not_found", ""},
		{"unknown provider delete", "DELETE", "/v1/api-keys/nope", "acme", nil, nil, 404, "not_found", ""},
		{"no key", "PUT", "/v1/api-keys/elevenlabs", "initech", map[string]any{}, nil, 400, "validation_failed", "keyValue"},
		{"short key", "PUT", "/v1/api-keys/elevenlabs", "initech", map[string]any{"keyValue": "abc"}, nil, 400, "validation_failed", "keyValue"},
		{"short key in characters", "PUT", "/v1/api-keys/elevenlabs", "initech", map[string]any{"keyValue": "éééé"}, nil, 400, "validation_failed", "keyValue"},
		{"key with a newline", "PUT", "/v1/api-keys/elevenlabs", "initech", map[string]any{"keyValue": harness.AcmeElevenKey + "\n"}, nil, 400, "validation_failed", "keyValue"},
		{"wrong type", "PUT", "/v1/api-keys/elevenlabs", "initech", map[string]any{"keyValue": 42}, nil, 400, "validation_failed", "keyValue"},
		{"unknown field", "PUT", "/v1/api-keys/elevenlabs", "initech", map[string]any{"keyValue": harness.AcmeElevenKey, "key": "x"}, nil, 400, "validation_failed", "key"},
		{"not json", "PUT", "/v1/api-keys/elevenlabs", "initech", "keyValue=x", []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type", ""},
		{"malformed", "PUT", "/v1/api-keys/elevenlabs", "initech", `{"keyValue":`, nil, 400, "invalid_json", ""},
		{"no api key", "PUT", "/v1/api-keys/elevenlabs", "", map[string]any{"keyValue": harness.AcmeElevenKey}, nil, 401, "unauthorized", ""},
		{"wrong method", "GET", "/v1/api-keys/elevenlabs", "initech", nil, nil, 405, "method_not_allowed", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := c.Do(tc.method, tc.path, tc.org, tc.body, tc.hdr...).Problem(t, tc.status, tc.code)
			if tc.field != "" && (len(p.Validation) != 1 || p.Validation[0].Path[0] != tc.field) {
				t.Errorf("validation %+v, want %s", p.Validation, tc.field)
			}
		})
	}
	speak("initech").Problem(t, 403, "no_api_key")

	// Stored over the API, the key is sealed like a CLI-stored one: not in
	// the database file in plain text.
	if r := c.Do("PUT", "/v1/api-keys/elevenlabs", "initech", map[string]any{"keyValue": harness.AcmeElevenKey}); r.Status != 200 {
		t.Fatalf("put: %d %s", r.Status, r.Body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Core.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	db, err := os.ReadFile(filepath.Join(c.Dir, "voxgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(db, []byte(harness.AcmeElevenKey)) || bytes.Contains(db, []byte(wrongKey)) {
		t.Fatal("a provider key is in the database in plain text")
	}
}

// TestPronunciationDictionaries: CRUD for dictionaries and rules, the
// default dictionary, the resolution order a synthesis request applies,
// organization isolation and the documented limits.
func TestPronunciationDictionaries(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	type dict struct {
		ID, Name, Description string
		OrgID                 string `json:"org_id"`
		IsDefault             bool   `json:"is_default"`
		RuleCount             int    `json:"rule_count"`
	}
	type rule struct {
		ID, Word, Replacement string
		DictionaryID          string `json:"dictionary_id"`
		CaseSensitive         bool   `json:"case_sensitive"`
	}
	var page struct {
		Data       []dict
		NextCursor string `json:"next_cursor"`
		HasMore    bool   `json:"has_more"`
	}
	// The default exists from the first use on.
	tg.Do("GET", "/v1/pronunciation-dictionaries", "acme", nil).JSON(t, &page)
	if len(page.Data) != 1 || !page.Data[0].IsDefault || page.Data[0].Name != "Default" || page.Data[0].OrgID != "acme" {
		t.Fatalf("first list %+v", page.Data)
	}
	def := page.Data[0].ID
	var got dict
	tg.Do("GET", "/v1/pronunciation-dictionaries/default", "acme", nil).JSON(t, &got)
	if got.ID != def {
		t.Errorf("/default is %s, listed default %s", got.ID, def)
	}
	create := func(org, name string) dict {
		t.Helper()
		r := tg.Do("POST", "/v1/pronunciation-dictionaries", org, map[string]any{"name": name, "description": "about " + name})
		if r.Status != 201 || r.Header.Get("Location") == "" {
			t.Fatalf("create %s: %d %s", name, r.Status, r.Body)
		}
		var d dict
		r.JSON(t, &d)
		return d
	}
	addRule := func(org, dictID, word, repl string) rule {
		t.Helper()
		r := tg.Do("POST", "/v1/pronunciation-dictionaries/"+dictID+"/rules", org, map[string]any{"word": word, "replacement": repl})
		if r.Status != 201 {
			t.Fatalf("rule %s: %d %s", word, r.Status, r.Body)
		}
		var ru rule
		r.JSON(t, &ru)
		return ru
	}
	a, b := create("acme", "Brand terms"), create("acme", "Engineering acronyms")
	theirs := create("globex", "Brand terms") // the same name in another organization
	addRule("acme", "default", "AWS", "default-aws")
	addRule("acme", def, "jq", "jay cue")
	ra := addRule("acme", a.ID, "AWS", "amazon")
	addRule("acme", b.ID, "aws", "bee")
	addRule("globex", theirs.ID, "AWS", "theirs")
	if ra.DictionaryID != a.ID || ra.Word != "AWS" || ra.CaseSensitive {
		t.Errorf("rule %+v", ra)
	}

	// What the provider is sent: the default, the listed dictionaries in
	// order, the inline rules, later winning on the same word.
	spoken := func(pron map[string]any) string {
		t.Helper()
		body := map[string]any{"model": "testkit/test", "voice": "alpha", "text": "AWS and jq"}
		if pron != nil {
			body["pronunciations"] = pron
		}
		if r := tg.Do("POST", "/v1/audio/speech", "acme", body); r.Status != 200 {
			t.Fatalf("speech %v: %d %s", pron, r.Status, r.Body)
		}
		return lastCall(t, tg).Text
	}
	for _, tc := range []struct {
		pron map[string]any
		want string
	}{
		{nil, "default-aws and jay cue"},
		{map[string]any{"dictionaryIds": []string{a.ID}}, "amazon and jay cue"},
		{map[string]any{"dictionaryIds": []string{a.ID, b.ID}}, "bee and jay cue"},
		{map[string]any{"dictionaryIds": []string{b.ID, a.ID}}, "amazon and jay cue"},
		{map[string]any{"dictionaryIds": []string{b.ID, a.ID}, "rules": []any{map[string]any{"word": "aws", "replacement": "inline"}}}, "inline and jay cue"},
		{map[string]any{"rules": []any{map[string]any{"word": "JQ", "replacement": "jquery"}}}, "default-aws and jquery"},
	} {
		if got := spoken(tc.pron); got != tc.want {
			t.Errorf("pronunciations %v: the provider got %q, want %q", tc.pron, got, tc.want)
		}
	}
	// A change to the default applies at once.
	r := tg.Do("PATCH", "/v1/pronunciation-dictionaries/"+def+"/rules/"+ra.ID, "acme", map[string]any{"replacement": "x"})
	r.Problem(t, 404, "rule_not_found") // ra is a's rule, not the default's
	var rules struct{ Data []rule }
	tg.Do("GET", "/v1/pronunciation-dictionaries/default/rules", "acme", nil).JSON(t, &rules)
	if len(rules.Data) != 2 {
		t.Fatalf("default rules %+v", rules.Data)
	}
	for _, ru := range rules.Data {
		if ru.Word == "AWS" {
			tg.Do("PATCH", "/v1/pronunciation-dictionaries/default/rules/"+ru.ID, "acme", map[string]any{"replacement": "a w s"}).JSON(t, &ru)
			if ru.Replacement != "a w s" || ru.Word != "AWS" {
				t.Errorf("patched %+v", ru)
			}
		}
	}
	if got := spoken(nil); got != "a w s and jay cue" {
		t.Errorf("after the change the provider got %q", got)
	}
	// The same rules for every turn of a conversation.
	conv := map[string]any{"turns": []any{
		map[string]any{"model": "testkit/test", "voice": "alpha", "text": "AWS first"},
		map[string]any{"model": "testkit/test", "voice": "beta", "text": "then AWS"},
	}, "pronunciations": map[string]any{"dictionaryIds": []string{a.ID}}}
	if r := tg.Do("POST", "/v1/audio/conversation", "acme", conv); r.Status != 200 {
		t.Fatalf("conversation: %d %s", r.Status, r.Body)
	}
	calls, _ := calllog.Read(filepath.Join(tg.Dir, "calls.jsonl"))
	texts := map[string]bool{}
	for _, c := range calls[len(calls)-2:] {
		texts[c.Text] = true
	}
	if !texts["amazon first"] || !texts["then amazon"] {
		t.Errorf("conversation turns sent %v", texts)
	}

	// Isolation: another organization's dictionary is 404 everywhere.
	for _, rr := range []*harness.Response{
		tg.Do("GET", "/v1/pronunciation-dictionaries/"+theirs.ID, "acme", nil),
		tg.Do("PATCH", "/v1/pronunciation-dictionaries/"+theirs.ID, "acme", map[string]any{"name": "mine"}),
		tg.Do("DELETE", "/v1/pronunciation-dictionaries/"+theirs.ID, "acme", nil),
		tg.Do("GET", "/v1/pronunciation-dictionaries/"+theirs.ID+"/rules", "acme", nil),
		tg.Do("POST", "/v1/pronunciation-dictionaries/"+theirs.ID+"/rules", "acme", map[string]any{"word": "a", "replacement": "b"}),
		tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "AWS",
			"pronunciations": map[string]any{"dictionaryIds": []string{theirs.ID}}}),
		tg.Do("GET", "/v1/pronunciation-dictionaries/not-a-uuid", "acme", nil),
	} {
		rr.Problem(t, 404, "dictionary_not_found")
	}
	tg.Do("GET", "/v1/pronunciation-dictionaries", "globex", nil).JSON(t, &page)
	for _, d := range page.Data {
		if d.OrgID != "globex" || d.ID == a.ID || d.ID == def {
			t.Errorf("globex lists %+v", d)
		}
	}

	// The documented limits: 20 dictionaries and 200 inline rules.
	ids := make([]string, 21)
	for i := range ids {
		ids[i] = uuid.NewString()
	}
	inline := make([]any, 201)
	for i := range inline {
		inline[i] = map[string]any{"word": fmt.Sprintf("w%d", i), "replacement": "x"}
	}
	for _, tc := range []struct {
		pron map[string]any
		path string
	}{
		{map[string]any{"dictionaryIds": ids}, "pronunciations.dictionaryIds"},
		{map[string]any{"rules": inline}, "pronunciations.rules"},
		{map[string]any{"dictionaryIds": []string{"brand-terms"}}, "pronunciations.dictionaryIds.0"},
		{map[string]any{"dictionaryIds": []string{a.ID, a.ID}}, "pronunciations.dictionaryIds.1"},
		{map[string]any{"rules": []any{map[string]any{"word": "", "replacement": "x"}}}, "pronunciations.rules.0.word"},
	} {
		p := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "x", "pronunciations": tc.pron}).Problem(t, 400, "validation_failed")
		if len(p.Validation) == 0 || strings.Join(p.Validation[0].Path, ".") != tc.path || !strings.Contains(p.Detail+p.Validation[0].Message, "") {
			t.Errorf("%s: validation %+v", tc.path, p.Validation)
		}
	}
	if r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "x",
		"pronunciations": map[string]any{"dictionaryIds": ids[:20], "rules": inline[:200]}}); r.Status != 404 {
		t.Errorf("20 dictionaries and 200 rules pass validation (then the unknown ids are 404): %d %s", r.Status, r.Body)
	}

	// Conflicts and bad input on the routes, in the problem shape.
	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		code, field        string
	}{
		{"taken name", "POST", "/v1/pronunciation-dictionaries", map[string]any{"name": "BRAND TERMS"}, 409, "conflict", ""},
		{"reserved name", "POST", "/v1/pronunciation-dictionaries", map[string]any{"name": "default"}, 409, "conflict", ""},
		{"no name", "POST", "/v1/pronunciation-dictionaries", map[string]any{"description": "x"}, 400, "validation_failed", "name"},
		{"long name", "POST", "/v1/pronunciation-dictionaries", map[string]any{"name": strings.Repeat("n", 101)}, 400, "validation_failed", "name"},
		{"unknown field", "POST", "/v1/pronunciation-dictionaries", map[string]any{"name": "x", "rules": []any{}}, 400, "validation_failed", "rules"},
		{"wrong type", "POST", "/v1/pronunciation-dictionaries", map[string]any{"name": 7}, 400, "validation_failed", "name"},
		{"malformed", "POST", "/v1/pronunciation-dictionaries", `{"name":`, 400, "invalid_json", ""},
		{"rename onto a taken name", "PATCH", "/v1/pronunciation-dictionaries/" + b.ID, map[string]any{"name": "brand terms"}, 409, "conflict", ""},
		{"rename the default", "PUT", "/v1/pronunciation-dictionaries/default", map[string]any{"name": "Mine"}, 409, "conflict", ""},
		{"delete the default", "DELETE", "/v1/pronunciation-dictionaries/" + def, nil, 409, "conflict", ""},
		{"bad cursor", "GET", "/v1/pronunciation-dictionaries?cursor=abc", nil, 400, "invalid_cursor", ""},
		{"bad limit", "GET", "/v1/pronunciation-dictionaries/" + a.ID + "/rules?limit=0", nil, 400, "validation_failed", "limit"},
		{"taken word", "POST", "/v1/pronunciation-dictionaries/" + a.ID + "/rules", map[string]any{"word": "aws", "replacement": "x"}, 409, "conflict", ""},
		{"rule without replacement", "POST", "/v1/pronunciation-dictionaries/" + a.ID + "/rules", map[string]any{"word": "x"}, 400, "validation_failed", "replacement"},
		{"rule of punctuation", "POST", "/v1/pronunciation-dictionaries/" + a.ID + "/rules", map[string]any{"word": "...", "replacement": "x"}, 400, "validation_failed", "word"},
		{"case twice, disagreeing", "POST", "/v1/pronunciation-dictionaries/" + a.ID + "/rules", map[string]any{"word": "k8s", "replacement": "kubernetes", "case_sensitive": true, "caseSensitive": false}, 400, "validation_failed", "caseSensitive"},
		{"unknown rule", "GET", "/v1/pronunciation-dictionaries/" + a.ID + "/rules/" + uuid.NewString(), nil, 404, "rule_not_found", ""},
		{"rule of another dictionary", "DELETE", "/v1/pronunciation-dictionaries/" + b.ID + "/rules/" + ra.ID, nil, 404, "rule_not_found", ""},
		{"no key", "GET", "/v1/pronunciation-dictionaries", nil, 401, "unauthorized", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			org := "acme"
			if tc.code == "unauthorized" {
				org = ""
			}
			p := tg.Do(tc.method, tc.path, org, tc.body).Problem(t, tc.status, tc.code)
			if tc.field != "" && (len(p.Validation) == 0 || p.Validation[0].Path[0] != tc.field) {
				t.Errorf("validation %+v, want %s", p.Validation, tc.field)
			}
		})
	}

	// A case-sensitive rule, given either way, matches its case only.
	var cs rule
	tg.Do("POST", "/v1/pronunciation-dictionaries/"+a.ID+"/rules", "acme", map[string]any{"word": "Go", "replacement": "golang", "caseSensitive": true}).JSON(t, &cs)
	if !cs.CaseSensitive {
		t.Errorf("caseSensitive not taken: %+v", cs)
	}
	if r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "Go go",
		"pronunciations": map[string]any{"dictionaryIds": []string{a.ID}}}); r.Status != 200 || lastCall(t, tg).Text != "golang go" {
		t.Errorf("case-sensitive rule: %d, sent %q", r.Status, lastCall(t, tg).Text)
	}

	// Deleting a dictionary deletes its rules; its id is then unknown.
	if r := tg.Do("DELETE", "/v1/pronunciation-dictionaries/"+a.ID, "acme", nil); r.Status != 204 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	tg.Do("GET", "/v1/pronunciation-dictionaries/"+a.ID+"/rules/"+ra.ID, "acme", nil).Problem(t, 404, "dictionary_not_found")
	tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "x",
		"pronunciations": map[string]any{"dictionaryIds": []string{a.ID}}}).Problem(t, 404, "dictionary_not_found")
	// Renaming frees the old name.
	var renamed dict
	tg.Do("PATCH", "/v1/pronunciation-dictionaries/"+b.ID, "acme", map[string]any{"name": "Acronyms"}).JSON(t, &renamed)
	if renamed.Name != "Acronyms" || renamed.Description != "about Engineering acronyms" || renamed.RuleCount != 1 {
		t.Errorf("renamed %+v", renamed)
	}
	create("acme", "Engineering acronyms")
}

// TestVoiceUpdate: PUT /v1/voices/{voiceId} changes only the given fields,
// checks a new provider or model against the catalog, and answers
// {data: voice}; another organization's voice is 404.
func TestVoiceUpdate(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	v := tg.Do("POST", "/v1/voices", "acme", map[string]any{"title": "Narrator", "provider": "espeak", "model": "espeak-ng", "voice_id": "en",
		"tags": []string{"a"}, "provider_options": map[string]any{"p": 1}}).Voice(t)
	up := tg.Do("PUT", "/v1/voices/"+v.ID, "acme", map[string]any{"title": "  Storyteller ", "voice_id": "en-gb"}).Voice(t)
	if up.ID != v.ID || up.Title != "Storyteller" || up.VoiceID != "en-gb" || up.Provider != "espeak" || len(up.Tags) != 1 ||
		up.ProviderOptions["p"] != 1.0 || !up.CreatedAt.Equal(v.CreatedAt) || !up.UpdatedAt.After(v.UpdatedAt) {
		t.Errorf("updated %+v from %+v", up, v)
	}
	if got := tg.Do("GET", "/v1/voices/"+v.ID, "acme", nil).Voice(t); got.Title != "Storyteller" || got.VoiceID != "en-gb" {
		t.Errorf("read back %+v", got)
	}
	// An empty body changes nothing but the update time.
	if got := tg.Do("PUT", "/v1/voices/"+v.ID, "acme", map[string]any{}).Voice(t); got.Title != "Storyteller" {
		t.Errorf("empty update %+v", got)
	}
	if got := tg.Do("PUT", "/v1/voices/"+v.ID, "acme", map[string]any{"provider": "testkit", "model": "basic", "voice_id": "alpha", "tags": []string{}}).Voice(t); got.Provider != "testkit" || got.Model != "basic" || len(got.Tags) != 0 {
		t.Errorf("moved voice %+v", got)
	}
	if r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"voiceId": v.ID, "text": "moved"}); r.Status != 200 || lastCall(t, tg).Model != "basic" {
		t.Errorf("speech with the moved voice: %d", r.Status)
	}
	tg.Do("PUT", "/v1/voices/"+v.ID, "acme", map[string]any{"model": "nope"}).Problem(t, 422, "unknown_model")
	// A changed voice_id is checked against the provider's voices, as a
	// new voice's is: a voice is never saved unchecked.
	for _, body := range []map[string]any{
		{"voice_id": "no-such-voice"},
		{"provider": "espeak", "model": "espeak-ng"}, // "alpha" is testkit's, not eSpeak's
	} {
		tg.Do("PUT", "/v1/voices/"+v.ID, "acme", body).Problem(t, 422, "unknown_voice")
	}
	if got := tg.Do("GET", "/v1/voices/"+v.ID, "acme", nil).Voice(t); got.Provider != "testkit" || got.VoiceID != "alpha" {
		t.Errorf("a refused update changed the voice: %+v", got)
	}
	tg.Do("PUT", "/v1/voices/"+v.ID, "globex", map[string]any{"title": "mine"}).Problem(t, 404, "voice_not_found")
	tg.Do("PUT", "/v1/voices/"+uuid.NewString(), "acme", map[string]any{"title": "x"}).Problem(t, 404, "voice_not_found")
	for _, tc := range []struct {
		body  any
		field string
	}{
		{map[string]any{"title": ""}, "title"},
		{map[string]any{"mediaId": uuid.NewString()}, "mediaId"},
		{map[string]any{"tags": []any{""}}, "tags"},
		{map[string]any{"provider_options": "x"}, "provider_options"},
	} {
		p := tg.Do("PUT", "/v1/voices/"+v.ID, "acme", tc.body).Problem(t, 400, "validation_failed")
		if p.Validation[0].Path[0] != tc.field {
			t.Errorf("%v: %+v", tc.body, p.Validation)
		}
	}
}

// documentedModerationConfig runs the documented two evaluators: category
// moderation (the OpenAI moderation plugin with per-category thresholds)
// and custom rules in plain English (the same plugin, asking a chat model),
// both against the fake of OpenAI's API.
const documentedModerationConfig = `
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
    call_log: %DIR%/calls.jsonl
orgs:
  acme:
    moderation: documented
    providers:
      testkit: {enabled: true}
moderation:
  plugins:
    categories:
      plugin: voxgate-openai-moderation
      api_key: %MODKEY%
      base_url: %FAKE%
      category_thresholds: harassment=0.5,violence=null
    rules:
      plugin: voxgate-openai-moderation
      api_key: %MODKEY%
      base_url: %FAKE%
  rulesets:
    documented:
      mode: fail_closed
      timeout: 10s
      checks:
        - plugin: categories
        - plugin: rules
          rules:
            - name: no-stock-tips
              prompt: Block any text that promotes a specific publicly traded stock
            - name: no-medical-advice
              prompt: Block any text that gives medical advice
              enabled: false
`

// TestDocumentedModeration: a block carries reason.confidence, and
// reason.rule_name when a custom rule blocked; a failed check of a
// fail-closed ruleset is 403; no provider is called for a blocked text.
func TestDocumentedModeration(t *testing.T) {
	t.Parallel()
	fake := openaimoderation.New(t, fakeupstream.Options{})
	fake.Flag("zorblax", "harassment", 0.91)
	fake.Flag("punch", "violence", 0.99)
	fake.Violate("no-stock-tips", "buy ACME shares", 0.88)
	fake.Violate("no-medical-advice", "take two aspirin", 0.95)
	yaml := strings.NewReplacer("%MODKEY%", openaimoderation.Key, "%FAKE%", fake.BaseURL()).Replace(documentedModerationConfig)
	tg := harness.Start(t, yaml)
	say := func(text string) *harness.Response {
		return tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": text})
	}
	reason := func(r *harness.Response) map[string]any {
		t.Helper()
		var env struct {
			Error struct {
				Code   string
				Reason map[string]any
			}
		}
		r.JSON(t, &env)
		if env.Error.Code != "content_moderation_blocked" || r.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("not the moderation envelope: %d %s", r.Status, r.Body)
		}
		return env.Error.Reason
	}

	r := say("Tomorrow, buy ACME shares before they rise.")
	if r.Status != 422 {
		t.Fatalf("custom rule: %d %s", r.Status, r.Body)
	}
	if got := reason(r); got["type"] != "custom_rule" || got["rule_name"] != "no-stock-tips" || got["detail"] != "no-stock-tips" || got["confidence"] != 0.88 {
		t.Errorf("custom rule reason %v", got)
	}
	row := tg.RawLogRow("acme", r)
	if row["moderation_reason_type"] != "custom_rule" || row["moderation_reason_detail"] != "no-stock-tips" || row["moderation_confidence"] != 0.88 || row["moderation_decision"] != "block" {
		t.Errorf("row %v", row)
	}

	r = say("you zorblax")
	if r.Status != 422 {
		t.Fatalf("category: %d %s", r.Status, r.Body)
	}
	if got := reason(r); got["type"] != "content_policy" || got["detail"] != "harassment" || got["confidence"] != 0.91 || got["rule_name"] != nil {
		t.Errorf("category reason %v", got)
	}
	// A category switched off (violence=null) and a disabled rule block
	// nothing.
	for _, text := range []string{"one punch", "take two aspirin", "The weather is lovely."} {
		if r := say(text); r.Status != 200 {
			t.Errorf("%q: %d %s", text, r.Status, r.Body)
		}
	}
	calls, _ := calllog.Count(filepath.Join(tg.Dir, "calls.jsonl"), "synthesize")
	if calls != 3 {
		t.Errorf("the provider got %d calls, want the 3 allowed texts only", calls)
	}
	// The rules model is down: the ruleset fails closed, 403.
	fake.FailNext(1, fakeupstream.Fault{Path: openaimoderation.ChatPath, Status: 503})
	r = say("An ordinary sentence.")
	if r.Status != 403 {
		t.Fatalf("fail closed: %d %s", r.Status, r.Body)
	}
	if got := reason(r); got["type"] != "error_fail_closed" || !strings.HasPrefix(got["detail"].(string), "rules: ") {
		t.Errorf("fail-closed reason %v", got)
	}
}

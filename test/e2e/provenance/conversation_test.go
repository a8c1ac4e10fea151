package provenance

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestConversationsAreMarkedAndSigned: a conversation's clip carries the
// mark (read back by ffprobe) and a signed record of the body sent; a
// split answer's segments are each marked, and the record hashes them in
// order; a conversation stream (WAV) is marked and its record hashes
// what was streamed.
func TestConversationsAreMarkedAndSigned(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, config)
	turns := []any{
		map[string]any{"model": "espeak/espeak-ng", "voice": "en", "text": "First turn of the talk."},
		map[string]any{"model": "espeak/espeak-ng", "voice": "en-us", "text": "And the second one."},
	}
	r := tg.Do("POST", "/v1/audio/conversation", "acme", map[string]any{"turns": turns, "output": "mp3"})
	if r.Status != 200 || r.Header.Get("X-Voxgate-Mark") != "id3v2" {
		t.Fatalf("conversation: %d %q %s", r.Status, r.Header.Get("X-Voxgate-Mark"), r.Header.Get("Content-Type"))
	}
	id := r.Header.Get("X-Request-Id")
	if tags := probeTags(t, r.Body, "mp3"); tags["VOXGATE_REQUEST_ID"] != id || tags["AI_GENERATED"] != "true" {
		t.Errorf("conversation tags %v", tags)
	}
	rec := recordOf(t, tg, "acme", id)
	if rec.Record["sha256"] != sha(r.Body) || rec.Record["request_id"] != id || rec.Record["complete"] != true {
		t.Errorf("conversation record %v", rec.Record)
	}

	var split struct {
		AudioSegments []struct{ Audio string } `json:"audioSegments"`
	}
	r = tg.Do("POST", "/v1/audio/conversation", "acme", map[string]any{"turns": turns, "split": true, "output": "wav"})
	if r.Status != 200 || r.Header.Get("X-Voxgate-Mark") != "riff-info+ixml" {
		t.Fatalf("split: %d %q", r.Status, r.Header.Get("X-Voxgate-Mark"))
	}
	r.JSON(t, &split)
	var all []byte
	for i, seg := range split.AudioSegments {
		b, err := base64.StdEncoding.DecodeString(seg.Audio)
		if err != nil {
			t.Fatal(err)
		}
		if tags := probeTags(t, b, "wav"); !strings.Contains(tags["COMMENT"], r.Header.Get("X-Request-Id")) {
			t.Errorf("segment %d tags %v", i, tags)
		}
		all = append(all, b...)
	}
	if rec := recordOf(t, tg, "acme", r.Header.Get("X-Request-Id")); len(split.AudioSegments) != 2 || rec.Record["sha256"] != sha(all) {
		t.Errorf("split record %v over %d segments", rec.Record, len(split.AudioSegments))
	}

	r = tg.Do("POST", "/v1/audio/conversation/stream", "acme", map[string]any{"turns": turns, "output": "wav"})
	if r.Status != 200 || r.Header.Get("X-Voxgate-Mark") != "riff-info+ixml" || !bytes.HasPrefix(r.Body, []byte("RIFF")) {
		t.Fatalf("conversation stream: %d %q %.200q", r.Status, r.Header.Get("X-Voxgate-Mark"), r.Body)
	}
	if rec := recordOf(t, tg, "acme", r.Header.Get("X-Request-Id")); rec.Record["sha256"] != sha(r.Body) || rec.Record["complete"] != true {
		t.Errorf("conversation stream record %v", rec.Record)
	}
}

// TestRealtimeContextRecords: each realtime context gets a signed record
// of the audio sent for it, saying it carries no mark.
func TestRealtimeContextRecords(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, config)
	rc := tg.DialRealtime("acme")
	rc.Send(harness.StartMsg("a"))
	started := rc.Expect("started", "a")
	rc.Send(harness.TextMsg("a", "A realtime context is recorded too."))
	rc.Send(harness.ControlMsg("close", "a"))
	var audio []byte
	for _, m := range rc.Until(harness.IsType("done", "a")) {
		if m.Type == "audio" && m.ContextID == "a" {
			audio = append(audio, m.Audio...)
		}
	}
	if started.RequestID == "" || len(audio) == 0 {
		t.Fatalf("started %+v, %d bytes of audio", started, len(audio))
	}
	rec := recordOf(t, tg, "acme", started.RequestID)
	if rec.Record["sha256"] != sha(audio) || rec.Record["marked"] != "none; realtime audio is sent in pieces without a file header" ||
		rec.Record["complete"] != true || rec.Record["request_id"] != started.RequestID {
		t.Errorf("realtime record %v (%d bytes, sha %s)", rec.Record, len(audio), sha(audio))
	}
}

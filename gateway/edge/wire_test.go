package edge

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
)

func TestLogRowJSON(t *testing.T) {
	r := store.LogRow{RequestID: "r", OrgID: "secret-org", Status: 200, ModerationConfidence: 0.5,
		TS: time.Date(2026, 3, 1, 13, 4, 5, 678901234, time.FixedZone("CET", 3600))}
	b, err := json.Marshal(logRowOut(&r))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["ts"] != "2026-03-01T12:04:05.678Z" {
		t.Errorf("ts = %v", m["ts"])
	}
	if strings.Contains(string(b), "secret-org") || len(m) != 30 {
		t.Errorf("fields = %v (%d), want the spec's 20 and time_to_first_audio_ms, key_id, audio_seconds, cache, transcoded, sanitized, cost, currency, cost_estimate, text_wait_ms, without the org", m, len(m))
	}
	for _, k := range []string{"request_id", "parent_request_id", "path", "status", "provider", "model", "voice_id",
		"voice_ref", "char_count", "credits_used", "latency_ms", "error_code", "error_detail", "provider_options",
		"moderation_decision", "moderation_reason_type", "moderation_reason_detail", "moderation_confidence",
		"moderation_latency_ms", "time_to_first_audio_ms", "key_id", "audio_seconds", "cache", "transcoded", "sanitized",
		"cost", "currency", "cost_estimate", "text_wait_ms"} {
		if _, ok := m[k]; !ok {
			t.Errorf("field %s missing", k)
		}
	}
}

func TestVoiceJSONNeverNull(t *testing.T) {
	b, err := json.Marshal(voiceOut(&store.Voice{ID: "v"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"tags":[]`, `"provider_options":{}`, `"org_id"`, `"voice_id"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
}

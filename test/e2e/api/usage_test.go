package api

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/test/e2e/harness"
)

// usageBody is the GET /v1/usage response.
type usageBody struct {
	Since   string       `json:"since"`
	Until   string       `json:"until"`
	GroupBy []string     `json:"group_by"`
	Data    []usageGroup `json:"data"`
	Total   usageGroup   `json:"total"`
}

type usageGroup struct {
	Day          string  `json:"day"`
	Provider     string  `json:"provider"`
	Model        string  `json:"model"`
	KeyID        string  `json:"key_id"`
	KeyName      string  `json:"key_name"`
	Requests     int64   `json:"requests"`
	Errors       int64   `json:"errors"`
	ErrorRate    float64 `json:"error_rate"`
	Characters   int64   `json:"characters"`
	AudioSeconds float64 `json:"audio_seconds"`
	Credits      int64   `json:"credits"`
	CacheHits    int64   `json:"cache_hits"`
	LatencyMS    struct {
		Mean, P50, P90, P95, P99 float64
	} `json:"latency_ms"`
}

// TestUsage makes real requests of every kind and reads them back from
// GET /v1/usage and /metrics: each request counted once (a conversation
// with its turns inside), audio measured, grouped by key with its name,
// and nothing of another organization.
func TestUsage(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
  log_batch_size: 64
plugins:
  dir: %BIN%/plugins
providers:
  espeak: {plugin: voxgate-espeak, managed: true, credits_per_1k_chars: 1000}
orgs:
  acme:
    providers: {espeak: {enabled: true}}
  globex:
    providers: {espeak: {enabled: true}}
`)
	speak := func(path, text string, extra string) *harness.Response {
		return tg.Do("POST", path, "acme", fmt.Sprintf(`{"model":"espeak/espeak-ng","voice":"en","text":%q%s}`, text, extra))
	}
	texts := []string{"One two three.", "Four five six seven.", "Eight."}
	var chars int64
	for _, tx := range texts {
		if r := speak("/v1/audio/speech", tx, `,"output":{"format":"mp3"}`); r.Status != 200 {
			t.Fatalf("speech: %d %s", r.Status, r.Body)
		}
		chars += int64(len(tx))
	}
	if r := speak("/v1/audio/speech/stream", "A streamed sentence.", ""); r.Status != 200 {
		t.Fatalf("stream: %d %s", r.Status, r.Body)
	}
	chars += int64(len("A streamed sentence."))
	if r := tg.Do("POST", "/v1/audio/conversation", "acme", `{"model":"espeak/espeak-ng","turns":[{"voice":"en","text":"Hello."},{"voice":"de","text":"Hallo."}]}`); r.Status != 200 {
		t.Fatalf("conversation: %d %s", r.Status, r.Body)
	}
	chars += int64(len("Hello.") + len("Hallo."))
	if r := speak("/v1/audio/speech", "Bad voice.", `,"voice":"no-such-voice-xx"`); r.Status < 400 {
		t.Fatalf("bad request: %d", r.Status)
	}
	tg.FlushLogs()

	var u usageBody
	r := tg.Do("GET", "/v1/usage?group_by=provider,day,key", "acme", nil)
	if r.Status != 200 {
		t.Fatalf("usage: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &u)
	today := time.Now().UTC().Format(time.DateOnly)
	if len(u.Data) != 1 || strings.Join(u.GroupBy, ",") != "day,provider,key" {
		t.Fatalf("usage = %s", r.Body)
	}
	g := u.Data[0]
	if g.Day != today || g.Provider != "espeak" || g.KeyName != "test" || g.KeyID == "" {
		t.Errorf("group = %+v", g)
	}
	// 3 clips, 1 stream, 1 conversation (its 2 turns inside it), 1 failure.
	if g.Requests != 6 || g.Errors != 1 || g.ErrorRate < 0.16 || g.ErrorRate > 0.17 {
		t.Errorf("requests %d errors %d rate %v, want 6, 1, 1/6", g.Requests, g.Errors, g.ErrorRate)
	}
	// Characters count what was asked for, the failure's too; credits
	// only what was delivered (1 credit a character here).
	failed := int64(len("Bad voice."))
	if g.Characters != chars+failed || g.Credits != chars {
		t.Errorf("characters %d credits %d, want %d and %d", g.Characters, g.Credits, chars+failed, chars)
	}
	if g.AudioSeconds < 3 || g.AudioSeconds > 20 {
		t.Errorf("audio_seconds = %v, want the seconds eSpeak spoke", g.AudioSeconds)
	}
	if g.LatencyMS.P50 <= 0 || g.LatencyMS.P99 < g.LatencyMS.P50 || g.LatencyMS.Mean <= 0 {
		t.Errorf("latency = %+v", g.LatencyMS)
	}
	if u.Total.Requests != 6 || u.Total.Characters != chars+failed {
		t.Errorf("total = %+v", u.Total)
	}

	// The log rows say which key, how much audio.
	var lp logPageUsage
	tg.Do("GET", "/v1/logs?status=200&limit=1", "acme", nil).JSON(t, &lp)
	if len(lp.Data) != 1 || lp.Data[0].KeyID != g.KeyID || lp.Data[0].AudioSeconds <= 0 {
		t.Errorf("log row = %+v", lp.Data)
	}

	// Another organization sees none of it.
	var other usageBody
	tg.Do("GET", "/v1/usage?group_by=provider", "globex", nil).JSON(t, &other)
	if len(other.Data) != 0 || other.Total.Requests != 0 {
		t.Errorf("globex usage = %+v", other)
	}

	// Per-organization counters.
	body := tg.MetricsBody()
	for _, want := range []string{
		`voxgate_usage_requests_total{org="acme"} 6`,
		fmt.Sprintf(`voxgate_usage_characters_total{org="acme"} %d`, chars+failed),
		fmt.Sprintf(`voxgate_usage_credits_total{org="acme"} %d`, chars),
		`voxgate_usage_audio_seconds_total{org="acme"}`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// globex made no request: its series are there, at zero, so that a
	// dashboard shows 0 rather than "no data".
	for _, want := range []string{
		`voxgate_usage_requests_total{org="globex"} 0`,
		`voxgate_usage_characters_total{org="globex"} 0`,
		`voxgate_usage_credits_total{org="globex"} 0`,
		`voxgate_usage_audio_seconds_total{org="globex"} 0`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

type logPageUsage struct {
	Data []struct {
		KeyID        string  `json:"key_id"`
		AudioSeconds float64 `json:"audio_seconds"`
	} `json:"data"`
}

func TestUsageBadInput(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.BaseConfig)
	for _, q := range []string{
		"group_by=colour",
		"group_by=day,day",
		"since=2026-01-02T10:00:00Z",
		"since=yesterday",
		"since=2026-03-05&until=2026-03-01",
		"since=2020-01-01&until=2026-01-01",
		"limit=5",
	} {
		t.Run(q, func(t *testing.T) {
			tg.Do("GET", "/v1/usage?"+q, "acme", nil).Problem(t, 400, "validation_failed")
		})
	}
	tg.Do("GET", "/v1/usage", "", nil).Problem(t, 401, "unauthorized")
	var u usageBody
	r := tg.Do("GET", "/v1/usage?since=2026-03-01&until=2026-03-08T00:00:00Z&group_by=model", "acme", nil)
	r.JSON(t, &u)
	if r.Status != 200 || u.Since != "2026-03-01" || u.Until != "2026-03-08" || strings.Join(u.GroupBy, ",") != "provider,model" || u.Data == nil {
		t.Errorf("usage = %d %s", r.Status, r.Body)
	}
}

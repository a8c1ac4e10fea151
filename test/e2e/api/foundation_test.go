package api

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

func voiceBody(title string) map[string]any {
	return map[string]any{"title": title, "provider": "espeak", "model": "espeak-ng", "voice_id": "en", "tags": []string{"t"}, "provider_options": map[string]any{"pitch": 50}}
}

func TestAuthRejections(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.BaseConfig)
	ctx := context.Background()
	revoked, k, err := tg.Core.CreateKey(ctx, "acme", "to revoke", store.KeyScope{})
	if err != nil {
		t.Fatal(err)
	}
	if r := tg.Do("GET", "/v1/voices", "", nil, "Authorization", "Bearer "+revoked); r.Status != 200 {
		t.Fatalf("fresh key rejected: %d %s", r.Status, r.Body)
	}
	if _, err := tg.Core.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, header string }{
		{"missing", ""},
		{"basic scheme", "Basic YWxhZGRpbjpvcGVuc2VzYW1l"},
		{"bearer no token", "Bearer "},
		{"malformed token", "Bearer not-a-key"},
		{"unknown key", "Bearer vxk_" + strings.Repeat("A", 43)},
		{"revoked key", "Bearer " + revoked},
		{"other key with suffix", "Bearer " + tg.Keys["acme"] + "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tg.Do("GET", "/v1/voices", "", nil, "Authorization", tt.header)
			r.Problem(t, 401, "unauthorized")
			if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate = %q", r.Header.Get("WWW-Authenticate"))
			}
		})
	}
	// Case-insensitive scheme per RFC 7235.
	if r := tg.Do("GET", "/v1/voices", "", nil, "Authorization", "bearer "+tg.Keys["acme"]); r.Status != 200 {
		t.Errorf("lower-case scheme: %d", r.Status)
	}
}

func TestEdgeErrorsAreProblems(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.ESpeakConfig)
	big := `{"title":"` + strings.Repeat("x", 70000) + `"}`
	tests := []struct {
		name, method, path string
		body               any
		hdr                []string
		status             int
		code               string
		field              string
	}{
		{"unknown route", "GET", "/v1/nope", nil, nil, 404, "not_found", ""},
		{"unknown route unauthenticated", "GET", "/nope", nil, nil, 404, "not_found", ""},
		{"wrong method", "PUT", "/v1/voices", "{}", nil, 405, "method_not_allowed", ""},
		{"not json content type", "POST", "/v1/voices", "title=x", []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "unsupported_media_type", ""},
		{"no content type", "POST", "/v1/voices", "{}", []string{"Content-Type", ""}, 415, "unsupported_media_type", ""},
		{"oversized", "POST", "/v1/voices", big, nil, 413, "payload_too_large", ""},
		{"malformed json", "POST", "/v1/voices", `{"title": `, nil, 400, "invalid_json", ""},
		{"syntax error", "POST", "/v1/voices", `{"title" "x"}`, nil, 400, "invalid_json", ""},
		{"trailing data", "POST", "/v1/voices", `{"title":"x"} {}`, nil, 400, "invalid_json", ""},
		{"empty body", "POST", "/v1/voices", ``, nil, 400, "invalid_json", ""},
		{"array body", "POST", "/v1/voices", `[]`, nil, 400, "validation_failed", ""},
		{"unknown field", "POST", "/v1/voices", `{"title":"x","colour":"red"}`, nil, 400, "validation_failed", "colour"},
		{"invalid utf-8", "POST", "/v1/voices", "{\"title\":\"caf\xe9\"}", nil, 400, "invalid_json", ""},
		{"wrong type", "POST", "/v1/voices", `{"title":5}`, nil, 400, "validation_failed", "title"},
		{"wrong nested type", "POST", "/v1/voices", `{"title":"x","tags":[1]}`, nil, 400, "validation_failed", "tags"},
		{"missing title", "POST", "/v1/voices", `{"provider":"espeak","model":"espeak-ng","voice_id":"en"}`, nil, 400, "validation_failed", "title"},
		{"missing voice", "POST", "/v1/voices", `{"title":"a","provider":"espeak","model":"espeak-ng"}`, nil, 400, "validation_failed", "voice_id"},
		{"bad media id", "POST", "/v1/voices", `{"title":"a","provider":"espeak","model":"espeak-ng","mediaId":"x"}`, nil, 400, "validation_failed", "mediaId"},
		{"unknown provider", "POST", "/v1/voices", `{"title":"a","provider":"nope","model":"m","voice_id":"v"}`, nil, 422, "unknown_provider", ""},
		{"unknown media", "POST", "/v1/voices", `{"title":"a","provider":"espeak","model":"espeak-ng","mediaId":"` + uuid.NewString() + `","consent":{"attested_by":"a","relation":"self","statement":"yes"}}`, nil, 404, "media_not_found", ""},
		{"limit zero", "GET", "/v1/voices?limit=0", nil, nil, 400, "validation_failed", "limit"},
		{"limit too big", "GET", "/v1/voices?limit=201", nil, nil, 400, "validation_failed", "limit"},
		{"limit not int", "GET", "/v1/voices?limit=ten", nil, nil, 400, "validation_failed", "limit"},
		{"unknown query", "GET", "/v1/voices?limt=5", nil, nil, 400, "validation_failed", "limt"},
		{"repeated query", "GET", "/v1/voices?limit=5&limit=6", nil, nil, 400, "validation_failed", "limit"},
		{"empty cursor", "GET", "/v1/voices?cursor=", nil, nil, 400, "validation_failed", "cursor"},
		{"garbage cursor", "GET", "/v1/voices?cursor=abc", nil, nil, 400, "invalid_cursor", ""},
		{"voice not found", "GET", "/v1/voices/" + uuid.NewString(), nil, nil, 404, "voice_not_found", ""},
		{"voice id not uuid", "GET", "/v1/voices/zzz", nil, nil, 404, "voice_not_found", ""},
		{"delete not found", "DELETE", "/v1/voices/" + uuid.NewString(), nil, nil, 404, "voice_not_found", ""},
		{"logs bad status", "GET", "/v1/logs?status=99", nil, nil, 400, "validation_failed", "status"},
		{"logs status text", "GET", "/v1/logs?status=ok", nil, nil, 400, "validation_failed", "status"},
		{"logs empty provider", "GET", "/v1/logs?provider=", nil, nil, 400, "validation_failed", "provider"},
		{"logs bad parent", "GET", "/v1/logs?parent_request_id=" + strings.Repeat("x", 129), nil, nil, 400, "validation_failed", "parent_request_id"},
		{"logs parent with a control character", "GET", "/v1/logs?parent_request_id=a%0Ab", nil, nil, 400, "validation_failed", "parent_request_id"},
		{"logs bad since", "GET", "/v1/logs?since=yesterday", nil, nil, 400, "validation_failed", "since"},
		{"logs until before since", "GET", "/v1/logs?since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z", nil, nil, 400, "validation_failed", "until"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tg.Do(tt.method, tt.path, "acme", tt.body, tt.hdr...)
			p := r.Problem(t, tt.status, tt.code)
			if tt.field != "" {
				found := false
				for _, v := range p.Validation {
					if len(v.Path) > 0 && v.Path[0] == tt.field {
						found = true
					}
				}
				if !found {
					t.Errorf("validation %+v does not name %q", p.Validation, tt.field)
				}
			}
		})
	}
}

// TestEveryUnknownFieldIsNamed: the decoder stops at the first unknown
// field; the problem names every one, nested ones by their path.
func TestEveryUnknownFieldIsNamed(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	r := tg.Do("POST", "/v1/audio/speech", "acme", `{"model":"espeak","voice":"en","text":"x","volume":3,"colour":"red",`+
		`"output":{"format":"wav","bitdepth":24},"pronunciations":{"rules":[{"word":"a","replacement":"b","lang":"en"}]}}`)
	p := r.Problem(t, 400, "validation_failed")
	var got []string
	for _, v := range p.Validation {
		got = append(got, strings.Join(v.Path, "."))
	}
	want := []string{"colour", "output.bitdepth", "pronunciations.rules.0.lang", "volume"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("validation paths %v, want %v", got, want)
	}

	// The client's own request id is the log row's, so it finds its call.
	r = tg.Do("POST", "/v1/audio/speech", "acme", `{"model":"espeak","voice":"en","text":"find me"}`, "X-Request-Id", "order-17/retry-2")
	if r.Status != 200 || r.Header.Get("X-Request-Id") != "order-17/retry-2" {
		t.Fatalf("speech: %d, request id %q", r.Status, r.Header.Get("X-Request-Id"))
	}
	if row := tg.LastLog("acme"); row.RequestID != "order-17/retry-2" {
		t.Errorf("log row request_id %q", row.RequestID)
	}
}

func TestRequestIDAndProbes(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.BaseConfig)
	mine := uuid.NewString()
	r := tg.Do("GET", "/healthz", "", nil, "X-Request-Id", mine)
	if r.Status != 200 || r.Header.Get("X-Request-Id") != mine {
		t.Fatalf("healthz %d, request id %q", r.Status, r.Header.Get("X-Request-Id"))
	}
	// Any printable id up to 128 characters is the client's to choose and
	// is echoed; anything else is replaced by a generated uuid.
	for _, tt := range []struct {
		sent string
		echo bool
	}{
		{"my-call-42", true},
		{"order 17 / retry 2", true},
		{strings.Repeat("x", 128), true},
		{strings.Repeat("x", 129), false},
		{"tab\tinside", false},
		{"caf\u00e9", false},
	} {
		got := tg.Do("GET", "/healthz", "", nil, "X-Request-Id", tt.sent).Header.Get("X-Request-Id")
		if tt.echo && got != tt.sent {
			t.Errorf("request id %q came back as %q", tt.sent, got)
		}
		if !tt.echo && (got == tt.sent || uuid.Validate(got) != nil) {
			t.Errorf("request id %q was not replaced by a uuid: %q", tt.sent, got)
		}
	}
	r = tg.Do("GET", "/v1/voices", "acme", nil)
	if _, err := uuid.Parse(r.Header.Get("X-Request-Id")); err != nil {
		t.Errorf("generated request id %q is not a uuid", r.Header.Get("X-Request-Id"))
	}
	if r := tg.Do("GET", "/readyz", "", nil); r.Status != 200 {
		t.Errorf("readyz = %d %s", r.Status, r.Body)
	}
	m := tg.MetricsBody()
	for _, want := range []string{`voxgate_http_requests_total{route="voices.list",status="200"} 1`, "voxgate_log_queue_depth", "voxgate_http_request_duration_seconds_bucket", "voxgate_log_rows_dropped_total"} {
		if !strings.Contains(string(m), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestVoicesCRUDAndIsolation(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.ESpeakConfig)
	r := tg.Do("POST", "/v1/voices", "acme", voiceBody("Narrator"))
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	v := r.Voice(t)
	if v.ID == "" || v.OrgID != "acme" || v.Title != "Narrator" || v.VoiceID != "en" || v.Model != "espeak-ng" || v.CreatedAt.IsZero() || v.ProviderOptions["pitch"] != float64(50) {
		t.Fatalf("created voice = %+v", v)
	}
	if got := r.Header.Get("Location"); got != "/v1/voices/"+v.ID {
		t.Errorf("Location = %q", got)
	}
	got := tg.Do("GET", "/v1/voices/"+v.ID, "acme", nil).Voice(t)
	if got.ID != v.ID || got.Title != v.Title {
		t.Fatalf("get = %+v", got)
	}
	// Another org sees nothing of it.
	tg.Do("GET", "/v1/voices/"+v.ID, "globex", nil).Problem(t, 404, "voice_not_found")
	tg.Do("DELETE", "/v1/voices/"+v.ID, "globex", nil).Problem(t, 404, "voice_not_found")
	var list struct {
		Data []harness.Voice `json:"data"`
	}
	tg.Do("GET", "/v1/voices", "globex", nil).JSON(t, &list)
	if len(list.Data) != 0 {
		t.Fatalf("globex sees %d voices", len(list.Data))
	}
	if r := tg.Do("DELETE", "/v1/voices/"+v.ID, "acme", nil); r.Status != 204 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	tg.Do("GET", "/v1/voices/"+v.ID, "acme", nil).Problem(t, 404, "voice_not_found")
}

func TestVoicesPaginationWhileCreating(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.ESpeakConfig)
	const initial = 23
	want := map[string]bool{}
	for i := 0; i < initial; i++ {
		v := tg.Do("POST", "/v1/voices", "acme", voiceBody(fmt.Sprintf("v%02d", i))).Voice(t)
		want[v.ID] = true
	}
	seen := map[string]bool{}
	var order []harness.Voice
	cursor := ""
	pages := 0
	for {
		path := "/v1/voices?limit=5"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		var p harness.VoicePage
		tg.Do("GET", path, "acme", nil).JSON(t, &p)
		pages++
		if p.Limit != 5 || len(p.Data) > 5 {
			t.Fatalf("page limit %d, %d items", p.Limit, len(p.Data))
		}
		for _, v := range p.Data {
			if seen[v.ID] {
				t.Fatalf("duplicate %s on page %d", v.ID, pages)
			}
			seen[v.ID] = true
			order = append(order, v)
		}
		// New voices created between pages are newer than every position
		// already passed; they must not shift the remaining pages.
		tg.Do("POST", "/v1/voices", "acme", voiceBody(fmt.Sprintf("late-%d", pages)))
		if !p.HasMore {
			if p.NextCursor != "" {
				t.Errorf("last page has next_cursor %q", p.NextCursor)
			}
			break
		}
		cursor = p.NextCursor
	}
	for id := range want {
		if !seen[id] {
			t.Errorf("voice %s missing from the pages (gap)", id)
		}
	}
	for i := 1; i < len(order); i++ {
		if order[i].CreatedAt.After(order[i-1].CreatedAt) {
			t.Fatalf("not newest first at %d", i)
		}
	}
	if pages != 5 {
		t.Errorf("pages = %d, want 5 for 23 items at 5 per page", pages)
	}
	// The default limit is 50.
	var p harness.VoicePage
	tg.Do("GET", "/v1/voices", "acme", nil).JSON(t, &p)
	if p.Limit != 50 {
		t.Errorf("default limit = %d", p.Limit)
	}
}

func TestCursorsBoundToOrgAndQuery(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.ESpeakConfig)
	for i := 0; i < 3; i++ {
		tg.Do("POST", "/v1/voices", "acme", voiceBody("v"))
		tg.Core.Logs().Record(store.LogRow{RequestID: uuid.NewString(), OrgID: "acme", TS: time.Now().UTC(), Path: "/v1/audio/speech", Status: 200, Provider: "espeak"})
	}
	tg.FlushLogs()
	var p harness.VoicePage
	tg.Do("GET", "/v1/voices?limit=1", "acme", nil).JSON(t, &p)
	if p.NextCursor == "" {
		t.Fatal("no cursor")
	}
	var lp struct {
		NextCursor string `json:"next_cursor"`
	}
	tg.Do("GET", "/v1/logs?limit=1&provider=espeak", "acme", nil).JSON(t, &lp)
	tampered := []byte(p.NextCursor)
	tampered[len(tampered)/2] ^= 0x01
	cases := []struct{ name, org, path string }{
		{"other org replays", "globex", "/v1/voices?cursor=" + p.NextCursor},
		{"tampered", "acme", "/v1/voices?cursor=" + url.QueryEscape(string(tampered))},
		{"voices cursor on logs", "acme", "/v1/logs?cursor=" + p.NextCursor},
		{"logs cursor with other filter", "acme", "/v1/logs?provider=other&cursor=" + lp.NextCursor},
		{"logs cursor on voices", "acme", "/v1/voices?cursor=" + lp.NextCursor},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tg.Do("GET", c.path, c.org, nil).Problem(t, 400, "invalid_cursor")
		})
	}
	if r := tg.Do("GET", "/v1/voices?cursor="+p.NextCursor, "acme", nil); r.Status != 200 {
		t.Fatalf("own cursor rejected: %s", r.Body)
	}
}

// TestLogsFilters records real rows through the gateway's logging hook
// (the request-log writer) and reads them back over HTTP.
func TestLogsFilters(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.BaseConfig)
	now := time.Now().UTC().Truncate(time.Millisecond)
	parent := uuid.NewString()
	type spec struct {
		age      time.Duration
		provider string
		status   int
		parent   string
		org      string
	}
	specs := []spec{
		{1 * time.Minute, "espeak", 200, "", "acme"},
		{2 * time.Minute, "espeak", 422, "", "acme"},
		{3 * time.Minute, "openai", 200, "", "acme"},
		{4 * time.Minute, "openai", 502, "", "acme"},
		{5 * time.Minute, "espeak", 200, parent, "acme"},
		{6 * time.Minute, "openai", 200, parent, "acme"},
		{7 * time.Minute, "espeak", 200, "", "globex"},
		{31 * 24 * time.Hour, "espeak", 200, "", "acme"}, // past retention
	}
	ids := make([]string, len(specs))
	for i, s := range specs {
		ids[i] = uuid.NewString()
		tg.Core.Logs().Record(store.LogRow{RequestID: ids[i], ParentRequestID: s.parent, OrgID: s.org, TS: now.Add(-s.age), Path: "/v1/audio/speech",
			Status: s.status, Provider: s.provider, Model: "m", VoiceID: "v", VoiceRef: "ref", CharCount: 10 * (i + 1), CreditsUsed: i,
			LatencyMS: int64(100 + i), ModerationDecision: "allow", ModerationConfidence: 0.5, ProviderOptions: `{"a":1}`})
	}
	tg.FlushLogs()
	ts := func(i int) string { return url.QueryEscape(now.Add(-specs[i].age).Format(time.RFC3339Nano)) }
	tests := []struct {
		name  string
		query string
		want  []int
	}{
		{"all (newest first, retention applied, own org)", "", []int{0, 1, 2, 3, 4, 5}},
		{"provider", "provider=espeak", []int{0, 1, 4}},
		{"status", "status=200", []int{0, 2, 4, 5}},
		{"provider+status", "provider=openai&status=200", []int{2, 5}},
		{"parent", "parent_request_id=" + parent, []int{4, 5}},
		{"parent+provider", "parent_request_id=" + parent + "&provider=openai", []int{5}},
		{"since inclusive", "since=" + ts(2), []int{0, 1, 2}},
		{"until exclusive", "until=" + ts(2), []int{3, 4, 5}},
		{"since+until", "since=" + ts(4) + "&until=" + ts(1), []int{2, 3, 4}},
		{"since+until+provider+status", "since=" + ts(5) + "&until=" + ts(0) + "&provider=espeak&status=200", []int{4}},
		{"no match", "status=418", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Page one row at a time to exercise cursors under every filter.
			var got []string
			cursor := ""
			for {
				q := "/v1/logs?limit=1"
				if tt.query != "" {
					q += "&" + tt.query
				}
				if cursor != "" {
					q += "&cursor=" + url.QueryEscape(cursor)
				}
				var p harness.LogPage
				r := tg.Do("GET", q, "acme", nil)
				if r.Status != 200 {
					t.Fatalf("%s: %d %s", q, r.Status, r.Body)
				}
				r.JSON(t, &p)
				for _, row := range p.Data {
					got = append(got, row.RequestID)
				}
				if !p.HasMore {
					break
				}
				cursor = p.NextCursor
			}
			var want []string
			for _, i := range tt.want {
				want = append(want, ids[i])
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("got %v\nwant %v", got, want)
			}
		})
	}
	// Every field of the row is returned with the spec's names.
	r := tg.Do("GET", "/v1/logs?limit=1", "acme", nil)
	for _, f := range []string{"request_id", "parent_request_id", "ts", "path", "status", "provider", "model", "voice_id", "voice_ref", "char_count", "credits_used", "latency_ms", "error_code", "error_detail", "provider_options", "moderation_decision", "moderation_reason_type", "moderation_reason_detail", "moderation_confidence", "moderation_latency_ms"} {
		if !strings.Contains(string(r.Body), `"`+f+`":`) {
			t.Errorf("log row lacks %q: %s", f, r.Body)
		}
	}
	if strings.Contains(string(r.Body), "org_id") {
		t.Errorf("log row exposes org_id: %s", r.Body)
	}
	// globex sees only its own row.
	var gp harness.LogPage
	tg.Do("GET", "/v1/logs", "globex", nil).JSON(t, &gp)
	if len(gp.Data) != 1 || gp.Data[0].RequestID != ids[6] {
		t.Errorf("globex logs = %+v", gp.Data)
	}
}

func TestConcurrentRequestsAcrossOrgs(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.ESpeakConfig)
	var wg sync.WaitGroup
	for _, org := range []string{"acme", "globex"} {
		for i := 0; i < 10; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if r := tg.Do("POST", "/v1/voices", org, voiceBody(org)); r.Status != 201 {
					t.Errorf("create: %d", r.Status)
				}
			}()
		}
	}
	wg.Wait()
	for _, org := range []string{"acme", "globex"} {
		var p harness.VoicePage
		tg.Do("GET", "/v1/voices?limit=200", org, nil).JSON(t, &p)
		if len(p.Data) != 10 {
			t.Fatalf("%s has %d voices", org, len(p.Data))
		}
		for _, v := range p.Data {
			if v.OrgID != org || v.Title != org {
				t.Fatalf("%s sees %+v", org, v)
			}
		}
	}
}

func TestOrgRateLimit(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, strings.Replace(harness.SpeechConfig, "  acme:\n", "  acme:\n    rate_limit: 0.2\n    rate_burst: 2\n    read_rate_limit: 0.2\n    read_rate_burst: 3\n", 1))
	// Reads have their own budget: spending it all leaves synthesis whole.
	for i := 0; i < 3; i++ {
		if r := tg.Do("GET", "/v1/voices", "acme", nil); r.Status != 200 {
			t.Fatalf("read %d within the read burst: %d", i, r.Status)
		}
	}
	r := tg.Do("GET", "/v1/logs", "acme", nil)
	r.Problem(t, 429, "rate_limited")
	if ra := r.Header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("Retry-After = %q", ra)
	}
	for i := 0; i < 2; i++ {
		if r := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody("hi")); r.Status != 200 {
			t.Fatalf("synthesis %d after the reads were spent: %d %s", i, r.Status, r.Body)
		}
	}
	r = tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", harness.SpeechBody("hi"))
	r.Problem(t, 429, "rate_limited")
	if !strings.Contains(string(r.Body), "synthesis") {
		t.Errorf("429 detail does not name the budget: %s", r.Body)
	}
	// Another organization is not slowed by acme's limits.
	for i := 0; i < 5; i++ {
		if r := tg.Do("GET", "/v1/voices", "globex", nil); r.Status != 200 {
			t.Fatalf("globex request %d: %d", i, r.Status)
		}
	}
}

package admin

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/voxgate/voxgate/test/e2e/harness"
)

// The IETF RateLimit fields' syntax (draft-ietf-httpapi-ratelimit-headers):
// one Item each, an sf-string and its parameters.
var (
	policyField = regexp.MustCompile(`^"([a-z-]+)";q=([0-9]+)(;qu="[a-z-]+")?;w=([0-9]+)$`)
	limitField  = regexp.MustCompile(`^"([a-z-]+)";r=([0-9]+);t=([0-9]+)$`)
)

// assertRateLimited checks a 429 carries Retry-After and the two fields,
// naming policy with quota q per w seconds; it returns the t of RateLimit.
func assertRateLimited(t *testing.T, r *harness.Response, code, policy string, q, w int) {
	t.Helper()
	r.Problem(t, 429, code)
	ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || ra < 1 {
		t.Errorf("Retry-After %q", r.Header.Get("Retry-After"))
	}
	pm := policyField.FindStringSubmatch(r.Header.Get("RateLimit-Policy"))
	lm := limitField.FindStringSubmatch(r.Header.Get("RateLimit"))
	if pm == nil || lm == nil {
		t.Fatalf("RateLimit-Policy %q, RateLimit %q: not the draft's syntax", r.Header.Get("RateLimit-Policy"), r.Header.Get("RateLimit"))
	}
	if pm[1] != policy || lm[1] != policy || pm[2] != strconv.Itoa(q) || pm[4] != strconv.Itoa(w) || lm[2] != "0" {
		t.Errorf("RateLimit-Policy %q, RateLimit %q; want policy %s q=%d w=%d r=0", pm[0], lm[0], policy, q, w)
	}
	if tt, _ := strconv.Atoi(lm[3]); tt != ra {
		t.Errorf("RateLimit t=%d, Retry-After %d: they should agree", tt, ra)
	}
}

// limitsConfig gives acme a read rate limit of one request per 100 s.
const limitsConfig = `
server:
  listen: 127.0.0.1:0
  max_body_bytes: 65536
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
providers:
  espeak: {plugin: voxgate-espeak, managed: true, credits_per_1k_chars: 1000}
orgs:
  acme:
    read_rate_limit: 0.01
    read_rate_burst: 1
    providers: {espeak: {enabled: true}}
  globex:
    providers: {espeak: {enabled: true}}
`

// TestKeyRateLimit: a key's own per-minute limit, beside its
// organization's, answered 429 with the RateLimit fields; the
// organization's other keys are not held by it.
func TestKeyRateLimit(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, limitsConfig)
	k, _, err := tg.Core.CreateAdminKey(t.Context(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	tg.Keys["admin"] = k
	r := tg.Do("POST", "/v1/admin/keys", "admin", map[string]any{"org": "globex", "rate_limit": map[string]any{"per_minute": 2}})
	var made struct{ Data key }
	r.JSON(t, &made)
	lim := withKey(tg, "limited", made.Data.Key)
	for i := range 2 {
		if r := tg.Do("GET", "/v1/voices", lim, nil); r.Status != 200 {
			t.Fatalf("request %d: %d %s", i, r.Status, r.Body)
		}
	}
	assertRateLimited(t, tg.Do("GET", "/v1/voices", lim, nil), "rate_limited", "key", 2, 60)
	if r := tg.Do("GET", "/v1/voices", "globex", nil); r.Status != 200 {
		t.Fatalf("globex's other key: %d %s", r.Status, r.Body)
	}
	// Raised through the API: applies at once.
	tg.Do("PATCH", "/v1/admin/keys/"+made.Data.ID, "admin", map[string]any{"rate_limit": map[string]any{"per_minute": 1000}})
	if r := tg.Do("GET", "/v1/voices", lim, nil); r.Status != 200 {
		t.Fatalf("after raising the limit: %d %s", r.Status, r.Body)
	}

	// The organization's limits carry the fields too.
	if r := tg.Do("GET", "/v1/voices", "acme", nil); r.Status != 200 {
		t.Fatalf("acme's first read: %d %s", r.Status, r.Body)
	}
	assertRateLimited(t, tg.Do("GET", "/v1/voices", "acme", nil), "rate_limited", "org-reads", 1, 100)
}

// TestKeyBudget: a key's own budget, set through the API, refuses a
// request that would pass it, with the RateLimit fields in credits.
func TestKeyBudget(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, limitsConfig)
	k, _, err := tg.Core.CreateAdminKey(t.Context(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	tg.Keys["admin"] = k
	r := tg.Do("POST", "/v1/admin/keys", "admin", map[string]any{"org": "globex", "budget": map[string]any{"credits": 10, "period": "day"}})
	var made struct{ Data key }
	r.JSON(t, &made)
	b := withKey(tg, "budgeted", made.Data.Key)
	// Five characters at 1000 credits per 1000: 5 credits each.
	for i := range 2 {
		if r := tg.Do("POST", "/v1/audio/speech", b, map[string]any{"model": "espeak", "voice": "en", "text": "hello"}); r.Status != 200 {
			t.Fatalf("speech %d: %d %s", i, r.Status, r.Body)
		}
	}
	r = tg.Do("POST", "/v1/audio/speech", b, map[string]any{"model": "espeak", "voice": "en", "text": "hello"})
	r.Problem(t, 429, "budget_exceeded")
	pol := policyField.FindStringSubmatch(r.Header.Get("RateLimit-Policy"))
	if pol == nil || pol[1] != "key-budget" || pol[2] != "10" || pol[3] != `;qu="credits"` || pol[4] != "86400" {
		t.Errorf("RateLimit-Policy %q", r.Header.Get("RateLimit-Policy"))
	}
	if lm := limitField.FindStringSubmatch(r.Header.Get("RateLimit")); lm == nil || lm[2] != "0" {
		t.Errorf("RateLimit %q", r.Header.Get("RateLimit"))
	}
	if r.Header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}
	// globex's own key has no such budget.
	if r := tg.Do("POST", "/v1/audio/speech", "globex", map[string]any{"model": "espeak", "voice": "en", "text": "hello"}); r.Status != 200 {
		t.Fatalf("globex's other key: %d %s", r.Status, r.Body)
	}
}

// TestOrgBudget: an organization made through the API with a budget has
// it enforced, and a budget changed through the API applies at once.
func TestOrgBudget(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, limitsConfig)
	k, _, err := tg.Core.CreateAdminKey(t.Context(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	tg.Keys["admin"] = k
	if r := tg.Do("POST", "/v1/admin/orgs", "admin", map[string]any{"id": "team-b", "name": "B",
		"budget": map[string]any{"credits": 5, "period": "month"}, "providers": map[string]any{"espeak": map[string]any{"enabled": true}}}); r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var made struct{ Data key }
	tg.Do("POST", "/v1/admin/keys", "admin", map[string]any{"org": "team-b"}).JSON(t, &made)
	b := withKey(tg, "team-b", made.Data.Key)
	speak := func() *harness.Response {
		return tg.Do("POST", "/v1/audio/speech", b, map[string]any{"model": "espeak", "voice": "en", "text": "hello"})
	}
	if r := speak(); r.Status != 200 {
		t.Fatalf("first: %d %s", r.Status, r.Body)
	}
	r := speak()
	r.Problem(t, 429, "budget_exceeded")
	if pol := policyField.FindStringSubmatch(r.Header.Get("RateLimit-Policy")); pol == nil || pol[1] != "org-budget" || pol[2] != "5" {
		t.Errorf("RateLimit-Policy %q", r.Header.Get("RateLimit-Policy"))
	}
	tg.Do("PATCH", "/v1/admin/orgs/team-b", "admin", map[string]any{"budget": map[string]any{"credits": 100, "period": "month"}})
	if r := speak(); r.Status != 200 {
		t.Fatalf("after raising the budget: %d %s", r.Status, r.Body)
	}
	// The organization's spend by key, as the dashboard's admin view reads it.
	tg.FlushLogs()
	var u struct {
		Data []struct {
			KeyID    string `json:"key_id"`
			Requests int    `json:"requests"`
			Credits  int    `json:"credits"`
		} `json:"data"`
	}
	tg.Do("GET", "/v1/admin/orgs/team-b/usage?group_by=key", "admin", nil).JSON(t, &u)
	if len(u.Data) != 1 || u.Data[0].KeyID != made.Data.ID || u.Data[0].Credits != 10 || u.Data[0].Requests != 3 {
		t.Errorf("team-b's usage by key = %+v; want its key's 3 requests, 10 credits", u.Data)
	}
	tg.Do("GET", "/v1/admin/orgs/nope/usage", "admin", nil).Problem(t, 404, "not_found")
	tg.Do("GET", "/v1/admin/orgs/team-b/usage", b, nil).Problem(t, 403, "forbidden")
	tg.Do("PATCH", "/v1/admin/orgs/team-b", "admin", map[string]any{"budget": nil})
	var o struct{ Data org }
	tg.Do("GET", "/v1/admin/orgs/team-b", "admin", nil).JSON(t, &o)
	if o.Data.Budget != nil {
		t.Errorf("budget after removing it: %+v", o.Data.Budget)
	}
}

package admin

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/test/e2e/harness"
)

// start is a gateway with eSpeak, its two file organizations' keys, and
// an admin key under Keys["admin"].
func start(t *testing.T) *harness.Gateway {
	t.Helper()
	tg := harness.Start(t, harness.ESpeakConfig)
	key, _, err := tg.Core.CreateAdminKey(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	tg.Keys["admin"] = key
	return tg
}

type org struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	ManagedBy string `json:"managedBy"`
	Disabled  bool   `json:"disabled"`
	Budget    *struct {
		Credits int64  `json:"credits"`
		Period  string `json:"period"`
	} `json:"budget"`
	RateLimit *struct {
		PerMinute int `json:"per_minute"`
	} `json:"rate_limit"`
	Providers map[string]struct {
		Enabled bool `json:"enabled"`
		BYOK    bool `json:"byok"`
	} `json:"providers"`
}

type key struct {
	ID        string     `json:"id"`
	Key       string     `json:"key"`
	Org       string     `json:"org"`
	Name      string     `json:"name"`
	Status    string     `json:"status"`
	ExpiresAt *time.Time `json:"expires_at"`
	Budget    *struct {
		Credits int64  `json:"credits"`
		Period  string `json:"period"`
	} `json:"budget"`
	RateLimit *struct {
		PerMinute int `json:"per_minute"`
	} `json:"rate_limit"`
}

type page[T any] struct {
	Data       []T    `json:"data"`
	NextCursor string `json:"next_cursor"`
	HasMore    bool   `json:"has_more"`
}

// withKey adds a raw key to tg under label, so Do can send it.
func withKey(tg *harness.Gateway, label, k string) string {
	tg.Keys[label] = k
	return label
}

// TestAdminKeysOnly: the admin API answers admin keys only, and admin
// keys call nothing else.
func TestAdminKeysOnly(t *testing.T) {
	t.Parallel()
	tg := start(t)
	tg.Do("GET", "/v1/admin/orgs", "", nil).Problem(t, 401, "unauthorized")
	p := tg.Do("GET", "/v1/admin/orgs", "acme", nil).Problem(t, 403, "forbidden")
	if !strings.Contains(p.Detail, "admin key") {
		t.Errorf("detail %q does not say an admin key is needed", p.Detail)
	}
	tg.Do("POST", "/v1/admin/orgs", "acme", map[string]any{"id": "x", "name": "X"}).Problem(t, 403, "forbidden")
	tg.Do("GET", "/v1/admin/keys", "globex", nil).Problem(t, 403, "forbidden")
	// Another organization's key id, through an organization's key: the
	// same 403, whatever the id.
	var ks page[key]
	tg.Do("GET", "/v1/admin/keys?org=acme", "admin", nil).JSON(t, &ks)
	if len(ks.Data) != 1 {
		t.Fatalf("acme's keys = %+v", ks.Data)
	}
	tg.Do("DELETE", "/v1/admin/keys/"+ks.Data[0].ID, "globex", nil).Problem(t, 403, "forbidden")
	tg.Do("GET", "/v1/admin/keys/"+ks.Data[0].ID, "globex", nil).Problem(t, 403, "forbidden")
	if r := tg.Do("GET", "/v1/voices", "acme", nil); r.Status != 200 {
		t.Fatalf("acme's key after the attempts: %d %s", r.Status, r.Body)
	}

	tg.Do("GET", "/v1/voices", "admin", nil).Problem(t, 403, "forbidden")
	tg.Do("POST", "/v1/audio/speech", "admin", map[string]any{"model": "espeak", "voice": "en", "text": "hi"}).Problem(t, 403, "forbidden")

	var orgs page[org]
	r := tg.Do("GET", "/v1/admin/orgs", "admin", nil)
	if r.Status != 200 {
		t.Fatalf("list orgs: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &orgs)
	if len(orgs.Data) != 2 || orgs.Data[0].ID != "acme" || orgs.Data[1].ID != "globex" || orgs.Data[0].ManagedBy != "file" {
		t.Fatalf("orgs = %+v; want acme, globex managed by the file", orgs.Data)
	}
}

// TestOrganizations: made through the API with no restart, listed with
// the file's, paged, changed, disabled; the file's refused.
func TestOrganizations(t *testing.T) {
	t.Parallel()
	tg := start(t)
	r := tg.Do("POST", "/v1/admin/orgs", "admin", map[string]any{"id": "team-x", "name": "Team X",
		"budget": map[string]any{"credits": 1000, "period": "month"}, "providers": map[string]any{"espeak": map[string]any{"enabled": true}}})
	if r.Status != 201 || r.Header.Get("Location") != "/v1/admin/orgs/team-x" {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var made struct{ Data org }
	r.JSON(t, &made)
	if made.Data.ManagedBy != "api" || made.Data.Budget == nil || made.Data.Budget.Credits != 1000 || !made.Data.Providers["espeak"].Enabled {
		t.Errorf("made %+v", made.Data)
	}

	for _, tc := range []struct {
		name string
		body any
		code string
		path string
	}{
		{"taken", map[string]any{"id": "team-x", "name": "again"}, "conflict", ""},
		{"the file's", map[string]any{"id": "acme", "name": "Acme"}, "conflict", ""},
		{"bad id", map[string]any{"id": "Team X", "name": "x"}, "validation_failed", "id"},
		{"no name", map[string]any{"id": "team-y"}, "validation_failed", "name"},
		{"unknown field", map[string]any{"id": "team-y", "name": "y", "colour": "red"}, "validation_failed", "colour"},
		{"wrong type", `{"id": "team-y", "name": 5}`, "validation_failed", "name"},
		{"bad budget", map[string]any{"id": "team-y", "name": "y", "budget": map[string]any{"credits": 5, "period": "week"}}, "validation_failed", "budget.period"},
		{"unknown provider", map[string]any{"id": "team-y", "name": "y", "providers": map[string]any{"nope": map[string]any{"enabled": true}}}, "validation_failed", "providers.nope"},
		{"not an object", `[1]`, "validation_failed", ""},
		{"malformed", `{"id":`, "invalid_json", ""},
	} {
		status := 400
		if tc.code == "conflict" {
			status = 409
		}
		p := tg.Do("POST", "/v1/admin/orgs", "admin", tc.body).Problem(t, status, tc.code)
		if tc.path != "" {
			harness.AssertPaths(t, p, tc.path)
		}
	}
	huge := fmt.Sprintf(`{"id": "team-z", "name": %q}`, strings.Repeat("n", 70000))
	tg.Do("POST", "/v1/admin/orgs", "admin", huge).Problem(t, 413, "payload_too_large")
	tg.Do("GET", "/v1/admin/orgs/team-y", "admin", nil).Problem(t, 404, "not_found")

	// The file's organizations are listed, and refused with a message
	// naming the file.
	p := tg.Do("PATCH", "/v1/admin/orgs/acme", "admin", map[string]any{"name": "Acme Corp"}).Problem(t, 409, "conflict")
	if !strings.Contains(p.Detail, "gateway.yaml") {
		t.Errorf("detail %q does not name the file", p.Detail)
	}
	tg.Do("DELETE", "/v1/admin/orgs/globex", "admin", nil).Problem(t, 409, "conflict")

	// Paging: one at a time, cursors signed.
	var ids []string
	cursor := ""
	for range 5 {
		var pg page[org]
		tg.Do("GET", "/v1/admin/orgs?limit=1"+cursor, "admin", nil).JSON(t, &pg)
		for _, o := range pg.Data {
			ids = append(ids, o.ID)
		}
		if !pg.HasMore {
			break
		}
		if pg.NextCursor == "" {
			t.Fatal("has_more without a cursor")
		}
		cursor = "&cursor=" + url.QueryEscape(pg.NextCursor)
	}
	if strings.Join(ids, ",") != "acme,globex,team-x" {
		t.Errorf("paged ids = %v", ids)
	}
	var first page[org]
	tg.Do("GET", "/v1/admin/orgs?limit=1", "admin", nil).JSON(t, &first)
	bad := []byte(first.NextCursor)
	bad[len(bad)/2] ^= 1
	tg.Do("GET", "/v1/admin/orgs?limit=1&cursor="+url.QueryEscape(string(bad)), "admin", nil).Problem(t, 400, "invalid_cursor")
	// A cursor of the key list is not one of the organization list.
	tg.Do("POST", "/v1/admin/keys", "admin", map[string]any{"org": "acme"})
	var kp page[key]
	tg.Do("GET", "/v1/admin/keys?org=acme&limit=1", "admin", nil).JSON(t, &kp)
	tg.Do("GET", "/v1/admin/orgs?limit=1&cursor="+url.QueryEscape(kp.NextCursor), "admin", nil).Problem(t, 400, "invalid_cursor")

	// A key of the new organization works at once: it lists voices and
	// speaks with the provider the organization was given.
	r = tg.Do("POST", "/v1/admin/keys", "admin", map[string]any{"org": "team-x", "name": "ci"})
	if r.Status != 201 {
		t.Fatalf("create key: %d %s", r.Status, r.Body)
	}
	var k struct{ Data key }
	r.JSON(t, &k)
	if !strings.HasPrefix(k.Data.Key, "vxk_") || k.Data.Org != "team-x" || k.Data.Status != "active" {
		t.Fatalf("key %+v", k.Data)
	}
	if r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("the answer holding a key may be cached: Cache-Control %q", r.Header.Get("Cache-Control"))
	}
	x := withKey(tg, "team-x", k.Data.Key)
	if r := tg.Do("GET", "/v1/voices", x, nil); r.Status != 200 {
		t.Fatalf("team-x lists voices: %d %s", r.Status, r.Body)
	}
	if r := tg.Do("POST", "/v1/audio/speech", x, map[string]any{"model": "espeak", "voice": "en", "text": "hello"}); r.Status != 200 {
		t.Fatalf("team-x speaks: %d %s", r.Status, r.Body)
	}
	// Changing its providers applies at once.
	r = tg.Do("PATCH", "/v1/admin/orgs/team-x", "admin", map[string]any{"providers": map[string]any{}, "name": "Team X2"})
	if r.Status != 200 {
		t.Fatalf("patch: %d %s", r.Status, r.Body)
	}
	tg.Do("POST", "/v1/audio/speech", x, map[string]any{"model": "espeak", "voice": "en", "text": "hello"}).Problem(t, 403, "provider_disabled")

	// Disabled: its keys get 403; enabled again: they work.
	r = tg.Do("DELETE", "/v1/admin/orgs/team-x", "admin", nil)
	var dis struct{ Data org }
	r.JSON(t, &dis)
	if r.Status != 200 || !dis.Data.Disabled || dis.Data.Name != "Team X2" {
		t.Fatalf("disable: %d %s", r.Status, r.Body)
	}
	tg.Do("GET", "/v1/voices", x, nil).Problem(t, 403, "org_disabled")
	tg.Do("PATCH", "/v1/admin/orgs/team-x", "admin", map[string]any{"disabled": false})
	if r := tg.Do("GET", "/v1/voices", x, nil); r.Status != 200 {
		t.Fatalf("enabled again: %d %s", r.Status, r.Body)
	}
	tg.Do("PATCH", "/v1/admin/orgs/team-x", "admin", map[string]any{"id": "other"}).Problem(t, 400, "validation_failed")
}

// TestKeys: made with limits and an expiry, listed by organization,
// changed, revoked; an expired key is told it expired.
func TestKeys(t *testing.T) {
	t.Parallel()
	tg := start(t)
	r := tg.Do("POST", "/v1/admin/keys", "admin", map[string]any{"org": "acme", "name": "batch",
		"scope":      map[string]any{"providers": []string{"espeak"}},
		"budget":     map[string]any{"credits": 500, "period": "day"},
		"rate_limit": map[string]any{"per_minute": 30}})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var made struct{ Data key }
	r.JSON(t, &made)
	if made.Data.Budget == nil || made.Data.Budget.Credits != 500 || made.Data.RateLimit == nil || made.Data.RateLimit.PerMinute != 30 {
		t.Fatalf("made %+v", made.Data)
	}
	b := withKey(tg, "batch", made.Data.Key)

	for _, tc := range []struct {
		name string
		body any
		path string
	}{
		{"no org", map[string]any{"name": "x"}, "org"},
		{"unknown org", map[string]any{"org": "nope"}, "org"},
		{"past expiry", map[string]any{"org": "acme", "expires_at": "2020-01-01T00:00:00Z"}, "expires_at"},
		{"negative rate", map[string]any{"org": "acme", "rate_limit": map[string]any{"per_minute": -1}}, "rate_limit.per_minute"},
		{"bad model", map[string]any{"org": "acme", "scope": map[string]any{"models": []string{"tts-1"}}}, "scope.models.0"},
		{"wrong type", `{"org": "acme", "rate_limit": {"per_minute": "many"}}`, "rate_limit.per_minute"},
		{"unknown field", map[string]any{"org": "acme", "admin": true}, "admin"},
	} {
		p := tg.Do("POST", "/v1/admin/keys", "admin", tc.body).Problem(t, 400, "validation_failed")
		harness.AssertPaths(t, p, tc.path)
	}

	var ks page[key]
	tg.Do("GET", "/v1/admin/keys?org=acme", "admin", nil).JSON(t, &ks)
	if len(ks.Data) != 2 || ks.Data[1].ID != made.Data.ID || ks.Data[1].Key != "" {
		t.Fatalf("acme's keys = %+v", ks.Data)
	}
	tg.Do("GET", "/v1/admin/keys?org=acme&bogus=1", "admin", nil).Problem(t, 400, "validation_failed")
	var all page[key]
	tg.Do("GET", "/v1/admin/keys", "admin", nil).JSON(t, &all)
	if len(all.Data) != 3 {
		t.Errorf("every key = %d, want acme's two and globex's one (admin keys not listed)", len(all.Data))
	}
	// A cursor made for acme's list does not page globex's.
	var one page[key]
	tg.Do("GET", "/v1/admin/keys?org=acme&limit=1", "admin", nil).JSON(t, &one)
	tg.Do("GET", "/v1/admin/keys?org=globex&limit=1&cursor="+url.QueryEscape(one.NextCursor), "admin", nil).Problem(t, 400, "invalid_cursor")

	r = tg.Do("PATCH", "/v1/admin/keys/"+made.Data.ID, "admin", map[string]any{"name": "batch-2", "budget": nil, "rate_limit": map[string]any{"per_minute": 60}})
	var upd struct{ Data key }
	r.JSON(t, &upd)
	if r.Status != 200 || upd.Data.Name != "batch-2" || upd.Data.Budget != nil || upd.Data.RateLimit.PerMinute != 60 {
		t.Fatalf("update: %d %s", r.Status, r.Body)
	}
	tg.Do("PATCH", "/v1/admin/keys/"+made.Data.ID, "admin", map[string]any{"org": "globex"}).Problem(t, 400, "validation_failed")
	tg.Do("PATCH", "/v1/admin/keys/nope", "admin", map[string]any{"name": "x"}).Problem(t, 404, "not_found")
	if r := tg.Do("GET", "/v1/voices", b, nil); r.Status != 200 {
		t.Fatalf("the updated key: %d %s", r.Status, r.Body)
	}

	// An expiry set through the API: once passed, 401 saying so.
	soon := time.Now().Add(1500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	if r := tg.Do("PATCH", "/v1/admin/keys/"+made.Data.ID, "admin", map[string]any{"expires_at": soon}); r.Status != 200 {
		t.Fatalf("set expiry: %d %s", r.Status, r.Body)
	}
	harness.WaitFor(t, "the key to expire", func() bool { return tg.Do("GET", "/v1/voices", b, nil).Status == 401 })
	p := tg.Do("GET", "/v1/voices", b, nil).Problem(t, 401, "unauthorized")
	if !strings.Contains(p.Detail, "expired") {
		t.Errorf("an expired key's detail %q does not say it expired", p.Detail)
	}
	var got struct{ Data key }
	tg.Do("GET", "/v1/admin/keys/"+made.Data.ID, "admin", nil).JSON(t, &got)
	if got.Data.Status != "expired" {
		t.Errorf("status = %q, want expired", got.Data.Status)
	}

	// Revoked: refused at once.
	r = tg.Do("DELETE", "/v1/admin/keys/"+ks.Data[0].ID, "admin", nil)
	var rev struct{ Data key }
	r.JSON(t, &rev)
	if r.Status != 200 || rev.Data.Status != "revoked" {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	tg.Do("GET", "/v1/voices", "acme", nil).Problem(t, 401, "unauthorized")
	tg.Do("DELETE", "/v1/admin/keys/nope", "admin", nil).Problem(t, 404, "not_found")
}

// TestNestedFieldsAreStrict: an unknown member inside a field's object is
// refused like one at the top, naming it.
func TestNestedFieldsAreStrict(t *testing.T) {
	t.Parallel()
	tg := start(t)
	for _, body := range []string{
		`{"id": "team-n", "name": "n", "budget": {"credits": 5, "period": "day", "rollover": true}}`,
		`{"id": "team-n", "name": "n", "providers": {"espeak": {"enabled": true, "weight": 2}}}`,
		`{"id": "team-n", "name": "n", "rate_limit": {"per_minute": 5, "per_hour": 100}}`,
	} {
		p := tg.Do("POST", "/v1/admin/orgs", "admin", body).Problem(t, 400, "validation_failed")
		if len(p.Validation) == 0 || !strings.Contains(p.Validation[0].Message, "unknown field") {
			t.Errorf("%s: %+v", body, p)
		}
	}
	tg.Do("GET", "/v1/admin/orgs/team-n", "admin", nil).Problem(t, 404, "not_found")
	p := tg.Do("POST", "/v1/admin/keys", "admin", `{"org": "acme", "scope": {"providers": ["espeak"], "voices": ["en"]}}`).Problem(t, 400, "validation_failed")
	if len(p.Validation) == 0 {
		t.Errorf("unknown scope member: %+v", p)
	}
}

// TestOrgFailoverWindow: an organization's realtime failover window is
// set, read back, cleared with null and bounded through the admin API.
func TestOrgFailoverWindow(t *testing.T) {
	t.Parallel()
	tg := start(t)
	r := tg.Do("POST", "/v1/admin/orgs", "admin", map[string]any{"id": "agents", "name": "Agents", "failover_window_ms": 1500})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var got struct {
		Data struct {
			FailoverWindowMs *int `json:"failover_window_ms"`
		}
	}
	tg.Do("GET", "/v1/admin/orgs/agents", "admin", nil).JSON(t, &got)
	if got.Data.FailoverWindowMs == nil || *got.Data.FailoverWindowMs != 1500 {
		t.Errorf("read back %v", got.Data.FailoverWindowMs)
	}
	p := tg.Do("PATCH", "/v1/admin/orgs/agents", "admin", map[string]any{"failover_window_ms": 60001}).Problem(t, 400, "validation_failed")
	harness.AssertPaths(t, p, "failover_window_ms")
	tg.Do("PATCH", "/v1/admin/orgs/agents", "admin", map[string]any{"failover_window_ms": nil})
	got.Data.FailoverWindowMs = nil
	tg.Do("GET", "/v1/admin/orgs/agents", "admin", nil).JSON(t, &got)
	if got.Data.FailoverWindowMs != nil {
		t.Errorf("after null: %v", *got.Data.FailoverWindowMs)
	}
}

package admin

import (
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/pgtest"
	"github.com/voxgate/voxgate/internal/redistest"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// clusterConfig is two instances' config on one PostgreSQL and one Redis.
const clusterConfig = `
server:
  listen: 127.0.0.1:0
storage:
  driver: postgres
  dsn: %DSN%
  path: %DIR%/voxgate.db
shared:
  redis_url: %REDIS%
plugins:
  dir: %BIN%/plugins
providers:
  espeak: {plugin: voxgate-espeak, managed: true}
orgs:
  acme:
    providers: {espeak: {enabled: true}}
`

// within polls until ok or a second has passed.
func within(t *testing.T, what string, ok func() bool) {
	t.Helper()
	start := time.Now()
	for !ok() {
		if time.Since(start) > time.Second {
			t.Fatalf("%s: not within a second", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("%s: after %s", what, time.Since(start).Round(time.Millisecond))
}

// TestAcrossInstances: what the admin API does on instance A holds on B
// within a second (the store's change notifications), and a key's rate
// limit is one count across both (Redis).
func TestAcrossInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and Redis")
	}
	t.Parallel()
	pg, rd := pgtest.StartT(t), redistest.StartT(t)
	cfg := strings.NewReplacer("%DSN%", pg.NewDatabaseT(t), "%REDIS%", rd.URL()).Replace(clusterConfig)
	cfg = harness.ShareProvenanceKey(t, cfg)
	a, b := harness.Start(t, cfg), harness.Start(t, cfg)
	adm, _, err := a.Core.CreateAdminKey(t.Context(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	a.Keys["admin"], b.Keys["admin"] = adm, adm
	within(t, "B knows A's admin key", func() bool { return b.Do("GET", "/v1/admin/orgs", "admin", nil).Status == 200 })

	// An organization and its key, made on A, work on B.
	if r := a.Do("POST", "/v1/admin/orgs", "admin", map[string]any{"id": "team-x", "name": "Team X",
		"providers": map[string]any{"espeak": map[string]any{"enabled": true}}}); r.Status != 201 {
		t.Fatalf("create org: %d %s", r.Status, r.Body)
	}
	r := a.Do("POST", "/v1/admin/keys", "admin", map[string]any{"org": "team-x", "rate_limit": map[string]any{"per_minute": 4}})
	var k struct{ Data key }
	r.JSON(t, &k)
	a.Keys["x"], b.Keys["x"] = k.Data.Key, k.Data.Key
	within(t, "B serves team-x's key", func() bool { return b.Do("GET", "/v1/voices", "x", nil).Status == 200 })
	var o struct{ Data org }
	b.Do("GET", "/v1/admin/orgs/team-x", "admin", nil).JSON(t, &o)
	if o.Data.ManagedBy != "api" || !o.Data.Providers["espeak"].Enabled {
		t.Errorf("B's view of team-x: %+v", o.Data)
	}
	if r := b.Do("POST", "/v1/audio/speech", "x", map[string]any{"model": "espeak", "voice": "en", "text": "hi"}); r.Status != 200 {
		t.Fatalf("team-x speaks on B: %d %s", r.Status, r.Body)
	}

	// The key's limit of 4 a minute is shared: 4 requests made above and
	// here, across both instances, then 429 on either.
	for _, tg := range []*harness.Gateway{a, b} {
		if r := tg.Do("GET", "/v1/voices", "x", nil); r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
	assertRateLimited(t, a.Do("GET", "/v1/voices", "x", nil), "rate_limited", "key", 4, 60)
	assertRateLimited(t, b.Do("GET", "/v1/voices", "x", nil), "rate_limited", "key", 4, 60)

	// Disabled on B: refused on A; enabled again on A: served on B.
	b.Do("DELETE", "/v1/admin/orgs/team-x", "admin", nil)
	within(t, "A refuses the disabled organization's key", func() bool { return a.Do("GET", "/v1/voices", "x", nil).Status == 403 })
	a.Do("PATCH", "/v1/admin/orgs/team-x", "admin", map[string]any{"disabled": false})
	a.Do("PATCH", "/v1/admin/keys/"+k.Data.ID, "admin", map[string]any{"rate_limit": nil})
	within(t, "B serves it again", func() bool { return b.Do("GET", "/v1/voices", "x", nil).Status == 200 })

	// Revoked on A: refused on B.
	a.Do("DELETE", "/v1/admin/keys/"+k.Data.ID, "admin", nil)
	within(t, "B refuses the revoked key", func() bool { return b.Do("GET", "/v1/voices", "x", nil).Status == 401 })
}

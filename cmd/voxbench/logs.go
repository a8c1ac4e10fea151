package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
)

// The request-log fixture is one bbolt file with two organizations, one
// holding 10,000 rows and one 1,000,000, one row a second up to the time it
// was built. It takes a while to build, so it is kept in the temp directory
// and reused while its rows are well inside the 30-day retention window.

const (
	// fixtureVersion names the cached file: version 2 is the store's
	// schema 2 (the usage rollup), so a binary of either schema never
	// opens, or upgrades, the other's file.
	fixtureVersion = 2
	// fixtureMaxAge keeps the oldest row (1M seconds, about 11.6 days,
	// before the build) younger than 30 days with a margin.
	fixtureMaxAge = 10 * 24 * time.Hour
)

// fixtureOrg is one organization of the fixture and its row count.
type fixtureOrg struct {
	org  string
	rows int
}

// fixtureOrgs are the fixture's organizations: a small log and a large one.
var fixtureOrgs = []fixtureOrg{
	{"logs-10k", 10_000},
	{"logs-1m", 1_000_000},
}

// fixture describes a built fixture; it is stored beside the database.
type fixture struct {
	Version int               `json:"version"`
	Built   time.Time         `json:"built"`
	Keys    map[string]string `json:"keys"`
	path    string
}

// logFixture returns the cached fixture, building it when it is missing,
// stale or of another version.
func logFixture(ctx context.Context, bin, cacheDir, runDir string) (*fixture, error) {
	db := filepath.Join(cacheDir, fmt.Sprintf("voxgate-voxbench-logs-v%d.db", fixtureVersion))
	meta := db + ".json"
	var fx fixture
	if b, err := os.ReadFile(meta); err == nil && json.Unmarshal(b, &fx) == nil &&
		fx.Version == fixtureVersion && time.Since(fx.Built) < fixtureMaxAge && len(fx.Keys) == len(fixtureOrgs) {
		if _, err := os.Stat(db); err == nil {
			fx.path = db
			logf("request-log fixture: reusing %s (built %s)", db, fx.Built.Format(time.RFC3339))
			return &fx, nil
		}
	}
	start := time.Now()
	logf("request-log fixture: building %s (1,010,000 rows, once)", db)
	_ = os.Remove(meta)
	tmp := db + ".building"
	_ = os.Remove(tmp)
	built := time.Now().UTC().Truncate(time.Second)
	if err := buildFixture(ctx, tmp, built); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, db); err != nil {
		return nil, err
	}
	fx = fixture{Version: fixtureVersion, Built: built, Keys: map[string]string{}, path: db}
	// Keys are made the operator's way, with `voxgate keys create` on the
	// database, through a config that names the fixture's organizations.
	gw, err := startGateway(ctx, bin, runDir, "fixture-keys", logsConfig(db))
	if err != nil {
		return nil, err
	}
	for _, o := range fixtureOrgs {
		k, err := gw.createKey(ctx, o.org)
		if err != nil {
			return nil, err
		}
		fx.Keys[o.org] = k
	}
	b, _ := json.Marshal(fx)
	if err := os.WriteFile(meta, b, 0o600); err != nil {
		return nil, err
	}
	logf("request-log fixture: built in %s", time.Since(start).Round(100*time.Millisecond))
	return &fx, nil
}

// fixtureRow is row i of org, i seconds before built; the mix of
// providers, statuses and conversation children follows the store's own
// benchmark fixture.
func fixtureRow(org string, i int, built time.Time) store.LogRow {
	r := store.LogRow{
		RequestID:          fmt.Sprintf("0b5c4a4e-7f1d-4c39-9d1e-%012d", i),
		OrgID:              org,
		TS:                 built.Add(-time.Duration(i+1) * time.Second),
		Path:               "/v1/audio/speech",
		Status:             200,
		Provider:           []string{"espeak", "openai", "elevenlabs", "cartesia"}[i%4],
		Model:              "tts-1",
		VoiceID:            "alloy",
		VoiceRef:           "6f1c3e0a-2b7d-4d8e-9a61-0c3f5e7b9d21",
		CharCount:          120 + i%500,
		CreditsUsed:        1,
		LatencyMS:          int64(40 + i%300),
		ProviderOptions:    `{"instructions":"Speak calmly."}`,
		ModerationDecision: "allow",
	}
	if i%10 == 0 {
		r.Status, r.ErrorCode, r.ErrorDetail = 502, "provider_error", "upstream returned 500"
	}
	if i%5 == 1 {
		r.ParentRequestID = fmt.Sprintf("9a0e2f7c-1d3b-4e5a-8c6d-%012d", i/50)
	}
	return r
}

// buildFixture appends the rows oldest first (the order the gateway writes
// them in) in large batches: one transaction, and one fsync, per 50,000
// rows.
func buildFixture(ctx context.Context, path string, built time.Time) error {
	s, err := bolt.Open(path, store.Options{})
	if err != nil {
		return err
	}
	const batch = 50_000
	rows := make([]store.LogRow, 0, batch)
	for _, o := range fixtureOrgs {
		for i := o.rows - 1; i >= 0; i-- {
			rows = append(rows, fixtureRow(o.org, i, built))
			if len(rows) == batch || i == 0 {
				if err := s.AppendLogs(ctx, rows); err != nil {
					_ = s.Close()
					return err
				}
				rows = rows[:0]
			}
		}
	}
	return s.Close()
}

// logsConfig serves only the log API of the fixture's organizations. The
// sealing key and admin socket live in the run's directory, so the cached
// database is the only thing the gateway shares with later runs (and a
// list request writes nothing).
func logsConfig(db string) func(listen, dir, bin string) string {
	return func(listen, dir, bin string) string {
		cfg := fmt.Sprintf(`server:
  listen: %s
storage:
  path: %s
plugins:
  dir: %s
secrets:
  key_file: %s
admin:
  socket: %s
orgs:
`, listen, db, filepath.Join(bin, "plugins"), filepath.Join(dir, "secrets.key"), filepath.Join(dir, "admin.sock"))
		for _, o := range fixtureOrgs {
			cfg += fmt.Sprintf("  %s:\n    providers: {}\n", o.org)
		}
		return cfg
	}
}

// listLogs serves the fixture and times pages of GET /v1/logs for each
// organization.
func listLogs(ctx context.Context, bin, runDir string, fx *fixture, p plan, res *Results) error {
	gw, err := startGateway(ctx, bin, runDir, "logs", logsConfig(fx.path))
	if err != nil {
		return err
	}
	defer gw.stop()
	if err := gw.serve(ctx); err != nil {
		return err
	}
	pages, err := timeLogPages(gw, fx.Keys, fx.Built, fixtureOrgs, p)
	if err != nil {
		return err
	}
	res.Logs.Pages = pages
	if res.Logs.Usage, err = timeUsage(gw, fx.Keys, fixtureOrgs, p); err != nil {
		return err
	}
	return gw.shutdown(nil)
}

// timeLogPages times pages of GET /v1/logs on a served fixture for each
// organization (keys maps org to API key; built is when the newest row was
// written): the newest page, a page deep in the log reached through a
// cursor, and a filtered page.
func timeLogPages(gw *gatewayProc, keys map[string]string, built time.Time, orgs []fixtureOrg, p plan) ([]logPage, error) {
	var out []logPage
	for _, o := range orgs {
		key := keys[o.org]
		page := func(q url.Values) ([]byte, time.Duration, error) {
			start := time.Now()
			status, body, err := gw.get("/v1/logs?"+q.Encode(), key)
			d := time.Since(start)
			if err != nil {
				return nil, d, err
			}
			if status != 200 {
				return nil, d, fmt.Errorf("GET /v1/logs?%s: status %d: %.300s", q.Encode(), status, body)
			}
			return body, d, nil
		}
		// A position in the middle of the org's log, reached the way a
		// client paging down from there would hold it.
		mid := built.Add(-time.Duration(o.rows/2) * time.Second).Format(time.RFC3339)
		body, _, err := page(url.Values{"limit": {"50"}, "until": {mid}})
		if err != nil {
			return nil, err
		}
		var env struct {
			Data       []json.RawMessage `json:"data"`
			NextCursor string            `json:"next_cursor"`
		}
		if err := json.Unmarshal(body, &env); err != nil || env.NextCursor == "" || len(env.Data) != 50 {
			return nil, fmt.Errorf("middle page of %s: %d rows, cursor %q, err %v", o.org, len(env.Data), env.NextCursor, err)
		}
		cases := []struct {
			name string
			q    url.Values
		}{
			{"newest", url.Values{"limit": {"50"}}},
			{"deep-cursor", url.Values{"limit": {"50"}, "until": {mid}, "cursor": {env.NextCursor}}},
			{"provider+status", url.Values{"limit": {"50"}, "provider": {"openai"}, "status": {"200"}}},
		}
		for _, c := range cases {
			var ds []time.Duration
			for i := range p.LogPages + 3 {
				body, d, err := page(c.q)
				if err != nil {
					return nil, err
				}
				if i == 0 {
					var e struct {
						Data []json.RawMessage `json:"data"`
					}
					if err := json.Unmarshal(body, &e); err != nil || len(e.Data) != 50 {
						return nil, fmt.Errorf("%s page of %s: %d rows (%v)", c.name, o.org, len(e.Data), err)
					}
				}
				if i >= 3 { // the first reads fault the pages in
					ds = append(ds, d)
				}
			}
			out = append(out, logPage{Org: o.org, Rows: o.rows, Page: c.name, Time: summarize(ds)})
		}
	}
	return out, nil
}

// timeUsage times GET /v1/usage over the default 30-day window, grouped
// by provider, for each organization: usage by provider this month. The
// store answers it from its daily rollup, so its time depends on the days
// and providers in the window, not on the rows behind them. (Grouped by
// day too, the larger organization's answer would be twelve times
// longer, its rows spanning twelve days against the smaller one's
// three hours: that would time the answer's size, not the log's.)
func timeUsage(gw *gatewayProc, keys map[string]string, orgs []fixtureOrg, p plan) ([]logPage, error) {
	var out []logPage
	for _, o := range orgs {
		var ds []time.Duration
		for i := range p.LogPages + 3 {
			start := time.Now()
			status, body, err := gw.get("/v1/usage?group_by=provider", keys[o.org])
			d := time.Since(start)
			if err != nil {
				return nil, err
			}
			if status != 200 {
				return nil, fmt.Errorf("GET /v1/usage: status %d: %.300s", status, body)
			}
			if i == 0 {
				var u struct {
					Total struct {
						Requests int `json:"requests"`
					} `json:"total"`
				}
				// Top-level rows only: the fixture makes every fifth row a
				// conversation turn.
				if err := json.Unmarshal(body, &u); err != nil || u.Total.Requests < o.rows*3/4 {
					return nil, fmt.Errorf("usage of %s counts %d requests (%v), want about %d", o.org, u.Total.Requests, err, o.rows*4/5)
				}
			}
			if i >= 3 {
				ds = append(ds, d)
			}
		}
		out = append(out, logPage{Org: o.org, Rows: o.rows, Page: "usage", Time: summarize(ds)})
	}
	return out, nil
}

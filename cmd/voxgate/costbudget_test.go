package main

import (
	"encoding/json"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/voxgate/voxgate/internal/pgtest"
	"github.com/voxgate/voxgate/internal/redistest"
)

// TestCostBudgetHoldsAcrossInstances: two instances on one PostgreSQL and
// one Redis spend one organization's budget in money together, never past
// it. espeak is priced by the operator at $1 per 1,000 characters, so a
// 5-character text is quoted and billed $0.005 and a budget of $0.10 buys
// exactly 20: no overspend at all, since a character-priced quote is the
// cost (the bound is one in-flight request per instance only where the
// answer's audio is priced).
func TestCostBudgetHoldsAcrossInstances(t *testing.T) {
	t.Setenv("VOXGATE_TEST_SECRETS_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	pg := pgtest.StartT(t)
	dsn := pg.NewDatabaseT(t)
	rd := redistest.StartT(t)
	extra := "shared:\n  redis_url: " + rd.URL() + "\npricing:\n  currency: USD\n  prices:\n    espeak/*: [{unit: characters, amount: 1, per: 1000}]"
	mk := func(name string) string {
		path := clusterConfig(t, name, dsn, extra)
		b, _ := os.ReadFile(path)
		cfg := strings.Replace(string(b), "  acme:\n", "  acme:\n    budget: {cost: 0.1, period: month}\n", 1)
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cfgA, cfgB := mk("a"), mk("b")
	out, _, code := cli(t, "keys", "create", "--config", cfgA, "--org", "acme")
	key := strings.TrimSpace(out)
	if code != 0 {
		t.Fatal("keys create failed")
	}
	a, b := startServe(t, cfgA), startServe(t, cfgB)

	// The quote is the figure the budget reserves.
	st, body := post(t, a.addr, "/v1/audio/speech/quote", key, `{"model":"espeak/espeak-ng","voice":"en","text":"hello"}`)
	var q struct {
		Data struct {
			Cost     json.Number `json:"cost"`
			Currency string      `json:"currency"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &q); st != 200 || err != nil || q.Data.Cost != "0.005" || q.Data.Currency != "USD" {
		t.Fatalf("quote: %d %s", st, body)
	}

	var ok, refused atomic.Int64
	var detail atomic.Value
	var wg sync.WaitGroup
	for i := range 8 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 6 {
				st, body := post(t, s.addr, "/v1/audio/speech", key, `{"model":"espeak/espeak-ng","voice":"en","text":"hello"}`)
				switch {
				case st == 200:
					ok.Add(1)
				case st == 429 && strings.Contains(body, "budget_exceeded"):
					refused.Add(1)
					detail.Store(body)
				default:
					t.Errorf("unexpected answer %d %s", st, body)
					return
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("48 requests across two instances: %d served, %d refused", ok.Load(), refused.Load())
	if ok.Load() != 20 || refused.Load() != 28 {
		t.Fatalf("%d served and %d refused; a $0.10 budget buys exactly 20 requests of $0.005", ok.Load(), refused.Load())
	}
	if d, _ := detail.Load().(string); !strings.Contains(d, "organization's budget of 0.1 USD a month") {
		t.Errorf("the 429 does not name the money budget: %s", d)
	}
}

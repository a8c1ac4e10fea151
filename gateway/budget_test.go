package gateway_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
)

// budgetConfig prices testkit at 1 credit per 10 characters (100 per 1k):
// a 25-character text costs 3 credits.
const budgetConfig = `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
  log_batch_size: 8
plugins:
  dir: %BIN%/plugins
providers:
  testkit:
    plugin: %BIN%/testplugins/voxgate-testplugin
    managed: true
    credits_per_1k_chars: 100
  espeak: {plugin: voxgate-espeak, managed: true}
orgs:
  acme:
    budget: {credits: 10, period: day}
    providers:
      testkit: {enabled: true}
      espeak: {enabled: true}
  globex:
    providers:
      testkit: {enabled: true}
      espeak: {enabled: true}
`

func TestOrgBudget(t *testing.T) {
	tg := startGateway(t, budgetConfig)
	body := map[string]any{"model": "testkit/test", "voice": "alpha", "text": "twenty-five characters ok"} // 3 credits
	for i := range 3 {
		if r := tg.do("POST", "/v1/audio/speech", "acme", body); r.status != 200 {
			t.Fatalf("request %d within the budget: %d %s", i, r.status, r.body)
		}
	}
	// 9 of 10 spent: a 3-credit request does not fit.
	r := tg.do("POST", "/v1/audio/speech", "acme", body)
	p := r.problem(t, 429, "budget_exceeded")
	ra, _ := strconv.Atoi(r.header.Get("Retry-After"))
	if ra < 1 || ra > 86400 || !strings.Contains(p.Detail, "resets at") || !strings.Contains(p.Detail, "organization") {
		t.Errorf("Retry-After %q, detail %q", r.header.Get("Retry-After"), p.Detail)
	}
	if row := tg.lastLog("acme"); row.ErrorCode != "budget_exceeded" || row.CreditsUsed != 0 {
		t.Errorf("refused row %+v", row)
	}
	// A failed request costs nothing, so the one credit left still buys a
	// 1-credit request.
	fail := map[string]any{"model": "testkit/test", "voice": "alpha", "text": "x", "providerOptions": map[string]any{"fail": map[string]any{"kind": "upstream", "status": 500}}}
	tg.do("POST", "/v1/audio/speech", "acme", fail).problem(t, 502, "provider_error")
	if r := tg.do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "one"}); r.status != 200 {
		t.Fatalf("the last credit after a failed request: %d %s", r.status, r.body)
	}
	// Conversations reserve all their turns at once.
	tg.do("POST", "/v1/audio/conversation", "acme", map[string]any{"turns": []any{
		map[string]any{"model": "testkit/test", "voice": "alpha", "text": "a"},
	}}).problem(t, 429, "budget_exceeded")
	// Another organization has no budget.
	for range 5 {
		if r := tg.do("POST", "/v1/audio/speech", "globex", body); r.status != 200 {
			t.Fatalf("globex: %d", r.status)
		}
	}
}

func TestKeyScopes(t *testing.T) {
	tg := startGateway(t, budgetConfig)
	ctx := context.Background()
	mk := func(scope store.KeyScope) string {
		plain, _, err := tg.g.CreateKey(ctx, "globex", "scoped", scope)
		if err != nil {
			t.Fatal(err)
		}
		return plain
	}
	as := func(key string) []string { return []string{"Authorization", "Bearer " + key} }
	espeakOnly := mk(store.KeyScope{Providers: []string{"espeak"}})
	testModel := mk(store.KeyScope{Models: []string{"testkit/test"}})
	budgeted := mk(store.KeyScope{Budget: 4, BudgetPeriod: "day"})
	soon := mk(store.KeyScope{ExpiresAt: time.Now().Add(1500 * time.Millisecond)})

	tk := map[string]any{"model": "testkit/test", "voice": "alpha", "text": "twenty-five characters ok"}
	es := map[string]any{"model": "espeak", "voice": "en", "text": "hello"}
	if r := tg.do("POST", "/v1/audio/speech", "globex", es, as(espeakOnly)...); r.status != 200 {
		t.Errorf("espeak with an espeak-only key: %d %s", r.status, r.body)
	}
	p := tg.do("POST", "/v1/audio/speech", "globex", tk, as(espeakOnly)...).problem(t, 403, "key_scope_denied")
	if !strings.Contains(p.Detail, "testkit/test") {
		t.Errorf("detail %q", p.Detail)
	}
	if r := tg.do("POST", "/v1/audio/speech", "globex", tk, as(testModel)...); r.status != 200 {
		t.Errorf("testkit/test with a testkit/test key: %d %s", r.status, r.body)
	}
	tg.do("POST", "/v1/audio/speech", "globex", es, as(testModel)...).problem(t, 403, "key_scope_denied")
	// The other APIs' routes hold the key to its scope too.
	oai := map[string]any{"model": "testkit/test", "voice": "alpha", "input": "hello"}
	tg.do("POST", "/v1/audio/speech", "globex", oai, as(espeakOnly)...).openAIError(t, 403, "key_scope_denied", "")
	if r := tg.do("POST", "/v1/audio/speech", "globex", oai, as(testModel)...); r.status != 200 {
		t.Errorf("OpenAI body, testkit/test with a testkit/test key: %d %s", r.status, r.body)
	}
	// A saved voice resolves to its provider, which the scope then checks.
	r := tg.do("POST", "/v1/voices", "globex", map[string]any{"title": "t", "provider": "testkit", "model": "test", "voice_id": "alpha"})
	v := r.voice(t)
	tg.do("POST", "/v1/audio/speech", "globex", map[string]any{"voiceId": v.ID, "text": "hi"}, as(espeakOnly)...).problem(t, 403, "key_scope_denied")

	// The key's own budget, beside its org's (globex has none).
	if r := tg.do("POST", "/v1/audio/speech", "globex", tk, as(budgeted)...); r.status != 200 {
		t.Fatalf("3 of the key's 4 credits: %d %s", r.status, r.body)
	}
	p = tg.do("POST", "/v1/audio/speech", "globex", tk, as(budgeted)...).problem(t, 429, "budget_exceeded")
	if !strings.Contains(p.Detail, "API key") {
		t.Errorf("detail %q does not name the key's budget", p.Detail)
	}
	if r := tg.do("POST", "/v1/audio/speech", "globex", tk); r.status != 200 {
		t.Errorf("the org's other keys are not held by one key's budget: %d", r.status)
	}

	// An expired key is refused like an unknown one.
	if r := tg.do("GET", "/v1/voices", "globex", nil, as(soon)...); r.status != 200 {
		t.Fatalf("before expiry: %d", r.status)
	}
	time.Sleep(1600 * time.Millisecond)
	tg.do("GET", "/v1/voices", "globex", nil, as(soon)...).problem(t, 401, "unauthorized")

	// Scopes are checked when a key is made.
	for _, bad := range []store.KeyScope{
		{Budget: 5, BudgetPeriod: "week"},
		{Budget: -1},
		{ExpiresAt: time.Now().Add(-time.Hour)},
		{Models: []string{"no-slash"}},
	} {
		if _, _, err := tg.g.CreateKey(ctx, "globex", "bad", bad); err == nil {
			t.Errorf("a key with scope %+v was created", bad)
		}
	}
}

package api

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/test/e2e/harness"
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
	t.Parallel()
	tg := harness.Start(t, budgetConfig)
	body := map[string]any{"model": "testkit/test", "voice": "alpha", "text": "twenty-five characters ok"} // 3 credits
	for i := range 3 {
		if r := tg.Do("POST", "/v1/audio/speech", "acme", body); r.Status != 200 {
			t.Fatalf("request %d within the budget: %d %s", i, r.Status, r.Body)
		}
	}
	// 9 of 10 spent: a 3-credit request does not fit.
	r := tg.Do("POST", "/v1/audio/speech", "acme", body)
	p := r.Problem(t, 429, "budget_exceeded")
	ra, _ := strconv.Atoi(r.Header.Get("Retry-After"))
	if ra < 1 || ra > 86400 || !strings.Contains(p.Detail, "resets at") || !strings.Contains(p.Detail, "organization") {
		t.Errorf("Retry-After %q, detail %q", r.Header.Get("Retry-After"), p.Detail)
	}
	if row := tg.LastLog("acme"); row.ErrorCode != "budget_exceeded" || row.CreditsUsed != 0 {
		t.Errorf("refused row %+v", row)
	}
	// A failed request costs nothing, so the one credit left still buys a
	// 1-credit request.
	fail := map[string]any{"model": "testkit/test", "voice": "alpha", "text": "x", "providerOptions": map[string]any{"fail": map[string]any{"kind": "upstream", "status": 500}}}
	tg.Do("POST", "/v1/audio/speech", "acme", fail).Problem(t, 502, "provider_error")
	if r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "one"}); r.Status != 200 {
		t.Fatalf("the last credit after a failed request: %d %s", r.Status, r.Body)
	}
	// Conversations reserve all their turns at once.
	tg.Do("POST", "/v1/audio/conversation", "acme", map[string]any{"turns": []any{
		map[string]any{"model": "testkit/test", "voice": "alpha", "text": "a"},
	}}).Problem(t, 429, "budget_exceeded")
	// Another organization has no budget.
	for range 5 {
		if r := tg.Do("POST", "/v1/audio/speech", "globex", body); r.Status != 200 {
			t.Fatalf("globex: %d", r.Status)
		}
	}
}

func TestKeyScopes(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, budgetConfig)
	ctx := context.Background()
	mk := func(scope store.KeyScope) string {
		plain, _, err := tg.Core.CreateKey(ctx, "globex", "scoped", scope)
		if err != nil {
			t.Fatal(err)
		}
		return plain
	}
	as := func(key string) []string { return []string{"Authorization", "Bearer " + key} }
	espeakOnly := mk(store.KeyScope{Providers: []string{"espeak"}})
	testModel := mk(store.KeyScope{Models: []string{"testkit/test"}})
	budgeted := mk(store.KeyScope{Budget: 4, BudgetPeriod: "day"})

	tk := map[string]any{"model": "testkit/test", "voice": "alpha", "text": "twenty-five characters ok"}
	es := map[string]any{"model": "espeak", "voice": "en", "text": "hello"}
	if r := tg.Do("POST", "/v1/audio/speech", "globex", es, as(espeakOnly)...); r.Status != 200 {
		t.Errorf("espeak with an espeak-only key: %d %s", r.Status, r.Body)
	}
	p := tg.Do("POST", "/v1/audio/speech", "globex", tk, as(espeakOnly)...).Problem(t, 403, "key_scope_denied")
	if !strings.Contains(p.Detail, "testkit/test") {
		t.Errorf("detail %q", p.Detail)
	}
	if r := tg.Do("POST", "/v1/audio/speech", "globex", tk, as(testModel)...); r.Status != 200 {
		t.Errorf("testkit/test with a testkit/test key: %d %s", r.Status, r.Body)
	}
	tg.Do("POST", "/v1/audio/speech", "globex", es, as(testModel)...).Problem(t, 403, "key_scope_denied")
	// The other APIs' routes hold the key to its scope too.
	oai := map[string]any{"model": "testkit/test", "voice": "alpha", "input": "hello"}
	tg.Do("POST", "/v1/audio/speech", "globex", oai, as(espeakOnly)...).OpenAIError(t, 403, "key_scope_denied", "")
	if r := tg.Do("POST", "/v1/audio/speech", "globex", oai, as(testModel)...); r.Status != 200 {
		t.Errorf("OpenAI body, testkit/test with a testkit/test key: %d %s", r.Status, r.Body)
	}
	// A saved voice resolves to its provider, which the scope then checks.
	r := tg.Do("POST", "/v1/voices", "globex", map[string]any{"title": "t", "provider": "testkit", "model": "test", "voice_id": "alpha"})
	v := r.Voice(t)
	tg.Do("POST", "/v1/audio/speech", "globex", map[string]any{"voiceId": v.ID, "text": "hi"}, as(espeakOnly)...).Problem(t, 403, "key_scope_denied")

	// The key's own budget, beside its org's (globex has none).
	if r := tg.Do("POST", "/v1/audio/speech", "globex", tk, as(budgeted)...); r.Status != 200 {
		t.Fatalf("3 of the key's 4 credits: %d %s", r.Status, r.Body)
	}
	p = tg.Do("POST", "/v1/audio/speech", "globex", tk, as(budgeted)...).Problem(t, 429, "budget_exceeded")
	if !strings.Contains(p.Detail, "API key") {
		t.Errorf("detail %q does not name the key's budget", p.Detail)
	}
	if r := tg.Do("POST", "/v1/audio/speech", "globex", tk); r.Status != 200 {
		t.Errorf("the org's other keys are not held by one key's budget: %d", r.Status)
	}

	// An expired key is refused like an unknown one. The key is made just
	// before its first use, and a 401 counts against it only when the
	// answer came back before the expiry: a race-built gateway on a
	// loaded machine may take a second over the requests above.
	expires := time.Now().Add(2 * time.Second)
	soon := mk(store.KeyScope{ExpiresAt: expires})
	if r := tg.Do("GET", "/v1/voices", "globex", nil, as(soon)...); r.Status != 200 && time.Now().Before(expires) {
		t.Fatalf("before expiry: %d", r.Status)
	}
	time.Sleep(time.Until(expires) + 100*time.Millisecond)
	tg.Do("GET", "/v1/voices", "globex", nil, as(soon)...).Problem(t, 401, "unauthorized")

	// Scopes are checked when a key is made.
	for _, bad := range []store.KeyScope{
		{Budget: 5, BudgetPeriod: "week"},
		{Budget: -1},
		{ExpiresAt: time.Now().Add(-time.Hour)},
		{Models: []string{"no-slash"}},
	} {
		if _, _, err := tg.Core.CreateKey(ctx, "globex", "bad", bad); err == nil {
			t.Errorf("a key with scope %+v was created", bad)
		}
	}
}

// TestRealtimeHoldsTheKeyToItsScopeAndBudget: a realtime socket is bound by
// the key it was opened with, as an HTTP request is: the key's scope
// decides which models a context may start, and every segment reserves
// its credits from the organization's budget before it is spoken.
func TestRealtimeHoldsTheKeyToItsScopeAndBudget(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, budgetConfig)
	espeakOnly, k, err := tg.Core.CreateKey(context.Background(), "globex", "scoped", store.KeyScope{Providers: []string{"espeak"}})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := tg.TryRealtime(http.Header{"Authorization": {"Bearer " + espeakOnly}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc.Send(harness.StartMsg("tk", "model", "testkit/test", "voice", "alpha"))
	if m := rc.Next(); m.Type != "error" || m.Code != "key_scope_denied" || m.ContextID != "tk" {
		t.Fatalf("a testkit context on an espeak-only key: %s", m.Raw)
	}
	rc.Send(harness.StartMsg("es"))
	rc.Expect("started", "es")
	rc.Send(harness.TextMsg("es", "Allowed. "))
	rc.Send(harness.ControlMsg("close", "es"))
	rc.Until(harness.IsType("done", "es"))
	// The context's row carries the socket's key: usage by key counts it.
	if rows := tg.RealtimeRows("globex", rc.SocketID); len(rows) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	var u usageBody
	tg.Do("GET", "/v1/usage?group_by=key", "globex", nil).JSON(t, &u)
	var counted bool
	for _, g := range u.Data {
		counted = counted || g.KeyID == k.ID && g.Requests == 2
	}
	if !counted {
		t.Errorf("usage by key does not count the socket's contexts under its key %s: %+v", k.ID, u.Data)
	}

	// acme's budget is 10 credits a day, at 1 credit per 10 characters of
	// the context so far: 35 characters cost 4, 70 cost 7, and the third
	// sentence (105, 11 credits) does not fit. It is refused before it is
	// spoken, and the context ends.
	rc = tg.DialRealtime("acme")
	rc.Send(harness.StartMsg("b", "model", "testkit/test", "voice", "alpha"))
	rc.Expect("started", "b")
	sentence := "Thirty-five characters, yes, quite. "
	for range 3 {
		rc.Send(harness.TextMsg("b", sentence))
	}
	msgs := rc.Until(harness.IsType("done", "b"))
	done := msgs[len(msgs)-1]
	var refused bool
	for _, m := range msgs {
		refused = refused || m.Type == "error" && m.Code == "budget_exceeded"
	}
	if !refused || done.Reason != "error" || done.Credits != 7 || done.Chars != 70 {
		t.Fatalf("the third sentence past the budget: %v", harness.RawOf(msgs))
	}
	// What was spent stays spent and the rest of the reservations went
	// back: 3 credits are left, one 25-character request's worth.
	body := map[string]any{"model": "testkit/test", "voice": "alpha", "text": "twenty-five characters ok"}
	if r := tg.Do("POST", "/v1/audio/speech", "acme", body); r.Status != 200 {
		t.Fatalf("the credits left after the socket: %d %s", r.Status, r.Body)
	}
	one := map[string]any{"model": "testkit/test", "voice": "alpha", "text": "one"}
	tg.Do("POST", "/v1/audio/speech", "acme", one).Problem(t, 429, "budget_exceeded")
}

// TestBudgetStoreUnreachable: when the shared budget counter (Redis)
// cannot be asked, a budgeted organization's request fails closed with a
// clear 503 budget_unavailable by default, or goes through with
// shared.budget_on_error: allow; an organization without a budget is
// never asked about one.
func TestBudgetStoreUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	body := map[string]any{"model": "testkit/test", "voice": "alpha", "text": "twenty-five characters ok"}
	for _, tt := range []struct {
		name, shared string
		status       int
	}{
		{"fails closed by default", "shared: {redis_url: redis://" + dead + "/0}\n", 503},
		{"fails open when told", "shared: {redis_url: redis://" + dead + "/0, budget_on_error: allow}\n", 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tg := harness.Start(t, strings.Replace(budgetConfig, "plugins:\n", tt.shared+"plugins:\n", 1))
			r := tg.Do("POST", "/v1/audio/speech", "acme", body)
			if tt.status == 503 {
				p := r.Problem(t, 503, "budget_unavailable")
				if r.Header.Get("Retry-After") == "" || !strings.Contains(p.Detail, "budget") {
					t.Errorf("Retry-After %q, detail %q", r.Header.Get("Retry-After"), p.Detail)
				}
			} else if r.Status != 200 {
				t.Errorf("acme with budget_on_error allow: %d %s", r.Status, r.Body)
			}
			// globex has no budget: nothing to ask.
			if r := tg.Do("POST", "/v1/audio/speech", "globex", body); r.Status != 200 {
				t.Errorf("globex, without a budget: %d %s", r.Status, r.Body)
			}
		})
	}
}

package speech_test

import (
	"context"
	"testing"

	"github.com/voxgate/voxgate/gateway/admission/budget"
	"github.com/voxgate/voxgate/gateway/pricing"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/sdk"
)

// acmeBudget is a budget acme never reaches in these tests, so that its
// counter shows what each request holds.
var acmeBudget = map[string]budget.Limit{"acme": {Credits: 100000, Period: budget.Day}}

// TestCredits: a request is charged its characters at its provider's rate
// (the model's own where the provider sets one), and only for audio that
// was produced: nothing for a failure. The credits are reserved from the
// budgets before the provider is called and held until the edge settles
// the charge with the row's credits; a failure gives its reservation back
// at once.
func TestCredits(t *testing.T) {
	const text = "Twenty one characters"
	tests := []struct {
		name    string
		model   string
		fail    *sdk.Error
		credits int // the row's
		code    problem.Code
	}{
		{"one a character", "testkit/test", nil, 21, ""},
		{"two a character", "spare/test", nil, 42, ""},
		{"a model's own rate, rounded up", "testkit/basic", nil, 11, ""}, // 21 × 0.5
		{"a failure is free", "testkit/test", &sdk.Error{Kind: sdk.KindUpstream, Message: "boom", UpstreamStatus: 500}, 0, problem.ProviderError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPipeline(t, setup{orgBudgets: acmeBudget})
			if tt.fail != nil {
				p.providers["testkit"].failWith(tt.fail)
			}
			out, err := p.svc.Speak(t.Context(), "acme", req(tt.model, "alpha", text), speech.DeliverClip)
			wantCode(t, err, tt.code)
			if out.Row.CreditsUsed != tt.credits {
				t.Errorf("row charged %d credits, want %d", out.Row.CreditsUsed, tt.credits)
			}
			// Reserved until the edge settles: the row's credits, or
			// nothing after a failure (and no charge to settle).
			if got := p.budget.held("org:acme:"); got != int64(tt.credits) {
				t.Errorf("the budget holds %d credits before settling, want %d", got, tt.credits)
			}
			if (out.Charge == nil) != (tt.code != "") {
				t.Errorf("charge %v with error %v; only a success leaves one to settle", out.Charge, err)
			}
			out.Charge.Settle(t.Context(), int64(out.Row.CreditsUsed))
			if got := p.budget.held("org:acme:"); got != int64(tt.credits) {
				t.Errorf("the budget keeps %d credits after settling, want %d", got, tt.credits)
			}
		})
	}
}

// TestCreditsOfABrokenAnswer: the edge settles what it could not deliver
// (a client that left before the audio was written) with nothing, and
// the budget gets the whole reservation back.
func TestCreditsOfABrokenAnswer(t *testing.T) {
	p := newPipeline(t, setup{orgBudgets: acmeBudget})
	out, err := p.svc.Speak(t.Context(), "acme", req("testkit/test", "alpha", "Never heard"), speech.DeliverClip)
	wantCode(t, err, "")
	if got := p.budget.held("org:acme:"); got != 11 {
		t.Fatalf("reserved %d, want 11", got)
	}
	out.Charge.Settle(t.Context(), 0)
	if got := p.budget.held("org:acme:"); got != 0 {
		t.Errorf("the budget keeps %d credits, want none", got)
	}
}

// TestCreditsOfAFallback: the failed target's reservation goes back and
// the target that served is charged at its own rate.
func TestCreditsOfAFallback(t *testing.T) {
	p := newPipeline(t, setup{orgBudgets: acmeBudget, routes: fallbackRoutes})
	p.providers["testkit"].failWith(&sdk.Error{Kind: sdk.KindUnavailable, Message: "down"})
	out, err := p.speak(t.Context(), "acme", req("testkit/test", "alpha", "Fall back"), speech.DeliverClip)
	wantCode(t, err, "")
	if len(out.Attempts) != 1 || out.Row.CreditsUsed != 18 || out.Attempts[0].CreditsUsed != 0 {
		t.Errorf("row %d credits, attempts %+v; want the spare's 18 after one free attempt", out.Row.CreditsUsed, out.Attempts)
	}
	if got := p.budget.held("org:acme:"); got != 18 {
		t.Errorf("the budget keeps %d credits, want the spare's 18", got)
	}
}

// TestBudgets: a request the organization's budget or its key's cannot
// pay for is refused before any provider is called, and reserves
// nothing; what the others spent counts against both budgets.
func TestBudgets(t *testing.T) {
	p := newPipeline(t, setup{orgBudgets: map[string]budget.Limit{"acme": {Credits: 30, Period: budget.Day}}})
	key := speech.WithCaller(t.Context(), speech.Caller{KeyID: "k1", Scope: &store.KeyScope{Budget: 15, BudgetPeriod: "day"}})
	other := speech.WithCaller(t.Context(), speech.Caller{KeyID: "k2"})
	steps := []struct {
		name string
		ctx  context.Context
		text string
		code problem.Code
		// what the organization's and k1's budgets hold after the step
		org, k1 int64
	}{
		{"within both", key, "Ten chars.", "", 10, 10},
		{"past the key's", key, "Ten chars.", problem.BudgetExceeded, 10, 10},
		{"another key", other, "Fifteen chars..", "", 25, 10},
		{"past the organization's", other, "Ten chars.", problem.BudgetExceeded, 25, 10},
		{"what is left", other, "Five.", "", 30, 10},
	}
	calls := 0
	for _, st := range steps {
		out, err := p.speak(st.ctx, "acme", req("testkit/test", "alpha", st.text), speech.DeliverClip)
		if st.code != "" {
			pe := wantCode(t, err, st.code)
			if pe.RetryAfter <= 0 {
				t.Errorf("%s: no Retry-After (until the period ends)", st.name)
			}
			if out.Row.CreditsUsed != 0 {
				t.Errorf("%s: refused, yet %d credits on the row", st.name, out.Row.CreditsUsed)
			}
		} else {
			wantCode(t, err, "")
			calls++
		}
		if n := len(p.calls("testkit")); n != calls {
			t.Errorf("%s: %d provider calls, want %d", st.name, n, calls)
		}
		if org, k1 := p.budget.held("org:acme:"), p.budget.held("key:k1:"); org != st.org || k1 != st.k1 {
			t.Errorf("%s: the budgets hold %d (org) and %d (k1), want %d and %d", st.name, org, k1, st.org, st.k1)
		}
	}
}

// conversation is a conversation of three turns: testkit, the spare (two
// credits a character), and testkit again, whose providerOptions can make
// it fail.
func conversation(split bool, lastOptions string) *speech.ConversationRequest {
	text := func(s string) *string { return &s }
	return &speech.ConversationRequest{Split: split, Turns: []speech.Turn{
		{Model: "testkit/test", Voice: "alpha", Text: text("First turn.")}, // 11
		{Model: "spare/test", Voice: "beta", Text: text("Second turn.")},   // 12, at 2
		{Model: "testkit/test", Voice: "beta", Text: text("Third and last."), // 15
			ProviderOptions: []byte(lastOptions)},
	}}
}

// TestConversationCredits: a conversation reserves what all its turns
// would cost, and is charged for the turns that rendered, each at its own
// provider's rate; a failed turn is free, and so is a turn rendered for a
// conversation that failed as a whole. The edge settles the reservation
// with the conversation row's credits.
func TestConversationCredits(t *testing.T) {
	const failing = `{"fail": {"kind": "invalid_request", "message": "no"}}`
	tests := []struct {
		name    string
		req     *speech.ConversationRequest
		code    problem.Code
		credits int   // the conversation row's
		turns   []int // each turn row's
	}{
		{"every turn", conversation(false, ""), "", 11 + 24 + 15, []int{11, 24, 15}},
		{"split, one turn failed", conversation(true, failing), "", 11 + 24, []int{11, 24, 0}},
		{"not split, one turn failed", conversation(false, failing), problem.ProviderRejected, 0, []int{0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPipeline(t, setup{orgBudgets: acmeBudget})
			out, err := p.svc.Converse(t.Context(), "acme", tt.req, false)
			if tt.code == "" {
				wantCode(t, err, "")
			} else if pe := problem.From(err, ""); pe.Code != tt.code {
				t.Fatalf("got %v, want %s", err, tt.code)
			}
			if got := p.budget.held("org:acme:"); got != 11+24+15 {
				t.Errorf("reserved %d credits, want every turn's 50", got)
			}
			if out.Row.CreditsUsed != tt.credits {
				t.Errorf("conversation row charged %d, want %d", out.Row.CreditsUsed, tt.credits)
			}
			if len(out.Turns) != len(tt.turns) {
				t.Fatalf("%d turn rows, want %d", len(out.Turns), len(tt.turns))
			}
			for i, row := range out.Turns {
				if row.CreditsUsed != tt.turns[i] {
					t.Errorf("turn %d row charged %d, want %d", i, row.CreditsUsed, tt.turns[i])
				}
				if (tt.turns[i] == 0) != (row.ErrorCode != "") {
					t.Errorf("turn %d row: %d credits, error %q; a turn is free exactly when it failed", i, row.CreditsUsed, row.ErrorCode)
				}
			}
			out.Charge.Settle(t.Context(), int64(out.Row.CreditsUsed))
			if got := p.budget.held("org:acme:"); got != int64(tt.credits) {
				t.Errorf("the budget keeps %d credits after settling, want %d", got, tt.credits)
			}
		})
	}
}

// TestConversationCacheHits: a turn answered from the response cache
// costs nothing and calls no provider.
func TestConversationCacheHits(t *testing.T) {
	p := newPipeline(t, setup{cache: true})
	first, err := p.svc.Converse(t.Context(), "acme", conversation(false, ""), false)
	wantCode(t, err, "")
	for range 3 {
		p.cache.waitStored(t)
	}
	again, err := p.svc.Converse(t.Context(), "acme", conversation(false, ""), false)
	wantCode(t, err, "")
	if first.Row.CreditsUsed != 50 || again.Row.CreditsUsed != 0 {
		t.Errorf("charged %d then %d, want 50 then nothing", first.Row.CreditsUsed, again.Row.CreditsUsed)
	}
	for i, row := range again.Turns {
		if row.Cache != "hit" || row.CreditsUsed != 0 {
			t.Errorf("turn %d: cache %q, %d credits; want a free hit", i, row.Cache, row.CreditsUsed)
		}
	}
	if n := len(p.calls("testkit")) + len(p.calls("spare")); n != 3 {
		t.Errorf("%d provider calls for two conversations of three turns, want 3", n)
	}
}

// TestStreamBilledReadBack: what a provider's streamed answer says it
// billed (on its first chunk, as a header comes, or on its last, as a
// final message does) wins over the count in the stream's cost, as it
// does for a clip; a stream whose provider says nothing costs the count.
// A long text's stream adds up its pieces' figures.
func TestStreamBilledReadBack(t *testing.T) {
	const text = "Twenty one characters"
	charPrice := []pricing.Price{{Unit: pricing.Characters, Amount: 1, Per: 1000, Currency: "USD", Source: "test"}} // 1e6 nanos a character
	for _, tc := range []struct {
		name     string
		billed   []sdk.BilledUsage
		last     bool
		text     string
		maxChars int
		want     int64
	}{
		{"nothing said: the count", nil, false, text, 0, 21_000_000},
		{"with the first audio", []sdk.BilledUsage{{Unit: sdk.UnitCharacters, Quantity: 30}}, false, text, 0, 30_000_000},
		{"in a final message", []sdk.BilledUsage{{Unit: sdk.UnitCharacters, Quantity: 25}}, true, text, 0, 25_000_000},
		{"a unit the model is not priced in", []sdk.BilledUsage{{Unit: sdk.UnitUTF8Bytes, Quantity: 99}}, false, text, 0, 21_000_000},
		{"pieces add up", []sdk.BilledUsage{{Unit: sdk.UnitCharacters, Quantity: 10}}, false, "First piece here. Second piece here. Third one.", 20, 30_000_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipeline(t, setup{prices: charPrice, maxTextChars: tc.maxChars})
			p.providers["testkit"].reportBilled(tc.billed, tc.last)
			out, err := p.svc.Speak(t.Context(), "acme", req("testkit/test", "alpha", tc.text), speech.DeliverStream)
			wantCode(t, err, "")
			audio := drain(t, out.Stream)
			if got := p.svc.StreamCost(out.Job, int64(len(audio))); got != tc.want {
				t.Errorf("the stream cost %d nanos, want %d (estimate %d)", got, tc.want, out.Row.CostEstimate)
			}
		})
	}
}

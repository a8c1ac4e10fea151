package speech_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/sdk"
)

// fallbackRoutes send testkit/test to closed/test (which acme may not use,
// so it is skipped), then to spare/test in voice beta for alpha; a
// request in any other voice has no fallback.
var fallbackRoutes = map[string]speech.Route{
	"testkit/test": {
		{Model: "closed/test", Voice: "alpha"},
		{Model: "spare/test", Voices: map[string]string{"alpha": "beta"}},
	},
}

// TestFallbacks: a target that fails in a way another provider may not
// (down, timed out, throttled, failing on its side) is retried on the
// next target of its route that can take the request, and the failed
// attempt becomes a log row of its own, charged nothing. A failure that
// would fail anywhere (the provider refused the request, a 4xx) is the
// answer, and no other provider is called.
func TestFallbacks(t *testing.T) {
	tests := []struct {
		name string
		err  *sdk.Error
		// fallback says the spare served; code is the failed attempt's
		// problem (the answer's when there is no fallback).
		fallback bool
		code     problem.Code
		status   int
	}{
		{"unavailable", &sdk.Error{Kind: sdk.KindUnavailable, Message: "down"}, true, problem.ProviderUnavailable, 503},
		{"timed out", &sdk.Error{Kind: sdk.KindTimeout, Message: "slow"}, true, problem.ProviderTimeout, 504},
		{"5xx", &sdk.Error{Kind: sdk.KindUpstream, Message: "boom", UpstreamStatus: 500}, true, problem.ProviderError, 502},
		{"throttled", &sdk.Error{Kind: sdk.KindRateLimited, Message: "slow down", UpstreamStatus: 429}, true, problem.ProviderError, 502},
		{"no status", &sdk.Error{Kind: sdk.KindUpstream, Message: "connection reset"}, true, problem.ProviderError, 502},
		{"4xx", &sdk.Error{Kind: sdk.KindUpstream, Message: "bad", UpstreamStatus: 400}, false, problem.ProviderError, 502},
		{"refused key", &sdk.Error{Kind: sdk.KindUnauthorized, Message: "no", UpstreamStatus: 401}, false, problem.ProviderError, 502},
		{"refused request", &sdk.Error{Kind: sdk.KindInvalidRequest, Message: "unknown voice"}, false, problem.ProviderRejected, 422},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPipeline(t, setup{routes: fallbackRoutes})
			p.providers["testkit"].failWith(tt.err)
			const text = "Fall back when you must"
			out, err := p.speak(t.Context(), "acme", req("testkit/test", "alpha", text), speech.DeliverClip)
			if got := p.texts("testkit"); !slices.Equal(got, []string{text}) {
				t.Errorf("testkit was asked for %q, want the text once", got)
			}
			if n := len(p.calls("closed")); n != 0 {
				t.Errorf("closed, which acme may not use, was called %d times", n)
			}
			if !tt.fallback {
				pe := wantCode(t, err, tt.code)
				if pe.Status() != tt.status {
					t.Errorf("status %d, want %d", pe.Status(), tt.status)
				}
				if n := len(p.calls("spare")); n != 0 {
					t.Errorf("the spare was called %d times; this failure is final", n)
				}
				if len(out.Attempts) != 0 || out.Row.Provider != "testkit" || out.Row.CreditsUsed != 0 {
					t.Errorf("row %s, %d credits, %d attempts; want testkit's, 0 credits, no attempts", out.Row.Provider, out.Row.CreditsUsed, len(out.Attempts))
				}
				return
			}
			wantCode(t, err, "")
			calls := p.calls("spare")
			if len(calls) != 1 || calls[0].Voice != "beta" || calls[0].Model != "test" || calls[0].Text != text {
				t.Fatalf("the spare got %+v, want one call for the text in voice beta", calls)
			}
			if out.Result == nil || len(out.Result.Audio) == 0 {
				t.Fatal("no audio")
			}
			// The row is the target that served, charged at its rate.
			if r := out.Row; r.Provider != "spare" || r.Model != "test" || r.VoiceID != "beta" || r.CreditsUsed != 2*len(text) {
				t.Errorf("row %s/%s voice %s, %d credits; want spare/test voice beta, %d credits", r.Provider, r.Model, r.VoiceID, r.CreditsUsed, 2*len(text))
			}
			if len(out.Attempts) != 1 {
				t.Fatalf("%d attempt rows, want 1", len(out.Attempts))
			}
			a := out.Attempts[0]
			if a.Provider != "testkit" || a.VoiceID != "alpha" || a.ErrorCode != string(tt.code) || a.Status != tt.status || a.CreditsUsed != 0 || a.ErrorDetail != tt.err.Message {
				t.Errorf("attempt row %+v; want testkit's, %s %d, %q, no credits", a, tt.code, tt.status, tt.err.Message)
			}
			// Logged once (from, to, reason) and counted.
			lines := p.logs.FilterMessage("fallback").All()
			if len(lines) != 1 {
				t.Fatalf("%d fallback log lines, want 1", len(lines))
			}
			if f := lines[0].ContextMap(); f["from"] != "testkit/test" || f["to"] != "spare/test" || f["reason"] != string(tt.code) {
				t.Errorf("fallback line %v", f)
			}
			if n := testutil.ToFloat64(p.metrics.Fallbacks.WithLabelValues("testkit/test", "spare/test", string(tt.code))); n != 1 {
				t.Errorf("voxgate_fallbacks_total = %v, want 1", n)
			}
		})
	}
}

// TestFallbackWithoutTarget: a request whose route has no target for it
// (no voice for its voice; no route for its model) gets its provider's
// failure.
func TestFallbackWithoutTarget(t *testing.T) {
	tests := []struct{ name, model, voice string }{
		{"no voice for beta", "testkit/test", "beta"},
		{"no route for basic", "testkit/basic", "alpha"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPipeline(t, setup{routes: fallbackRoutes})
			p.providers["testkit"].failWith(&sdk.Error{Kind: sdk.KindUnavailable, Message: "down"})
			out, err := p.speak(t.Context(), "acme", req(tt.model, tt.voice, "Nowhere to go"), speech.DeliverClip)
			wantCode(t, err, problem.ProviderUnavailable)
			if n := len(p.calls("spare")) + len(p.calls("closed")); n != 0 {
				t.Errorf("%d calls to other providers", n)
			}
			if len(out.Attempts) != 0 || out.Row.Provider != "testkit" {
				t.Errorf("row of %s with %d attempts; want testkit's alone", out.Row.Provider, len(out.Attempts))
			}
		})
	}
}

// TestFallbackEveryTargetFails: when the last target fails too, the
// answer is its failure; each target before it has its attempt row, and
// nothing is charged.
func TestFallbackEveryTargetFails(t *testing.T) {
	p := newPipeline(t, setup{routes: fallbackRoutes})
	p.providers["testkit"].failWith(&sdk.Error{Kind: sdk.KindUnavailable, Message: "down"})
	p.providers["spare"].failWith(&sdk.Error{Kind: sdk.KindUpstream, Message: "also down", UpstreamStatus: 503})
	out, err := p.speak(t.Context(), "acme", req("testkit/test", "alpha", "Nobody home"), speech.DeliverClip)
	pe := wantCode(t, err, problem.ProviderError)
	if pe.Detail != "also down" {
		t.Errorf("detail %q, want the spare's", pe.Detail)
	}
	if len(out.Attempts) != 1 || out.Attempts[0].Provider != "testkit" || out.Attempts[0].ErrorCode != string(problem.ProviderUnavailable) {
		t.Errorf("attempts %+v, want testkit's unavailable", out.Attempts)
	}
	if out.Row.Provider != "spare" || out.Row.CreditsUsed != 0 {
		t.Errorf("row of %s, %d credits; want the spare's, none", out.Row.Provider, out.Row.CreditsUsed)
	}
}

// TestFallbackDropsProviderOptions: the request's providerOptions are the
// first provider's, so its fallback gets none; here the options are what
// make the first provider fail (the kit's "fail" option).
func TestFallbackDropsProviderOptions(t *testing.T) {
	p := newPipeline(t, setup{routes: fallbackRoutes})
	r := req("testkit/test", "alpha", "Options stay behind")
	r.ProviderOptions = []byte(`{"fail": {"kind": "unavailable", "message": "asked to fail"}}`)
	out, err := p.speak(t.Context(), "acme", r, speech.DeliverClip)
	wantCode(t, err, "")
	calls := p.calls("spare")
	if len(calls) != 1 || len(calls[0].Options) != 0 {
		t.Fatalf("the spare got %+v, want one call without options", calls)
	}
	if len(out.Attempts) != 1 || out.Attempts[0].ProviderOptions == "" || out.Row.ProviderOptions != "" {
		t.Errorf("attempts %+v, row options %q; want the first's options on its attempt only", out.Attempts, out.Row.ProviderOptions)
	}
}

// TestSavedVoiceFallbacks: a saved voice's own fallbacks replace the
// deployment's route, and the rows keep the saved voice's id.
func TestSavedVoiceFallbacks(t *testing.T) {
	p := newPipeline(t, setup{routes: fallbackRoutes})
	id := p.saveVoice(t, "acme", store.Voice{Provider: "testkit", Model: "test", VoiceID: "beta",
		Fallbacks: []store.VoiceTarget{{Provider: "spare", Model: "basic", VoiceID: "alpha"}}})
	p.providers["testkit"].failWith(&sdk.Error{Kind: sdk.KindUnavailable, Message: "down"})
	text := "Saved and safe"
	out, err := p.speak(t.Context(), "acme", &speech.Request{VoiceID: id, Text: &text}, speech.DeliverClip)
	wantCode(t, err, "")
	calls := p.calls("spare")
	if len(calls) != 1 || calls[0].Model != "basic" || calls[0].Voice != "alpha" {
		t.Fatalf("the spare got %+v, want one call to basic in alpha (the voice's fallback)", calls)
	}
	if len(out.Attempts) != 1 || out.Row.VoiceRef != id || out.Attempts[0].VoiceRef != id || out.Row.Model != "basic" {
		t.Errorf("row voice %q model %s, attempts %+v; want the saved voice %s on the row and its one attempt, model basic", out.Row.VoiceRef, out.Row.Model, out.Attempts, id)
	}
}

// TestStreamFallsBack: a stream whose provider fails before its first
// audio falls back like a clip, and the spare's audio is what streams.
func TestStreamFallsBack(t *testing.T) {
	p := newPipeline(t, setup{routes: fallbackRoutes})
	p.providers["testkit"].failWith(&sdk.Error{Kind: sdk.KindUnavailable, Message: "down"})
	out, err := p.speak(t.Context(), "acme", req("testkit/test", "alpha", "Stream it anyway"), speech.DeliverStream)
	wantCode(t, err, "")
	n := len(drain(t, out.Stream))
	if len(p.calls("spare")) != 1 || out.Row.Provider != "spare" || len(out.Attempts) != 1 || n == 0 {
		t.Errorf("spare calls %d, row of %s, %d attempts, %d bytes; want the spare's stream after one failed attempt",
			len(p.calls("spare")), out.Row.Provider, len(out.Attempts), n)
	}
}

// TestFallbackOnTimeout: a provider that does not answer within its own
// timeout (providers.<id>.timeout) is fallen back from, through the
// deadline the provider-call wrapper (catalog.Calls) sets; a request cut
// off by its own deadline (server.request_timeout) ends there, as
// request_timeout, with no other target tried. The kit hangs on its
// "hang" option, which the fallback does not carry over.
func TestFallbackOnTimeout(t *testing.T) {
	tests := []struct {
		name     string
		timeout  time.Duration // the providers'
		deadline time.Duration // the request's (0: none)
		code     problem.Code  // of the attempt, or of the answer
		fellBack bool
	}{
		{"the provider's timeout", 50 * time.Millisecond, 0, problem.ProviderTimeout, true},
		{"the request's deadline", 10 * time.Second, 50 * time.Millisecond, problem.RequestTimeout, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPipeline(t, setup{routes: fallbackRoutes, timeout: tt.timeout})
			ctx := t.Context()
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.deadline)
				defer cancel()
			}
			r := req("testkit/test", "alpha", "Wait for it")
			r.ProviderOptions = []byte(`{"hang": true}`)
			out, err := p.speak(ctx, "acme", r, speech.DeliverClip)
			if !tt.fellBack {
				wantCode(t, err, tt.code)
				if n := len(p.calls("spare")); n != 0 || len(out.Attempts) != 0 {
					t.Errorf("%d calls to the spare, %d attempts; want none", n, len(out.Attempts))
				}
				return
			}
			wantCode(t, err, "")
			if len(out.Attempts) != 1 || out.Attempts[0].ErrorCode != string(tt.code) || out.Row.Provider != "spare" {
				t.Errorf("attempts %+v, row of %s; want testkit's %s, then the spare", out.Attempts, out.Row.Provider, tt.code)
			}
		})
	}
}

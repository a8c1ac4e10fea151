package moderation_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/admission/moderation"
	"github.com/voxgate/voxgate/gateway/observe/metrics"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/sdk"
)

// scripted is an in-process sdk.Moderator whose answers a test scripts.
// The engine sees it exactly as it sees a plugin pool.
type scripted struct {
	calls atomic.Int32
	key   atomic.Value // the last call's API key
	fn    func(ctx context.Context, text string) (*sdk.ModerationResult, error)
}

func (s *scripted) Configure(context.Context, map[string]string) error { return nil }

func (s *scripted) Moderate(ctx context.Context, req *sdk.ModerationRequest) (*sdk.ModerationResult, error) {
	s.calls.Add(1)
	s.key.Store(req.Credentials.APIKey)
	return s.fn(ctx, req.Text)
}

func allowAll(context.Context, string) (*sdk.ModerationResult, error) {
	return &sdk.ModerationResult{Decision: sdk.DecisionAllow}, nil
}

func blockAll(category string, confidence float64) func(context.Context, string) (*sdk.ModerationResult, error) {
	return func(context.Context, string) (*sdk.ModerationResult, error) {
		return &sdk.ModerationResult{Decision: sdk.DecisionBlock, Category: category, Confidence: confidence, Detail: "scripted"}, nil
	}
}

func failAll(kind sdk.ErrorKind) func(context.Context, string) (*sdk.ModerationResult, error) {
	return func(context.Context, string) (*sdk.ModerationResult, error) {
		return nil, &sdk.Error{Kind: kind, Message: "scripted failure", UpstreamStatus: 502}
	}
}

// hang blocks until the call's context ends, like a backend that never
// answers.
func hang(ctx context.Context, _ string) (*sdk.ModerationResult, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// engineOptions are the rulesets the engine tests run, strict's mode
// given:
//
//	standard: the built-in check
//	strict:   (mode, 100ms) built-in with the term "idiot", then plugin ext
//	lenient:  (fail_open) plugins ext and ext2
//	quiet:    (off) the built-in check and plugin ext
//
// acme defaults to standard and may pick strict or lenient; globex has
// none; initech defaults to quiet. ext sends an API key.
func engineOptions(mode string) moderation.Options {
	builtin := moderation.Check{Builtin: true}
	return moderation.Options{
		Rulesets: map[string]moderation.Ruleset{
			"standard": {Checks: []moderation.Check{builtin}},
			"strict": {Mode: mode, Timeout: 100 * time.Millisecond, Checks: []moderation.Check{
				{Builtin: true, Categories: map[string]*moderation.Category{"insult": {Terms: []string{"idiot"}}}},
				{Plugin: "ext"},
			}},
			"lenient": {Mode: moderation.ModeFailOpen, Checks: []moderation.Check{{Plugin: "ext"}, {Plugin: "ext2"}}},
			"quiet":   {Mode: moderation.ModeOff, Checks: []moderation.Check{builtin, {Plugin: "ext"}}},
		},
		Plugins: map[string]moderation.Plugin{
			"ext":  {APIKey: "ext-secret-key", Timeout: 5 * time.Second},
			"ext2": {Timeout: 2 * time.Second},
		},
		Orgs: map[string]moderation.OrgRulesets{
			"acme":    {Default: "standard", Rulesets: []string{"strict", "lenient"}},
			"globex":  {},
			"initech": {Default: "quiet"},
		},
	}
}

type engineFixture struct {
	e         *moderation.Engine
	m         *metrics.Metrics
	ext, ext2 *scripted
}

func newEngineB(b *testing.B) *moderation.Engine {
	plugins := map[string]sdk.Moderator{"ext": &scripted{fn: allowAll}, "ext2": &scripted{fn: allowAll}}
	e, err := moderation.New(engineOptions(moderation.ModeFailClosed), func(name string) sdk.Moderator { return plugins[name] }, metrics.New(), nil)
	if err != nil {
		b.Fatal(err)
	}
	return e
}

func newEngine(t *testing.T, mode string, ext, ext2 func(context.Context, string) (*sdk.ModerationResult, error)) *engineFixture {
	t.Helper()
	if mode == "" {
		mode = moderation.ModeFailClosed
	}
	f := &engineFixture{m: metrics.New(), ext: &scripted{fn: ext}, ext2: &scripted{fn: ext2}}
	plugins := map[string]sdk.Moderator{"ext": f.ext, "ext2": f.ext2}
	var err error
	f.e, err = moderation.New(engineOptions(mode), func(name string) sdk.Moderator { return plugins[name] }, f.m, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestRulesetResolution(t *testing.T) {
	e := newEngine(t, "", allowAll, allowAll).e
	tests := []struct {
		org, requested, want string
		invalid              bool
	}{
		{"acme", "", "standard", false},
		{"acme", "standard", "standard", false},
		{"acme", "strict", "strict", false},
		{"acme", "lenient", "lenient", false},
		{"acme", "quiet", "", true},  // exists, but not acme's
		{"acme", "nope", "", true},   // does not exist
		{"acme", "Strict", "", true}, // ids are exact
		{"globex", "", "", false},    // no moderation
		{"globex", "standard", "", true},
		{"initech", "", "quiet", false},
	}
	for _, tt := range tests {
		t.Run(tt.org+"/"+tt.requested, func(t *testing.T) {
			got, err := e.Ruleset(tt.org, tt.requested)
			if !tt.invalid {
				if err != nil || got != tt.want {
					t.Fatalf("Ruleset = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			var pe *problem.Error
			if !errors.As(err, &pe) || pe.Status() != 400 || pe.Code != problem.ValidationFailed {
				t.Fatalf("Ruleset error = %v; want a 400 validation_failed problem", err)
			}
			if len(pe.Validation) != 1 || strings.Join(pe.Validation[0].Path, ".") != "moderation_ruleset_id" {
				t.Errorf("validation = %+v; want path [moderation_ruleset_id]", pe.Validation)
			}
		})
	}
	if v := e.Check(context.Background(), "", "kill yourself"); v.Decision != moderation.DecisionOff || v.Blocked() {
		t.Errorf("no ruleset: verdict %+v, want off", v)
	}
}

func TestCheckDecisions(t *testing.T) {
	tests := []struct {
		name, ruleset, text string
		ext, ext2           func(context.Context, string) (*sdk.ModerationResult, error)
		decision, reason    string
		detail              string
		confidence          float64
		// extCalls is how often plugin ext must have been asked; -1 when
		// another plugin's block may cancel it before it is.
		extCalls int32
	}{
		{"builtin allows", "standard", "Hello there, how are you?", allowAll, allowAll, moderation.DecisionAllow, "", "", 0, 0},
		{"builtin blocks", "standard", "just kill yourself", allowAll, allowAll, moderation.DecisionBlock, moderation.ReasonContent, "self_harm", 1, 0},
		{"test phrase with builtin", "standard", "say " + moderation.TestPhrase, allowAll, allowAll, moderation.DecisionBlock, moderation.ReasonTestPhrase, moderation.TestPhrase, 1, 0},
		{"plugin allows", "strict", "Hello there", allowAll, allowAll, moderation.DecisionAllow, "", "", 0, 1},
		{"plugin blocks", "strict", "Hello there", blockAll("Harassment/Threatening", 0.93), allowAll, moderation.DecisionBlock, moderation.ReasonContent, "harassment/threatening", 0.93, 1},
		{"plugin blocks without category", "strict", "Hello there", blockAll("", 7), allowAll, moderation.DecisionBlock, moderation.ReasonContent, "ext", 1, 1},
		{"builtin blocks before the plugin is asked", "strict", "you idiot", allowAll, allowAll, moderation.DecisionBlock, moderation.ReasonContent, "insult", 1, 0},
		{"test phrase in a plugin-only ruleset", "lenient", "v o x g a t e  m o d e r a t i o n  t e s t", allowAll, allowAll, moderation.DecisionBlock, moderation.ReasonTestPhrase, moderation.TestPhrase, 1, 0},
		{"plugins all allow", "lenient", "Hello there", allowAll, allowAll, moderation.DecisionAllow, "", "", 0, 1},
		{"second plugin blocks", "lenient", "Hello there", allowAll, blockAll("spam", 0.5), moderation.DecisionBlock, moderation.ReasonContent, "spam", 0.5, -1},
		{"a block beats a failure", "lenient", "Hello there", failAll(sdk.KindUpstream), blockAll("spam", 0.5), moderation.DecisionBlock, moderation.ReasonContent, "spam", 0.5, -1},
		{"a failure fails open", "lenient", "Hello there", allowAll, failAll(sdk.KindUnavailable), moderation.DecisionAllowOnError, moderation.ReasonErrorFailOpen, "ext2: unavailable", 0, 1},
		{"off checks nothing", "quiet", moderation.TestPhrase + " kill yourself", blockAll("x", 1), allowAll, moderation.DecisionOff, "", "", 0, 0},
		{"category is cleaned", "strict", "Hello", blockAll("Bad <b>Category</b> with a long name that goes on and on and on and on and on", 1), allowAll, moderation.DecisionBlock, moderation.ReasonContent, "badbcategory/bwithalongnamethatgoesonandonandonandonandon", 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newEngine(t, "", tt.ext, tt.ext2)
			v := f.e.Check(context.Background(), tt.ruleset, tt.text)
			if v.Decision != tt.decision || v.ReasonType != tt.reason || v.ReasonDetail != tt.detail || v.Confidence != tt.confidence || v.Ruleset != tt.ruleset {
				t.Errorf("verdict %+v; want %s/%s/%q confidence %v", v, tt.decision, tt.reason, tt.detail, tt.confidence)
			}
			if n := f.ext.calls.Load(); tt.extCalls >= 0 && n != tt.extCalls {
				t.Errorf("plugin ext called %d times, want %d", n, tt.extCalls)
			}
			if got := counter(t, f.m, tt.ruleset, tt.decision, tt.reason); got != 1 {
				t.Errorf("decision counter = %v, want 1", got)
			}
		})
	}
}

func TestCheckPassesThePluginCredential(t *testing.T) {
	f := newEngine(t, "", allowAll, allowAll)
	f.e.Check(context.Background(), "strict", "hello")
	if got, _ := f.ext.key.Load().(string); got != "ext-secret-key" {
		t.Errorf("plugin got API key %q, want the configured one", got)
	}
}

// TestFailModes covers a check that errors, one that hangs past the
// ruleset's timeout and one whose process died, under both modes.
func TestFailModes(t *testing.T) {
	dead := func(context.Context, string) (*sdk.ModerationResult, error) {
		// What the plugin host reports for a call to an exited process.
		return nil, &sdk.Error{Kind: sdk.KindUnavailable, Message: "plugin process exited"}
	}
	behaviours := []struct {
		name   string
		fn     func(context.Context, string) (*sdk.ModerationResult, error)
		detail string
	}{
		{"error", failAll(sdk.KindUpstream), "ext: upstream"},
		{"timeout", hang, "ext: timeout"},
		{"dead process", dead, "ext: unavailable"},
		{"bad answer", func(context.Context, string) (*sdk.ModerationResult, error) {
			return &sdk.ModerationResult{Decision: "maybe"}, nil
		}, "ext: internal"},
	}
	for _, b := range behaviours {
		for _, mode := range []string{moderation.ModeFailClosed, moderation.ModeFailOpen} {
			t.Run(b.name+"/"+mode, func(t *testing.T) {
				f := newEngine(t, mode, b.fn, allowAll)
				v := f.e.Check(context.Background(), "strict", "Hello there")
				want := moderation.Verdict{Ruleset: "strict", Decision: moderation.DecisionBlock, ReasonType: moderation.ReasonErrorFailClosed, ReasonDetail: b.detail}
				if mode == moderation.ModeFailOpen {
					want.Decision, want.ReasonType = moderation.DecisionAllowOnError, moderation.ReasonErrorFailOpen
				}
				v.Latency = 0
				if v != want {
					t.Errorf("verdict %+v, want %+v", v, want)
				}
				if v.Blocked() != (mode == moderation.ModeFailClosed) {
					t.Errorf("Blocked() = %v", v.Blocked())
				}
				if mode == moderation.ModeFailClosed && v.Status() != 403 {
					t.Errorf("Status() = %d, want 403", v.Status())
				}
				if got := counter(t, f.m, "strict", want.Decision, want.ReasonType); got != 1 {
					t.Errorf("decision counter = %v, want 1", got)
				}
			})
		}
	}
}

// TestFirstBlockWins: a block ends the check at once and cancels the
// plugins still working, instead of waiting out the timeout.
func TestFirstBlockWins(t *testing.T) {
	canceled := make(chan error, 1)
	slow := func(ctx context.Context, _ string) (*sdk.ModerationResult, error) {
		<-ctx.Done()
		canceled <- ctx.Err()
		return nil, ctx.Err()
	}
	f := newEngine(t, "", slow, blockAll("spam", 0.9))
	v := f.e.Check(context.Background(), "lenient", "Hello there")
	if v.Decision != moderation.DecisionBlock || v.ReasonDetail != "spam" {
		t.Fatalf("verdict %+v, want a spam block", v)
	}
	if err := <-canceled; !errors.Is(err, context.Canceled) {
		t.Errorf("the slow plugin's context ended with %v, want context.Canceled (not the timeout)", err)
	}
}

func TestNewRejectsMissingPlugin(t *testing.T) {
	if _, err := moderation.New(engineOptions(moderation.ModeFailClosed), func(string) sdk.Moderator { return nil }, nil, nil); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("New with no plugins running: err = %v", err)
	}
}

// counter reads voxgate_moderation_decisions_total{ruleset,decision,reason}.
func counter(t *testing.T, m *metrics.Metrics, ruleset, decision, reason string) float64 {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "voxgate_moderation_decisions_total" {
			continue
		}
		for _, mt := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range mt.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["ruleset"] == ruleset && labels["decision"] == decision && labels["reason"] == reason {
				return mt.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func TestTestPhraseVariants(t *testing.T) {
	f := newEngine(t, "", allowAll, allowAll)
	variants := map[string]string{
		"exact":            "VOXGATE-MODERATION-TEST",
		"lower case":       "voxgate-moderation-test",
		"in a sentence":    "Please read VOXGATE-MODERATION-TEST aloud.",
		"spaces":           "voxgate moderation test",
		"underscores":      "VOXGATE_MODERATION_TEST",
		"full-width":       "ＶＯＸＧＡＴＥ－ＭＯＤＥＲＡＴＩＯＮ－ＴＥＳＴ",
		"zero-width":       "VOX\u200bGATE-MODE\u200dRATION-\ufeffTEST",
		"leetspeak":        "V0XG4TE-M0DER4TI0N-TE5T",
		"spaced out":       "V O X G A T E - M O D E R A T I O N - T E S T",
		"look-alikes":      "V\u041eXG\u0410TE-M\u041eDER\u0410TI\u041eN-TEST",
		"combining marks":  "V\u0301OXGATE-MO\u0336DERATION-TEST",
		"soft hyphens":     "VOX\u00adGATE\u00adMODERATION\u00adTEST",
		"glued to letters": "xxVOXGATEMODERATIONTESTxx",
	}
	for name, text := range variants {
		for _, rs := range []string{"standard", "strict", "lenient"} {
			t.Run(name+"/"+rs, func(t *testing.T) {
				v := f.e.Check(context.Background(), rs, text)
				if v.Decision != moderation.DecisionBlock || v.ReasonType != moderation.ReasonTestPhrase || v.Status() != 422 {
					t.Errorf("verdict %+v, want a test_phrase block", v)
				}
			})
		}
	}
	if v := f.e.Check(context.Background(), "quiet", moderation.TestPhrase); v.Decision != moderation.DecisionOff {
		t.Errorf("ruleset off: verdict %+v, want off", v)
	}
	for _, text := range []string{"VOXGATE MODERATION", "moderation test of voxgate"} {
		if v := f.e.Check(context.Background(), "standard", text); v.Decision != moderation.DecisionAllow {
			t.Errorf("%q: verdict %+v, want allow", text, v)
		}
	}
	if n := f.ext.calls.Load() + f.ext2.calls.Load(); n != 0 {
		t.Errorf("plugins were called %d times for test phrases", n)
	}
}

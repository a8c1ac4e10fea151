package moderation_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/admission/moderation"
	"github.com/voxgate/voxgate/gateway/observe/metrics"
	"github.com/voxgate/voxgate/sdk"
)

// rulesPlugin records the rules each call carried and answers with fn.
type rulesPlugin struct {
	got [][]sdk.ModerationRule
	fn  func(req *sdk.ModerationRequest) (*sdk.ModerationResult, error)
}

func (p *rulesPlugin) Configure(context.Context, map[string]string) error { return nil }

func (p *rulesPlugin) Moderate(_ context.Context, req *sdk.ModerationRequest) (*sdk.ModerationResult, error) {
	p.got = append(p.got, req.Rules)
	return p.fn(req)
}

// rulesOptions: ruleset custom's plugin check carries three rules, the
// middle one disabled; allOff's carries one, disabled.
func rulesOptions() moderation.Options {
	return moderation.Options{
		Rulesets: map[string]moderation.Ruleset{
			"custom": {Checks: []moderation.Check{{Plugin: "llm", Rules: []moderation.CustomRule{
				{Name: "no-stock-tips", Prompt: "Block any text that promotes a specific stock", Enabled: true},
				{Name: "retired", Prompt: "Anything"},
				{Name: "no-competitors", Prompt: "Block any text that names a competitor", Enabled: true},
			}}}},
			"allOff": {Checks: []moderation.Check{{Plugin: "llm", Rules: []moderation.CustomRule{{Name: "off-one", Prompt: "x"}}}}},
		},
		Plugins: map[string]moderation.Plugin{"llm": {Timeout: 2 * time.Second}},
		Orgs:    map[string]moderation.OrgRulesets{"acme": {Default: "custom", Rulesets: []string{"allOff"}}},
	}
}

// TestCustomRules: a check's enabled rules travel with every call; a block
// by a rule is reason custom_rule naming it, with the model's confidence;
// a rule the check never sent is a failure; a check whose rules are all
// off does not run.
func TestCustomRules(t *testing.T) {
	p := &rulesPlugin{}
	e, err := moderation.New(rulesOptions(), func(string) sdk.Moderator { return p }, metrics.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tests := []struct {
		name     string
		res      *sdk.ModerationResult
		decision string
		reason   string
		rule     string
		conf     float64
	}{
		{"allowed", &sdk.ModerationResult{Decision: sdk.DecisionAllow, Confidence: 0.9}, moderation.DecisionAllow, "", "", 0},
		{"a rule blocks", &sdk.ModerationResult{Decision: sdk.DecisionBlock, Category: "custom_rule", Rule: "no-competitors", Confidence: 0.8}, moderation.DecisionBlock, moderation.ReasonCustomRule, "no-competitors", 0.8},
		{"a rule that was not sent", &sdk.ModerationResult{Decision: sdk.DecisionBlock, Rule: "retired", Confidence: 1}, moderation.DecisionBlock, moderation.ReasonErrorFailClosed, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.fn = func(*sdk.ModerationRequest) (*sdk.ModerationResult, error) { return tt.res, nil }
			v := e.Check(ctx, "custom", "some text")
			if v.Decision != tt.decision || v.ReasonType != tt.reason || v.RuleName != tt.rule || v.Confidence != tt.conf {
				t.Errorf("verdict %+v", v)
			}
			if tt.rule != "" && (v.ReasonDetail != tt.rule || v.Status() != 422) {
				t.Errorf("detail %q status %d", v.ReasonDetail, v.Status())
			}
		})
	}
	last := p.got[len(p.got)-1]
	if len(last) != 2 || last[0].Name != "no-stock-tips" || last[1].Name != "no-competitors" || !strings.Contains(last[0].Prompt, "stock") {
		t.Errorf("rules sent %+v: the enabled ones, in order", last)
	}
	calls := len(p.got)
	if v := e.Check(ctx, "allOff", "some text"); v.Decision != moderation.DecisionAllow || len(p.got) != calls {
		t.Errorf("all rules off: %+v after %d calls, want allow and no call", v, len(p.got)-calls)
	}
}

// Package moderation decides whether a text may be synthesized.
//
// An Engine holds the moderation rulesets of gateway.yaml. A ruleset runs
// checks over the request's text before any provider is called: the
// built-in term and pattern check (Builtin) and moderation plugins (any
// sdk.Moderator, such as plugins/openai-moderation), which answer with
// their own checks or, given custom rules in plain English, with a
// model's reading of those rules. The first check that
// blocks decides; when a check fails or does not answer within the
// ruleset's timeout, the ruleset's mode decides: fail_closed blocks the
// request (403), fail_open lets it through and says so in the request log.
// Every ruleset that is not off also blocks TestPhrase.
//
// The outcome is a Verdict, which lands in the request's log row and in the
// voxgate_moderation_* metrics; a blocked verdict reaches the client as the
// moderation error envelope (see BlockedError).
package moderation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/observe/metrics"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/sdk"
)

// Ruleset modes (config moderation.rulesets.X.mode).
const (
	// ModeFailClosed blocks the request when a check fails or times out.
	ModeFailClosed = "fail_closed"
	// ModeFailOpen lets the request through when a check fails or times
	// out, recording DecisionAllowOnError.
	ModeFailOpen = "fail_open"
	// ModeOff checks nothing.
	ModeOff = "off"
)

// defaultTimeout bounds a ruleset's checks when the config gives none.
const defaultTimeout = 500 * time.Millisecond

// maxCategoryLen caps a plugin-reported category before it reaches the
// request log and the client's envelope.
const maxCategoryLen = 64

// Engine runs moderation rulesets. It implements the speech service's
// Moderator and is safe for concurrent use.
type Engine struct {
	rulesets map[string]*ruleset
	orgs     map[string]*orgRulesets
	log      *zap.Logger
}

// orgRulesets are the rulesets one organization may use.
type orgRulesets struct {
	def     string
	allowed []string // sorted, includes def
}

// ruleset is one compiled moderation ruleset.
type ruleset struct {
	name     string
	mode     string
	timeout  time.Duration
	builtins []*Builtin
	plugins  []*pluginCheck
	obs      *observers
	log      *zap.Logger
}

// pluginCheck is a check answered by a moderation plugin: the plugin's
// own check, or, with rules, the check's custom rules evaluated by the
// plugin's model.
type pluginCheck struct {
	name    string
	mod     sdk.Moderator
	creds   sdk.Credentials
	timeout time.Duration
	rules   []sdk.ModerationRule // the enabled custom rules, if any
}

// observers are a ruleset's metric series, resolved once at New so that a
// check does not hash label values.
type observers struct {
	latency   prometheus.Observer
	decisions map[[2]string]prometheus.Counter
	vec       *prometheus.CounterVec
	ruleset   string
}

// New compiles the rulesets of o. plugins returns the running moderation
// plugin configured under a name (o.Plugins), or nil; m and log may be
// nil.
func New(o Options, plugins func(name string) sdk.Moderator, m *metrics.Metrics, log *zap.Logger) (*Engine, error) {
	if log == nil {
		log = zap.NewNop()
	}
	e := &Engine{rulesets: map[string]*ruleset{}, orgs: map[string]*orgRulesets{}, log: log}
	var errs []error
	for name, rc := range o.Rulesets {
		rs, err := newRuleset(o, name, rc, plugins, m, log)
		if err != nil {
			errs = append(errs, fmt.Errorf("moderation ruleset %s: %w", name, err))
			continue
		}
		e.rulesets[name] = rs
	}
	for name, org := range o.Orgs {
		or := &orgRulesets{def: org.Default}
		for _, r := range append([]string{org.Default}, org.Rulesets...) {
			if r == "" || slices.Contains(or.allowed, r) {
				continue
			}
			if _, ok := o.Rulesets[r]; !ok {
				errs = append(errs, fmt.Errorf("org %s: unknown moderation ruleset %q", name, r))
				continue
			}
			or.allowed = append(or.allowed, r)
		}
		sort.Strings(or.allowed)
		e.orgs[name] = or
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return e, nil
}

func newRuleset(o Options, name string, rc Ruleset, plugins func(string) sdk.Moderator, m *metrics.Metrics, log *zap.Logger) (*ruleset, error) {
	rs := &ruleset{name: name, mode: rc.Mode, timeout: rc.Timeout, log: log.With(zap.String("ruleset", name))}
	switch rs.mode {
	case "":
		rs.mode = ModeFailClosed
	case ModeFailClosed, ModeFailOpen, ModeOff:
	default:
		return nil, fmt.Errorf("mode %q is not fail_closed, fail_open or off", rc.Mode)
	}
	if rs.timeout <= 0 {
		rs.timeout = defaultTimeout
	}
	for i, ch := range rc.Checks {
		switch {
		case ch.Builtin:
			b, err := NewBuiltin(ch.Categories)
			if err != nil {
				return nil, fmt.Errorf("checks[%d]: %w", i, err)
			}
			rs.builtins = append(rs.builtins, b)
		case ch.Plugin != "":
			pc, ok := o.Plugins[ch.Plugin]
			if !ok {
				return nil, fmt.Errorf("checks[%d]: unknown moderation plugin %q", i, ch.Plugin)
			}
			var mod sdk.Moderator
			if plugins != nil {
				mod = plugins(ch.Plugin)
			}
			if mod == nil {
				return nil, fmt.Errorf("checks[%d]: moderation plugin %q is not running", i, ch.Plugin)
			}
			var rules []sdk.ModerationRule
			for _, r := range ch.Rules {
				if r.Enabled {
					rules = append(rules, sdk.ModerationRule{Name: r.Name, Prompt: r.Prompt})
				}
			}
			if len(ch.Rules) > 0 && len(rules) == 0 {
				continue // every rule is off: the evaluator does not run
			}
			rs.plugins = append(rs.plugins, &pluginCheck{
				name:    ch.Plugin,
				mod:     mod,
				creds:   sdk.Credentials{APIKey: pc.APIKey},
				timeout: pc.Timeout,
				rules:   rules,
			})
		default:
			return nil, fmt.Errorf("checks[%d]: names neither builtin nor plugin", i)
		}
	}
	if m != nil {
		rs.obs = newObservers(m, name)
	}
	return rs, nil
}

func newObservers(m *metrics.Metrics, name string) *observers {
	o := &observers{latency: m.ModerationLatency.WithLabelValues(name), decisions: map[[2]string]prometheus.Counter{}, vec: m.ModerationDecisions, ruleset: name}
	for _, k := range [][2]string{
		{DecisionAllow, ""}, {DecisionOff, ""},
		{DecisionBlock, ReasonContent}, {DecisionBlock, ReasonTestPhrase}, {DecisionBlock, ReasonCustomRule}, {DecisionBlock, ReasonErrorFailClosed},
		{DecisionAllowOnError, ReasonErrorFailOpen},
	} {
		o.decisions[k] = m.ModerationDecisions.WithLabelValues(name, k[0], k[1])
	}
	return o
}

func (o *observers) record(v Verdict) {
	if o == nil {
		return
	}
	c, ok := o.decisions[[2]string{v.Decision, v.ReasonType}]
	if !ok {
		c = o.vec.WithLabelValues(o.ruleset, v.Decision, v.ReasonType)
	}
	c.Inc()
	if v.Decision != DecisionOff {
		o.latency.Observe(v.Latency.Seconds())
	}
}

// Ruleset returns the ruleset a request of org runs: requested when it is
// the org's default or one of its rulesets, the org's default when
// requested is empty ("" when the org has none: no moderation). Any other
// requested id is a validation problem on moderation_ruleset_id.
func (e *Engine) Ruleset(org, requested string) (string, error) {
	o := e.orgs[org]
	if requested == "" {
		if o == nil {
			return "", nil
		}
		return o.def, nil
	}
	if o != nil && slices.Contains(o.allowed, requested) {
		return requested, nil
	}
	msg := fmt.Sprintf("unknown moderation ruleset %q: this organization has no moderation rulesets to choose from", requested)
	if o != nil && len(o.allowed) > 0 {
		msg = fmt.Sprintf("unknown moderation ruleset %q: this organization may use %s", requested, strings.Join(o.allowed, ", "))
	}
	return "", problem.Validation(problem.Field(msg, "moderation_ruleset_id"))
}

// Check runs ruleset over text. An empty ruleset means no moderation and
// yields DecisionOff. Check never fails: a failing check is part of the
// verdict, decided by the ruleset's mode.
func (e *Engine) Check(ctx context.Context, name, text string) Verdict {
	if name == "" {
		return Verdict{Decision: DecisionOff}
	}
	start := time.Now()
	rs := e.rulesets[name]
	var v Verdict
	switch {
	case rs == nil:
		// Ruleset hands out configured names only; failing closed keeps a
		// caller's mistake from switching moderation off.
		v = Verdict{Decision: DecisionBlock, ReasonType: ReasonErrorFailClosed, ReasonDetail: "unknown ruleset"}
		e.log.Error("moderation check against an unknown ruleset", zap.String("ruleset", name))
	case rs.mode == ModeOff:
		v = Verdict{Decision: DecisionOff}
	default:
		v = rs.check(ctx, text)
	}
	v.Ruleset = name
	v.Latency = time.Since(start)
	if rs != nil {
		rs.obs.record(v)
	}
	return v
}

// check runs the local checks (the test phrase, then the built-in checks,
// over one shared normalization), then the plugins, which are only called
// when nothing local blocked: a remote check costs time and often money.
func (rs *ruleset) check(ctx context.Context, text string) Verdict {
	if v, blocked := rs.checkLocal(text); blocked {
		return v
	}
	if len(rs.plugins) == 0 {
		return Verdict{Decision: DecisionAllow}
	}
	return rs.checkPlugins(ctx, text)
}

// checkLocal is the hot path every moderated request takes.
func (rs *ruleset) checkLocal(text string) (Verdict, bool) {
	v := getViews()
	defer putViews(v)
	v.build(text)
	if v.hasTestPhrase() {
		return Verdict{Decision: DecisionBlock, ReasonType: ReasonTestPhrase, ReasonDetail: TestPhrase, Confidence: 1}, true
	}
	for _, b := range rs.builtins {
		if cat, ok := b.match(v); ok {
			return Verdict{Decision: DecisionBlock, ReasonType: ReasonContent, ReasonDetail: cat, Confidence: 1}, true
		}
	}
	return Verdict{}, false
}

// pluginOutcome is one plugin's answer.
type pluginOutcome struct {
	check *pluginCheck
	res   *sdk.ModerationResult
	err   error
}

// checkPlugins asks every plugin concurrently under the ruleset's timeout.
// The first block wins and cancels the others; failures count only when
// no plugin blocked.
func (rs *ruleset) checkPlugins(ctx context.Context, text string) Verdict {
	ctx, cancel := context.WithTimeout(ctx, rs.timeout)
	defer cancel()
	var failed *pluginOutcome
	if len(rs.plugins) == 1 {
		o := rs.plugins[0].run(ctx, text)
		if o.err == nil {
			return o.verdict()
		}
		failed = &o
	} else {
		outcomes := make(chan pluginOutcome, len(rs.plugins))
		for _, p := range rs.plugins {
			go func() { outcomes <- p.run(ctx, text) }()
		}
		for range rs.plugins {
			o := <-outcomes
			if o.err == nil && o.res.Decision == sdk.DecisionBlock {
				cancel()
				return o.verdict()
			}
			if o.err != nil && failed == nil {
				failed = &o
			}
		}
		if failed == nil {
			return Verdict{Decision: DecisionAllow}
		}
	}
	return rs.onFailure(failed)
}

// onFailure turns a failed plugin call into the mode's verdict.
func (rs *ruleset) onFailure(o *pluginOutcome) Verdict {
	kind := sdk.AsError(o.err).Kind.String()
	detail := o.check.name + ": " + kind
	rs.log.Warn("moderation check failed", zap.String("check", o.check.name), zap.String("kind", kind),
		zap.String("mode", rs.mode), zap.Error(o.err))
	if rs.mode == ModeFailOpen {
		return Verdict{Decision: DecisionAllowOnError, ReasonType: ReasonErrorFailOpen, ReasonDetail: detail}
	}
	return Verdict{Decision: DecisionBlock, ReasonType: ReasonErrorFailClosed, ReasonDetail: detail}
}

// run calls the plugin under its own timeout (the plugin's, within the
// ruleset's) and checks its answer.
func (p *pluginCheck) run(ctx context.Context, text string) pluginOutcome {
	if p.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.timeout)
		defer cancel()
	}
	res, err := p.mod.Moderate(ctx, &sdk.ModerationRequest{Text: text, Credentials: p.creds, Rules: p.rules})
	switch {
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		// However the plugin or the transport reported it, the check ran
		// out of time.
		err = &sdk.Error{Kind: sdk.KindTimeout, Message: fmt.Sprintf("moderation plugin %s did not answer in time: %v", p.name, err)}
	case err == nil && res == nil:
		err = sdk.Errorf(sdk.KindInternal, "moderation plugin %s returned no result", p.name)
	case err == nil && res.Decision != sdk.DecisionAllow && res.Decision != sdk.DecisionBlock:
		err = sdk.Errorf(sdk.KindInternal, "moderation plugin %s returned decision %q", p.name, res.Decision)
	case err == nil && res.Decision == sdk.DecisionBlock && res.Rule != "" && !p.hasRule(res.Rule):
		// A model's answer naming a rule the check never sent is not a
		// verdict anyone configured.
		err = sdk.Errorf(sdk.KindUpstream, "moderation plugin %s blocked by rule %q, which the check does not have", p.name, cleanCategory(res.Rule))
	}
	return pluginOutcome{check: p, res: res, err: err}
}

// hasRule reports whether name is one of the check's custom rules.
func (p *pluginCheck) hasRule(name string) bool {
	for _, r := range p.rules {
		if r.Name == name {
			return true
		}
	}
	return false
}

// verdict turns a plugin's answer into a Verdict.
func (o pluginOutcome) verdict() Verdict {
	if o.res.Decision != sdk.DecisionBlock {
		return Verdict{Decision: DecisionAllow}
	}
	if o.res.Rule != "" {
		// run checked the name is one of the check's rules.
		return Verdict{Decision: DecisionBlock, ReasonType: ReasonCustomRule, ReasonDetail: o.res.Rule, RuleName: o.res.Rule, Confidence: clamp01(o.res.Confidence)}
	}
	detail := cleanCategory(o.res.Category)
	if detail == "" {
		detail = o.check.name
	}
	return Verdict{Decision: DecisionBlock, ReasonType: ReasonContent, ReasonDetail: detail, Confidence: clamp01(o.res.Confidence)}
}

// cleanCategory keeps a plugin's category short and free of anything but
// a category name's characters, since it reaches logs and clients.
func cleanCategory(c string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(c) {
		if b.Len() >= maxCategoryLen {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("_-/.:", r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func clamp01(f float64) float64 {
	switch {
	case f != f || f < 0: // NaN or negative
		return 0
	case f > 1:
		return 1
	}
	return f
}

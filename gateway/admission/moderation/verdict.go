package moderation

import (
	"fmt"
	"time"
)

// Decisions recorded in request logs (moderation_decision).
const (
	// DecisionAllow: every check passed.
	DecisionAllow = "allow"
	// DecisionBlock: a check blocked the text, or a check failed and the
	// ruleset fails closed.
	DecisionBlock = "block"
	// DecisionAllowOnError: a check failed and the ruleset fails open.
	DecisionAllowOnError = "allow_on_error"
	// DecisionOff: the ruleset is off; nothing was checked.
	DecisionOff = "off"
)

// Reason types (moderation_reason_type and the envelope's reason.type).
const (
	// ReasonContent: a check matched the text (category in Detail).
	ReasonContent = "content_policy"
	// ReasonTestPhrase: the built-in test phrase VOXGATE-MODERATION-TEST.
	ReasonTestPhrase = "test_phrase"
	// ReasonCustomRule: a custom rule (config checks[].rules) matched the
	// text; the rule's name is in RuleName and Detail.
	ReasonCustomRule = "custom_rule"
	// ReasonErrorFailClosed: a check failed or timed out and the ruleset
	// fails closed.
	ReasonErrorFailClosed = "error_fail_closed"
	// ReasonErrorFailOpen: a check failed or timed out and the ruleset
	// fails open; the request went ahead.
	ReasonErrorFailOpen = "error_fail_open"
)

// Verdict is the outcome of checking one text against one ruleset.
type Verdict struct {
	Ruleset  string
	Decision string
	// ReasonType and ReasonDetail explain a block or an error. Detail
	// names a category or check, never the request's text.
	ReasonType   string
	ReasonDetail string
	// RuleName names the custom rule that blocked (ReasonCustomRule).
	RuleName   string
	Confidence float64
	Latency    time.Duration
}

// Blocked reports whether the request must not reach the provider.
func (v Verdict) Blocked() bool { return v.Decision == DecisionBlock }

// Status is the HTTP status of a blocked request: 403 when the check
// itself failed and the ruleset fails closed (the status the hosted
// service's API reference gives a "fail-closed moderation outage"; 503
// before docs/compatibility.md), 422 when the content was blocked.
func (v Verdict) Status() int {
	if v.ReasonType == ReasonErrorFailClosed {
		return 403
	}
	return 422
}

// BlockedError is returned for a blocked request; the edge renders it as
// the spec's moderation envelope instead of a problem object.
type BlockedError struct {
	Verdict Verdict
	// TurnIndex names the conversation turn, -1 otherwise.
	TurnIndex int
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("content moderation blocked the request (%s: %s)", e.Verdict.ReasonType, e.Verdict.ReasonDetail)
}

package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

// baseResp is the status every MiniMax answer carries. MiniMax reports a
// failure of the request itself with HTTP 200 and a nonzero status_code,
// so every answer is checked, not only error statuses.
type baseResp struct {
	StatusCode int    `json:"status_code"`
	StatusMsg  string `json:"status_msg"`
}

// Status codes of base_resp with a meaning the plugin acts on; the
// others are the caller's mistakes (2013 invalid parameters, 1026 and
// 1027 sensitive content, the 20xx cloning checks, ...).
const (
	codeUnknown       = 1000
	codeTimeout       = 1001
	codeRateLimit     = 1002
	codeUnauthorized  = 1004
	codeNoBalance     = 1008
	codeInternal      = 1024
	codeSystem        = 1033
	codeTokenLimit    = 1039
	codeConnLimit     = 1041
	codeInvalidAPIKey = 2049
)

// httpStatusOf is the HTTP status a base_resp status code stands for: the
// one UpstreamStatus reports, so that callers see 401 for a rejected key
// and 429 for a rate limit whatever status line carried them.
func httpStatusOf(code int) int {
	switch code {
	case codeUnauthorized, codeInvalidAPIKey:
		return http.StatusUnauthorized
	case codeRateLimit, codeTokenLimit, codeConnLimit:
		return http.StatusTooManyRequests
	case codeNoBalance:
		return http.StatusPaymentRequired
	case codeTimeout:
		return http.StatusGatewayTimeout
	case codeUnknown, codeInternal, codeSystem:
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}

// respError is the *sdk.Error of a nonzero base_resp: the kind of its
// HTTP equivalent (see httpStatusOf), the status code as UpstreamCode,
// and retryAfter when the answer carried Retry-After.
func respError(r baseResp, retryAfter time.Duration) *sdk.Error {
	e := upstream.ErrorFromStatus(httpStatusOf(r.StatusCode), providerID, strconv.Itoa(r.StatusCode), r.StatusMsg, retryAfter)
	classify(e)
	return e
}

// classify adjusts a mapped error: a spent balance is not the request's
// fault and no retry fixes it.
func classify(e *sdk.Error) {
	if e.UpstreamCode == strconv.Itoa(codeNoBalance) || e.UpstreamStatus == http.StatusPaymentRequired {
		e.Kind, e.Retryable = sdk.KindUpstream, false
	}
}

// parseError reads the body of an answer with an HTTP error status: the
// usual base_resp, or nothing usable (a proxy's page).
func parseError(body []byte) (code, message string) {
	var b struct {
		BaseResp *baseResp `json:"base_resp"`
	}
	if json.Unmarshal(body, &b) != nil || b.BaseResp == nil {
		return "", ""
	}
	if b.BaseResp.StatusCode != 0 {
		code = strconv.Itoa(b.BaseResp.StatusCode)
	}
	return code, b.BaseResp.StatusMsg
}

// maxRetryAfter is the longest Retry-After a call waits out itself, as
// upstream.Policy does by default; beyond it the failure goes to the
// caller, who can tell its own client when to come back.
const maxRetryAfter = 5 * time.Second

// retry runs attempt until it succeeds, fails for good, or the attempts
// (max_attempts, default 3) are spent. A failure is tried again when it
// is an *sdk.Error marked Retryable, again() allows it (a stream that has
// sent audio cannot start over), its Retry-After is at most
// maxRetryAfter, and the wait ends before ctx's deadline.
//
// The loop is the plugin's rather than upstream.Do's because MiniMax
// reports throttling and its own internal errors inside HTTP 200 answers,
// which only the plugin reads; HTTP-level failures (a 503 in front of the
// API) come through the same loop, so that one call never multiplies two
// retry budgets.
func (cfg *config) retry(ctx context.Context, again func() bool, attempt func() error) error {
	attempts := cmp.Or(cfg.MaxAttempts, 3)
	for n := 1; ; n++ {
		err := attempt()
		var se *sdk.Error
		if err == nil || n >= attempts || ctx.Err() != nil || !errors.As(err, &se) || !se.Retryable || !again() {
			return err
		}
		if se.RetryAfter > maxRetryAfter {
			return err
		}
		wait := max(upstream.Policy{}.Backoff(n), se.RetryAfter)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= wait {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
	}
}

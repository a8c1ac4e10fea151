package problem

import (
	"regexp"
	"testing"
	"time"
)

// The draft's fields are Lists of Items: an sf-string, then parameters
// (RFC 9651: key=value, integers bare, strings quoted).
var (
	policyField = regexp.MustCompile(`^"[a-z-]+";q=[0-9]+(;qu="[a-z-]+")?(;w=[0-9]+)?$`)
	limitField  = regexp.MustCompile(`^"[a-z-]+";r=[0-9]+;t=[0-9]+$`)
)

func TestRateLimitFields(t *testing.T) {
	for _, tc := range []struct {
		r              RateLimit
		reset          time.Duration
		policy, remain string
	}{
		{RateLimit{Policy: "key", Quota: 60, Window: time.Minute}, 1500 * time.Millisecond, `"key";q=60;w=60`, `"key";r=0;t=2`},
		{RateLimit{Policy: "org-synthesis", Quota: 2, Window: 500 * time.Millisecond}, 0, `"org-synthesis";q=2;w=1`, `"org-synthesis";r=0;t=1`},
		{RateLimit{Policy: "org-whole-clip", Quota: 4, Unit: "concurrent-requests"}, 2 * time.Second, `"org-whole-clip";q=4;qu="concurrent-requests"`, `"org-whole-clip";r=0;t=2`},
		{RateLimit{Policy: "key-budget", Quota: 500, Window: 24 * time.Hour, Unit: "credits", Remaining: 20}, time.Hour, `"key-budget";q=500;qu="credits";w=86400`, `"key-budget";r=20;t=3600`},
	} {
		p, l := tc.r.PolicyField(), tc.r.Field(tc.reset)
		if p != tc.policy || l != tc.remain {
			t.Errorf("%+v: %s / %s, want %s / %s", tc.r, p, l, tc.policy, tc.remain)
		}
		if !policyField.MatchString(p) || !limitField.MatchString(l) {
			t.Errorf("not the draft's syntax: %s / %s", p, l)
		}
	}
}

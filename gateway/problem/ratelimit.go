package problem

import (
	"strconv"
	"time"
)

// RateLimit is a quota policy as the IETF RateLimit header fields
// describe it (draft-ietf-httpapi-ratelimit-headers, the -10 draft's
// Structured Field syntax): a 429 answer says which policy refused the
// request in RateLimit-Policy and what is left of it in RateLimit, beside
// Retry-After.
//
//	RateLimit-Policy: "key";q=60;w=60
//	RateLimit: "key";r=0;t=12
//
// The fields are rendered by hand: two Lists of one Item each, a String
// and Integer parameters, is all the syntax they need (no Go library of
// RFC 9651 is in the module, and one would be a dependency for two
// lines).
type RateLimit struct {
	// Policy names the policy: a short ASCII token of the gateway's
	// ("org-synthesis", "org-reads", "key", "org-budget", "key-budget",
	// "org-body-memory", "org-whole-clip").
	Policy string
	// Quota is what the policy allows per Window: requests, or Unit.
	Quota int64
	// Window is the policy's time window; zero for a policy that bounds
	// what is held at once (concurrent requests), which has none.
	Window time.Duration
	// Unit is the quota unit ("" for requests; "credits" for a budget).
	Unit string
	// Remaining is what is left of the quota now.
	Remaining int64
}

// PolicyField renders the RateLimit-Policy field value.
func (r *RateLimit) PolicyField() string {
	b := make([]byte, 0, 48)
	b = append(b, '"')
	b = append(b, r.Policy...)
	b = append(b, `";q=`...)
	b = strconv.AppendInt(b, max(0, r.Quota), 10)
	if r.Unit != "" {
		b = append(b, `;qu="`...)
		b = append(b, r.Unit...)
		b = append(b, '"')
	}
	if r.Window > 0 { // none for a bound on what is held at once
		b = append(b, ";w="...)
		b = strconv.AppendInt(b, max(1, int64((r.Window+time.Second-1)/time.Second)), 10)
	}
	return string(b)
}

// Field renders the RateLimit field value: what remains, and in how many
// seconds the quota resets (reset, at least 1, as Retry-After rounds).
func (r *RateLimit) Field(reset time.Duration) string {
	b := make([]byte, 0, 40)
	b = append(b, '"')
	b = append(b, r.Policy...)
	b = append(b, `";r=`...)
	b = strconv.AppendInt(b, max(0, r.Remaining), 10)
	b = append(b, ";t="...)
	b = append(b, RetryAfterSeconds(reset)...)
	return string(b)
}

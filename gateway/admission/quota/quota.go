// Package quota counts what organizations hold at once (open streams,
// bytes of request bodies) against a bound per organization and,
// optionally, one over all of them. Taking never waits: a caller past a
// bound is refused at once and says so in its own terms.
package quota

import (
	"errors"
	"sync"
)

// Errors of Quota.Take.
var (
	// ErrTotal: the amount would pass the bound over all organizations.
	ErrTotal = errors.New("quota: the total is reached")
	// ErrOrg: the amount would pass the organization's bound.
	ErrOrg = errors.New("quota: the organization's share is reached")
)

// Quota is the count. Its zero value has no bounds; set Total and PerOrg
// (0: no bound) before first use. It is safe for concurrent use.
type Quota struct {
	Total, PerOrg int64

	mu   sync.Mutex
	held int64
	orgs map[string]int64 // only organizations holding something
}

// Take counts n more held by org, or returns ErrTotal or ErrOrg, counting
// nothing, when that would pass a bound.
func (q *Quota) Take(org string, n int64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.Total > 0 && q.held+n > q.Total:
		return ErrTotal
	case q.PerOrg > 0 && q.orgs[org]+n > q.PerOrg:
		return ErrOrg
	}
	if q.orgs == nil {
		q.orgs = map[string]int64{}
	}
	q.held += n
	q.orgs[org] += n
	return nil
}

// Give counts n that org no longer holds.
func (q *Quota) Give(org string, n int64) {
	if n == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.held -= n
	if q.orgs[org] -= n; q.orgs[org] <= 0 {
		delete(q.orgs, org)
	}
}

// Held is what all organizations hold.
func (q *Quota) Held() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.held
}

// HeldBy is what org holds.
func (q *Quota) HeldBy(org string) int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.orgs[org]
}

package speech

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/voxgate/voxgate/gateway/problem"
)

// clipSlots bounds how many requests with whole-clip processing each
// organization runs at once on this instance. Whole-clip work is what
// holds a clip's audio in memory and takes CPU for as long as the clip is
// long, so one organization's burst of long requests must not take all of
// either from the others.
//
// A request past the bound waits, up to wait, for a running one to end:
// processing takes seconds, so a client that sends a few at once (a
// script, a page of a book) gets all of them, in turn, rather than
// failures to retry. A request that cannot get a turn within wait is
// refused with 429 rate_limited and a Retry-After, so the wait, and the
// number of waiting connections, stays bounded. A request waits before it
// calls the provider, so a waiting request holds no audio.
type clipSlots struct {
	limit int
	wait  time.Duration

	mu   sync.Mutex
	orgs map[string]*orgSlots // only organizations with requests in or waiting
}

// orgSlots is one organization's semaphore and how many requests hold or
// wait for it.
type orgSlots struct {
	sem   chan struct{}
	users int
}

func newClipSlots(limit int, wait time.Duration) *clipSlots {
	return &clipSlots{limit: max(limit, 1), wait: wait, orgs: map[string]*orgSlots{}}
}

// acquire waits for one of org's turns and returns the function that
// gives it back. It fails with a rate_limited problem when no turn came
// within the wait, or with ctx's error.
func (c *clipSlots) acquire(ctx context.Context, org string) (func(), error) {
	c.mu.Lock()
	o := c.orgs[org]
	if o == nil {
		o = &orgSlots{sem: make(chan struct{}, c.limit)}
		c.orgs[org] = o
	}
	o.users++
	c.mu.Unlock()
	leave := func() {
		c.mu.Lock()
		if o.users--; o.users == 0 {
			delete(c.orgs, org)
		}
		c.mu.Unlock()
	}
	select {
	case o.sem <- struct{}{}:
		return func() { <-o.sem; leave() }, nil
	default:
	}
	t := time.NewTimer(c.wait)
	defer t.Stop()
	select {
	case o.sem <- struct{}{}:
		return func() { <-o.sem; leave() }, nil
	case <-t.C:
		leave()
		return nil, &problem.Error{Code: problem.RateLimited, RetryAfter: max(time.Second, c.wait/4),
			Limit:  &problem.RateLimit{Policy: "org-whole-clip", Quota: int64(c.limit), Unit: "concurrent-requests"},
			Detail: fmt.Sprintf("this organization already runs %d requests with whole-clip processing (volumeDbfs, output, speed the model cannot do, conversations) and none ended within %s; retry later", c.limit, c.wait)}
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
}

package speech

import (
	"fmt"
	"sync"
	"time"

	"github.com/voxgate/voxgate/gateway/admission/quota"
	"github.com/voxgate/voxgate/gateway/problem"
)

// streamSlots bounds the streams each organization holds open at once on
// this instance (limits.streams_per_org). A stream holds its provider call
// for as long as its client reads: for eSpeak one of the plugin's render
// slots, for a cloud provider a connection and often a concurrency slot of
// the account. Without a bound per organization, one organization's many
// slow listeners (or a client that opens streams and reads them at a
// trickle) could take every slot and stall the others. Unlike whole-clip
// turns (clipSlots), a stream past the bound is refused at once: a stream
// lasts as long as its client wants, so a wait for a turn would have no
// useful bound.
type streamSlots struct {
	open quota.Quota // streams; PerOrg is the bound
}

func newStreamSlots(limit int) *streamSlots {
	return &streamSlots{open: quota.Quota{PerOrg: int64(max(limit, 1))}}
}

// acquire takes one of org's stream slots and returns the function that
// gives it back (once; later calls do nothing), or a 429 rate_limited
// problem when org holds all of them.
func (c *streamSlots) acquire(org string) (func(), error) {
	if err := c.open.Take(org, 1); err != nil {
		return nil, &problem.Error{Code: problem.RateLimited, RetryAfter: time.Second,
			Detail: fmt.Sprintf("this organization already has %d streams open on this instance (limits.streams_per_org); close one or retry later", c.open.PerOrg)}
	}
	var once sync.Once
	return func() { once.Do(func() { c.open.Give(org, 1) }) }, nil
}

// slotSource gives its stream slot back when the stream is closed.
type slotSource struct {
	Source
	release func()
}

// Close closes the stream and frees its slot.
func (s *slotSource) Close() error {
	err := s.Source.Close()
	s.release()
	return err
}

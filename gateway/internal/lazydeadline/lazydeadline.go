// Package lazydeadline is context.WithDeadline whose timer is armed only
// when something waits for the context to end.
//
// Every speech request has a deadline (server.request_timeout), and most
// of them never need a timer for it: a stream the gateway sends to the
// provider itself puts the deadline on the upstream connection, and reads
// the answer on the request's own goroutine, so nothing ever waits on the
// request context's Done channel. context.WithDeadline arms a runtime
// timer and allocates a cancelCtx all the same, on the way of every
// stream's first byte (about 6 µs there on a cold cache, measured with
// `make bench`'s stages). Here the deadline is reported at once by
// Deadline and Err, and the timer is armed the first time Done is called
// (directly, or by a derived context or context.AfterFunc), after which
// the context is a context.WithDeadline.
package lazydeadline

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// WithDeadline is context.WithDeadline(parent, d) that arms its timer on
// the first call of Done. A parent that can end itself (Done not nil),
// or whose deadline is earlier, gets context.WithDeadline's context:
// it must be watched from the start.
func WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	if cur, ok := parent.Deadline(); ok && cur.Before(d) {
		return context.WithDeadline(parent, d)
	}
	if parent.Done() != nil {
		return context.WithDeadline(parent, d)
	}
	c := &lazyCtx{parent: parent, deadline: d}
	return c, c.cancel
}

// WithTimeout is WithDeadline(parent, time.Now().Add(timeout)).
func WithTimeout(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return WithDeadline(parent, time.Now().Add(timeout))
}

// lazyCtx is the context of WithDeadline until armed, then a front for
// the context.WithDeadline it armed. Its parent never ends (WithDeadline
// checked), so only cancel and the deadline can end it.
type lazyCtx struct {
	parent   context.Context
	deadline time.Time
	armed    atomic.Pointer[armedCtx]
	mu       sync.Mutex // orders cancel and arm
	err      error      // why cancel ended it before it was armed
}

type armedCtx struct {
	context.Context
	cancel context.CancelFunc
}

func (c *lazyCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// Done arms the timer: the caller will wait for the context to end.
func (c *lazyCtx) Done() <-chan struct{} { return c.arm().Done() }

func (c *lazyCtx) Err() error {
	if a := c.armed.Load(); a != nil {
		return a.Err()
	}
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err == nil && !time.Now().Before(c.deadline) {
		err = context.DeadlineExceeded
	}
	return err
}

// Value is the armed context's once armed, so that context.Cause and the
// contexts derived from this one find its cancellation, as they would
// with context.WithDeadline's.
func (c *lazyCtx) Value(key any) any {
	if a := c.armed.Load(); a != nil {
		return a.Value(key)
	}
	return c.parent.Value(key)
}

// AfterFunc makes context.AfterFunc, and contexts derived from this one,
// register with the armed context rather than start a goroutine that
// waits for Done (the context package looks for this method).
func (c *lazyCtx) AfterFunc(f func()) func() bool {
	return context.AfterFunc(c.arm(), f)
}

func (c *lazyCtx) String() string {
	return "lazydeadline.WithDeadline(" + c.deadline.String() + ")"
}

// arm returns the armed context, making it on the first call: a
// context.WithDeadline, ended at once when cancel came first.
func (c *lazyCtx) arm() *armedCtx {
	if a := c.armed.Load(); a != nil {
		return a
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.armed.Load(); a != nil {
		return a
	}
	a := &armedCtx{}
	// A deadline already past makes a context that has ended with
	// DeadlineExceeded, as a cancel after the deadline left it.
	a.Context, a.cancel = context.WithDeadline(c.parent, c.deadline)
	if c.err == context.Canceled {
		a.cancel()
	}
	c.armed.Store(a)
	return a
}

// cancel ends the context, with DeadlineExceeded when the deadline had
// passed first (as context.WithDeadline's timer would have ended it).
func (c *lazyCtx) cancel() {
	c.mu.Lock()
	a := c.armed.Load()
	if a == nil && c.err == nil {
		c.err = context.Canceled
		if !time.Now().Before(c.deadline) {
			c.err = context.DeadlineExceeded
		}
	}
	c.mu.Unlock()
	if a != nil {
		a.cancel()
	}
}

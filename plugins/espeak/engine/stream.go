package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// How a stream renders ahead of its client. eSpeak renders about a
// hundred times faster than real time, so a second of audio takes it some
// ten milliseconds: the child renders a piece, pauses, and renders the
// next when the client has taken enough of the buffer.
const (
	// renderAhead is the per-stream buffer: the audio rendered and not
	// yet taken by the client, at most (plus one eSpeak buffer).
	renderAhead = 5 * time.Second
	// renderPiece is the least the client must take before the child
	// renders again, so that a client reading at real-time pace costs a
	// render once a second rather than once a chunk.
	renderPiece = time.Second
	// DefaultStallTimeout is how long a stream waits for its client to
	// take audio before ending it (setting stream_stall_timeout).
	DefaultStallTimeout = 30 * time.Second
)

// errStalled ends a stream whose client took no audio for the stall time.
var errStalled = errors.New("the client took no audio")

// pace says how far a stream renders ahead of its client and how long it
// waits for a client that takes nothing.
type pace struct {
	ahead, piece int // bytes of audio
	stall        time.Duration
}

// stream renders text with opts for a client that takes the audio at its
// own pace through deliver, which is called from another goroutine, in
// order, one buffer at a time, and may block as long as the client does.
//
// Synthesis never waits on the client: the child renders into the
// stream's buffer (pace.ahead) a piece at a time and holds a rendering
// slot only while it renders, never while the client is slow. A client
// that takes nothing for pace.stall ends the stream with errStalled; the
// child is stopped and the buffer dropped at once, while a deliver still
// blocked in the client returns when the client's call ends.
func (e *engine) stream(ctx context.Context, text string, opts options, p pace, deliver func(buffer) error) (err error) {
	if err := acquire(ctx, e.renders); err != nil {
		return err
	}
	defer func() { <-e.renders }()
	r, err := startRendering(ctx, e.tmpl, cleanText(text), opts)
	if err != nil {
		return err
	}
	defer r.close()

	q := newQueue()
	go q.send(ctx, deliver)
	defer func() {
		// Stop the sender, and let it finish the buffer it may be
		// delivering, so that deliver is not called after stream
		// returns. A stalled client may never take it; nor, for the
		// stall time, may any slow one.
		q.abandon()
		if !errors.Is(err, errStalled) {
			q.waitExit(p.stall)
		}
	}()

	var granted, received int
	for done := false; !done; {
		// Room for a piece (at once, for the first).
		if err := q.await(ctx, func() bool { return q.size() <= p.ahead-p.piece }, p.stall); err != nil {
			return err
		}
		if err := acquire(ctx, e.slots); err != nil {
			return err
		}
		var pieceErr error
		done, pieceErr = e.renderPiece(r, q, p.ahead-q.size(), &granted, &received)
		<-e.slots
		if pieceErr != nil {
			return pieceErr
		}
	}
	q.finish()
	return q.await(ctx, q.sent, p.stall)
}

// renderPiece grants the child room bytes and queues what it renders until
// it has used the grant (it stops after the buffer that does) or ended.
// granted and received count the stream's bytes so far; done reports the
// end of synthesis.
func (e *engine) renderPiece(r *rendering, q *queue, room int, granted, received *int) (done bool, err error) {
	if err := r.grant(uint32(room)); err != nil {
		return false, err
	}
	*granted += room
	for *received < *granted {
		b, err := r.next()
		if errors.Is(err, io.EOF) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		*received += len(b.pcm)
		if len(b.pcm) > 0 {
			q.push(b)
		}
	}
	return false, nil
}

// queue is a stream's buffer between the rendering and the goroutine that
// delivers to the client.
type queue struct {
	mu       sync.Mutex
	bufs     []buffer
	bytes    int  // audio in bufs and in the buffer being delivered
	finished bool // no more buffers will be pushed
	// more is poked when a buffer is pushed or the queue finishes or is
	// abandoned; taken when a buffer has been delivered.
	more, taken chan struct{}
	// exited is closed when the sender returns, err says why.
	exited    chan struct{}
	err       error
	abandoned chan struct{}
}

func newQueue() *queue {
	return &queue{more: make(chan struct{}, 1), taken: make(chan struct{}, 1), exited: make(chan struct{}), abandoned: make(chan struct{})}
}

// poke wakes the waiter of c without ever blocking.
func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (q *queue) push(b buffer) {
	q.mu.Lock()
	q.bufs = append(q.bufs, b)
	q.bytes += len(b.pcm)
	q.mu.Unlock()
	poke(q.more)
}

// finish says no more buffers will come; the sender returns once it has
// delivered the rest.
func (q *queue) finish() {
	q.mu.Lock()
	q.finished = true
	q.mu.Unlock()
	poke(q.more)
}

// abandon stops the sender: it delivers nothing more.
func (q *queue) abandon() {
	select {
	case <-q.abandoned:
	default:
		close(q.abandoned)
	}
}

// size is the audio not yet delivered, in bytes.
func (q *queue) size() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes
}

// sent reports whether everything was delivered after finish.
func (q *queue) sent() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.finished && q.bytes == 0
}

// waitExit waits for the sender to return, at most d.
func (q *queue) waitExit(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-q.exited:
	case <-t.C:
	}
}

// send delivers the queue's buffers in order until it is finished and
// empty, abandoned, ctx ends, or deliver fails.
func (q *queue) send(ctx context.Context, deliver func(buffer) error) {
	defer close(q.exited)
	for {
		q.mu.Lock()
		if len(q.bufs) == 0 {
			finished := q.finished
			q.mu.Unlock()
			if finished {
				return
			}
			select {
			case <-q.more:
				continue
			case <-q.abandoned:
				return
			}
		}
		b := q.bufs[0]
		q.bufs[0] = buffer{}
		q.bufs = q.bufs[1:]
		q.mu.Unlock()
		select {
		case <-q.abandoned:
			return
		default:
		}
		if err := ctx.Err(); err != nil {
			q.err = err // read only after exited is closed
			return
		}
		if err := deliver(b); err != nil {
			q.err = err // read only after exited is closed
			return
		}
		q.mu.Lock()
		q.bytes -= len(b.pcm)
		q.mu.Unlock()
		poke(q.taken)
	}
}

// await waits until cond holds. It fails with the sender's error if the
// sender stopped, ctx's if ctx ends, and errStalled if the client takes
// nothing for stall while cond does not hold.
func (q *queue) await(ctx context.Context, cond func() bool, stall time.Duration) error {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for !cond() {
		if timer == nil {
			timer = time.NewTimer(stall)
		}
		select {
		case <-q.taken:
			timer.Reset(stall)
		case <-q.exited:
			if q.err != nil {
				return q.err
			}
			if !cond() {
				return errors.New("the stream's sender stopped early")
			}
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return fmt.Errorf("%w for %s (stream_stall_timeout)", errStalled, stall)
		}
	}
	return nil
}

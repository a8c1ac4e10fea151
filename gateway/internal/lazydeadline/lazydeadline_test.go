package lazydeadline

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

type key struct{}

// waitDone waits for ctx to end, failing after a second.
func waitDone(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
		t.Fatal("the context did not end")
	}
}

// TestLikeWithDeadline runs each case on this package's context and on
// context.WithDeadline's, and wants the same outcome from both.
func TestLikeWithDeadline(t *testing.T) {
	parent := context.WithValue(context.Background(), key{}, "v")
	cases := []struct {
		name string
		in   time.Duration // the deadline, from now
		run  func(t *testing.T, ctx context.Context, cancel context.CancelFunc) error
	}{
		{"open", time.Hour, func(t *testing.T, ctx context.Context, _ context.CancelFunc) error { return ctx.Err() }},
		{"deadline passed, never armed", time.Millisecond, func(t *testing.T, ctx context.Context, _ context.CancelFunc) error {
			time.Sleep(5 * time.Millisecond)
			return ctx.Err()
		}},
		{"deadline passed, armed", 20 * time.Millisecond, func(t *testing.T, ctx context.Context, _ context.CancelFunc) error {
			waitDone(t, ctx)
			return ctx.Err()
		}},
		{"cancelled, then armed", time.Hour, func(t *testing.T, ctx context.Context, cancel context.CancelFunc) error {
			cancel()
			waitDone(t, ctx) // already closed
			return ctx.Err()
		}},
		{"armed, then cancelled", time.Hour, func(t *testing.T, ctx context.Context, cancel context.CancelFunc) error {
			done := ctx.Done()
			cancel()
			<-done
			return ctx.Err()
		}},
		{"cancelled after the deadline", time.Millisecond, func(t *testing.T, ctx context.Context, cancel context.CancelFunc) error {
			time.Sleep(5 * time.Millisecond)
			cancel()
			waitDone(t, ctx)
			return ctx.Err()
		}},
		{"child ends with its parent", time.Hour, func(t *testing.T, ctx context.Context, cancel context.CancelFunc) error {
			child, stop := context.WithCancel(ctx)
			defer stop()
			cancel()
			waitDone(t, child)
			return child.Err()
		}},
		{"child made after the cancel", time.Hour, func(t *testing.T, ctx context.Context, cancel context.CancelFunc) error {
			cancel()
			child, stop := context.WithCancel(ctx)
			defer stop()
			waitDone(t, child)
			return child.Err()
		}},
		{"child ends at the deadline", 20 * time.Millisecond, func(t *testing.T, ctx context.Context, _ context.CancelFunc) error {
			child, stop := context.WithTimeout(ctx, time.Hour)
			defer stop()
			waitDone(t, child)
			return child.Err()
		}},
		{"AfterFunc runs on cancel", time.Hour, func(t *testing.T, ctx context.Context, cancel context.CancelFunc) error {
			ran := make(chan struct{})
			context.AfterFunc(ctx, func() { close(ran) })
			cancel()
			select {
			case <-ran:
				return nil
			case <-time.After(time.Second):
				return errors.New("AfterFunc did not run")
			}
		}},
		{"AfterFunc stopped", time.Hour, func(t *testing.T, ctx context.Context, cancel context.CancelFunc) error {
			stop := context.AfterFunc(ctx, func() {})
			if !stop() {
				return errors.New("stop found the function run")
			}
			cancel()
			return nil
		}},
		{"cause", time.Hour, func(t *testing.T, ctx context.Context, cancel context.CancelFunc) error {
			cancel()
			return context.Cause(ctx)
		}},
		{"cause, armed", time.Hour, func(t *testing.T, ctx context.Context, cancel context.CancelFunc) error {
			_ = ctx.Done()
			cancel()
			return context.Cause(ctx)
		}},
		{"value", time.Hour, func(t *testing.T, ctx context.Context, _ context.CancelFunc) error {
			if v := ctx.Value(key{}); v != "v" {
				return errors.New("value lost")
			}
			_ = ctx.Done()
			if v := ctx.Value(key{}); v != "v" {
				return errors.New("value lost once armed")
			}
			return nil
		}},
		{"without cancel", time.Hour, func(t *testing.T, ctx context.Context, cancel context.CancelFunc) error {
			w := context.WithoutCancel(ctx)
			cancel()
			if w.Done() != nil {
				return errors.New("WithoutCancel has a Done channel")
			}
			return w.Err()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := time.Now().Add(tc.in)
			std, stdCancel := context.WithDeadline(parent, d)
			defer stdCancel()
			want := tc.run(t, std, stdCancel)
			lazy, cancel := WithDeadline(parent, d)
			defer cancel()
			if _, ok := lazy.(*lazyCtx); !ok {
				t.Fatalf("WithDeadline gave %T; want the lazy context", lazy)
			}
			if got, ok := lazy.Deadline(); !ok || !got.Equal(d) {
				t.Fatalf("Deadline() = %v, %v; want %v", got, ok, d)
			}
			if got := tc.run(t, lazy, cancel); !errors.Is(got, want) || (got == nil) != (want == nil) {
				t.Fatalf("got %v; context.WithDeadline gives %v", got, want)
			}
		})
	}
}

// TestNotArmedUntilWaited checks that nothing arms the timer but a wait:
// the point of the package.
func TestNotArmedUntilWaited(t *testing.T) {
	ctx, cancel := WithTimeout(context.WithValue(context.Background(), key{}, 1), time.Hour)
	c := ctx.(*lazyCtx)
	_, _ = ctx.Deadline()
	_ = ctx.Err()
	_ = ctx.Value(key{})
	_ = context.WithoutCancel(ctx)
	_ = context.WithValue(ctx, key{}, 2)
	if c.armed.Load() != nil {
		t.Fatal("armed without a wait")
	}
	_ = ctx.Done()
	if c.armed.Load() == nil {
		t.Fatal("Done did not arm")
	}
	cancel()
	cancel() // twice is a no-op, as for context's
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("Err() = %v", ctx.Err())
	}
}

// TestParentsWatchedFromTheStart: a parent that can end, or ends first,
// gets context.WithDeadline's context.
func TestParentsWatchedFromTheStart(t *testing.T) {
	cancellable, stop := context.WithCancel(context.Background())
	defer stop()
	earlier, stop2 := context.WithTimeout(context.Background(), time.Minute)
	defer stop2()
	for name, parent := range map[string]context.Context{"cancellable": cancellable, "earlier deadline": earlier} {
		ctx, cancel := WithTimeout(parent, time.Hour)
		if _, lazy := ctx.(*lazyCtx); lazy {
			t.Errorf("%s parent: got the lazy context", name)
		}
		if d, _ := ctx.Deadline(); name == "earlier deadline" && time.Until(d) > time.Minute {
			t.Errorf("%s parent: deadline %v", name, d)
		}
		cancel()
	}
	stop()
	// A cancellable parent's end reaches the child.
	ctx, cancel := WithTimeout(cancellable, time.Hour)
	defer cancel()
	waitDone(t, ctx)
}

// TestConcurrentArmAndCancel is for the race detector: waits and a
// cancel from several goroutines, in every order.
func TestConcurrentArmAndCancel(t *testing.T) {
	for range 100 {
		ctx, cancel := WithTimeout(context.Background(), time.Hour)
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i == 2 {
					cancel()
					return
				}
				<-ctx.Done()
				_ = ctx.Err()
			}()
		}
		wg.Wait()
		if !errors.Is(ctx.Err(), context.Canceled) {
			t.Fatalf("Err() = %v", ctx.Err())
		}
	}
}

package edge

import (
	"context"
	"testing"
	"time"
)

// TestLiveHeldUntilReleased: a request keeps the Live it took across a
// swap, the old Live's Wait returns only once that request has let go,
// and requests arriving after the swap take the new one.
func TestLiveHeldUntilReleased(t *testing.T) {
	s := &Server{}
	old, next := NewLive(LiveDeps{}), NewLive(LiveDeps{})
	s.live.Store(old)
	held := s.hold()
	if held != old {
		t.Fatal("a request took another Live than the current one")
	}
	if got := s.SwapLive(next); got != old {
		t.Fatal("SwapLive returned another Live than the one it replaced")
	}
	if s.hold() != next {
		t.Fatal("a request after the swap took the old Live")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := old.Wait(ctx); err == nil {
		t.Fatal("Wait returned while a request still held the old Live")
	}
	held.release()
	if err := old.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

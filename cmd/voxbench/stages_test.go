package main

import (
	"bytes"
	"context"
	rtrace "runtime/trace"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/observe/stages"
)

// traced records a real execution trace while streams runs on a
// goroutine of its own, as fasthttp serves a connection, and reads the
// stages from it.
func traced(t *testing.T, streams func(ctx context.Context)) *stagesResult {
	t.Helper()
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		streams(context.Background())
	}()
	<-done
	rtrace.Stop()
	s, err := readStages(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func spinFor(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// passStages passes the stages in order, stage i spinning (i+1)·100 µs and
// 50 µs between two; skip leaves one out.
func passStages(ctx context.Context, skip string) { passStagesSending(ctx, skip, nil) }

// passStagesSending is passStages with send run inside provider.send
// (after its spin) when not nil.
func passStagesSending(ctx context.Context, skip string, send func()) {
	for i, name := range stages.Order() {
		if name == skip {
			continue
		}
		r := rtrace.StartRegion(ctx, name)
		spinFor(time.Duration(i+1) * 100 * time.Microsecond)
		if name == stages.Send && send != nil {
			send()
		}
		r.End()
		spinFor(50 * time.Microsecond)
	}
}

// TestReadStages reads back the stages of streams the gateway sends to
// the provider itself, after one refused after its first stage (which
// must not count).
func TestReadStages(t *testing.T) {
	const streams = 5
	order := stages.Order()
	s := traced(t, func(ctx context.Context) {
		r := rtrace.StartRegion(ctx, order[0]) // refused: no first write
		r.End()
		for range streams {
			passStages(ctx, "")
			time.Sleep(time.Millisecond)
		}
	})
	if s.Streams != streams {
		t.Fatalf("read %d streams; want %d", s.Streams, streams)
	}
	var sum float64
	for i, f := range s.Stages {
		if f.Stage != order[i] || f.Streams != streams {
			t.Fatalf("stage %d is %q over %d streams; want %q over %d", i, f.Stage, f.Streams, order[i], streams)
		}
		if want := float64(i+1) * 100; f.Median < want {
			t.Errorf("%s: median %.1f µs; it spun %.0f", f.Stage, f.Median, want)
		}
		sum += f.Median
	}
	if len(s.Gaps) != len(order)-1 {
		t.Fatalf("%d gaps; want %d", len(s.Gaps), len(order)-1)
	}
	for i, g := range s.Gaps {
		// 50 µs spun between two stages, the next one at least 200.
		if g < 50 || g >= s.Stages[i+1].Median {
			t.Errorf("gap after %s: %.1f µs; it spun 50 (the next stage %.1f)", order[i], g, s.Stages[i+1].Median)
		}
	}
	// What was spun is a floor on each stream (a spin ends by the clock,
	// never early): the stages' and the gaps'.
	n := float64(len(order))
	if spun := 100*n*(n+1)/2 + 50*(n-1); s.Total < spun || s.Between < 50*(n-1) {
		t.Errorf("total %.1f µs, between %.1f µs; spun %.0f in all, %.0f between (the stages' medians sum to %.1f)", s.Total, s.Between, spun, 50*(n-1), sum)
	}
	// Each stream's own time is its total less its provider.send, over
	// the same streams: the medians keep that order.
	if s.Own <= 0 || s.Own >= s.Total {
		t.Errorf("own %.1f µs; total %.1f µs", s.Own, s.Total)
	}
}

// TestReadStagesWithoutSend: a stream a plugin renders has no
// provider.send; it counts, and its stages count, without one.
func TestReadStagesWithoutSend(t *testing.T) {
	s := traced(t, func(ctx context.Context) {
		passStages(ctx, "")
		passStages(ctx, stages.Send)
		passStages(ctx, stages.Send)
	})
	if s.Streams != 3 {
		t.Fatalf("read %d streams; want 3", s.Streams)
	}
	for _, f := range s.Stages {
		want := 3
		if f.Stage == stages.Send {
			want = 1
		}
		if f.Streams != want {
			t.Errorf("%s: %d streams; want %d", f.Stage, f.Streams, want)
		}
	}
	if s.Own <= 0 {
		t.Errorf("own %.1f µs: the one stream with provider.send has it", s.Own)
	}
}

// TestReadStagesHandOffs counts what a stream's goroutine does with the
// scheduler before its first write: streams that hand their provider
// call to another goroutine and wait for its answer (one goroutine woken,
// one block) against streams that only compute (none).
func TestReadStagesHandOffs(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		handOff              bool
		wantBlocks, wantWoke float64
	}{
		{"computing", false, 0, 0},
		{"handing off", true, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls, answers := make(chan struct{}), make(chan struct{})
			go func() { // the "provider"
				for range calls {
					// Long enough that the stream is waiting on answers
					// by the time it comes, even on a loaded machine:
					// an answer already there would be taken without
					// blocking (and count the provider, then waiting
					// to send it, as one more goroutine woken).
					time.Sleep(5 * time.Millisecond)
					answers <- struct{}{}
				}
			}()
			defer close(calls)
			var send func()
			if tc.handOff {
				send = func() {
					calls <- struct{}{} // wakes the provider, waiting on calls
					<-answers           // blocks until it answers
				}
			}
			s := traced(t, func(ctx context.Context) {
				for range 5 {
					passStagesSending(ctx, "", send)
					time.Sleep(time.Millisecond)
				}
			})
			if s.Streams != 5 || s.Blocks != tc.wantBlocks || s.Woke != tc.wantWoke {
				t.Errorf("%d streams: blocked %g, woke %g per stream; want 5 streams, %g and %g", s.Streams, s.Blocks, s.Woke, tc.wantBlocks, tc.wantWoke)
			}
			if s.RunWait < 0 || s.RunWait > s.Total {
				t.Errorf("stood runnable %.1f µs of a %.1f µs first byte", s.RunWait, s.Total)
			}
		})
	}
}

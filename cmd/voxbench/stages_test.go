package main

import (
	"bytes"
	"context"
	rtrace "runtime/trace"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/observe/stages"
)

// TestReadStages records a real execution trace of requests passing the
// gateway's stages (and one refused after its first, which must not
// count) and reads them back.
func TestReadStages(t *testing.T) {
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	const streams = 5
	order := stages.Order()
	spin := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); {
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx := context.Background()
		r := rtrace.StartRegion(ctx, order[0]) // refused: no first write
		r.End()
		for range streams {
			for i, name := range order {
				r := rtrace.StartRegion(ctx, name)
				spin(time.Duration(i+1) * 100 * time.Microsecond)
				r.End()
				spin(50 * time.Microsecond)
			}
			time.Sleep(time.Millisecond)
		}
		// One stream a plugin renders: no provider.send.
		for i, name := range order {
			if name == stages.Send {
				continue
			}
			r := rtrace.StartRegion(ctx, name)
			spin(time.Duration(i+1) * 100 * time.Microsecond)
			r.End()
		}
	}()
	<-done
	rtrace.Stop()
	s, err := readStages(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if s.Streams != streams+1 {
		t.Fatalf("read %d streams; want %d", s.Streams, streams+1)
	}
	var sum float64
	for i, f := range s.Stages {
		if f.Stage != order[i] {
			t.Fatalf("stage %d is %q; want %q", i, f.Stage, order[i])
		}
		want := streams + 1
		if f.Stage == stages.Send {
			want = streams
		}
		if f.Streams != want {
			t.Errorf("%s: %d streams; want %d", f.Stage, f.Streams, want)
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
	if s.Total < sum || s.Between < 50*float64(len(order)-1) {
		t.Errorf("total %.1f µs, between %.1f µs; stages sum to %.1f", s.Total, s.Between, sum)
	}
	if s.Own >= s.Total {
		t.Errorf("own %.1f µs is not less than total %.1f µs", s.Own, s.Total)
	}
}

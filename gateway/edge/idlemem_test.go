package edge

import (
	"testing"
	"time"
)

// TestMemoryRelease drives memoryRelease with ticks of a fake clock and
// a fake amount of memory held: it releases once per quiet period, only
// when nothing is in flight, the quiet period is long enough and the
// memory held grew enough since the last release.
func TestMemoryRelease(t *testing.T) {
	var held uint64 = 100
	releases := 0
	m := &memoryRelease{quiet: 2 * time.Second, minGrowth: 50,
		held:    func() uint64 { return held },
		release: func() { releases++; held = 100 },
	}
	ticks, stop, done := make(chan time.Time), make(chan struct{}), make(chan struct{})
	go func() { m.run(stop, ticks); close(done) }()
	now := time.Unix(1_000_000, 0)
	// tick advances the clock by d and waits until run has handled it
	// (the next send blocks until run reads again).
	tick := func(d time.Duration) {
		now = now.Add(d)
		ticks <- now
		ticks <- now
	}
	steps := []struct {
		name         string
		do           func()
		wantReleases int
	}{
		{"idle from the start", func() { tick(5 * time.Second) }, 0},
		{"a burst begins", func() { m.begin(); held = 400; tick(time.Second) }, 0},
		{"in flight, long quiet", func() { tick(10 * time.Second) }, 0},
		{"ended, not yet quiet", func() { m.end(); tick(time.Second) }, 0},
		{"quiet long enough", func() { tick(2 * time.Second) }, 1},
		{"still quiet: once per quiet period", func() { held = 400; tick(5 * time.Second) }, 1},
		{"a request that grew little", func() { m.begin(); m.end(); held = 120; tick(time.Second) }, 1},
		{"quiet again, little growth", func() { tick(3 * time.Second) }, 1},
		{"another burst", func() { m.begin(); m.end(); held = 300; tick(time.Second) }, 1},
		{"quiet again after it", func() { tick(3 * time.Second) }, 2},
	}
	for _, s := range steps {
		s.do()
		if releases != s.wantReleases {
			t.Fatalf("%s: %d releases, want %d", s.name, releases, s.wantReleases)
		}
	}
	close(stop)
	<-done
}

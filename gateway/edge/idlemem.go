package edge

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// memoryRelease gives the memory a burst of requests used back to the
// system once the gateway has been quiet for a while.
//
// Why it is needed: the Go runtime keeps what a burst used. Pooled
// buffers (the stream read buffers, the HTTP client's readers, fasthttp's
// per-connection buffers) are freed only by the second collection after
// they were last used, and an idle gateway allocates nothing, so no
// collection runs until the runtime forces one (every two minutes); only
// then does the scavenger start handing pages back, gradually. Measured
// with voxbench -only streams: 1 s after 1,000 concurrent streams had
// ended the gateway was still at 110 to 116 MiB resident, and one
// collection left 61 MiB reachable, nearly all of it pooled buffers.
//
// So once no request has been in flight and none has arrived for quiet,
// and the runtime holds at least minGrowth more than after the last
// release, it runs two collections (the first moves pooled objects aside,
// the second frees them) and returns the free pages
// (debug.FreeOSMemory). That costs a few milliseconds of one core while
// nothing else runs, and a new burst faults its pages in again.
type memoryRelease struct {
	// arrived counts requests begun; inFlight those not yet observed.
	// The edge updates both on every request: two atomic adds.
	arrived  atomic.Uint64
	inFlight atomic.Int64

	quiet     time.Duration
	minGrowth uint64
	// held returns the memory the runtime holds from the system, and
	// release gives what it can back; tests replace them.
	held    func() uint64
	release func()
	// idle, when set, runs once per quiet period whatever the runtime
	// holds: the store gives back the pages of its file map (a burst of
	// log rows leaves them resident however little the heap grew).
	idle func()
}

// Defaults of memoryRelease: two seconds without requests, and 32 MiB
// more held than after the last release (a burst, not a trickle).
const (
	releaseQuiet     = 2 * time.Second
	releaseMinGrowth = 32 << 20
)

func newMemoryRelease() *memoryRelease {
	return &memoryRelease{quiet: releaseQuiet, minGrowth: releaseMinGrowth, held: heldBytes, release: func() {
		runtime.GC()
		debug.FreeOSMemory()
	}}
}

// begin and end bracket a request; a nil memoryRelease (a Server made
// without New, in tests) counts nothing.
func (m *memoryRelease) begin() {
	if m != nil {
		m.arrived.Add(1)
		m.inFlight.Add(1)
	}
}

func (m *memoryRelease) end() {
	if m != nil {
		m.inFlight.Add(-1)
	}
}

// run checks at every tick whether to release, until stop is closed. A
// quiet period releases at most once.
func (m *memoryRelease) run(stop <-chan struct{}, ticks <-chan time.Time) {
	var (
		seen       uint64
		quietSince time.Time
		released   = true // nothing to give back before the first request
		heldAfter  = m.held()
	)
	for {
		var now time.Time
		select {
		case <-stop:
			return
		case now = <-ticks:
		}
		// Quiet is counted from the last tick that saw a request arrive
		// or one in flight (a stream may run for minutes).
		if n := m.arrived.Load(); n != seen || m.inFlight.Load() > 0 {
			seen, quietSince, released = n, now, false
			continue
		}
		if released || now.Sub(quietSince) < m.quiet {
			continue
		}
		released = true
		if m.idle != nil {
			m.idle()
		}
		if m.held() < heldAfter+m.minGrowth {
			continue
		}
		m.release()
		heldAfter = m.held()
	}
}

// heldBytes is the memory the Go runtime holds from the system: all it
// has mapped, less the heap pages it has returned. Read with
// runtime/metrics, which does not stop the world.
func heldBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}

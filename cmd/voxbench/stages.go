package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/exp/trace"

	"github.com/voxgate/voxgate/gateway/observe/stages"
)

// The stages pass: where the gateway's stream first byte goes, stage by
// stage, on the real request path. The gateway marks its stages as
// runtime/trace regions (gateway/observe/stages); this records an
// execution trace of it (the admin socket's /debug/pprof/trace) over
// sequential streams, as the time-to-first-byte phase sends them, and
// takes the median of each stage. End-to-end medians move by tens of
// microseconds between runs on a shared host; a stage's median moves by
// about one, so a change to one stage shows here when the first byte's
// ratio cannot show it. Tracing itself adds a little to every stage.

// stagesResult is the median time of each stage, in µs, over Streams
// streams.
type stagesResult struct {
	Streams int           `json:"streams"`
	Stages  []stageFigure `json:"stages"`
	// Read is from the handler's goroutine starting to run (woken by the
	// request's arrival) to the first stage: fasthttp reading and
	// parsing the request.
	Read float64 `json:"request_read_us"`
	// Between is a stream's time from the first stage's start to the
	// last one's end that no stage covers: glue, and fasthttp writing
	// the response's headers. Gaps splits it: Gaps[i] is the median time
	// from the end of stage i to the start of stage i+1.
	Between float64   `json:"between_stages_us"`
	Gaps    []float64 `json:"gaps_us"`
	// Total is from the first stage's start to the first write's end;
	// Own is Total less the provider's time (provider.send), over the
	// streams the gateway sent to the provider itself (0 when none).
	Total float64 `json:"handler_to_first_write_us"`
	Own   float64 `json:"gateway_own_us"`
	// What the handler's goroutine did with the scheduler between the
	// first stage's start and the first write's end, medians per stream:
	// Blocks is how often it blocked (once is the provider's answer: a
	// planned stream reads it on the request's goroutine), Woke how many
	// other goroutines it made runnable (each a hand-off that may wake
	// another thread), RunWait how long, in µs, it stood runnable waiting
	// for a thread. A hand-off added before the first byte shows here
	// before it shows in the first byte's ratio. RunWait after writing
	// the upstream request overlaps the provider's time: the read that
	// follows still waits.
	Blocks  float64 `json:"blocks_per_stream"`
	Woke    float64 `json:"woke_per_stream"`
	RunWait float64 `json:"runnable_wait_us"`
}

// stageFigure is one stage's median over the Streams that passed it.
type stageFigure struct {
	Stage   string  `json:"stage"`
	Median  float64 `json:"median_us"`
	Streams int     `json:"streams"`
}

// streamStages sends sequential gateway streams while the gateway
// records an execution trace, and reads the stages from it. The trace is
// kept in perfDir when set.
func (l *load) streamStages(ctx context.Context, t *ttfbResult, perfDir string) error {
	dir := perfDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "voxbench-trace-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	out := filepath.Join(dir, "gateway-ttfb.trace")
	traced := make(chan error, 1)
	secs := max(1, int(l.p.StagesTrace.Round(time.Second).Seconds()))
	go func() { traced <- l.gw.pprof(fmt.Sprintf("trace?seconds=%d", secs), out) }()
	// The trace starts when the admin socket has the request; streams
	// sent before it only go uncounted.
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	buf := make([]byte, 64<<10)
	stop := time.Now().Add(time.Duration(secs)*time.Second - 500*time.Millisecond)
	for time.Now().Before(stop) && ctx.Err() == nil {
		l.gatewayStream.prepare(req)
		if _, _, err := stream(&l.gatewayStream, req, resp, buf, nil); err != nil {
			return err
		}
	}
	if err := <-traced; err != nil {
		return fmt.Errorf("stages: the gateway's trace: %w", err)
	}
	f, err := os.Open(out)
	if err != nil {
		return err
	}
	defer f.Close()
	s, err := readStages(f)
	if err != nil {
		return fmt.Errorf("stages: %s: %w", out, err)
	}
	t.Stages = s
	return nil
}

// readStages reads an execution trace and returns the median of each
// stage over the streams that passed it, of those that got from the
// prologue to the first write.
func readStages(r io.Reader) (*stagesResult, error) {
	tr, err := trace.NewReader(r)
	if err != nil {
		return nil, err
	}
	order := stages.Order()
	index := make(map[string]int, len(order))
	for i, name := range order {
		index[name] = i
	}
	// One request at a time per goroutine: fasthttp serves a connection
	// on one goroutine, from reading the request to writing the answer.
	type goState struct {
		woke, start trace.Time
		begin, end  []trace.Time
		took        []time.Duration
		// runnable is when the goroutine last became runnable; the
		// rest counts its scheduling while a stream's first byte is
		// under way (start set).
		runnable      trace.Time
		blocks, woken int
		waited        time.Duration
	}
	gs := map[trace.GoID]*goState{}
	get := func(g trace.GoID) *goState {
		s := gs[g]
		if s == nil {
			s = &goState{begin: make([]trace.Time, len(order)), end: make([]trace.Time, len(order)), took: make([]time.Duration, len(order))}
			gs[g] = s
		}
		return s
	}
	per, gaps := make([][]float64, len(order)), make([][]float64, len(order)-1)
	var reads, between, totals, own, blocks, woken, waited []float64
	for {
		ev, err := tr.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		switch ev.Kind() {
		case trace.EventStateTransition:
			st := ev.StateTransition()
			if st.Resource.Kind != trace.ResourceGoroutine {
				continue
			}
			target := get(st.Resource.Goroutine())
			from, to := st.Goroutine()
			switch {
			case to == trace.GoRunning:
				target.woke = ev.Time()
				if target.start != 0 && target.runnable != 0 {
					target.waited += ev.Time().Sub(target.runnable)
				}
				target.runnable = 0
			case to == trace.GoRunnable:
				target.runnable = ev.Time()
				if g := ev.Goroutine(); from == trace.GoWaiting && g != trace.NoGoroutine && g != st.Resource.Goroutine() && get(g).start != 0 {
					get(g).woken++
				}
			case to == trace.GoWaiting && from == trace.GoRunning && target.start != 0:
				target.blocks++
			}
		case trace.EventRegionBegin:
			i, ok := index[ev.Region().Type]
			if !ok {
				continue
			}
			s := get(ev.Goroutine())
			if i == 0 {
				clear(s.took)
				clear(s.end)
				s.start = ev.Time()
				s.blocks, s.woken, s.waited = 0, 0, 0
				if s.woke != 0 {
					reads = append(reads, micros(ev.Time().Sub(s.woke)))
				}
			}
			s.begin[i] = ev.Time()
		case trace.EventRegionEnd:
			i, ok := index[ev.Region().Type]
			if !ok {
				continue
			}
			s := get(ev.Goroutine())
			if s.begin[i] == 0 || s.start == 0 {
				continue // begun before the trace did
			}
			s.took[i] = ev.Time().Sub(s.begin[i])
			s.begin[i], s.end[i] = 0, ev.Time()
			if i < len(order)-1 {
				continue
			}
			// The first write ended a stream's first byte. A stream a
			// plugin renders itself has no provider.send (its provider
			// time is in speech.first-audio); a cache hit has neither.
			total := ev.Time().Sub(s.start)
			s.start = 0
			var sum time.Duration
			prev := -1
			for k, d := range s.took {
				if d == 0 {
					continue
				}
				per[k] = append(per[k], micros(d))
				sum += d
				if prev == k-1 && k > 0 {
					// The stage's start, from its end and length.
					gaps[k-1] = append(gaps[k-1], micros(s.end[k].Sub(s.end[k-1])-d))
				}
				prev = k
			}
			totals = append(totals, micros(total))
			blocks = append(blocks, float64(s.blocks))
			woken = append(woken, float64(s.woken))
			waited = append(waited, micros(s.waited))
			between = append(between, micros(total-sum))
			if d := s.took[index[stages.Send]]; d > 0 {
				own = append(own, micros(total-d))
			}
		}
	}
	if len(totals) == 0 {
		return nil, errors.New("no stream's first write while the trace ran")
	}
	res := &stagesResult{Streams: len(totals), Read: median(reads), Between: median(between), Total: median(totals), Own: median(own),
		Blocks: median(blocks), Woke: median(woken), RunWait: median(waited)}
	for i, name := range order {
		res.Stages = append(res.Stages, stageFigure{Stage: name, Median: median(per[i]), Streams: len(per[i])})
	}
	for _, g := range gaps {
		res.Gaps = append(res.Gaps, median(g))
	}
	return res, nil
}

func micros(d time.Duration) float64 { return float64(d) / 1e3 }

// printStages writes the stages pass as lines of their own.
func printStages(w io.Writer, s *stagesResult) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "\nwhere the gateway's stream first byte goes (runtime/trace regions, medians over %d sequential streams, traced): request read and parsed %.1f µs, then\n", s.Streams, s.Read)
	rows := [][]string{{"stage", "µs"}}
	for i, f := range s.Stages {
		if i > 0 && i-1 < len(s.Gaps) && s.Gaps[i-1] != 0 {
			rows = append(rows, []string{"  (from the last)", fmt.Sprintf("%.1f", s.Gaps[i-1])})
		}
		if f.Streams == 0 {
			continue
		}
		name := f.Stage
		if f.Streams != s.Streams {
			name = fmt.Sprintf("%s (%d streams)", name, f.Streams)
		}
		rows = append(rows, []string{name, fmt.Sprintf("%.1f", f.Median)})
	}
	rows = append(rows,
		[]string{"between stages", fmt.Sprintf("%.1f", s.Between)},
		[]string{"first stage to first write", fmt.Sprintf("%.1f", s.Total)})
	if s.Own > 0 {
		rows = append(rows, []string{"of which the gateway's own (less provider.send)", fmt.Sprintf("%.1f", s.Own)})
	}
	printRows(w, rows, 1)
	fmt.Fprintf(w, "the handler's goroutine per stream, to the first write (medians): blocked %g time(s), woke %g other goroutine(s), stood runnable %.1f µs\n", s.Blocks, s.Woke, s.RunWait)
}

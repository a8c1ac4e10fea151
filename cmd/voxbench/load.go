package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
)

// The load generator is fasthttp's client, for both paths: it is the
// cheapest Go HTTP/1.1 client (no allocation per request once warm), so on
// a 2-core machine that it shares with the gateway, the plugin and the fake
// it takes the least CPU away from what is measured and adds the least
// noise to latencies. It streams response bodies (StreamResponseBody) for
// the time-to-first-byte and concurrent-stream phases.

// target is one way of asking for speech: directly from a fake or through
// the gateway.
type target struct {
	name string
	hc   *fasthttp.HostClient
	uri  string
	auth string
	body []byte
}

// prepare fills req for one call of t; fasthttp requests can be sent again
// unchanged, so workers prepare once and loop.
func (t *target) prepare(req *fasthttp.Request) {
	req.Reset()
	req.SetRequestURI(t.uri)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.Header.Set("Authorization", "Bearer "+t.auth)
	req.Header.Set("Accept", "application/octet-stream")
	req.SetBodyRaw(t.body)
}

// load drives the run's requests.
type load struct {
	p  plan
	gw *gatewayProc
	// fakePID is the fake upstream's process, for CPU accounting.
	fakePID int

	direct, gateway             target // whole clips
	directStream, gatewayStream target // streams of TTFBText
	manyStream                  target // streams of ManyText, through the gateway

	clipBytes int // expected body length of a whole clip
}

func newLoad(p plan, u *upstreams, gw *gatewayProc, key string) *load {
	clipHC := func(addr string) *fasthttp.HostClient {
		return &fasthttp.HostClient{Addr: addr, MaxConns: 512, ReadTimeout: 60 * time.Second, WriteTimeout: 60 * time.Second,
			MaxIdleConnDuration: time.Minute, NoDefaultUserAgentHeader: true, ReadBufferSize: 16 << 10}
	}
	streamHC := func(addr string) *fasthttp.HostClient {
		return &fasthttp.HostClient{Addr: addr, MaxConns: p.ManyStreams + 64, ReadTimeout: 60 * time.Second, WriteTimeout: 60 * time.Second,
			MaxIdleConnDuration: time.Minute, NoDefaultUserAgentHeader: true, StreamResponseBody: true}
	}
	upBody := func(text string) []byte {
		b, _ := json.Marshal(map[string]string{"model": "tts-1", "input": text, "voice": "alloy", "response_format": "pcm"})
		return b
	}
	gwBody := func(provider, text string) []byte {
		b, _ := json.Marshal(map[string]string{"model": provider + "/tts-1", "voice": "alloy", "text": text})
		return b
	}
	// A clip asks for raw PCM, as the direct request does: without a
	// format the gateway would answer WAV (the same samples behind a
	// header), and the two sides would not compare like with like.
	gwClipBody := func(provider, text string) []byte {
		b, _ := json.Marshal(map[string]any{"model": provider + "/tts-1", "voice": "alloy", "text": text, "output": map[string]string{"format": "pcm"}})
		return b
	}
	gwStreamHC := streamHC(gw.addr)
	return &load{
		p: p, gw: gw, fakePID: u.cmd.Process.Pid,
		direct:        target{"direct", clipHC(hostOf(u.Clip)), u.Clip + openai.SpeechPath, openai.Key, upBody(p.ClipText)},
		gateway:       target{"gateway", clipHC(gw.addr), "http://" + gw.addr + "/v1/audio/speech", key, gwClipBody("openai", p.ClipText)},
		directStream:  target{"direct", streamHC(hostOf(u.Stream)), u.Stream + openai.SpeechPath, openai.Key, upBody(p.TTFBText)},
		gatewayStream: target{"gateway", gwStreamHC, "http://" + gw.addr + "/v1/audio/speech/stream", key, gwBody("openai-stream", p.TTFBText)},
		manyStream:    target{"gateway", gwStreamHC, "http://" + gw.addr + "/v1/audio/speech/stream", key, gwBody("openai-live", p.ManyText)},
	}
}

func (l *load) close() {
	for _, t := range []*target{&l.direct, &l.gateway, &l.directStream, &l.gatewayStream} {
		t.hc.CloseIdleConnections()
	}
}

// clip sends one whole-clip request and returns its latency (request
// written to last body byte read).
func (l *load) clip(t *target, req *fasthttp.Request, resp *fasthttp.Response) (time.Duration, error) {
	start := time.Now()
	err := t.hc.Do(req, resp)
	d := time.Since(start)
	if err != nil {
		return d, fmt.Errorf("%s: %w", t.name, err)
	}
	if resp.StatusCode() != 200 {
		return d, fmt.Errorf("%s: status %d: %.300s", t.name, resp.StatusCode(), resp.Body())
	}
	if l.clipBytes > 0 && len(resp.Body()) != l.clipBytes {
		return d, fmt.Errorf("%s: %d bytes, want %d", t.name, len(resp.Body()), l.clipBytes)
	}
	return d, nil
}

// stream sends one streaming request, reads it to the end and returns its
// time to first body byte and the bytes received.
func stream(t *target, req *fasthttp.Request, resp *fasthttp.Response, buf []byte, onFirst func()) (ttfb time.Duration, n int64, err error) {
	start := time.Now()
	if err := t.hc.Do(req, resp); err != nil {
		return 0, 0, fmt.Errorf("%s stream: %w", t.name, err)
	}
	defer resp.CloseBodyStream() //nolint:errcheck // read to the end or failed already
	body := resp.BodyStream()
	if resp.StatusCode() != 200 {
		b := resp.Body()
		if body != nil {
			b, _ = io.ReadAll(io.LimitReader(body, 300))
		}
		return 0, 0, fmt.Errorf("%s stream: status %d: %.300s", t.name, resp.StatusCode(), b)
	}
	if body == nil { // the whole (tiny) body was read with the headers
		return time.Since(start), int64(len(resp.Body())), nil
	}
	k, err := io.ReadAtLeast(body, buf, 1)
	ttfb = time.Since(start)
	if err != nil {
		return ttfb, 0, fmt.Errorf("%s stream: first byte: %w", t.name, err)
	}
	if onFirst != nil {
		onFirst()
	}
	rest, err := io.CopyBuffer(io.Discard, body, buf)
	if err != nil {
		return ttfb, 0, fmt.Errorf("%s stream: %w", t.name, err)
	}
	return ttfb, int64(k) + rest, nil
}

// warmUp opens connections, fills pools and lets both processes reach a
// steady state; it also learns the clip size.
func (l *load) warmUp(ctx context.Context, res *Results) error {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	l.direct.prepare(req)
	if _, err := l.clip(&l.direct, req, resp); err != nil {
		return err
	}
	l.clipBytes = len(resp.Body())
	res.Sequential.ClipBytes = l.clipBytes
	for _, t := range []*target{&l.direct, &l.gateway} {
		t.prepare(req)
		for range l.p.WarmUp {
			if _, err := l.clip(t, req, resp); err != nil {
				return err
			}
		}
	}
	buf := make([]byte, 64<<10)
	for _, t := range []*target{&l.directStream, &l.gatewayStream} {
		t.prepare(req)
		for range 5 {
			if _, _, err := stream(t, req, resp, buf, nil); err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}

// sequential measures one request at a time, direct and through the
// gateway alternating (the order flipping every pair), in rounds; each
// round yields p50 and p99 of both paths, and the overhead figures are the
// medians over rounds of gateway minus direct.
func (l *load) sequential(ctx context.Context, res *Results) error {
	reqD, reqG := fasthttp.AcquireRequest(), fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(reqD)
	defer fasthttp.ReleaseRequest(reqG)
	defer fasthttp.ReleaseResponse(resp)
	l.direct.prepare(reqD)
	l.gateway.prepare(reqG)
	mc, err := l.gw.startMallocs()
	if err != nil {
		return err
	}
	h0, err := l.gw.metrics(mHandlerSum, mHandlerCount, mCallSum, mCallCount)
	if err != nil {
		return err
	}
	var allD, allG []time.Duration
	for r := range l.p.SeqRounds {
		d := make([]time.Duration, 0, l.p.SeqPerRound)
		g := make([]time.Duration, 0, l.p.SeqPerRound)
		for i := range l.p.SeqPerRound {
			for k := range 2 {
				if (i+k)%2 == 0 {
					x, err := l.clip(&l.direct, reqD, resp)
					if err != nil {
						return err
					}
					d = append(d, x)
				} else {
					x, err := l.clip(&l.gateway, reqG, resp)
					if err != nil {
						return err
					}
					g = append(g, x)
				}
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		sd, sg := summarize(d), summarize(g)
		res.Sequential.Rounds = append(res.Sequential.Rounds, seqRound{Round: r + 1, Direct: sd, Gateway: sg,
			OverheadP50: sg.P50 - sd.P50, OverheadP99: sg.P99 - sd.P99})
		allD, allG = append(allD, d...), append(allG, g...)
	}
	h1, err := l.gw.metrics(mHandlerSum, mHandlerCount, mCallSum, mCallCount)
	if err != nil {
		return err
	}
	allocs, err := mc.per(len(allG))
	if err != nil {
		return err
	}
	s := &res.Sequential
	s.HandlerMean = 1000 * (h1[mHandlerSum] - h0[mHandlerSum]) / (h1[mHandlerCount] - h0[mHandlerCount])
	s.PluginCallMean = 1000 * (h1[mCallSum] - h0[mCallSum]) / (h1[mCallCount] - h0[mCallCount])
	s.AllocsPerRequest = allocs
	s.Direct, s.Gateway = summarize(allD), summarize(allG)
	var o50, o99 []float64
	for _, r := range s.Rounds {
		o50, o99 = append(o50, r.OverheadP50), append(o99, r.OverheadP99)
	}
	s.OverheadP50, s.OverheadP99 = median(o50), median(o99)
	return nil
}

// closedLoop runs c workers sending t's request back to back for d and
// returns the completed requests, their latencies and the errors.
func (l *load) closedLoop(ctx context.Context, t *target, c int, d time.Duration) (int, []time.Duration, int, error) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		lat      []time.Duration
		errs     int
		firstErr error
	)
	stop := time.Now().Add(d)
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			t.prepare(req)
			mine := make([]time.Duration, 0, 1024)
			bad := 0
			var e error
			for time.Now().Before(stop) && ctx.Err() == nil {
				x, err := l.clip(t, req, resp)
				if err != nil {
					bad++
					e = err
					continue
				}
				mine = append(mine, x)
			}
			mu.Lock()
			lat = append(lat, mine...)
			errs += bad
			if firstErr == nil {
				firstErr = e
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return len(lat), lat, errs, firstErr
}

// throughput runs closed-loop load at each client count, direct and
// gateway in alternating slots, and samples the gateway's log writer while
// its slots run.
func (l *load) throughput(ctx context.Context, res *Results, perfDir string) error {
	for _, c := range l.p.Concurrency {
		// Warm: open c connections on both paths (and c plugin-side
		// connections to the fake) before measuring.
		for _, t := range []*target{&l.direct, &l.gateway} {
			if _, _, _, err := l.closedLoop(ctx, t, c, l.p.Slot/4); err != nil {
				return err
			}
		}
		row := tputRow{Clients: c}
		var latD, latG []time.Duration
		var durD, durG time.Duration
		var cpuD, cpuG cpuUse
		for s := range l.p.Slots {
			order := []*target{&l.direct, &l.gateway}
			if s%2 == 1 {
				order[0], order[1] = order[1], order[0]
			}
			for _, t := range order {
				if t == &l.direct {
					cpu := l.cpu()
					start := time.Now()
					n, lat, bad, err := l.closedLoop(ctx, t, c, l.p.Slot)
					durD += time.Since(start)
					cpuD = cpuD.add(l.cpu().sub(cpu))
					row.DirectRequests += n
					row.Errors += bad
					latD = append(latD, lat...)
					if bad > 0 {
						logf("direct errors at %d clients: %d (first: %v)", c, bad, err)
					}
					continue
				}
				sampler := l.startLogSampler()
				var perf *exec.Cmd
				var prof chan error
				if perfDir != "" && c == 64 && s == 0 {
					perf = startPerf(perfDir, l.gw, l.p.Slot)
					prof = make(chan error, 1)
					go func() { prof <- l.gw.cpuProfile(l.p.Slot, filepath.Join(perfDir, "gateway-cpu-64clients.pprof")) }()
				}
				cpu := l.cpu()
				start := time.Now()
				n, lat, bad, err := l.closedLoop(ctx, t, c, l.p.Slot)
				el := time.Since(start)
				durG += el
				cpuG = cpuG.add(l.cpu().sub(cpu))
				if perf != nil {
					_ = perf.Wait()
				}
				if prof != nil {
					if err := <-prof; err != nil {
						logf("pprof: %v", err)
					}
				}
				ls, serr := sampler.stop()
				if serr != nil {
					return serr
				}
				ls.Clients, ls.Requests, ls.Seconds = c, n, el.Seconds()
				ls.RowsPerSec = ls.Written / el.Seconds()
				ls.RequestsPerSec = float64(n) / el.Seconds()
				res.Logs.Slots = append(res.Logs.Slots, ls)
				row.GatewayRequests += n
				row.Errors += bad
				latG = append(latG, lat...)
				if bad > 0 {
					logf("gateway errors at %d clients: %d (first: %v)", c, bad, err)
				}
			}
		}
		row.DirectRPS = float64(row.DirectRequests) / durD.Seconds()
		row.GatewayRPS = float64(row.GatewayRequests) / durG.Seconds()
		row.Ratio = row.GatewayRPS / row.DirectRPS
		row.DirectCPU = cpuD.perRequest(row.DirectRequests)
		row.GatewayCPU = cpuG.perRequest(row.GatewayRequests)
		row.Direct, row.Gateway = summarize(latD), summarize(latG)
		res.Throughput = append(res.Throughput, row)
		logf("  %3d clients: direct %.0f req/s, gateway %.0f req/s (%.2fx)", c, row.DirectRPS, row.GatewayRPS, row.Ratio)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// cpuUse is the CPU time used by each process of the run.
type cpuUse struct{ client, fake, gateway, plugin cpuTimes }

// cpu reads the processes' CPU time so far.
func (l *load) cpu() cpuUse {
	return cpuUse{
		client:  cpuSeconds(os.Getpid()),
		fake:    cpuSeconds(l.fakePID),
		gateway: cpuSeconds(l.gw.pid()),
		plugin:  cpuSeconds(l.gw.pluginPIDs()...),
	}
}

func (a cpuTimes) plus(b cpuTimes, sign float64) cpuTimes {
	return cpuTimes{a.User + sign*b.User, a.System + sign*b.System}
}

func (a cpuUse) sub(b cpuUse) cpuUse {
	return cpuUse{a.client.plus(b.client, -1), a.fake.plus(b.fake, -1), a.gateway.plus(b.gateway, -1), a.plugin.plus(b.plugin, -1)}
}

func (a cpuUse) add(b cpuUse) cpuUse {
	return cpuUse{a.client.plus(b.client, 1), a.fake.plus(b.fake, 1), a.gateway.plus(b.gateway, 1), a.plugin.plus(b.plugin, 1)}
}

// perRequest is the CPU time per request of each process, in
// microseconds.
func (a cpuUse) perRequest(n int) cpuPerRequest {
	if n == 0 {
		return cpuPerRequest{}
	}
	us := func(t cpuTimes) cpuSplit {
		return cpuSplit{User: t.User * 1e6 / float64(n), System: t.System * 1e6 / float64(n)}
	}
	r := cpuPerRequest{Client: us(a.client), Fake: us(a.fake), Gateway: us(a.gateway), Plugin: us(a.plugin)}
	r.Total = r.Client.sum() + r.Fake.sum() + r.Gateway.sum() + r.Plugin.sum()
	return r
}

// startPerf records a CPU profile of the gateway and its plugins for d
// (needs perf; a failure only logs).
func startPerf(dir string, g *gatewayProc, d time.Duration) *exec.Cmd {
	// System-wide, so that the split between the gateway, its plugin and
	// this process (client and fake) shows; `perf report --sort comm`.
	out := filepath.Join(dir, "perf-64clients.data")
	cmd := exec.Command("perf", "record", "-a", "-F", "999", "-g", "-o", out, "--", "sleep", fmt.Sprintf("%.1f", d.Seconds()))
	if err := cmd.Start(); err != nil {
		logf("perf: %v", err)
		return nil
	}
	logf("perf: recording (gateway pid %d, plugins %v) into %s", g.pid(), g.pluginPIDs(), out)
	return cmd
}

// logSampler watches the gateway's request-log writer during a slot.
type logSampler struct {
	g        *gatewayProc
	done     chan struct{}
	finished chan struct{}
	start    map[string]float64
	maxQueue float64
	err      error
}

func (l *load) startLogSampler() *logSampler {
	s := &logSampler{g: l.gw, done: make(chan struct{}), finished: make(chan struct{})}
	s.start, s.err = l.gw.metrics(mLogWritten, mLogDropped, mLogQueue)
	go func() {
		defer close(s.finished)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				if m, err := s.g.metrics(mLogQueue); err == nil {
					s.maxQueue = max(s.maxQueue, m[mLogQueue])
				}
			}
		}
	}()
	return s
}

func (s *logSampler) stop() (logSlot, error) {
	close(s.done)
	<-s.finished
	if s.err != nil {
		return logSlot{}, s.err
	}
	end, err := s.g.metrics(mLogWritten, mLogDropped, mLogQueue)
	if err != nil {
		return logSlot{}, err
	}
	return logSlot{
		Written:  end[mLogWritten] - s.start[mLogWritten],
		Dropped:  end[mLogDropped] - s.start[mLogDropped],
		MaxQueue: max(s.maxQueue, end[mLogQueue]),
	}, nil
}

// streamTTFB measures time to first byte of short streams, one at a time,
// direct and through the gateway alternating.
func (l *load) streamTTFB(ctx context.Context, res *Results) error {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	buf := make([]byte, 64<<10)
	var d, g []time.Duration
	var bytesD, bytesG int64
	for i := range l.p.TTFBPairs {
		for k := range 2 {
			t := &l.directStream
			if (i+k)%2 == 1 {
				t = &l.gatewayStream
			}
			t.prepare(req)
			x, n, err := stream(t, req, resp, buf, nil)
			if err != nil {
				return err
			}
			if t == &l.directStream {
				d, bytesD = append(d, x), n
			} else {
				g, bytesG = append(g, x), n
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if bytesD != bytesG {
		return fmt.Errorf("streams differ: direct %d bytes, gateway %d", bytesD, bytesG)
	}
	sd, sg := summarize(d), summarize(g)
	res.TTFB = ttfbResult{Direct: sd, Gateway: sg, OverheadP50: sg.P50 - sd.P50, OverheadP99: sg.P99 - sd.P99, StreamBytes: bytesG}
	return nil
}

// concurrentStreams opens ManyStreams streams through the gateway at once,
// at real-time pace, and records the gateway's memory while they run and
// its allocations per stream.
func (l *load) concurrentStreams(ctx context.Context, res *Results) error {
	time.Sleep(200 * time.Millisecond) // let idle memory settle after the warm-up
	gpid := l.gw.pid()
	idle, err := procMemory(gpid)
	if err != nil {
		return err
	}
	idleMetrics, err := l.gw.metrics(mGoroutines, mHeapInuse)
	if err != nil {
		return err
	}
	mc, err := l.gw.startMallocs()
	if err != nil {
		return err
	}

	var (
		open, maxOpen atomic.Int64
		wg            sync.WaitGroup
		mu            sync.Mutex
		ttfbs         []time.Duration
		errs          int
		firstErr      error
		total         atomic.Int64
	)
	done := make(chan struct{})
	var peak uint64
	var goroutines, heap float64
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-t.C:
			}
			if i%10 == 9 { // a scrape allocates; twice a second is plenty
				if m, err := l.gw.metrics(mGoroutines, mHeapInuse); err == nil {
					goroutines, heap = max(goroutines, m[mGoroutines]), max(heap, m[mHeapInuse])
				}
			}
			if m, err := procMemory(gpid); err == nil {
				peak = max(peak, m.RSS)
			}
		}
	}()
	start := time.Now()
	for range l.p.ManyStreams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			l.manyStream.prepare(req)
			buf := make([]byte, 16<<10)
			counted := false
			x, n, err := stream(&l.manyStream, req, resp, buf, func() {
				counted = true
				now := open.Add(1)
				for {
					m := maxOpen.Load()
					if now <= m || maxOpen.CompareAndSwap(m, now) {
						break
					}
				}
			})
			if counted {
				open.Add(-1)
			}
			total.Add(n)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs++
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			ttfbs = append(ttfbs, x)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(done)
	<-sampled
	allocs, err := mc.per(l.p.ManyStreams)
	if err != nil {
		return err
	}
	hwm, _ := procMemory(gpid)
	res.Streams = streamsResult{
		Streams:          l.p.ManyStreams,
		MaxOpen:          int(maxOpen.Load()),
		Errors:           errs,
		Seconds:          elapsed.Seconds(),
		BytesPerStream:   float64(total.Load()) / float64(max(1, l.p.ManyStreams-errs)),
		IdleRSS:          idle.RSS,
		PeakRSS:          peak,
		HWM:              hwm.HWM,
		AllocsPerRequest: allocs,
		TTFB:             summarize(ttfbs),
		IdleGoroutines:   int(idleMetrics[mGoroutines]),
		IdleHeapInuse:    uint64(idleMetrics[mHeapInuse]),
		PeakGoroutines:   int(goroutines),
		PeakHeapInuse:    uint64(heap),
	}
	if firstErr != nil {
		res.Streams.FirstError = firstErr.Error()
		logf("concurrent streams: %d errors (first: %v)", errs, firstErr)
	}
	if errs == l.p.ManyStreams {
		return errors.New("every stream failed: " + firstErr.Error())
	}
	return ctx.Err()
}

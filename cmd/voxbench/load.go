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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/procfs"
	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
)

// The load generator is fasthttp's client, for every path: it is the
// cheapest Go HTTP/1.1 client (no allocation per request once warm), so on
// a 2-core machine that it shares with the gateway, the plugin and the fake
// it takes the least CPU away from what is measured and adds the least
// noise to latencies. It streams response bodies (StreamResponseBody) for
// the time-to-first-byte and concurrent-stream phases.

// target is one way of asking for speech: directly from a fake, through
// nginx, or through the gateway.
type target struct {
	name string
	hc   *fasthttp.HostClient
	uri  string
	auth string
	body []byte
	// authHeader is where auth goes: "" is Authorization: Bearer, else
	// the header's name (ElevenLabs' xi-api-key).
	authHeader string
	// want is the body length every answer must have; 0 checks only that
	// there is a body.
	want int
}

// prepare fills req for one call of t; fasthttp requests can be sent again
// unchanged, so workers prepare once and loop.
func (t *target) prepare(req *fasthttp.Request) {
	req.Reset()
	req.SetRequestURI(t.uri)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	if t.authHeader == "" {
		req.Header.Set("Authorization", "Bearer "+t.auth)
	} else {
		req.Header.Set(t.authHeader, t.auth)
	}
	req.Header.Set("Accept", "application/octet-stream")
	req.SetBodyRaw(t.body)
}

// load drives the run's requests.
type load struct {
	p   plan
	gw  *gatewayProc
	ng  *nginxProc // nil when no phase compares with nginx
	ups *upstreams
	key string
	// relayKey is relayOrg's key (records off), when the clients phase
	// runs.
	relayKey string
	// fakePID is the fake upstream's process, for CPU accounting.
	fakePID int
	// clipFloor is the floor relay in front of the clip fake, when the
	// clients phase runs: the CPU per clip request of a bare fasthttp
	// relay, beside nginx's and the gateway's.
	clipFloor *floorProc

	direct, nginx, gateway    target // whole clips
	directStream, nginxStream target // streams of TTFBText
	floorStream               target // the same through the floor relay (floor.go), when it runs
	gatewayStream             target // the same through the gateway, no output
	gatewayStreamOut          target // the same with output: {format: pcm}
	manyStream                target // streams of ManyText, through the gateway

	clipBytes int // expected body length of a whole clip
}

// clipHC is a client for whole clips to addr.
func clipHC(addr string) *fasthttp.HostClient {
	return &fasthttp.HostClient{Addr: addr, MaxConns: 512, ReadTimeout: 60 * time.Second, WriteTimeout: 60 * time.Second,
		MaxIdleConnDuration: time.Minute, NoDefaultUserAgentHeader: true, ReadBufferSize: 16 << 10}
}

// upstreamBody is the body of OpenAI's speech endpoint for text in
// format ("" leaves response_format out: OpenAI's default, mp3).
func upstreamBody(text, format string) []byte {
	m := map[string]string{"model": "tts-1", "input": text, "voice": "alloy"}
	if format != "" {
		m["response_format"] = format
	}
	b, _ := json.Marshal(m)
	return b
}

// gatewayBody is voxgate's own speech body for model; output, when set,
// is its output object.
func gatewayBody(model, text string, output map[string]string) []byte {
	m := map[string]any{"model": model, "voice": "alloy", "text": text}
	if output != nil {
		m["output"] = output
	}
	b, _ := json.Marshal(m)
	return b
}

func newLoad(p plan, u *upstreams, gw *gatewayProc, ng *nginxProc, key string) *load {
	streamHC := func(addr string) *fasthttp.HostClient {
		return &fasthttp.HostClient{Addr: addr, MaxConns: p.ManyStreams + 64, ReadTimeout: 60 * time.Second, WriteTimeout: 60 * time.Second,
			MaxIdleConnDuration: time.Minute, NoDefaultUserAgentHeader: true, StreamResponseBody: true}
	}
	// A clip asks for raw PCM, as the direct request does: without a
	// format the gateway would answer WAV (the same samples behind a
	// header), and the two sides would not compare like with like.
	pcm := map[string]string{"format": "pcm"}
	gwStreamHC := streamHC(gw.addr)
	speechURL := "http://" + gw.addr + "/v1/audio/speech"
	l := &load{
		p: p, gw: gw, ng: ng, ups: u, key: key, fakePID: u.cmd.Process.Pid,
		direct:           target{name: "direct", hc: clipHC(hostOf(u.Clip)), uri: u.Clip + openai.SpeechPath, auth: openai.Key, body: upstreamBody(p.ClipText, "pcm")},
		gateway:          target{name: "gateway", hc: clipHC(gw.addr), uri: speechURL, auth: key, body: gatewayBody(provClip+"/tts-1", p.ClipText, pcm)},
		directStream:     target{name: "direct", hc: streamHC(hostOf(u.Stream)), uri: u.Stream + openai.SpeechPath, auth: openai.Key, body: upstreamBody(p.TTFBText, "pcm")},
		gatewayStream:    target{name: "gateway", hc: gwStreamHC, uri: speechURL + "/stream", auth: key, body: gatewayBody(provStream+"/tts-1", p.TTFBText, nil)},
		gatewayStreamOut: target{name: "gateway, output pcm", hc: gwStreamHC, uri: speechURL + "/stream", auth: key, body: gatewayBody(provStream+"/tts-1", p.TTFBText, pcm)},
		manyStream:       target{name: "gateway", hc: gwStreamHC, uri: speechURL + "/stream", auth: key, body: gatewayBody(provLive+"/tts-1", p.ManyText, nil)},
	}
	if ng != nil {
		// nginx is sent exactly what the provider is sent directly.
		l.nginx = l.direct
		l.nginx.name, l.nginx.hc, l.nginx.uri = "nginx", clipHC(ng.addrs[nginxClip]), ng.url(nginxClip)+openai.SpeechPath
		l.nginxStream = l.directStream
		l.nginxStream.name, l.nginxStream.hc, l.nginxStream.uri = "nginx", streamHC(ng.addrs[nginxStream]), ng.url(nginxStream)+openai.SpeechPath
	}
	return l
}

func (l *load) close() {
	for _, t := range []*target{&l.direct, &l.nginx, &l.gateway, &l.directStream, &l.nginxStream, &l.floorStream, &l.gatewayStream} {
		if t.hc != nil {
			t.hc.CloseIdleConnections()
		}
	}
}

// clips are the whole-clip legs to compare: direct, nginx when it runs,
// and the gateway.
func (l *load) clips() []*target {
	if l.ng == nil {
		return []*target{&l.direct, &l.gateway}
	}
	return []*target{&l.direct, &l.nginx, &l.gateway}
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
	want := t.want
	if want == 0 && (t == &l.direct || t == &l.nginx || t == &l.gateway) {
		want = l.clipBytes
	}
	if n := len(resp.Body()); (want > 0 && n != want) || n == 0 {
		return d, fmt.Errorf("%s: %d bytes, want %d", t.name, n, want)
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
		// Body() would drain the stream first: read one or the other.
		var b []byte
		if body != nil {
			b, _ = io.ReadAll(io.LimitReader(body, 4096))
		} else {
			b = resp.Body()
		}
		return 0, 0, &statusError{leg: t.name, status: resp.StatusCode(), body: string(b)}
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

// statusError is an answer other than 200.
type statusError struct {
	leg    string
	status int
	body   string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s stream: status %d: %.300s", e.leg, e.status, e.body)
}

// warmUp opens connections, fills pools and lets every process reach a
// steady state; it also learns the clip size, and whether the gateway
// streams a request that names an output (a refusal is recorded and that
// leg left out of the stream phase).
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
	for _, t := range l.clips() {
		t.prepare(req)
		for range l.p.WarmUp {
			if _, err := l.clip(t, req, resp); err != nil {
				return err
			}
		}
	}
	buf := make([]byte, 64<<10)
	for _, t := range l.streams() {
		t.prepare(req)
		for range 5 {
			if _, _, err := stream(t, req, resp, buf, nil); err != nil {
				return err
			}
		}
	}
	l.gatewayStreamOut.prepare(req)
	var se *statusError
	if _, _, err := stream(&l.gatewayStreamOut, req, resp, buf, nil); errors.As(err, &se) {
		res.TTFB.OutputRefused = fmt.Sprintf("%d %s", se.status, problemCode(se.body))
		logf("the gateway refuses a stream that names an output: %s", se)
	} else if err != nil {
		return err
	}
	return ctx.Err()
}

// problemCode is the code of a problem+json body, or the body's start.
func problemCode(body string) string {
	var p struct {
		Code string `json:"code"`
	}
	if json.Unmarshal([]byte(body), &p) == nil && p.Code != "" {
		return p.Code
	}
	return fmt.Sprintf("%.80s", body)
}

// setFloor adds the floor relay's stream leg.
func (l *load) setFloor(f *floorProc) {
	l.floorStream = l.directStream
	l.floorStream.name, l.floorStream.uri = "floor relay", "http://"+f.addr+openai.SpeechPath
	l.floorStream.hc = &fasthttp.HostClient{Addr: f.addr, MaxConns: 64, ReadTimeout: 60 * time.Second, WriteTimeout: 60 * time.Second,
		MaxIdleConnDuration: time.Minute, NoDefaultUserAgentHeader: true, StreamResponseBody: true}
}

// streams are the stream legs to compare.
func (l *load) streams() []*target {
	legs := []*target{&l.directStream}
	if l.ng != nil {
		legs = append(legs, &l.nginxStream)
	}
	if l.floorStream.hc != nil {
		legs = append(legs, &l.floorStream)
	}
	return append(legs, &l.gatewayStream)
}

// interleave sends n rounds of one request per leg, one at a time, the
// order rotating every round so that each leg goes first equally often,
// and returns each leg's latencies (send, per leg, returns one).
func interleave(ctx context.Context, legs []*target, n int, send func(i int) (time.Duration, error)) ([][]time.Duration, error) {
	out := make([][]time.Duration, len(legs))
	for i := range out {
		out[i] = make([]time.Duration, 0, n)
	}
	for r := range n {
		for k := range legs {
			i := (r + k) % len(legs)
			d, err := send(i)
			if err != nil {
				return nil, err
			}
			out[i] = append(out[i], d)
		}
		if r%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// sequential measures one request at a time, direct, through nginx and
// through the gateway in turn (the order rotating), in rounds; each round
// yields p50 and p99 of every leg, and the overhead figures are the
// medians over rounds of a relay's minus direct's.
func (l *load) sequential(ctx context.Context, res *Results) error {
	legs := l.clips()
	reqs := make([]*fasthttp.Request, len(legs))
	for i, t := range legs {
		reqs[i] = fasthttp.AcquireRequest()
		defer fasthttp.ReleaseRequest(reqs[i])
		t.prepare(reqs[i])
	}
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	mc, err := l.gw.startMallocs()
	if err != nil {
		return err
	}
	h0, err := l.gw.metrics(mHandlerSum, mHandlerCount, mCallSum, mCallCount)
	if err != nil {
		return err
	}
	gw := len(legs) - 1 // the gateway is the last leg, nginx the middle one
	all := make([][]time.Duration, len(legs))
	for r := range l.p.SeqRounds {
		lat, err := interleave(ctx, legs, l.p.SeqPerRound, func(i int) (time.Duration, error) { return l.clip(legs[i], reqs[i], resp) })
		if err != nil {
			return err
		}
		sd, sg := summarize(lat[0]), summarize(lat[gw])
		round := seqRound{Round: r + 1, Direct: sd, Gateway: sg, OverheadP50: sg.P50 - sd.P50, OverheadP99: sg.P99 - sd.P99}
		if l.ng != nil {
			sn := summarize(lat[1])
			round.Nginx, round.NginxOverheadP50, round.NginxOverheadP99 = &sn, sn.P50-sd.P50, sn.P99-sd.P99
		}
		res.Sequential.Rounds = append(res.Sequential.Rounds, round)
		for i := range all {
			all[i] = append(all[i], lat[i]...)
		}
	}
	h1, err := l.gw.metrics(mHandlerSum, mHandlerCount, mCallSum, mCallCount)
	if err != nil {
		return err
	}
	allocs, err := mc.per(len(all[gw]))
	if err != nil {
		return err
	}
	s := &res.Sequential
	s.HandlerMean = 1000 * (h1[mHandlerSum] - h0[mHandlerSum]) / (h1[mHandlerCount] - h0[mHandlerCount])
	s.PluginCallMean = 1000 * (h1[mCallSum] - h0[mCallSum]) / (h1[mCallCount] - h0[mCallCount])
	s.AllocsPerRequest = allocs
	s.Direct, s.Gateway = summarize(all[0]), summarize(all[gw])
	var o50, o99, n50, n99 []float64
	for _, r := range s.Rounds {
		o50, o99 = append(o50, r.OverheadP50), append(o99, r.OverheadP99)
		n50, n99 = append(n50, r.NginxOverheadP50), append(n99, r.NginxOverheadP99)
	}
	s.OverheadP50, s.OverheadP99 = median(o50), median(o99)
	if l.ng != nil {
		n := summarize(all[1])
		s.Nginx = &n
		s.NginxOverheadP50, s.NginxOverheadP99 = median(n50), median(n99)
	}
	return nil
}

// closedLoop runs c workers sending t's request back to back for d and
// returns the completed requests, their latencies and the errors.
func (l *load) closedLoop(ctx context.Context, t *target, c int, d time.Duration) (int, []time.Duration, int, error) {
	var (
		mu       sync.Mutex
		lat      []time.Duration
		errs     int
		firstErr error
	)
	stop := time.Now().Add(d)
	clients(c, func(req *fasthttp.Request, resp *fasthttp.Response) {
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
	})
	return len(lat), lat, errs, firstErr
}

// legRun is what the closed-loop slots of one leg measured.
type legRun struct {
	requests, errs int
	dur            time.Duration
	cpu            cpuUse
	lat            []time.Duration
}

func (r legRun) rps() float64 { return float64(r.requests) / r.dur.Seconds() }

// slots runs `slots` closed-loop slots of d at c clients per leg, the
// legs in turn (the order rotating each slot), and returns each leg's
// totals. around, if set, wraps each slot of a leg (the gateway's log
// sampler and profiles).
func (l *load) slots(ctx context.Context, legs []*target, c, slots int, d time.Duration, around func(t *target, s int, run func() legRun) (legRun, error)) ([]legRun, error) {
	out := make([]legRun, len(legs))
	for s := range slots {
		for k := range legs {
			i := (s + k) % len(legs)
			t := legs[i]
			run := func() legRun {
				cpu := l.cpu()
				start := time.Now()
				n, lat, bad, err := l.closedLoop(ctx, t, c, d)
				r := legRun{requests: n, errs: bad, dur: time.Since(start), cpu: l.cpu().sub(cpu), lat: lat}
				if bad > 0 {
					logf("%s errors at %d clients: %d (first: %v)", t.name, c, bad, err)
				}
				return r
			}
			var r legRun
			if around != nil {
				var err error
				if r, err = around(t, s, run); err != nil {
					return nil, err
				}
			} else {
				r = run()
			}
			out[i].requests += r.requests
			out[i].errs += r.errs
			out[i].dur += r.dur
			out[i].cpu = out[i].cpu.add(r.cpu)
			out[i].lat = append(out[i].lat, r.lat...)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// throughput runs closed-loop load at each client count, direct, nginx
// and gateway in alternating slots, and samples the gateway's log writer
// while its slots run.
func (l *load) throughput(ctx context.Context, res *Results, perfDir string) error {
	legs := l.clips()
	gw := len(legs) - 1
	for _, c := range l.p.Concurrency {
		// Warm: open c connections on every path (and c upstream
		// connections of each relay) before measuring.
		for _, t := range legs {
			if _, _, _, err := l.closedLoop(ctx, t, c, l.p.Slot/4); err != nil {
				return err
			}
		}
		around := func(t *target, s int, run func() legRun) (legRun, error) {
			if t != &l.gateway {
				return run(), nil
			}
			sampler := l.startLogSampler()
			var perf *exec.Cmd
			var prof chan error
			if perfDir != "" && c == 64 && s == 0 {
				perf = startPerf(perfDir, l.gw, l.p.Slot)
				prof = make(chan error, 1)
				go func() { prof <- l.gw.cpuProfile(l.p.Slot, filepath.Join(perfDir, "gateway-cpu-64clients.pprof")) }()
			}
			r := run()
			if perf != nil {
				_ = perf.Wait()
			}
			if prof != nil {
				if err := <-prof; err != nil {
					logf("pprof: %v", err)
				}
			}
			ls, err := sampler.stop()
			if err != nil {
				return r, err
			}
			ls.Clients, ls.Requests, ls.Seconds = c, r.requests, r.dur.Seconds()
			ls.RowsPerSec = ls.Written / r.dur.Seconds()
			ls.RequestsPerSec = float64(r.requests) / r.dur.Seconds()
			res.Logs.Slots = append(res.Logs.Slots, ls)
			return r, nil
		}
		runs, err := l.slots(ctx, legs, c, l.p.Slots, l.p.Slot, around)
		if err != nil {
			return err
		}
		d, g := runs[0], runs[gw]
		row := tputRow{Clients: c, DirectRequests: d.requests, GatewayRequests: g.requests, Errors: d.errs + g.errs,
			DirectRPS: d.rps(), GatewayRPS: g.rps(),
			DirectCPU: d.cpu.perRequest(d.requests), GatewayCPU: g.cpu.perRequest(g.requests),
			Direct: summarize(d.lat), Gateway: summarize(g.lat)}
		row.Ratio = row.GatewayRPS / row.DirectRPS
		if l.ng != nil {
			n := runs[1]
			nl, ncpu := summarize(n.lat), n.cpu.perRequest(n.requests)
			row.NginxRequests, row.NginxRPS, row.Nginx, row.NginxCPU = n.requests, n.rps(), &nl, &ncpu
			row.Errors += n.errs
			row.NginxRatio = row.GatewayRPS / row.NginxRPS
		}
		res.Throughput = append(res.Throughput, row)
		logf("  %3d clients: direct %.0f req/s, nginx %.0f req/s, gateway %.0f req/s (%.2fx direct)", c, row.DirectRPS, row.NginxRPS, row.GatewayRPS, row.Ratio)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// cpuUse is the CPU time used by each process of the run.
type cpuUse struct{ client, fake, gateway, plugin, nginx, floor cpuTimes }

// cpu reads the processes' CPU time so far (nginx's: its master and
// workers).
func (l *load) cpu() cpuUse {
	u := cpuUse{
		client:  cpuSeconds(os.Getpid()),
		fake:    cpuSeconds(l.fakePID),
		gateway: cpuSeconds(l.gw.pid()),
		plugin:  cpuSeconds(l.gw.pluginPIDs()...),
	}
	if l.ng != nil {
		u.nginx = cpuSeconds(l.ng.pids()...)
	}
	if l.clipFloor != nil {
		u.floor = cpuSeconds(l.clipFloor.cmd.Process.Pid)
	}
	return u
}

func (a cpuTimes) plus(b cpuTimes, sign float64) cpuTimes {
	return cpuTimes{a.User + sign*b.User, a.System + sign*b.System}
}

func (a cpuUse) sub(b cpuUse) cpuUse {
	return cpuUse{a.client.plus(b.client, -1), a.fake.plus(b.fake, -1), a.gateway.plus(b.gateway, -1), a.plugin.plus(b.plugin, -1), a.nginx.plus(b.nginx, -1), a.floor.plus(b.floor, -1)}
}

func (a cpuUse) add(b cpuUse) cpuUse {
	return cpuUse{a.client.plus(b.client, 1), a.fake.plus(b.fake, 1), a.gateway.plus(b.gateway, 1), a.plugin.plus(b.plugin, 1), a.nginx.plus(b.nginx, 1), a.floor.plus(b.floor, 1)}
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
	r := cpuPerRequest{Client: us(a.client), Fake: us(a.fake), Gateway: us(a.gateway), Plugin: us(a.plugin), Nginx: us(a.nginx), Floor: us(a.floor)}
	r.Total = r.Client.sum() + r.Fake.sum() + r.Gateway.sum() + r.Plugin.sum() + r.Nginx.sum() + r.Floor.sum()
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

// streamTTFB measures time to first byte of short streams, one at a
// time, direct, through nginx and through the gateway (without output,
// and with output: {format: pcm} unless the gateway refuses it) in turn.
// With perfDir set it then records the gateway's CPU profile over
// gateway streams (gateway-cpu-ttfb.pprof), logging how many, so that
// the profile reads as time per stream.
func (l *load) streamTTFB(ctx context.Context, res *Results, perfDir string) error {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	buf := make([]byte, 64<<10)
	legs := l.streams()
	if res.TTFB.OutputRefused == "" {
		legs = append(legs, &l.gatewayStreamOut)
	}
	bytes := make([]int64, len(legs))
	lat, err := interleave(ctx, legs, l.p.TTFBPairs, func(i int) (time.Duration, error) {
		legs[i].prepare(req)
		x, n, err := stream(legs[i], req, resp, buf, nil)
		bytes[i] = n
		return x, err
	})
	if err != nil {
		return err
	}
	for i, n := range bytes {
		if n != bytes[0] {
			return fmt.Errorf("streams differ: direct %d bytes, %s %d", bytes[0], legs[i].name, n)
		}
	}
	t := &res.TTFB
	t.StreamBytes = bytes[0]
	t.Direct, t.Nginx, t.Floor, t.Gateway, t.GatewayOutput = l.byLeg(legs, lat)
	t.OverheadP50, t.OverheadP99 = t.Gateway.P50-t.Direct.P50, t.Gateway.P99-t.Direct.P99
	if t.Nginx != nil {
		t.NginxOverheadP50 = t.Nginx.P50 - t.Direct.P50
	}
	if t.Floor != nil {
		t.FloorOverheadP50 = t.Floor.P50 - t.Direct.P50
	}
	if t.GatewayOutput != nil {
		t.OutputOverheadP50 = t.GatewayOutput.P50 - t.Direct.P50
	}
	// The stages are a diagnostic, not a figure with a target: a gateway
	// that does not mark them (an older build) leaves them out.
	if err := l.streamStages(ctx, t, perfDir); err != nil {
		if ctx.Err() != nil {
			return err
		}
		logf("stages of the first byte left out: %v", err)
	}
	if l.p.TTFBLoadClients > 0 {
		if err := l.loadedTTFB(ctx, t); err != nil {
			return err
		}
	}
	if perfDir != "" {
		return l.profileStreams(ctx, perfDir)
	}
	return nil
}

// loadedTTFB measures the same streams' first byte with
// TTFBLoadClients clients streaming at once on each leg, one leg at a
// time, the order rotating over TTFBLoadRounds rounds, each client
// sending TTFBLoadStreams streams back to back. The sequential figure
// is a cold start (one stream every 100 ms, caches cold in between);
// this one is a relay kept busy, caches warm and requests queueing for
// two cores, as a gateway in service is. It carries no target: it says
// whether the sequential ratio is the relay's or the cold cache's.
func (l *load) loadedTTFB(ctx context.Context, t *ttfbResult) error {
	legs := l.streams()
	c, per := l.p.TTFBLoadClients, l.p.TTFBLoadStreams
	lat := make([][]time.Duration, len(legs))
	for r := range l.p.TTFBLoadRounds {
		for k := range legs {
			i := (r + k) % len(legs)
			var (
				mu       sync.Mutex
				firstErr error
			)
			clients(c, func(req *fasthttp.Request, resp *fasthttp.Response) {
				buf := make([]byte, 16<<10)
				legs[i].prepare(req)
				for range per {
					x, _, err := stream(legs[i], req, resp, buf, nil)
					mu.Lock()
					if err != nil && firstErr == nil {
						firstErr = err
					}
					if err == nil {
						lat[i] = append(lat[i], x)
					}
					mu.Unlock()
					if err != nil {
						return
					}
				}
			})
			if firstErr != nil {
				return fmt.Errorf("ttfb under load: %w", firstErr)
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	ld := &ttfbLoaded{Clients: c}
	ld.Direct, ld.Nginx, ld.Floor, ld.Gateway, _ = l.byLeg(legs, lat)
	t.Loaded = ld
	return nil
}

// clients runs f in n goroutines at once, each with a request and a
// response of its own, and returns once every one has.
func clients(n int, f func(req *fasthttp.Request, resp *fasthttp.Response)) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			f(req, resp)
		}()
	}
	wg.Wait()
}

// byLeg summarizes the stream legs' latencies (lat[i] is legs[i]'s),
// nil for a leg not among them.
func (l *load) byLeg(legs []*target, lat [][]time.Duration) (direct latency, nginx, floor *latency, gateway latency, output *latency) {
	for i, leg := range legs {
		s := summarize(lat[i])
		switch leg {
		case &l.directStream:
			direct = s
		case &l.nginxStream:
			nginx = &s
		case &l.floorStream:
			floor = &s
		case &l.gatewayStream:
			gateway = s
		case &l.gatewayStreamOut:
			output = &s
		}
	}
	return direct, nginx, floor, gateway, output
}

// profileStreams sends gateway streams for a few seconds, from 32
// clients each sending one at a time (a stream lasts as long as the
// fake's pacing, so one client alone gives the profile too few), while
// the gateway records its CPU profile.
func (l *load) profileStreams(ctx context.Context, perfDir string) error {
	const d, nclients = 5 * time.Second, 32
	prof := make(chan error, 1)
	go func() { prof <- l.gw.cpuProfile(d, filepath.Join(perfDir, "gateway-cpu-ttfb.pprof")) }()
	var n atomic.Int64
	errs := make(chan error, nclients)
	stop := time.Now().Add(d)
	clients(nclients, func(req *fasthttp.Request, resp *fasthttp.Response) {
		l.gatewayStream.prepare(req)
		buf := make([]byte, 16<<10)
		for time.Now().Before(stop) && ctx.Err() == nil {
			if _, _, err := stream(&l.gatewayStream, req, resp, buf, nil); err != nil {
				errs <- err
				return
			}
			n.Add(1)
		}
	})
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	if err := <-prof; err != nil {
		logf("pprof: %v", err)
	}
	logf("ttfb profile: %d gateway streams in %v from %d clients (gateway-cpu-ttfb.pprof)", n.Load(), d, nclients)
	return nil
}

// afterLoadQuiet is how long after the last request the relays' memory
// is read: the gateway gives a burst's memory back after two seconds
// without requests (gateway/edge's memoryRelease, checked each second).
const afterLoadQuiet = 4 * time.Second

// afterLoad records the relays' resident memory once the load phases are
// over, after afterLoadQuiet (nothing else runs), and with perfDir set the
// gateway's heap profile.
func (l *load) afterLoad(ctx context.Context, res *Results, perfDir string) error {
	select {
	case <-time.After(afterLoadQuiet):
	case <-ctx.Done():
		return ctx.Err()
	}
	m, err := procMemory(l.gw.pid())
	if err != nil {
		return err
	}
	a := &res.AfterLoad
	a.GatewayRSS, a.GatewayHWM, a.QuietSeconds = m.RSS, m.HWM, afterLoadQuiet.Seconds()
	if p, err := procfs.NewProc(l.gw.pid()); err == nil {
		if r, err := p.ProcSMapsRollup(); err == nil {
			a.GatewayAnon = r.Anonymous
		}
		if st, err := p.Stat(); err == nil {
			a.GatewayThreads = st.NumThreads
		}
	}
	a.GatewayStoreMapped = mappedRSS(l.gw.pid(), ".db")
	if h, err := l.gw.metrics(mHeapInuse, mHeapSys, mHeapReleased, mStackInuse); err == nil {
		a.GatewayHeap = uint64(h[mHeapInuse])
		a.GatewayHeapHeld = uint64(h[mHeapSys] - h[mHeapReleased])
		a.GatewayStacks = uint64(h[mStackInuse])
	}
	for _, pid := range l.gw.pluginPIDs() {
		if m, err := procMemory(pid); err == nil {
			a.PluginRSS = append(a.PluginRSS, m.RSS)
		}
	}
	if l.ng != nil {
		a.NginxRSS, a.NginxProcesses = l.ng.rss(), len(l.ng.pids())
	}
	if perfDir != "" {
		if err := l.gw.pprof("heap", filepath.Join(perfDir, "gateway-heap-after-load.pprof")); err != nil {
			logf("pprof: %v", err)
		}
	}
	return nil
}

// mappedRSS sums the resident memory of pid's mappings of files whose
// name ends with suffix, from /proc/PID/smaps (procfs parses only the
// rollup).
func mappedRSS(pid int, suffix string) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return 0
	}
	var sum uint64
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			// A mapping's header: range, perms, offset, device, inode, path.
			in = len(f) >= 6 && strings.HasSuffix(f[5], suffix)
		case in && len(f) >= 2 && f[0] == "Rss:":
			if kb, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				sum += kb << 10
			}
		}
	}
	return sum
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
	clients(l.p.ManyStreams, func(req *fasthttp.Request, resp *fasthttp.Response) {
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
	})
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

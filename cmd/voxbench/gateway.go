package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"
	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
)

// benchOrg is the organization the load runs as.
const benchOrg = "bench"

// relayOrg is benchOrg with provenance records off, in the same gateway:
// the clients phase sends it the pcm workload too, so that the relay's own
// CPU and what the signed record adds are measured side by side.
const relayOrg = "bench-relay"

// upstreamKeyEnv and elevenKeyEnv carry the fakes' API keys into the
// gateway's config as managed credentials, the way a deployment passes a
// secret.
const (
	upstreamKeyEnv = "VOXBENCH_OPENAI_KEY"
	elevenKeyEnv   = "VOXBENCH_ELEVENLABS_KEY"
)

// Provider ids of the load gateway.
const (
	provClip   = "openai"        // the clip fake (PCM, and MP3 for the OpenAI SDK's default)
	provSmall  = "openai-small"  // the 32 KB clip fake
	provStream = "openai-stream" // the stream fake
	provLive   = "openai-live"   // the real-time stream fake
	provEleven = "elevenlabs"    // the ElevenLabs fake, real ElevenLabs plugin
	// provPCMOnly is the openai-compatible plugin on the clip fake,
	// declared with only pcm: an mp3 asked of it must be converted.
	provPCMOnly = "pcm-only"
)

// gwOptions choose what a load gateway's config holds.
type gwOptions struct {
	// accessLog is server.access_log.
	accessLog bool
	// directHTTP false keeps every call inside the plugins (the path of
	// plugins that do not plan their requests).
	directHTTP bool
	// fingerprints turns provenance.fingerprints on (the identify index,
	// off by default).
	fingerprints bool
	// noRecords turns the bench organization's signed records off.
	noRecords bool
	// dsn, when set, puts the gateway on PostgreSQL instead of a bbolt
	// file.
	dsn string
	// clients adds the providers of the clients phase (the 32 KB clip,
	// ElevenLabs, the pcm-only model); the other gateways need only the
	// OpenAI fakes.
	clients bool
}

// loadConfig is the gateway config of the load phases: the OpenAI plugin
// once per OpenAI fake and, with o.clients, the ElevenLabs plugin on its
// fake and the openai-compatible plugin declared with pcm only, as
// providers of one organization, with the gateway's own defaults for
// everything else (moderation off: the org names no ruleset). The model
// alias tts-1 sends the OpenAI SDK's body to the clip fake's provider.
// The one organization may hold as many streams as the streams phase
// opens (the default limits.streams_per_org, 64, would refuse all the
// others).
func loadConfig(u *upstreams, o gwOptions) func(listen, dir, bin string) string {
	return func(listen, dir, bin string) string {
		storage := ""
		if o.dsn != "" {
			storage = "\n  driver: postgres\n  dsn: " + o.dsn
		}
		cfg := fmt.Sprintf(`server:
  listen: %s
  access_log: %t
metrics:
  token: `+metricsToken+`
storage:
  path: %s%s
plugins:
  dir: %s
secrets:
  key_file: %s
limits:
  streams_per_org: 100000
provenance:
  fingerprints: %t
aliases:
  models:
    tts-1: %s/tts-1
providers:
`, listen, o.accessLog, filepath.Join(dir, "voxgate.db"), storage, filepath.Join(bin, "plugins"), filepath.Join(dir, "secrets.key"), o.fingerprints, provClip)
		// Provenance marks off, so that every answer can be checked
		// byte for byte against the provider's (a mark adds the request
		// id): the record is still hashed, signed and fingerprinted (unless
		// -no-records turns records off); the
		// mark itself costs about 6 µs for an MP3
		// (gateway/provenance BenchmarkInsert).
		orgs := fmt.Sprintf("orgs:\n  %s:\n    provenance: {mark: false, records: %t}\n    providers:\n", benchOrg, !o.noRecords)
		relay := ""
		if o.clients {
			relay = fmt.Sprintf("  %s:\n    provenance: {mark: false, records: false}\n    providers:\n", relayOrg)
		}
		common := fmt.Sprintf("    managed: true\n    timeout: 30s\n    direct_http: %t\n", o.directHTTP)
		openAI := []struct{ id, root string }{{provClip, u.Clip}, {provStream, u.Stream}, {provLive, u.Live}}
		if o.clients {
			openAI = append(openAI, struct{ id, root string }{provSmall, u.Small})
		}
		for _, p := range openAI {
			cfg += fmt.Sprintf("  %s:\n    plugin: voxgate-openai\n    api_key: ${%s}\n    base_url: %s/v1\n", p.id, upstreamKeyEnv, p.root) + common
			orgs += fmt.Sprintf("      %s: {enabled: true}\n", p.id)
			if p.id == provClip && relay != "" {
				relay += fmt.Sprintf("      %s: {enabled: true}\n", p.id)
			}
		}
		if o.clients {
			cfg += fmt.Sprintf("  %s:\n    plugin: voxgate-elevenlabs\n    api_key: ${%s}\n    base_url: %s\n", provEleven, elevenKeyEnv, u.Eleven) + common
			cfg += fmt.Sprintf("  %s:\n    plugin: voxgate-openai-compatible\n    api_key: ${%s}\n    base_url: %s/v1\n    models: tts-1\n    voices: alloy\n    formats: pcm\n", provPCMOnly, upstreamKeyEnv, u.Clip) + common
			orgs += fmt.Sprintf("      %s: {enabled: true}\n      %s: {enabled: true}\n", provEleven, provPCMOnly)
		}
		return cfg + orgs + relay
	}
}

// gatewayProc is a bin/voxgate process with its generated config.
type gatewayProc struct {
	bin, cfgPath, logPath string
	sock                  string // the admin socket
	addr                  string
	cmd                   *exec.Cmd
	exited                chan struct{}
	hc                    *fasthttp.HostClient
}

// startGateway writes the config made by cfg into dir/name and prepares
// (but does not yet serve) a gateway on a free loopback port.
func startGateway(_ context.Context, bin, dir, name string, cfg func(listen, dir, bin string) string) (*gatewayProc, error) {
	sub := filepath.Join(dir, name)
	if err := os.MkdirAll(sub, 0o700); err != nil {
		return nil, err
	}
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	g := &gatewayProc{bin: bin, cfgPath: filepath.Join(sub, "gateway.yaml"), logPath: filepath.Join(sub, "voxgate.log"), addr: addr,
		sock: filepath.Join(sub, "voxgate.db.sock")}
	if err := os.WriteFile(g.cfgPath, []byte(cfg(addr, sub, bin)), 0o600); err != nil {
		return nil, err
	}
	g.hc = &fasthttp.HostClient{Addr: addr, MaxConns: 4, ReadTimeout: 30 * time.Second}
	return g, nil
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func (g *gatewayProc) env() []string {
	return append(os.Environ(), upstreamKeyEnv+"="+openai.Key, elevenKeyEnv+"="+elevenlabs.Key)
}

// createKey creates an API key for org with `voxgate keys create` on the
// not yet served database, as an operator would.
func (g *gatewayProc) createKey(ctx context.Context, org string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(g.bin, "voxgate"), "keys", "create", "--org", org, "--name", "voxbench", "--config", g.cfgPath)
	cmd.Env = g.env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("voxgate keys create: %w: %s", err, stderr.String())
	}
	key := strings.TrimSpace(string(out))
	if !strings.HasPrefix(key, "vxk_") {
		return "", fmt.Errorf("voxgate keys create printed %q, not a key", key)
	}
	return key, nil
}

// serve starts `voxgate serve` and waits until /readyz answers 200.
func (g *gatewayProc) serve(ctx context.Context) error {
	logFile, err := os.Create(g.logPath)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child holds its own descriptor
	g.cmd = exec.Command(filepath.Join(g.bin, "voxgate"), "serve", "--config", g.cfgPath)
	g.cmd.Env = g.env()
	g.cmd.Stdout, g.cmd.Stderr = logFile, logFile
	// If this process dies, so does the gateway (and it stops its plugins).
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := g.cmd.Start(); err != nil {
		return fmt.Errorf("start voxgate: %w", err)
	}
	g.exited = make(chan struct{})
	go func() { _ = g.cmd.Wait(); close(g.exited) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		status, _, err := g.get("/readyz", "")
		if err == nil && status == 200 {
			logf("gateway %s ready (pid %d, log %s)", g.addr, g.cmd.Process.Pid, g.logPath)
			return nil
		}
		select {
		case <-g.exited:
			return fmt.Errorf("voxgate exited during start-up; its log:\n%s", tail(g.logPath))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("voxgate not ready after 60s (last: %d %v); its log:\n%s", status, err, tail(g.logPath))
		}
	}
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// get fetches path with an optional bearer key.
func (g *gatewayProc) get(path, key string) (int, []byte, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + g.addr + path)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if err := g.hc.DoTimeout(req, resp, 30*time.Second); err != nil {
		return 0, nil, err
	}
	return resp.StatusCode(), append([]byte(nil), resp.Body()...), nil
}

func (g *gatewayProc) pid() int { return g.cmd.Process.Pid }

// metricsToken guards the benchmarked gateways' /metrics.
const metricsToken = "voxbench-metrics-token"

// metrics scrapes /metrics and returns the named counters and gauges,
// summed over their label sets; a histogram's sum and count are named
// NAME_sum and NAME_count.
func (g *gatewayProc) metrics(names ...string) (map[string]float64, error) {
	status, body, err := g.get("/metrics", metricsToken)
	if err != nil {
		return nil, err
	}
	if status != 200 {
		return nil, fmt.Errorf("/metrics: status %d", status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parse /metrics: %w", err)
	}
	flat := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				flat[name] += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				flat[name] += m.GetGauge().GetValue()
			case m.GetUntyped() != nil:
				flat[name] += m.GetUntyped().GetValue()
			case m.GetHistogram() != nil:
				flat[name+"_sum"] += m.GetHistogram().GetSampleSum()
				flat[name+"_count"] += float64(m.GetHistogram().GetSampleCount())
			case m.GetSummary() != nil:
				flat[name+"_sum"] += m.GetSummary().GetSampleSum()
				flat[name+"_count"] += float64(m.GetSummary().GetSampleCount())
			}
		}
	}
	out := make(map[string]float64, len(names))
	for _, n := range names {
		v, ok := flat[n]
		if !ok {
			return nil, fmt.Errorf("/metrics has no %s", n)
		}
		out[n] = v
	}
	return out, nil
}

// metricOr returns one metric of the gateway, summed over its label sets,
// and whether the gateway exposes it: a metric that newer gateways have
// (or that appears with its first event) is optional.
func (g *gatewayProc) metricOr(name string) (float64, bool) {
	m, err := g.metrics(name)
	if err != nil {
		return 0, false
	}
	return m[name], true
}

// Metric names the harness reads.
const (
	mMallocs    = "go_memstats_mallocs_total"
	mLogWritten = "voxgate_log_rows_written_total"
	mLogDropped = "voxgate_log_rows_dropped_total"
	mLogQueue   = "voxgate_log_queue_depth"
	mGoroutines = "go_goroutines"
	mHeapInuse  = "go_memstats_heap_inuse_bytes"
	// The heap's mapped memory, what of it was returned to the system,
	// and the goroutine stacks.
	mHeapSys      = "go_memstats_heap_sys_bytes"
	mHeapReleased = "go_memstats_heap_released_bytes"
	mStackInuse   = "go_memstats_stack_inuse_bytes"
	// Sums and counts of the gateway's own latency histograms: the time
	// in its handlers and in plugin calls, which split a request's
	// overhead into edge, plugin hop and upstream.
	mHandlerSum   = "voxgate_http_request_duration_seconds_sum"
	mHandlerCount = "voxgate_http_request_duration_seconds_count"
	mCallSum      = "voxgate_provider_call_duration_seconds_sum"
	mCallCount    = "voxgate_provider_call_duration_seconds_count"
)

// mallocCounter measures allocations of the gateway over a phase, net of
// the /metrics scrapes that read the counter.
type mallocCounter struct {
	g          *gatewayProc
	scrapeCost float64
	start      float64
}

// startMallocs calibrates the cost of one scrape (two scrapes back to
// back, while nothing else runs) and takes the starting count.
func (g *gatewayProc) startMallocs() (*mallocCounter, error) {
	a, err := g.metrics(mMallocs)
	if err != nil {
		return nil, err
	}
	b, err := g.metrics(mMallocs)
	if err != nil {
		return nil, err
	}
	return &mallocCounter{g: g, scrapeCost: b[mMallocs] - a[mMallocs], start: b[mMallocs]}, nil
}

// per returns the allocations since start divided by n.
func (m *mallocCounter) per(n int) (float64, error) {
	e, err := m.g.metrics(mMallocs)
	if err != nil {
		return 0, err
	}
	if n <= 0 {
		return 0, errors.New("no requests")
	}
	return (e[mMallocs] - m.start - m.scrapeCost) / float64(n), nil
}

// memory is a process's resident memory.
type memory struct {
	RSS, HWM uint64
}

func procMemory(pid int) (memory, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return memory{}, err
	}
	st, err := p.NewStatus()
	if err != nil {
		return memory{}, err
	}
	return memory{RSS: st.VmRSS, HWM: st.VmHWM}, nil
}

// cpuTimes is CPU time in seconds, in user space and in the kernel.
type cpuTimes struct{ User, System float64 }

// cpuSeconds returns the CPU time the processes have used so far.
func cpuSeconds(pids ...int) cpuTimes {
	var sum cpuTimes
	for _, pid := range pids {
		p, err := procfs.NewProc(pid)
		if err != nil {
			continue
		}
		if st, err := p.Stat(); err == nil {
			// USER_HZ is 100 on Linux (procfs assumes the same).
			sum.User += float64(st.UTime) / 100
			sum.System += float64(st.STime) / 100
		}
	}
	return sum
}

// pluginPIDs returns the gateway's child processes (its plugins).
func (g *gatewayProc) pluginPIDs() []int { return childPIDs(g.pid()) }

// shutdown records the final log-writer counters and the plugins' peak
// memory, and stops the gateway
// with SIGTERM (it drains its log queue), waiting up to 30 s.
func (g *gatewayProc) shutdown(res *Results) error {
	if res != nil {
		if m, err := g.metrics(mLogWritten, mLogDropped); err == nil {
			res.Logs.DroppedTotal = m[mLogDropped]
			res.Logs.WrittenTotal = m[mLogWritten]
		}
		for _, pid := range g.pluginPIDs() {
			if m, err := procMemory(pid); err == nil {
				res.PluginHWM = append(res.PluginHWM, m.HWM)
			}
		}
		slices.Sort(res.PluginHWM)
		slices.Reverse(res.PluginHWM)
	}
	if g.cmd == nil || g.cmd.Process == nil {
		return nil
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
		return nil
	case <-time.After(30 * time.Second):
		_ = g.cmd.Process.Kill()
		return errors.New("voxgate did not stop within 30s of SIGTERM")
	}
}

// stop kills the gateway if it still runs (deferred clean-up).
func (g *gatewayProc) stop() {
	if g.cmd == nil || g.cmd.Process == nil || g.exited == nil {
		return
	}
	select {
	case <-g.exited:
	default:
		_ = g.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-g.exited:
		case <-time.After(10 * time.Second):
			_ = g.cmd.Process.Kill()
		}
	}
}

// cpuProfile records the gateway's CPU profile for d through the admin
// socket into out (Go's pprof format; `go tool pprof -top out`).
func (g *gatewayProc) cpuProfile(d time.Duration, out string) error {
	return g.pprof(fmt.Sprintf("profile?seconds=%d", max(1, int(d.Round(time.Second).Seconds()))), out)
}

// pprof fetches /debug/pprof/NAME from the admin socket into out.
func (g *gatewayProc) pprof(name, out string) error {
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", g.sock)
	}}}
	resp, err := hc.Get("http://admin/debug/pprof/" + name)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", name, resp.Status)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

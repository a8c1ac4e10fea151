// Command voxbench measures what voxgate adds to a text-to-speech call,
// side by side with calling the provider directly and with nginx as the
// relay, all on loopback:
//
//	client ─────────────────────────────────────────────► fake OpenAI  (direct)
//	client ──► nginx (proxy_pass) ──────────────────────► fake OpenAI  (nginx)
//	client ──► bin/voxgate ─────────────────────────────► fake OpenAI  (gateway)
//	               └─gRPC─► voxgate-openai (plans the request)
//
// The fake OpenAI speech API (internal/fakeupstream/openai) runs in a child
// process, as a provider would run elsewhere: one fake answers every request
// with the same realistically sized clip, two stream chunks with a pause
// between them. The gateway is the real binary with the real OpenAI
// plugin, started as its own process with a generated config, so its
// memory, CPU and allocation figures are its own. Both paths are driven by
// the same client (fasthttp, see load.go) and every figure is measured next
// to its baseline in the same run, interleaved where it is a latency.
//
// `make bench` runs it; it prints one table and writes every measurement
// as JSON (bench-results.json). BENCHMARKS.md explains the method and
// records a run.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// runChild serves a process voxbench starts by re-running itself (the fake
// upstream, the floor relay) when args ask for one, and reports whether
// they did. The test binary's TestMain calls it too: it is what the
// harness re-runs under `go test`.
func runChild(args []string) (bool, error) {
	if len(args) != 3 {
		return false, nil
	}
	switch args[1] {
	case fakeUpstreamCmd:
		return true, serveFakes(args[2])
	case floorRelayCmd, floorClipsCmd:
		return true, serveFloor(args[2], args[1] == floorClipsCmd)
	}
	return false, nil
}

// options are the command-line flags.
type options struct {
	bin        string
	out        string
	fixtureDir string
	perfDir    string
	quick      bool
	accessLog  bool
	directHTTP bool
	// fingerprints runs the load gateway with the identify index on.
	fingerprints bool
	// noRecords runs the load gateway's organization with signed
	// provenance records off.
	noRecords    bool
	streams      int
	keep         bool
	only         string
	identifySize int
	clip         float64
	clientSlot   time.Duration
	ttfbPairs    int
	workloads    string
	// pgFixtureDiv shrinks the PostgreSQL log fixture (tests only).
	pgFixtureDiv int
}

func main() {
	if ok, err := runChild(os.Args); ok {
		if err != nil {
			fmt.Fprintf(os.Stderr, "voxbench: %v\n", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.StringVar(&o.bin, "bin", "bin", "directory holding voxgate and plugins/ (make build)")
	flag.StringVar(&o.out, "out", "bench-results.json", "where to write the JSON results")
	flag.StringVar(&o.fixtureDir, "fixture-dir", os.TempDir(), "where the cached request-log fixture lives")
	flag.StringVar(&o.perfDir, "perf", "", "if set, record into this directory the gateway's Go CPU profile over sequential streams after the time-to-first-byte phase (gateway-cpu-ttfb.pprof), a system-wide `perf` profile and the gateway's Go CPU profile (gateway-cpu-64clients.pprof) during the first 64-client gateway slot, the gateway's CPU profile during each clients workload's slots (gateway-cpu-WORKLOAD.pprof), and its heap profile after the load (gateway-heap-after-load.pprof)")
	flag.StringVar(&o.workloads, "workloads", "", "run only these workloads of the clients phase, comma-separated: pcm, pcm-records-off, pcm-32k, openai-sdk, elevenlabs-sdk, convert")
	flag.IntVar(&o.ttfbPairs, "ttfb-pairs", 0, "rounds of the stream time-to-first-byte phase, one stream per leg each (0: 120, 20 with -quick)")
	flag.DurationVar(&o.clientSlot, "clients-slot", 0, "length of each closed-loop slot of the clients phase (0: 1.5s, 300ms with -quick); longer slots give profiles more samples")
	flag.BoolVar(&o.quick, "quick", false, "short phases (a smoke run; the figures are rough)")
	flag.BoolVar(&o.accessLog, "access-log", true, "run the gateway with server.access_log on (its default)")
	flag.BoolVar(&o.directHTTP, "direct-http", true, "let the gateway send the requests the OpenAI plugin plans (its default); false measures the plugin path")
	flag.BoolVar(&o.noRecords, "no-records", false, "run the load gateway's organization with provenance records off (orgs.<id>.provenance.records: false: no SHA-256 of the answer, no signature), to measure what records cost the relay")
	flag.BoolVar(&o.fingerprints, "fingerprints", false, "run the load gateway with provenance.fingerprints on (the identify index), to measure its cost")
	flag.IntVar(&o.streams, "streams", 1000, "concurrent streams in the memory phase")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (gateway config and logs)")
	flag.Float64Var(&o.clip, "clip-seconds", 3, "length of the whole clip the fake returns (24 kHz PCM, 48 KB a second)")
	flag.IntVar(&o.identifySize, "identify-size", 1_000_000, "fingerprints the identify phase indexes (-only identify)")
	flag.StringVar(&o.only, "only", "", "run only these phases, comma-separated: seq, tput, ttfb, clients, streams, logs, pg, clipmem, cache, realtime, loudness, jobs, agents, identify (for profiling; the table then lacks the others)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	res, err := run(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "voxbench: %v\n", err)
		os.Exit(1)
	}
	res.Elapsed = time.Since(start).Round(time.Second).String()
	printTable(os.Stdout, res)
	if err := writeJSON(o.out, res); err != nil {
		fmt.Fprintf(os.Stderr, "voxbench: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("\nwrote %s (%s)\n", o.out, res.Elapsed)
}

// run performs every phase and returns the results.
func run(ctx context.Context, o options) (*Results, error) {
	raiseFileLimit()
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		return nil, err
	}
	if o.perfDir != "" {
		// Made here rather than failing each profile's write minutes
		// into the run.
		if err := os.MkdirAll(o.perfDir, 0o755); err != nil {
			return nil, fmt.Errorf("-perf: %w", err)
		}
	}
	for _, p := range []string{filepath.Join(bin, "voxgate"), filepath.Join(bin, "plugins", "voxgate-openai")} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%s is missing: run `make build` first", p)
		}
	}
	dir, err := os.MkdirTemp("", "voxbench-")
	if err != nil {
		return nil, err
	}
	if o.keep {
		logf("keeping %s", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	plan := defaultPlan(o)
	if o.pgFixtureDiv > 1 {
		plan.PGFixtureDiv = o.pgFixtureDiv
	}
	res := newResults(plan)

	ups, err := startUpstreams(plan)
	if err != nil {
		return nil, err
	}
	defer ups.close()

	// The log fixture first: building it (once, then cached) is the only
	// slow set-up step, and doing it before the load phases keeps its disk
	// writes out of their measurements.
	var fx *fixture
	if o.runs("logs") {
		if fx, err = logFixture(ctx, bin, o.fixtureDir, dir); err != nil {
			return nil, fmt.Errorf("request-log fixture: %w", err)
		}
	}

	// PostgreSQL next, for the same reason: its fixture load writes a lot.
	var pb *pgBench
	if o.runs("pg") {
		if pb, err = startPG(ctx, bin, dir, ups, o, plan, res); err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		defer pb.close()
	}

	// nginx, the reference relay, runs beside the gateway whenever a
	// phase compares the two.
	var ng *nginxProc
	if o.runsAny("seq", "tput", "ttfb", "clients") {
		if ng, err = startNginx(ups); err != nil {
			return nil, err
		}
		defer ng.stop()
	}

	gw, err := startGateway(ctx, bin, dir, "load", loadConfig(ups, gwOptions{accessLog: o.accessLog, directHTTP: o.directHTTP, clients: o.runs("clients"), fingerprints: o.fingerprints, noRecords: o.noRecords}))
	if err != nil {
		return nil, err
	}
	defer gw.stop()
	key, err := gw.createKey(ctx, benchOrg)
	if err != nil {
		return nil, err
	}
	var relayKey string
	if o.runs("clients") {
		if relayKey, err = gw.createKey(ctx, relayOrg); err != nil {
			return nil, err
		}
	}
	if err := gw.serve(ctx); err != nil {
		return nil, err
	}
	lg := newLoad(plan, ups, gw, ng, key)
	lg.relayKey = relayKey
	if o.runs("clients") {
		fl, err := startFloor(hostOf(ups.Clip), true)
		if err != nil {
			return nil, err
		}
		defer fl.stop()
		lg.clipFloor = fl
	}
	if o.runs("ttfb") {
		fl, err := startFloor(hostOf(ups.Stream), false)
		if err != nil {
			return nil, err
		}
		defer fl.stop()
		lg.setFloor(fl)
	}
	defer lg.close()

	steps := []struct {
		id, name string
		fn       func(context.Context, *Results) error
	}{
		{"", "warm-up", lg.warmUp},
		// Streams first: the memory figures then start from a gateway that
		// has not yet grown its heap and pools for 256 clients.
		{"streams", "concurrent streams", lg.concurrentStreams},
		{"seq", "sequential clips", lg.sequential},
		{"tput", "throughput", func(ctx context.Context, r *Results) error { return lg.throughput(ctx, r, o.perfDir) }},
		{"ttfb", "stream time-to-first-byte", func(ctx context.Context, r *Results) error { return lg.streamTTFB(ctx, r, o.perfDir) }},
		{"clients", "workloads real clients send, against nginx", func(ctx context.Context, r *Results) error { return lg.clients(ctx, r, o.workloads, o.perfDir) }},
		{"pg", "clips through a gateway on PostgreSQL and one on bbolt", func(ctx context.Context, r *Results) error { return lg.pgSequential(ctx, pb, r) }},
	}
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if s.id != "" && !o.runs(s.id) {
			continue
		}
		t := time.Now()
		logf("phase: %s", s.name)
		if err := s.fn(ctx, res); err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		logf("phase: %s done in %s", s.name, time.Since(t).Round(100*time.Millisecond))
	}
	if o.runsAny("streams", "seq", "tput", "clients") {
		if err := lg.afterLoad(ctx, res, o.perfDir); err != nil {
			return nil, err
		}
	}
	if err := gw.shutdown(res); err != nil {
		return nil, err
	}

	if o.runs("clipmem") {
		logf("phase: whole-clip memory")
		if err := wholeClipMemory(ctx, bin, dir, plan, res); err != nil {
			return nil, fmt.Errorf("whole-clip memory: %w", err)
		}
	}

	if o.runs("loudness") {
		logf("phase: stream loudness leveling (eSpeak)")
		rounds := 20
		if o.quick {
			rounds = 5
		}
		if err := loudnessBench(ctx, bin, dir, rounds, res); err != nil {
			return nil, fmt.Errorf("loudness: %w", err)
		}
	}
	if o.runs("identify") { // writes a ~1 GB index for a minute or two, removed after
		logf("phase: identify against %d indexed fingerprints", o.identifySize)
		rounds, deadline := 200, 20*time.Minute
		if o.quick {
			rounds, deadline = 40, 2*time.Minute
		}
		if err := identifyBench(ctx, dir, o.identifySize, rounds, deadline, res); err != nil {
			return nil, fmt.Errorf("identify: %w", err)
		}
	}
	if o.runs("realtime") {
		logf("phase: realtime WebSocket (eSpeak)")
		rounds, sockets := 200, 1000
		if o.quick {
			rounds, sockets = 40, 200
		}
		if err := realtimeBench(ctx, bin, dir, rounds, sockets, res); err != nil {
			return nil, fmt.Errorf("realtime: %w", err)
		}
	}
	if o.runs("jobs") {
		logf("phase: long-form job (eSpeak)")
		chars := 300_000
		if o.quick {
			chars = 30_000
		}
		if err := jobsBench(ctx, bin, dir, chars, res); err != nil {
			return nil, fmt.Errorf("jobs: %w", err)
		}
	}
	if o.runs("agents") {
		logf("phase: voice agents (pooled ElevenLabs and Cartesia sockets)")
		sockets, perSocket, rounds, turns := 200, 5, 100, 10
		if o.quick {
			sockets, rounds, turns = 40, 20, 3
		}
		if err := agentsBench(ctx, bin, dir, sockets, perSocket, rounds, turns, res); err != nil {
			return nil, fmt.Errorf("agents: %w", err)
		}
	}
	if o.runs("logs") {
		logf("phase: GET /v1/logs")
		if err := listLogs(ctx, bin, dir, fx, plan, res); err != nil {
			return nil, fmt.Errorf("logs: %w", err)
		}
	}
	if o.runs("cache") {
		logf("phase: response cache")
		if err := cacheBench(ctx, bin, dir, ups, o, plan, res); err != nil {
			return nil, fmt.Errorf("cache: %w", err)
		}
	}
	if pb != nil {
		logf("phase: GET /v1/logs on PostgreSQL")
		if err := pb.logs(ctx, bin, dir, plan, res); err != nil {
			return nil, fmt.Errorf("logs on postgres: %w", err)
		}
		logf("phase: request-log writer into PostgreSQL")
		if err := pb.writer(ctx, plan.WriterRun, res); err != nil {
			return nil, fmt.Errorf("log writer into postgres: %w", err)
		}
	}
	res.evaluate()
	return res, nil
}

// runs reports whether phase id is selected by -only.
func (o options) runs(id string) bool {
	return o.only == "" || slices.Contains(strings.Split(o.only, ","), id)
}

// runsAny reports whether any of the phases ids is selected.
func (o options) runsAny(ids ...string) bool {
	return slices.ContainsFunc(ids, o.runs)
}

// raiseFileLimit lifts the soft open-files limit to the hard one: the
// concurrent-streams phase holds a socket per stream in this process, two
// in the gateway and its plugin and one in the fake upstream, which all
// inherit the limit from here.
func raiseFileLimit() {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/config"
	"github.com/voxgate/voxgate/internal/testenv"
)

// TestMain lets the test binary serve the fake upstream and the floor
// relay when the harness re-runs itself (os.Executable) as one of them.
func TestMain(m *testing.M) {
	if ok, err := runChild(os.Args); ok {
		if err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestPercentiles(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		var out []time.Duration
		for _, x := range xs {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // unsorted on purpose
	}
	tests := []struct {
		name               string
		in                 []time.Duration
		p50, p99, max, avg float64
	}{
		{"one", ms(7), 7, 7, 7, 7},
		{"odd", ms(3, 1, 2), 2, 3, 3, 2},
		{"even", ms(4, 1, 3, 2), 2, 4, 4, 2.5},
		{"hundred", ms(hundred...), 50, 99, 100, 50.5},
	}
	for _, tt := range tests {
		got := summarize(tt.in)
		if got.N != len(tt.in) || got.P50 != tt.p50 || got.P99 != tt.p99 || got.Max != tt.max || got.Mean != tt.avg {
			t.Errorf("%s: %+v, want p50 %v p99 %v max %v mean %v", tt.name, got, tt.p50, tt.p99, tt.max, tt.avg)
		}
	}
	if (summarize(nil) != latency{}) {
		t.Error("summarize(nil) is not empty")
	}
	for _, tt := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}, {[]float64{-1, 0.5}, -0.25}} {
		if got := median(tt.in); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestConfigsAreValid checks the generated gateway configs with the
// gateway's own strict loader.
func TestConfigsAreValid(t *testing.T) {
	dir := t.TempDir()
	ups := &upstreams{upstreamURLs: upstreamURLs{Clip: "http://127.0.0.1:1", Stream: "http://127.0.0.1:2", Live: "http://127.0.0.1:3",
		Small: "http://127.0.0.1:4", Eleven: "http://127.0.0.1:5"}}
	env := func(k string) (string, bool) {
		switch k {
		case upstreamKeyEnv:
			return "sk-test", true
		case elevenKeyEnv:
			return "xi-test", true
		}
		return "", false
	}
	for _, clients := range []bool{false, true} {
		load, err := config.Parse([]byte(loadConfig(ups, gwOptions{directHTTP: true, clients: clients})("127.0.0.1:9", dir, "/bin")), env)
		if err != nil {
			t.Fatalf("load config (clients %t): %v", clients, err)
		}
		want := map[string]struct{ plugin, base, key string }{
			provClip: {"voxgate-openai", ups.Clip + "/v1", "sk-test"}, provStream: {"voxgate-openai", ups.Stream + "/v1", "sk-test"},
			provLive: {"voxgate-openai", ups.Live + "/v1", "sk-test"},
		}
		if clients {
			want[provSmall] = struct{ plugin, base, key string }{"voxgate-openai", ups.Small + "/v1", "sk-test"}
			want[provEleven] = struct{ plugin, base, key string }{"voxgate-elevenlabs", ups.Eleven, "xi-test"}
			want[provPCMOnly] = struct{ plugin, base, key string }{"voxgate-openai-compatible", ups.Clip + "/v1", "sk-test"}
		}
		if len(load.Providers) != len(want) {
			t.Errorf("clients %t: %d providers, want %d", clients, len(load.Providers), len(want))
		}
		for id, w := range want {
			p := load.Providers[id]
			if p == nil || p.Plugin != w.plugin || p.Settings["base_url"] != w.base || p.APIKey.Value() != w.key || !p.Managed {
				t.Errorf("provider %s: %+v", id, p)
				continue
			}
			if !load.Orgs[benchOrg].Providers[id].Enabled {
				t.Errorf("provider %s is not enabled for %s", id, benchOrg)
			}
		}
		if clients && load.Providers[provPCMOnly].Settings["formats"] != "pcm" {
			t.Errorf("the pcm-only provider offers %q", load.Providers[provPCMOnly].Settings["formats"])
		}
		if got := load.Aliases.Models["tts-1"]; got != provClip+"/tts-1" {
			t.Errorf("alias tts-1 is %q", got)
		}
		if *load.Server.AccessLog {
			t.Error("access_log: want false")
		}
	}
	wc, err := config.Parse([]byte(wholeClipConfig("127.0.0.1:9", dir, "/bin")), env)
	if err != nil {
		t.Fatalf("whole-clip config: %v", err)
	}
	if !wc.Orgs[benchOrg].Providers["espeak"].Enabled {
		t.Error("whole-clip config: espeak is not enabled")
	}
	logs, err := config.Parse([]byte(logsConfig(filepath.Join(dir, "f.db"))("127.0.0.1:9", dir, "/bin")), env)
	if err != nil {
		t.Fatalf("logs config: %v", err)
	}
	for _, o := range fixtureOrgs {
		if logs.Orgs[o.org] == nil {
			t.Errorf("logs config lacks org %s", o.org)
		}
	}
}

// TestQuickRun runs the harness end to end on the built binaries with a
// few phases cut short, and checks that it measured what it reports. It
// asserts no timings.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the gateway, its plugin and the fake upstream")
	}
	bin := os.Getenv("VOXGATE_BIN_DIR")
	if bin == "" {
		bin = filepath.Join("..", "..", "bin")
	}
	if _, err := os.Stat(filepath.Join(bin, "plugins", "voxgate-openai")); err != nil {
		t.Skip("run `make build` first")
	}
	testenv.NeedTool(t, "nginx")
	res, err := run(context.Background(), options{bin: bin, quick: true, accessLog: true, streams: 20, only: "seq,ttfb,streams,clients", clip: 1})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Plan
	if s := res.Sequential; s.ClipBytes != 48_000 || s.Direct.N != p.SeqRounds*p.SeqPerRound || s.Gateway.N != s.Direct.N || len(s.Rounds) != p.SeqRounds {
		t.Errorf("sequential: %d bytes, %d/%d samples, %d rounds", s.ClipBytes, s.Direct.N, s.Gateway.N, len(s.Rounds))
	}
	if s := res.Sequential; s.PluginCallMean <= 0 || s.HandlerMean < s.PluginCallMean || s.AllocsPerRequest <= 0 {
		t.Errorf("gateway's own view: handler %v ms, plugin call %v ms, %v allocs", s.HandlerMean, s.PluginCallMean, s.AllocsPerRequest)
	}
	if s := res.Sequential; s.Nginx == nil || s.Nginx.N != s.Direct.N {
		t.Errorf("sequential: nginx %+v", s.Nginx)
	}
	if tt := res.TTFB; tt.Direct.N != p.TTFBPairs || tt.Gateway.N != p.TTFBPairs || tt.StreamBytes == 0 || tt.Nginx == nil || tt.Nginx.N != p.TTFBPairs {
		t.Errorf("ttfb: %+v", tt)
	}
	if tt := res.TTFB; tt.Floor == nil || tt.Floor.N != p.TTFBPairs || tt.FloorOverheadP50 == 0 {
		t.Errorf("ttfb through the floor relay: %+v", tt.Floor)
	}
	if ld, want := res.TTFB.Loaded, p.TTFBLoadClients*p.TTFBLoadStreams*p.TTFBLoadRounds; ld == nil || ld.Direct.N != want || ld.Gateway.N != want || ld.Nginx == nil || ld.Nginx.N != want || ld.Floor == nil {
		t.Errorf("ttfb under load (want %d streams a leg): %+v", want, ld)
	}
	if tt := res.TTFB; (tt.GatewayOutput == nil) == (tt.OutputRefused == "") {
		t.Errorf("ttfb with output: measured %v, refused %q (want one of the two)", tt.GatewayOutput, tt.OutputRefused)
	}
	if st := res.TTFB.Stages; st == nil || st.Streams == 0 || st.Total <= 0 || st.Stages[0].Streams != st.Streams {
		t.Errorf("stages of the first byte: %+v", st)
	}
	if len(res.Clients.Workloads) != 6 {
		t.Fatalf("clients: %d workloads, want 6", len(res.Clients.Workloads))
	}
	if rc := res.Clients.Record; rc == nil || rc.SHA256US <= 0 || rc.SignUS <= 0 || rc.Bytes != 48_000 || !rc.Profiled || rc.InGatewayShare < 0 || rc.InGatewayShare >= 1 {
		t.Errorf("record cryptography: %+v", rc)
	}
	for _, w := range res.Clients.Workloads {
		if w.Direct.N == 0 || w.Nginx.N != w.Direct.N || w.Gateway.N != w.Direct.N || w.NginxRPS <= 0 || w.GatewayRPS <= 0 || w.Errors != 0 || w.Path == "" || w.Evidence == "" {
			t.Errorf("workload %s: %+v", w.ID, w)
		}
	}
	// What must hold whatever the gateway's format negotiation does:
	// PCM asked of a PCM model passes through, mp3 asked of a pcm-only
	// model is converted.
	if w := res.Clients.workload(wlPCM); w.Path != "passed through" || w.GatewayBytes != 48_000 {
		t.Errorf("pcm: %s, %d bytes", w.Path, w.GatewayBytes)
	}
	if w := res.Clients.workload(wlPCMRelay); w.Path != "passed through" || w.GatewayBytes != 48_000 {
		t.Errorf("pcm, records off: %s, %d bytes", w.Path, w.GatewayBytes)
	}
	if w := res.Clients.workload(wlPCMRelay); w.FloorCPU == nil || w.FloorCPU.Floor.sum() <= 0 || w.FloorRPS <= 0 {
		t.Errorf("records off: the floor relay's CPU per request %+v at %.0f requests/s, want it measured", w.FloorCPU, w.FloorRPS)
	}
	if w := res.Clients.workload(wlConversion); w.Path != "converted" || w.GatewayMediaType != "audio/mpeg" {
		t.Errorf("conversion: %s, %s", w.Path, w.GatewayMediaType)
	}
	if a := res.AfterLoad; a.GatewayRSS == 0 || a.NginxRSS == 0 || a.NginxProcesses < 2 || len(a.PluginRSS) != 6 {
		t.Errorf("after the load: %+v", a)
	}
	if st := res.Streams; st.Streams != 20 || st.Errors != 0 || st.MaxOpen == 0 || st.PeakRSS == 0 || st.BytesPerStream == 0 {
		t.Errorf("streams: %+v", st)
	}
	if len(res.Throughput) != 0 || len(res.Logs.Pages) != 0 {
		t.Error("phases outside -only ran")
	}
	names := map[string]bool{}
	for _, f := range res.Figures {
		names[f.Name] = true
	}
	for _, want := range []string{"sequential clip (48 KB), p50", "stream time to first byte, p50", "gateway allocations per request (clip → stream)",
		"added clip latency (48 KB), p50: gateway over nginx", "added stream first byte, p50, no output: gateway over nginx",
		"added stream first byte, p50: floor relay (bare fasthttp) over nginx", "added stream first byte, p50: gateway over the floor relay",
		"CPU per clip request (48 KB pcm), records off, 16 clients: gateway over nginx",
		"CPU per clip request (48 KB pcm), records on (the default), 16 clients: gateway over nginx",
		"CPU per clip request (48 KB pcm), 16 clients: floor relay (bare fasthttp) over nginx",
		"signed record per clip request (records on minus off) over its SHA-256 and Ed25519 timed alone, idle",
		"resident memory 4 s after the load (gateway; nginx: 3 processes)"} {
		if !names[want] {
			t.Errorf("no figure %q in %v", want, names)
		}
	}
	// A -quick run's 0.3 s slot may profile too few samples to hold the
	// record's; when it holds some, the figure must be there.
	if rc := res.Clients.Record; rc != nil && rc.InGatewayShare > 0 &&
		!names["signed record per clip request (records on minus off) over its SHA-256 and Ed25519 in the gateway (CPU profile)"] {
		t.Error("the record's cryptography was profiled but its figure is missing")
	}
}

// TestNginxConfig checks the reference relay's generated config with
// nginx's own checker (nginx -t).
func TestNginxConfig(t *testing.T) {
	bin := testenv.NeedTool(t, "nginx")
	dir := t.TempDir()
	listen := map[string]string{nginxClip: "127.0.0.1:18001", nginxStream: "127.0.0.1:18002"}
	upstream := map[string]string{nginxClip: "127.0.0.1:18003", nginxStream: "127.0.0.1:18004"}
	conf := nginxConfig(dir, listen, upstream, map[string]bool{nginxStream: true})
	for _, want := range []string{"keepalive 512;", "proxy_http_version 1.1;", `proxy_set_header Connection "";`, "proxy_buffering off;", "access_log " + dir + "/access.log;", "daemon off;"} {
		if !strings.Contains(conf, want) {
			t.Errorf("config lacks %q", want)
		}
	}
	if n := strings.Count(conf, "proxy_buffering off;"); n != 1 {
		t.Errorf("proxy_buffering off %d times, want once (streams only)", n)
	}
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-t", "-p", dir, "-c", path, "-e", filepath.Join(dir, "error.log")).CombinedOutput()
	if err != nil {
		t.Fatalf("nginx -t: %v\n%s\n%s", err, out, conf)
	}
}

// TestQuickRunPostgres runs the PostgreSQL phases with a fixture a
// twentieth of the real one, and checks that every figure was measured.
// It asserts no timings.
func TestQuickRunPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL, two gateways, their plugins and the fake upstream")
	}
	bin := os.Getenv("VOXGATE_BIN_DIR")
	if bin == "" {
		bin = filepath.Join("..", "..", "bin")
	}
	if _, err := os.Stat(filepath.Join(bin, "plugins", "voxgate-openai")); err != nil {
		t.Skip("run `make build` first")
	}
	res, err := run(context.Background(), options{bin: bin, quick: true, accessLog: true, streams: 20, only: "pg", clip: 1, pgFixtureDiv: 20})
	if err != nil {
		t.Fatal(err)
	}
	pg := res.Postgres
	if pg.Seq.Bolt.N == 0 || pg.Seq.PG.N != pg.Seq.Bolt.N || pg.Seq.Ratio <= 0 {
		t.Errorf("sequential: %+v", pg.Seq)
	}
	if len(pg.Pages) != 2*3 {
		t.Errorf("%d log pages timed, want 6", len(pg.Pages))
	}
	if len(pg.Usage) != 2 {
		t.Errorf("%d usage queries timed, want 2", len(pg.Usage))
	}
	if w := pg.Paced; w.Rows == 0 || w.Offered != pgWriterOffered || w.RowsPerSec <= 0 {
		t.Errorf("paced writer: %+v", w)
	}
	if w := pg.Unpaced; w.Rows == 0 || w.Dropped != 0 {
		t.Errorf("unpaced writer: %+v (the bench holds back, so nothing may drop)", w)
	}
	names := map[string]bool{}
	for _, f := range res.Figures {
		names[f.Name] = true
	}
	for _, want := range []string{
		"clip through a gateway on PostgreSQL (baseline: bbolt), p50",
		"GET /v1/logs newest page on PostgreSQL, 500 → 50k rows, p50",
		"request-log rows into PostgreSQL, offered 25000/s",
		"GET /v1/usage (30 days by provider) on PostgreSQL, 500 → 50k rows, p50",
	} {
		if !names[want] {
			t.Errorf("no figure %q in %v", want, names)
		}
	}
	if len(res.Throughput) != 0 || len(res.Logs.Pages) != 0 || res.Sequential.Direct.N != 0 {
		t.Error("phases outside -only ran")
	}
}

// TestQuickRunWholeClip runs the whole-clip memory phase with a shorter
// text and checks that it measured both requests. It asserts no memory
// bound (cmd/voxgate's TestWholeClipMemory does, on the full request).
func TestQuickRunWholeClip(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the gateway and the eSpeak plugin")
	}
	bin := os.Getenv("VOXGATE_BIN_DIR")
	if bin == "" {
		bin = filepath.Join("..", "..", "bin")
	}
	if _, err := os.Stat(filepath.Join(bin, "plugins", "voxgate-espeak")); err != nil {
		t.Skip("run `make build` first")
	}
	res, err := run(context.Background(), options{bin: bin, quick: true, accessLog: true, streams: 20, only: "clipmem", clip: 1})
	if err != nil {
		t.Fatal(err)
	}
	w := res.WholeClip
	if w.Chars != res.Plan.WholeClipChars || len(w.Runs) != 2 {
		t.Fatalf("whole clip: %+v", w)
	}
	for _, r := range w.Runs {
		if r.AnswerBytes < 1e6 || r.HWMAfter == 0 || r.RSSBefore == 0 || r.Ratio == 0 {
			t.Errorf("%s: %+v", r.Name, r)
		}
	}
	n := 0
	for _, f := range res.Figures {
		if strings.HasPrefix(f.Name, "peak memory per whole-clip request") {
			n++
			if f.Pass == nil {
				t.Errorf("%s has no target", f.Name)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d whole-clip figures, want 2", n)
	}
	if res.Sequential.Direct.N != 0 || len(res.Logs.Pages) != 0 {
		t.Error("phases outside -only ran")
	}
}

// TestQuickRunCache runs the response-cache phase and checks that it
// measured both paths. It asserts no timings.
func TestQuickRunCache(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a gateway, its plugin and the fake upstream")
	}
	bin := os.Getenv("VOXGATE_BIN_DIR")
	if bin == "" {
		bin = filepath.Join("..", "..", "bin")
	}
	if _, err := os.Stat(filepath.Join(bin, "plugins", "voxgate-openai")); err != nil {
		t.Skip("run `make build` first")
	}
	res, err := run(context.Background(), options{bin: bin, quick: true, accessLog: true, streams: 20, only: "cache", clip: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Cache
	if c.Hit.N == 0 || c.Miss.N != c.Hit.N || c.HitRPS <= 0 || c.MissRPS <= 0 || c.HitErrors != 0 {
		t.Errorf("cache phase: %+v", c)
	}
}

// TestLoudnessConfigIsValid: the loudness phase's gateway declares its
// organizations correctly.
func TestLoudnessConfigIsValid(t *testing.T) {
	cfg, err := config.Parse([]byte(loudnessConfig("127.0.0.1:9", t.TempDir(), "/bin")), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Orgs) != loudnessOrgs+1 {
		t.Errorf("%d orgs, want %d", len(cfg.Orgs), loudnessOrgs+1)
	}
}

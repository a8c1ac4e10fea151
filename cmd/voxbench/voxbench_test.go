package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/config"
)

// TestMain lets the test binary serve the fake upstream when the harness
// re-runs itself (os.Executable) as `fake-upstream`.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == fakeUpstreamCmd {
		if err := serveFakes(os.Args[2]); err != nil {
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
	ups := &upstreams{upstreamURLs: upstreamURLs{Clip: "http://127.0.0.1:1", Stream: "http://127.0.0.1:2", Live: "http://127.0.0.1:3"}}
	env := func(k string) (string, bool) { return "sk-test", k == upstreamKeyEnv }
	load, err := config.Parse([]byte(loadConfig(ups, false, true, "")("127.0.0.1:9", dir, "/bin")), env)
	if err != nil {
		t.Fatalf("load config: %v", err)
	}
	for id, base := range map[string]string{"openai": ups.Clip, "openai-stream": ups.Stream, "openai-live": ups.Live} {
		p := load.Providers[id]
		if p == nil || p.Plugin != "voxgate-openai" || p.Settings["base_url"] != base+"/v1" || p.APIKey.Value() != "sk-test" || !p.Managed {
			t.Errorf("provider %s: %+v", id, p)
		}
		if !load.Orgs[benchOrg].Providers[id].Enabled {
			t.Errorf("provider %s is not enabled for %s", id, benchOrg)
		}
	}
	if *load.Server.AccessLog {
		t.Error("access_log: want false")
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
	res, err := run(context.Background(), options{bin: bin, quick: true, accessLog: true, streams: 20, only: "seq,ttfb,streams", clip: 1})
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
	if tt := res.TTFB; tt.Direct.N != p.TTFBPairs || tt.Gateway.N != p.TTFBPairs || tt.StreamBytes == 0 {
		t.Errorf("ttfb: %+v", tt)
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
	for _, want := range []string{"sequential clip (48 KB), p50", "stream time to first byte, p50", "gateway allocations per request (clip → stream)"} {
		if !names[want] {
			t.Errorf("no figure %q in %v", want, names)
		}
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

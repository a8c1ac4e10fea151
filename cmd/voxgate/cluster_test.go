package main

import (
	"bytes"
	"context"
	bin "encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/edge/admin"
	"github.com/voxgate/voxgate/internal/pgtest"
	"github.com/voxgate/voxgate/internal/redistest"
)

// These tests run several real gateway processes on one throwaway
// PostgreSQL, as docs/deploy.md describes.

// clusterConfig writes a config for one instance of a cluster in its own
// directory (its own admin socket), sharing dsn.
//
// The instances share one provenance signing key (the store refuses a
// second key): every test of a cluster runs alone (t.Setenv), so the key
// comes from the environment like the secrets key.
func clusterConfig(t *testing.T, name, dsn string, extra ...string) string {
	t.Helper()
	t.Setenv("VOXGATE_TEST_PROVENANCE_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`
server:
  listen: 127.0.0.1:1
storage:
  driver: postgres
  dsn: %s
  path: ./data/voxgate.db
  log_batch_size: 64
plugins:
  dir: %s
providers:
  espeak: {plugin: voxgate-espeak, managed: true}
secrets:
  key_env: VOXGATE_TEST_SECRETS_KEY
provenance:
  key_env: VOXGATE_TEST_PROVENANCE_KEY
orgs:
  acme:
    providers:
      espeak: {enabled: true}
  beta:
    rate_limit: 10
    rate_burst: 10
    providers:
      espeak: {enabled: true}
%s
`, dsn, pluginsDir(), strings.Join(extra, "\n"))
	path := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTwoInstancesShareOnePostgres(t *testing.T) {
	t.Setenv("VOXGATE_TEST_SECRETS_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	pg := pgtest.StartT(t)
	dsn := pg.NewDatabaseT(t)
	cfgA, cfgB := clusterConfig(t, "a", dsn), clusterConfig(t, "b", dsn)

	// The CLI works against PostgreSQL directly, with --data like serve.
	out, stderr, code := cli(t, "keys", "create", "--config", cfgA, "--data", dsn, "--org", "acme", "--name", "ops")
	key := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(key, "vxk_") {
		t.Fatalf("keys create against postgres: %d %q %q", code, out, stderr)
	}
	a, b := startServe(t, cfgA), startServe(t, cfgB)

	// A voice created through A is listed and used through B.
	st, body := post(t, a.addr, "/v1/voices", key, `{"title":"Shared","provider":"espeak","model":"espeak-ng","voice_id":"en"}`)
	if st != 201 {
		t.Fatalf("create voice on A: %d %s", st, body)
	}
	var createdVoice struct{ Data struct{ ID string } }
	_ = json.Unmarshal([]byte(body), &createdVoice)
	voice := createdVoice.Data
	if voice.ID == "" {
		t.Fatalf("no {data: voice} in %s", body)
	}
	if st, body := get(t, b.addr, "/v1/voices", key); st != 200 || !strings.Contains(body, voice.ID) {
		t.Fatalf("voice from A not listed on B: %d %s", st, body)
	}
	if st, body := post(t, b.addr, "/v1/audio/speech", key, `{"voiceId":"`+voice.ID+`","text":"Hello from B."}`); st != 200 {
		t.Fatalf("voice from A not usable on B: %d %.200s", st, body)
	}

	// A cursor signed by A pages on B (one deployment secret).
	for range 3 {
		if st, body := post(t, b.addr, "/v1/voices", key, `{"title":"More","provider":"espeak","model":"espeak-ng","voice_id":"en"}`); st != 201 {
			t.Fatalf("create voice on B: %d %s", st, body)
		}
	}
	_, body = get(t, a.addr, "/v1/voices?limit=2", key)
	var page struct {
		NextCursor string `json:"next_cursor"`
	}
	_ = json.Unmarshal([]byte(body), &page)
	if st, body := get(t, b.addr, "/v1/voices?limit=2&cursor="+page.NextCursor, key); st != 200 || page.NextCursor == "" {
		t.Fatalf("A's cursor on B: %d %s", st, body)
	}

	// Log rows written by both appear in one ordered list.
	var ids []string
	for i, s := range []*server{a, b, a, b} {
		req, _ := http.NewRequest("POST", "http://"+s.addr+"/v1/audio/speech", strings.NewReader(`{"model":"espeak/espeak-ng","voice":"en","text":"row `+fmt.Sprint(i)+`"}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1)
		req.Header.Set("X-Request-Id", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("speech %d: %v %v", i, err, resp)
		}
		resp.Body.Close()
		ids = append(ids, id)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, body := get(t, b.addr, "/v1/logs?limit=100", key)
		var logs struct {
			Data []struct {
				RequestID string `json:"request_id"`
				TS        string `json:"ts"`
			} `json:"data"`
		}
		_ = json.Unmarshal([]byte(body), &logs)
		var order []string
		last := "9999"
		sorted := true
		for _, r := range logs.Data {
			for _, id := range ids {
				if r.RequestID == id {
					order = append(order, id)
				}
			}
			if r.TS > last {
				sorted = false
			}
			last = r.TS
		}
		if len(order) == 4 {
			want := []string{ids[3], ids[2], ids[1], ids[0]}
			if fmt.Sprint(order) != fmt.Sprint(want) || !sorted {
				t.Fatalf("rows of both instances out of order: %v, want %v", order, want)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rows of both instances not listed together: got %v of %v", order, ids)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// A key created on B's side is usable on A, and a key revoked through
	// A is refused by B within a second.
	ac, err := admin.Dial(context.Background(), filepath.Join(filepath.Dir(cfgA), "data", "voxgate.db.sock"))
	if err != nil {
		t.Fatal(err)
	}
	bc, err := admin.Dial(context.Background(), filepath.Join(filepath.Dir(cfgB), "data", "voxgate.db.sock"))
	if err != nil {
		t.Fatal(err)
	}
	k2, err := bc.CreateKey(context.Background(), "acme", "temp", nil)
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, a.addr, k2.Key, 200, time.Second, "a key created on B")
	if _, err := ac.RevokeKey(context.Background(), k2.ID); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, b.addr, k2.Key, 401, time.Second, "a key revoked on A")

	// kill -9 of A under load: B keeps serving and nothing acknowledged
	// through either instance is lost.
	var created, uploaded sync.Map // voice / media id -> instance
	toneWAV := testWAV(16000, 0.3)
	var bFailures, bOK atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, s := range []*server{a, a, b, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				// Voices and media uploads in turn: both are acknowledged
				// only once committed.
				isMedia := n%2 == 1
				req, _ := http.NewRequest("POST", "http://"+s.addr+"/v1/voices", strings.NewReader(fmt.Sprintf(`{"title":"load %d-%d","provider":"espeak","model":"espeak-ng","voice_id":"en"}`, i, n)))
				req.Header.Set("Content-Type", "application/json")
				if isMedia {
					req, _ = http.NewRequest("POST", "http://"+s.addr+"/v1/media", bytes.NewReader(toneWAV))
					req.Header.Set("Content-Type", "audio/wav")
				}
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					if s == b {
						bFailures.Add(1)
					}
					time.Sleep(10 * time.Millisecond)
					continue
				}
				// A media upload answers the record, a voice {data: voice}.
				var v struct {
					ID   string
					Data struct{ ID string }
				}
				_ = json.NewDecoder(resp.Body).Decode(&v)
				resp.Body.Close()
				if !isMedia {
					v.ID = v.Data.ID
				}
				if resp.StatusCode == 201 {
					if isMedia {
						uploaded.Store(v.ID, s.addr)
					} else {
						created.Store(v.ID, s.addr)
					}
					if s == b {
						bOK.Add(1)
					}
				} else if s == b {
					bFailures.Add(1)
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done
	before := bOK.Load()
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	if bOK.Load() == before || bFailures.Load() != 0 {
		t.Fatalf("B after A's kill -9: %d successes before, %d after, %d failures", before, bOK.Load(), bFailures.Load())
	}
	listed := listVoices(t, b.addr, key)
	lost, total := 0, 0
	created.Range(func(id, _ any) bool {
		total++
		if !listed[id.(string)] {
			lost++
		}
		return true
	})
	if lost > 0 || total == 0 {
		t.Fatalf("%d of %d acknowledged voices lost after kill -9 of A", lost, total)
	}
	media := 0
	uploaded.Range(func(id, _ any) bool {
		media++
		req, _ := http.NewRequest("GET", "http://"+b.addr+"/v1/media/"+id.(string), nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("acknowledged media %s: %d on B after kill -9 of A", id, resp.StatusCode)
		}
		return true
	})
	if media == 0 {
		t.Fatal("no media upload was acknowledged under load")
	}
	t.Logf("%d voices and %d media acknowledged under load, all on B after A was killed", total, media)
}

// testWAV is seconds of a 440 Hz tone as a 16-bit mono WAV file.
func testWAV(rate int, seconds float64) []byte {
	n := int(float64(rate) * seconds)
	var b bytes.Buffer
	le := bin.LittleEndian
	b.WriteString("RIFF")
	_ = bin.Write(&b, le, uint32(36+2*n))
	b.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(1), uint32(rate), uint32(2 * rate), uint16(2), uint16(16)} {
		_ = bin.Write(&b, le, v)
	}
	b.WriteString("data")
	_ = bin.Write(&b, le, uint32(2*n))
	for i := range n {
		_ = bin.Write(&b, le, int16(8000*math.Sin(2*math.Pi*440*float64(i)/float64(rate))))
	}
	return b.Bytes()
}

// waitStatus polls GET /v1/voices with key until it answers want, failing
// after limit.
func waitStatus(t *testing.T, addr, key string, want int, limit time.Duration, what string) {
	t.Helper()
	start := time.Now()
	for {
		st, _ := get(t, addr, "/v1/voices?limit=1", key)
		if st == want {
			t.Logf("%s: %d after %s", what, want, time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > limit {
			t.Fatalf("%s: still %d after %s, want %d", what, st, limit, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestUnreachableDatabaseStopsTheStart(t *testing.T) {
	pg := pgtest.StartT(t)
	// The secrets key is there: what stops the start is the database.
	t.Setenv("VOXGATE_TEST_SECRETS_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	for _, dsn := range []string{
		"postgres://voxgate:hunter2-secret@127.0.0.1:1/voxgate?connect_timeout=3",
		fmt.Sprintf("postgres://voxgate:hunter2-secret@127.0.0.1:%d/missing_db", pg.Port()),
	} {
		cfg := clusterConfig(t, "x", dsn)
		_, stderr, code := cli(t, "serve", "--config", cfg, "--listen", freePort(t))
		if code == 0 || !strings.Contains(stderr, "127.0.0.1") || strings.Contains(stderr, "hunter2") {
			t.Fatalf("serve on %s: exit %d, stderr %q (want non-zero, the host named, no password)", dsn[strings.Index(dsn, "@"):], code, stderr)
		}
	}
}

// soloOnPostgres gives a test a PostgreSQL server of its own, a database
// on it, the config of one gateway ("solo") on that database, and an API
// key of acme's made with the CLI.
func soloOnPostgres(t *testing.T) (pg *pgtest.Server, dsn, cfg, key string) {
	t.Helper()
	t.Setenv("VOXGATE_TEST_SECRETS_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	pg = pgtest.StartT(t)
	dsn = pg.NewDatabaseT(t)
	cfg = clusterConfig(t, "solo", dsn)
	out, _, code := cli(t, "keys", "create", "--config", cfg, "--data", dsn, "--org", "acme")
	if code != 0 {
		t.Fatal("keys create failed")
	}
	return pg, dsn, cfg, strings.TrimSpace(out)
}

func TestPostgresGoingAwayUnderLoad(t *testing.T) {
	pg, _, cfg, key := soloOnPostgres(t) // its own server: this test stops it
	s := startServe(t, cfg)

	type result struct {
		status  int
		code    string
		id      string
		took    time.Duration
		retryAt string
	}
	var mu sync.Mutex
	var results []result
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 60 * time.Second}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				req, _ := http.NewRequest("POST", "http://"+s.addr+"/v1/voices", strings.NewReader(fmt.Sprintf(`{"title":"w%d-%d","provider":"espeak","model":"espeak-ng","voice_id":"en"}`, w, n)))
				if w%2 == 1 {
					req, _ = http.NewRequest("GET", "http://"+s.addr+"/v1/logs?limit=5", nil)
				}
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					t.Errorf("request failed without an answer: %v", err)
					return
				}
				var v struct {
					Data struct{ ID string }
					Code string
				}
				_ = json.NewDecoder(resp.Body).Decode(&v)
				resp.Body.Close()
				mu.Lock()
				results = append(results, result{resp.StatusCode, v.Code, v.Data.ID, time.Since(start), resp.Header.Get("Retry-After")})
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	// Recovery: requests succeed again by themselves.
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, _ := get(t, s.addr, "/v1/voices?limit=1", key)
		if st == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery 20 s after PostgreSQL came back: %d", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()

	var ok, unavailable int
	var slowest time.Duration
	for _, r := range results {
		slowest = max(slowest, r.took)
		switch {
		case r.status == 200 || r.status == 201:
			ok++
		case r.status == 503 && r.code == "storage_unavailable" && r.retryAt != "":
			unavailable++
		default:
			t.Errorf("answer %d %q during the outage; want success or 503 storage_unavailable with Retry-After", r.status, r.code)
		}
	}
	if unavailable == 0 {
		t.Fatalf("no 503 while PostgreSQL was down (%d answers)", len(results))
	}
	t.Logf("%d answers: %d ok, %d 503 storage_unavailable; slowest %s", len(results), ok, unavailable, slowest)
	// Nothing half-written, nothing acknowledged lost: every acknowledged
	// voice exists, whole. The one ambiguity is PostgreSQL's own: a
	// create whose COMMIT reached the server as it was stopped may be
	// committed although its answer was lost, so the gateway said 503.
	// Only a create in flight at that instant can be one: at most one
	// per worker that creates (two), never more.
	listed := listVoices(t, s.addr, key)
	acked := 0
	for _, r := range results {
		if r.status == 201 {
			acked++
			if !listed[r.id] {
				t.Errorf("voice %s was acknowledged (201) and is gone after the outage", r.id)
			}
		}
	}
	if extra := len(listed) - acked; extra < 0 || extra > 2 {
		t.Fatalf("after the outage: %d voices listed, %d acknowledged", len(listed), acked)
	} else if extra > 0 {
		t.Logf("%d create(s) committed as PostgreSQL stopped, answered 503 (the commit's answer was lost)", extra)
	}
	s.stop(t)
	if strings.Contains(s.logs.String(), "panic") {
		t.Fatal("the gateway panicked")
	}
}

// listVoices pages through every voice of key's organization on addr.
func listVoices(t *testing.T, addr, key string) map[string]bool {
	t.Helper()
	listed := map[string]bool{}
	cursor := ""
	for {
		path := "/v1/voices?limit=100"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		st, body := get(t, addr, path, key)
		if st != 200 {
			t.Fatalf("list voices: %d %s", st, body)
		}
		var p struct {
			Data       []struct{ ID string }
			NextCursor string `json:"next_cursor"`
			HasMore    bool   `json:"has_more"`
		}
		if err := json.Unmarshal([]byte(body), &p); err != nil {
			t.Fatal(err)
		}
		for _, v := range p.Data {
			listed[v.ID] = true
		}
		if !p.HasMore {
			return listed
		}
		cursor = p.NextCursor
	}
}

func TestRateLimitHoldsAcrossInstances(t *testing.T) {
	t.Setenv("VOXGATE_TEST_SECRETS_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	pg := pgtest.StartT(t)
	dsn := pg.NewDatabaseT(t)
	rd := redistest.StartT(t)
	shared := "shared:\n  redis_url: " + rd.URL()
	cfgA, cfgB := clusterConfig(t, "a", dsn, shared), clusterConfig(t, "b", dsn, shared)
	out, _, code := cli(t, "keys", "create", "--config", cfgA, "--org", "beta")
	key := strings.TrimSpace(out)
	if code != 0 {
		t.Fatal("keys create failed")
	}
	a, b := startServe(t, cfgA), startServe(t, cfgB)
	const seconds = 3
	var ok, limited atomic.Int64
	stop := time.Now().Add(seconds * time.Second)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 8 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				st, _ := post(t, s.addr, "/v1/audio/speech", key, `{"model":"espeak/espeak-ng","voice":"en","text":"a"}`)
				switch st {
				case 200:
					ok.Add(1)
				case 429:
					limited.Add(1)
				default:
					t.Errorf("unexpected status %d", st)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	// GCRA at 10/s with a burst of 10: at most burst + rate*elapsed.
	max := 10 + int64(10*elapsed) + 1
	t.Logf("%.1f s across two instances: %d allowed (at most %d), %d refused", elapsed, ok.Load(), max, limited.Load())
	if ok.Load() > max || limited.Load() == 0 {
		t.Fatalf("%d requests allowed in %.1f s across A and B, want at most %d (limit 10/s, burst 10), with refusals", ok.Load(), elapsed, max)
	}
	if ok.Load() < 10 {
		t.Fatalf("only %d allowed: the limit starves the org", ok.Load())
	}
	a.stop(t)
	if !strings.Contains(a.logs.String(), "shared across instances through redis") {
		t.Errorf("the start-up log does not say the limits are shared:\n%s", a.logs.String())
	}
}

// TestBudgetHoldsAcrossInstances: two instances on one Redis spend one
// organization budget together, never past it.
func TestBudgetHoldsAcrossInstances(t *testing.T) {
	t.Setenv("VOXGATE_TEST_SECRETS_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	pg := pgtest.StartT(t)
	dsn := pg.NewDatabaseT(t)
	rd := redistest.StartT(t)
	// espeak at 1000 credits per 1k characters: a 5-character text costs
	// 5 credits, so a budget of 100 buys exactly 20.
	extra := "shared:\n  redis_url: " + rd.URL()
	mk := func(name string) string {
		path := clusterConfig(t, name, dsn, extra)
		b, _ := os.ReadFile(path)
		cfg := strings.Replace(string(b), "espeak: {plugin: voxgate-espeak, managed: true}", "espeak: {plugin: voxgate-espeak, managed: true, credits_per_1k_chars: 1000}", 1)
		cfg = strings.Replace(cfg, "  acme:\n", "  acme:\n    budget: {credits: 100, period: month}\n", 1)
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cfgA, cfgB := mk("a"), mk("b")
	out, _, code := cli(t, "keys", "create", "--config", cfgA, "--org", "acme")
	key := strings.TrimSpace(out)
	if code != 0 {
		t.Fatal("keys create failed")
	}
	a, b := startServe(t, cfgA), startServe(t, cfgB)
	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 6 {
				st, body := post(t, s.addr, "/v1/audio/speech", key, `{"model":"espeak/espeak-ng","voice":"en","text":"hello"}`)
				switch {
				case st == 200:
					ok.Add(1)
				case st == 429 && strings.Contains(body, "budget_exceeded"):
					refused.Add(1)
				default:
					t.Errorf("unexpected answer %d %s", st, body)
					return
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("48 requests across two instances: %d served, %d refused", ok.Load(), refused.Load())
	if ok.Load() != 20 || refused.Load() != 28 {
		t.Fatalf("%d served and %d refused; a 100-credit budget buys exactly 20 requests of 5 credits", ok.Load(), refused.Load())
	}
	a.stop(t)
	if !strings.Contains(a.logs.String(), "credit budgets are shared across instances through redis") {
		t.Errorf("the start-up log does not say the budgets are shared")
	}
}

// TestSecretsAgainstPostgres: `secrets set` and `delete` work against
// PostgreSQL directly (with --data, like serve), and a gateway on that
// database sees the stored key (listed by its last four only) and its
// removal.
func TestSecretsAgainstPostgres(t *testing.T) {
	_, dsn, cfg, key := soloOnPostgres(t)
	byok(t, cfg)
	set := exec.Command(binary(t), "secrets", "set", "--config", cfg, "--data", dsn, "--org", "acme", "--provider", "espeak")
	set.Stdin = strings.NewReader("sk-espeak-secret-4321")
	if b, err := set.CombinedOutput(); err != nil || !strings.Contains(string(b), "stored the espeak key") || strings.Contains(string(b), "sk-espeak") {
		t.Fatalf("secrets set against PostgreSQL: %v %s", err, b)
	}
	s := startServe(t, cfg)
	st, body := get(t, s.addr, "/v1/api-keys", key)
	if st != 200 || !strings.Contains(body, `"providerId":"espeak"`) || !strings.Contains(body, `"lastFour":"4321"`) || strings.Contains(body, "sk-espeak") {
		t.Fatalf("GET /v1/api-keys after secrets set: %d %s", st, body)
	}
	if _, stderr, code := cli(t, "secrets", "delete", "--config", cfg, "--data", dsn, "--org", "acme", "--provider", "espeak"); code != 0 {
		t.Fatalf("secrets delete against PostgreSQL: %s", stderr)
	}
	if st, body := get(t, s.addr, "/v1/api-keys", key); st != 200 || strings.Contains(body, "espeak") {
		t.Fatalf("GET /v1/api-keys after secrets delete: %d %s", st, body)
	}
}

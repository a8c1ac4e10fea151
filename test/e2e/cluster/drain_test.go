package cluster

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voxgate/voxgate/test/e2e/harness"
)

const drainConfig = `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
metrics:
  listen: 127.0.0.1:0
plugins:
  dir: %BIN%/plugins
providers:
  testkit:
    plugin: %BIN%/testplugins/voxgate-testplugin
    managed: true
    timeout: 3s
orgs:
  acme:
    providers:
      testkit: {enabled: true}
`

// TestReadyzFailsFromTheMomentADrainStarts: a load balancer polling
// /readyz (here on the metrics listener, which a drain keeps open until
// the requests in flight are done) must stop sending to an instance that
// is shutting down, while its slow requests finish.
func TestReadyzFailsFromTheMomentADrainStarts(t *testing.T) {
	// Not parallel: /readyz must turn within two seconds of the drain's
	// start, while a request of three seconds is in flight.
	tg := harness.Start(t, drainConfig)
	readyz := "http://" + tg.Core.MetricsAddr() + "/readyz"
	get := func(t *testing.T, url, _ string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if st, body := get(t, readyz, ""); st != 200 || !strings.Contains(body, `"store":{"status":"up"}`) {
		t.Fatalf("/readyz before: %d %s", st, body)
	}
	// A slow request: the provider holds it until its 3 s timeout.
	var finished atomic.Bool
	slow := make(chan int)
	go func() {
		st, _, _ := speak(tg, "slow", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "slow", "providerOptions": map[string]any{"hang": true}})
		finished.Store(true)
		slow <- st
	}()
	for tg.MetricValue("voxgate_http_requests_in_flight") < 1 {
		time.Sleep(10 * time.Millisecond)
	}
	stopped := make(chan error)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		stopped <- tg.Core.Shutdown(ctx)
	}()
	start := time.Now()
	for {
		st, body := get(t, readyz, "")
		if st == 503 {
			if !strings.Contains(body, "shutting down") {
				t.Errorf("/readyz while draining: %s", body)
			}
			break
		}
		if finished.Load() || time.Since(start) > 2*time.Second {
			t.Fatalf("/readyz still %d while draining: %s", st, body)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if finished.Load() {
		t.Fatal("the slow request had finished before /readyz said 503: the test proves nothing")
	}
	t.Logf("/readyz 503 %s after the shutdown began, with the slow request in flight", time.Since(start).Round(time.Millisecond))
	if st := <-slow; st != 504 {
		t.Errorf("the slow request ended %d, want its provider timeout (504): the drain let it finish", st)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

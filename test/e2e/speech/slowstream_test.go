package speech

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/voxgate/voxgate/test/e2e/harness"
)

// slowStreamConfig runs one eSpeak process, so that every request below
// meets on it, with a short stall time.
const slowStreamConfig = `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
providers:
  espeak: {plugin: voxgate-espeak, managed: true, instances: 1, stream_stall_timeout: 2s}
orgs:
  acme:
    providers:
      espeak: {enabled: true}
  globex:
    providers:
      espeak: {enabled: true}
`

// TestSlowStreamsHoldNobodyBack opens eSpeak streams of a long text for
// one organization, one whose client reads nothing and two that read at
// real-time speed (as a player does), and checks that another
// organization's requests keep being answered meanwhile, and that the
// stream whose client reads nothing is ended once the plugin's stall time
// has passed.
func TestSlowStreamsHoldNobodyBack(t *testing.T) {
	// Not parallel: stalls of seconds against deadlines of seconds.
	tg := harness.Start(t, slowStreamConfig)
	text := strings.Repeat("A player takes this audio at the pace it is spoken. ", 95) // 4,940 characters
	open := func(rcvbuf int) (*http.Response, error) {
		// A small receive buffer, as a phone on a slow link has, so the
		// client's pace reaches the gateway soon.
		dialer := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
			var err error
			_ = c.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf) })
			return err
		}}
		hc := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext, DisableCompression: true}}
		req, _ := http.NewRequest("POST", tg.Base+"/v1/audio/speech/stream",
			bytes.NewReader(harness.MustJSON(map[string]any{"model": "espeak/espeak-ng", "voice": "en", "text": text})))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tg.Keys["acme"])
		resp, err := hc.Do(req)
		if err == nil && resp.StatusCode != 200 {
			resp.Body.Close()
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		return resp, err
	}

	idle, err := open(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Body.Close()
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			player, err := open(16384)
			if err != nil {
				t.Errorf("a player's stream: %v", err)
				return
			}
			defer player.Body.Close()
			// 44,100 bytes a second: 22,050 Hz, 16-bit mono.
			buf := make([]byte, 4410)
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				if _, err := io.ReadFull(player.Body, buf); err != nil {
					t.Errorf("a player reading at real-time speed lost its stream: %v", err)
					return
				}
			}
		})
	}

	// Meanwhile another organization is served, again and again.
	for i := range 6 {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // only waiting on the streams breaks it
		req, _ := http.NewRequestWithContext(ctx, "POST", tg.Base+"/v1/audio/speech",
			bytes.NewReader(harness.MustJSON(map[string]any{"model": "espeak/espeak-ng", "voice": "en", "text": "Still answered promptly."})))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tg.Keys["globex"])
		resp, err := tg.Client.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("request %d of the other organization, %s after the streams opened: %v", i, time.Since(start), err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if err != nil || resp.StatusCode != 200 || len(body) < 10000 {
			t.Fatalf("request %d of the other organization: %d, %d bytes, %v", i, resp.StatusCode, len(body), err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	close(stop)
	readers.Wait()

	// The stream whose client read nothing was ended by the plugin: what
	// the connection holds ends well before the clip would (over 14 MB).
	n, _ := io.Copy(io.Discard, idle.Body)
	if n > 8<<20 {
		t.Errorf("the idle client's stream ran on: %d bytes", n)
	}
	found := false
	for deadline := time.Now().Add(10 * time.Second); !found && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, e := range tg.Logs.All() {
			if strings.Contains(e.Message, "client fell behind") && strings.Contains(e.Message, "took no audio for 2s") {
				found = true
			}
		}
	}
	if !found {
		t.Error("the plugin did not log the stalled stream")
	}
}

// TestESpeakSettingsChecked checks that the gateway does not start with an
// eSpeak setting the plugin does not know or cannot use.
func TestESpeakSettingsChecked(t *testing.T) {
	t.Parallel()
	for setting, want := range map[string]string{
		"stream_stall_timout: 2s":   "providers.espeak.stream_stall_timout: unknown setting (did you mean stream_stall_timeout?)",
		"stream_stall_timeout: -2s": "stream_stall_timeout",
	} {
		yaml := strings.Replace(slowStreamConfig, "stream_stall_timeout: 2s", setting, 1)
		if _, err := harness.OpenOnly(t, yaml); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: start error %v, want one naming %s", setting, err, want)
		}
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// longText is bigText's length of ordinary English: about five minutes of
// eSpeak speech.
func longText(chars int) string {
	const s = "The gateway renders the whole clip, slows it down, converts its sample rate and sends it back. "
	return strings.Repeat(s, chars/len(s)+1)[:chars]
}

// procMemory returns a field of /proc/PID/status in bytes: VmRSS, the
// resident set size, or VmHWM, its peak (the kernel's own high-water
// mark, so no sampling can miss the peak).
func procMemory(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc status", field)
	return 0
}

// TestWholeClipMemory runs the request of issue #22 (eSpeak, 4,900
// characters at speed 0.25, WAV at 48 kHz: a 114 MB answer) through the
// real binary and bounds the gateway's peak resident memory growth by a
// small multiple of the answer's size: streamed processing holds little
// more than the answer; with volumeDbfs, the leveled clip (twice the
// answer as float samples) is encoded in its own memory. Before
// processing was streamed both grew by 7.5 times the answer. The same
// clip at 192 kHz is over the output limit and refused before any work.
func TestWholeClipMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("renders twenty minutes of audio")
	}
	if _, err := os.Stat(filepath.Join(pluginsDir(), "voxgate-espeak")); err != nil {
		t.Skip("run `make build` first")
	}
	dir := t.TempDir()
	cfg := writeConfig(t, dir, false)
	out, stderr, code := cli(t, "keys", "create", "--config", cfg, "--org", "acme")
	if code != 0 {
		t.Fatalf("keys create: %s", stderr)
	}
	key := strings.TrimSpace(out)
	s := startServe(t, cfg)
	pid := s.cmd.Process.Pid

	speak := func(text string, rate int, extra ...any) (int, []byte, string) {
		b := map[string]any{"model": "espeak/espeak-ng", "voice": "en", "text": text, "speed": 0.25,
			"output": map[string]any{"format": "wav", "sampleRate": rate}}
		for i := 0; i+1 < len(extra); i += 2 {
			b[extra[i].(string)] = extra[i+1]
		}
		body, _ := json.Marshal(b)
		req, _ := http.NewRequest("POST", "http://"+s.addr+"/v1/audio/speech", strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		hc := &http.Client{Timeout: 5 * time.Minute}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		// Keep only the head: the test's own memory is not the gateway's,
		// but reading 114 MB into a buffer would only slow it down.
		head := make([]byte, 512)
		n, _ := io.ReadFull(resp.Body, head)
		rest, err := io.Copy(io.Discard, resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, head[:n], strconv.FormatInt(int64(n)+rest, 10) + "|" + resp.Header.Get("Content-Type")
	}
	// Warm up: the runtime, the plugin connection and the pools.
	if status, _, _ := speak(longText(200), 48000, "volumeDbfs", -20); status != 200 {
		t.Fatalf("warm-up: %d", status)
	}
	for _, tt := range []struct {
		name  string
		extra []any
		max   float64
	}{
		{"speed and output", nil, 1.75},
		{"with volumeDbfs", []any{"volumeDbfs", -20}, 2.75},
	} {
		before := procMemory(t, pid, "VmRSS")
		status, _, meta := speak(longText(4900), 48000, tt.extra...)
		after := procMemory(t, pid, "VmHWM")
		length, ct, _ := strings.Cut(meta, "|")
		n, _ := strconv.ParseInt(length, 10, 64)
		if status != 200 || ct != "audio/wav" || n < 100e6 {
			t.Fatalf("%s: status %d, %s, %d bytes", tt.name, status, ct, n)
		}
		ratio := float64(after-before) / float64(n)
		t.Logf("%s: answer %.1f MB; gateway peak RSS %.1f → %.1f MB (growth %.2f× the answer)", tt.name, float64(n)/1e6, float64(before)/1e6, float64(after)/1e6, ratio)
		if ratio > tt.max {
			t.Errorf("%s: the gateway's peak memory grew by %.2f× the answer's size (%.1f MB for %.1f MB); want ≤ %.2f×",
				tt.name, ratio, float64(after-before)/1e6, float64(n)/1e6, tt.max)
		}
	}
	status, body, meta := speak(longText(4900), 192000)
	if status != 422 || !strings.Contains(string(body), `"output_too_large"`) {
		t.Errorf("192 kHz: %d %s %s, want 422 output_too_large", status, meta, body)
	}
}

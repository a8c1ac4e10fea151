package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// wholeClipResult is the peak memory of whole-clip requests: the gateway's
// resident memory growth while it answers one, next to the answer's size.
type wholeClipResult struct {
	Chars int `json:"chars"`
	// Runs has one entry per kind of request, in order.
	Runs []wholeClipRun `json:"runs"`
}

type wholeClipRun struct {
	Name        string  `json:"name"`
	AnswerBytes int     `json:"answer_bytes"`
	RSSBefore   uint64  `json:"gateway_rss_before_bytes"`
	HWMAfter    uint64  `json:"gateway_hwm_after_bytes"`
	Ratio       float64 `json:"growth_per_answer_byte"`
	Seconds     float64 `json:"seconds"`
}

// wholeClipConfig is a gateway with eSpeak, the offline provider, and the
// default limits; a 114 MB answer takes a while to render.
func wholeClipConfig(listen, dir, bin string) string {
	return espeakConfig(listen, dir, bin, "instances: 1, timeout: 120s")
}

// espeakConfig is a gateway of its own with only the eSpeak provider
// (its settings given), for the phases that measure one thing on it.
func espeakConfig(listen, dir, bin, settings string) string {
	return fmt.Sprintf(`server:
  listen: %s
storage:
  path: %s
plugins:
  dir: %s
secrets:
  key_file: %s
providers:
  espeak: {plugin: voxgate-espeak, managed: true, %s}
orgs:
  %s:
    providers:
      espeak: {enabled: true}
`, listen, filepath.Join(dir, "voxgate.db"), filepath.Join(bin, "plugins"), filepath.Join(dir, "secrets.key"), settings, benchOrg)
}

// wholeClipText is chars characters of ordinary English.
func wholeClipText(chars int) string {
	const s = "The gateway renders the whole clip, slows it down, converts its sample rate and sends it back. "
	return strings.Repeat(s, chars/len(s)+1)[:chars]
}

// wholeClipMemory measures the request of issue #22 (eSpeak, 4,900
// characters at speed 0.25, WAV at 48 kHz: a 114 MB answer), with and
// without volumeDbfs, on a gateway of its own: the growth of its peak
// resident memory (VmHWM, the kernel's high-water mark, so no sample can
// miss the peak) from its resident memory just before, per byte of the
// answer. The baseline is the answer itself.
func wholeClipMemory(ctx context.Context, bin, dir string, p plan, res *Results) error {
	if _, err := os.Stat(filepath.Join(bin, "plugins", "voxgate-espeak")); err != nil {
		return fmt.Errorf("%s is missing: run `make build` first", filepath.Join(bin, "plugins", "voxgate-espeak"))
	}
	gw, err := startGateway(ctx, bin, dir, "wholeclip", wholeClipConfig)
	if err != nil {
		return err
	}
	defer gw.stop()
	key, err := gw.createKey(ctx, benchOrg)
	if err != nil {
		return err
	}
	if err := gw.serve(ctx); err != nil {
		return err
	}
	hc := &fasthttp.HostClient{Addr: gw.addr, ReadTimeout: 5 * time.Minute, MaxResponseBodySize: 512 << 20}
	speak := func(chars int, extra map[string]any) (int, time.Duration, error) {
		b := map[string]any{"model": "espeak/espeak-ng", "voice": "en", "text": wholeClipText(chars), "speed": 0.25,
			"output": map[string]any{"format": "wav", "sampleRate": 48000}}
		for k, v := range extra {
			b[k] = v
		}
		body, _ := json.Marshal(b)
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI("http://" + gw.addr + "/v1/audio/speech")
		req.Header.SetMethod(fasthttp.MethodPost)
		req.Header.SetContentType("application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		req.SetBodyRaw(body)
		start := time.Now()
		if err := hc.DoTimeout(req, resp, 5*time.Minute); err != nil {
			return 0, 0, err
		}
		if resp.StatusCode() != 200 {
			return 0, 0, fmt.Errorf("status %d: %.300s", resp.StatusCode(), resp.Body())
		}
		return len(resp.Body()), time.Since(start), nil
	}
	// Warm up the runtime, the plugin connection and the pools.
	if _, _, err := speak(200, map[string]any{"volumeDbfs": -20}); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	res.WholeClip.Chars = p.WholeClipChars
	for _, run := range []struct {
		name  string
		extra map[string]any
	}{
		{"speed and output", nil},
		{"speed, output and volumeDbfs", map[string]any{"volumeDbfs": -20}},
	} {
		before, err := procMemory(gw.pid())
		if err != nil {
			return err
		}
		n, d, err := speak(p.WholeClipChars, run.extra)
		if err != nil {
			return fmt.Errorf("%s: %w", run.name, err)
		}
		after, err := procMemory(gw.pid())
		if err != nil {
			return err
		}
		res.WholeClip.Runs = append(res.WholeClip.Runs, wholeClipRun{Name: run.name, AnswerBytes: n, RSSBefore: before.RSS, HWMAfter: after.HWM,
			Ratio: (float64(after.HWM) - float64(before.RSS)) / float64(n), Seconds: d.Seconds()})
	}
	return gw.shutdown(nil)
}

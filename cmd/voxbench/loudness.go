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

// loudnessResult is the time to first byte a stream's loudness leveling
// adds: eSpeak streams without loudness, with loudness for a voice the
// gateway has learned (from a leveled clip), and with loudness for a voice
// it has never measured (whose first StreamLookahead is held back).
type loudnessResult struct {
	Rounds  int     `json:"rounds"`
	Plain   latency `json:"plain_ttfb"`
	Learned latency `json:"learned_voice_ttfb"`
	New     latency `json:"new_voice_ttfb"`
}

// loudnessOrgs is how many organizations the phase's gateway declares:
// voices are learned per organization, so each new-voice round uses one
// that has measured nothing.
const loudnessOrgs = 20

// loudnessConfig is an eSpeak gateway with loudnessOrgs organizations.
func loudnessConfig(listen, dir, bin string) string {
	cfg := espeakConfig(listen, dir, bin, "instances: 1")
	var b strings.Builder
	for i := range loudnessOrgs {
		fmt.Fprintf(&b, "  lb%d:\n    providers:\n      espeak: {enabled: true}\n", i)
	}
	return cfg + b.String()
}

// loudnessBench measures the streams' time to first byte, rounds of each
// kind, interleaved so that the machine's drift hits all three alike.
func loudnessBench(ctx context.Context, bin, dir string, rounds int, res *Results) error {
	if _, err := os.Stat(filepath.Join(bin, "plugins", "voxgate-espeak")); err != nil {
		return fmt.Errorf("%s is missing: run `make build` first", filepath.Join(bin, "plugins", "voxgate-espeak"))
	}
	rounds = min(rounds, loudnessOrgs)
	gw, err := startGateway(ctx, bin, dir, "loudness", loudnessConfig)
	if err != nil {
		return err
	}
	defer gw.stop()
	keys := map[string]string{}
	for _, org := range append([]string{benchOrg}, orgNames()...) {
		if keys[org], err = gw.createKey(ctx, org); err != nil {
			return err
		}
	}
	if err := gw.serve(ctx); err != nil {
		return err
	}
	hc := &fasthttp.HostClient{Addr: gw.addr, ReadTimeout: time.Minute, StreamResponseBody: true}
	text := wholeClipText(400)
	send := func(path, org string, extra map[string]any) (time.Duration, error) {
		b := map[string]any{"model": "espeak/espeak-ng", "voice": "en", "text": text}
		for k, v := range extra {
			b[k] = v
		}
		body, _ := json.Marshal(b)
		t := &target{name: "loudness", hc: hc}
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI("http://" + gw.addr + path)
		req.Header.SetMethod(fasthttp.MethodPost)
		req.Header.SetContentType("application/json")
		req.Header.Set("Authorization", "Bearer "+keys[org])
		req.SetBodyRaw(body)
		ttfb, _, err := stream(t, req, resp, make([]byte, 32<<10), nil)
		return ttfb, err
	}
	level := map[string]any{"loudness": map[string]any{"integrated": -16, "truePeak": -1}}
	// Teach benchOrg's "en" (and warm the plugin up).
	if _, err := send("/v1/audio/speech", benchOrg, level); err != nil {
		return fmt.Errorf("warm-up clip: %w", err)
	}
	var plain, learned, fresh []time.Duration
	for i := range rounds {
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, run := range []struct {
			org   string
			extra map[string]any
			into  *[]time.Duration
		}{{benchOrg, nil, &plain}, {benchOrg, level, &learned}, {fmt.Sprintf("lb%d", i), level, &fresh}} {
			d, err := send("/v1/audio/speech/stream", run.org, run.extra)
			if err != nil {
				return err
			}
			*run.into = append(*run.into, d)
		}
	}
	res.Loudness = loudnessResult{Rounds: rounds, Plain: summarize(plain), Learned: summarize(learned), New: summarize(fresh)}
	return gw.shutdown(nil)
}

func orgNames() []string {
	out := make([]string, loudnessOrgs)
	for i := range out {
		out[i] = fmt.Sprintf("lb%d", i)
	}
	return out
}

// loudnessFigures adds the stream leveling's added time to first byte.
func (r *Results) loudnessFigures(add func(figure)) {
	l := r.Loudness
	if l.Rounds == 0 {
		return
	}
	add(figure{Name: "eSpeak stream TTFB with loudness, learned voice (baseline: without), p50", Unit: "ms",
		Baseline: f3(l.Plain.P50), Gateway: f3(l.Learned.P50), Delta: fmt.Sprintf("%+.1f ms", l.Learned.P50-l.Plain.P50), Value: l.Learned.P50 - l.Plain.P50})
	add(figure{Name: "eSpeak stream TTFB with loudness, voice never measured (2 s look-ahead; baseline: without), p50", Unit: "ms",
		Baseline: f3(l.Plain.P50), Gateway: f3(l.New.P50), Delta: fmt.Sprintf("%+.1f ms", l.New.P50-l.Plain.P50), Value: l.New.P50 - l.Plain.P50})
}

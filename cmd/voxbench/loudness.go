package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/audio"
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
	// Leveling is the throughput of leveling 60 s of the gateway's eSpeak
	// speech (audio.NormalizeLoudness), in seconds of audio per second of
	// one core's CPU time, by target (LUFS, -1 dBTP).
	Leveling []levelingRate `json:"leveling_x_realtime"`
	// LookaheadMs is the audio a leveled stream of a learned voice holds
	// back (audio.StreamLevelerLatency at 24 kHz).
	LookaheadMs float64 `json:"stream_lookahead_ms"`
}

// levelingRate is one target's leveling throughput.
type levelingRate struct {
	Lufs      float64 `json:"lufs"`
	XRealtime float64 `json:"x_realtime"`
}

// levelingSeconds is the clip levelingBench levels, as the audio
// package's BenchmarkNormalizeLoudness does.
const levelingSeconds = 60

// levelingBench measures leveling on one core: 60 s of eSpeak speech from
// the gateway (a clip, repeated to length), leveled in this process on a
// locked thread whose own CPU time (RUSAGE_THREAD) is the figure, so the
// machine's other load and GOMAXPROCS do not count.
func levelingBench(wav []byte) ([]levelingRate, error) {
	src, err := audio.Decode(wav, "audio/wav")
	if err != nil {
		return nil, fmt.Errorf("decode the clip: %w", err)
	}
	if len(src.Samples) == 0 {
		return nil, errors.New("the clip is empty")
	}
	src, err = audio.Resample(src, 24000)
	if err != nil {
		return nil, err
	}
	want := levelingSeconds * src.Rate
	long := make([]float32, 0, want)
	for len(long) < want {
		long = append(long, src.Samples[:min(len(src.Samples), want-len(long))]...)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const passes = 3
	work := &audio.Clip{Rate: src.Rate, Samples: make([]float32, want)}
	var out []levelingRate
	for _, lufs := range []float64{-23, -16, -14} {
		start, err := threadCPU()
		if err != nil {
			return nil, err
		}
		for range passes {
			copy(work.Samples, long)
			if _, err := audio.NormalizeLoudness(work, audio.LoudnessTarget{Integrated: lufs, TruePeak: -1}, 0); err != nil {
				return nil, err
			}
		}
		end, err := threadCPU()
		if err != nil {
			return nil, err
		}
		out = append(out, levelingRate{Lufs: lufs, XRealtime: float64(passes*levelingSeconds) / (end - start).Seconds()})
	}
	return out, nil
}

// threadCPU is the calling thread's user and system CPU time.
func threadCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
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
	res.Loudness = loudnessResult{Rounds: rounds, Plain: summarize(plain), Learned: summarize(learned), New: summarize(fresh),
		LookaheadMs: float64(audio.StreamLevelerLatency(24000).Microseconds()) / 1000}
	// Leveling on one core, on a clip of the gateway's own eSpeak speech.
	clip, err := fetchClip(gw.addr, keys[benchOrg], wholeClipText(1000))
	if err != nil {
		return fmt.Errorf("clip to level: %w", err)
	}
	if res.Loudness.Leveling, err = levelingBench(clip); err != nil {
		return fmt.Errorf("leveling: %w", err)
	}
	return gw.shutdown(nil)
}

// fetchClip asks the gateway for a WAV clip of text from eSpeak.
func fetchClip(addr, key, text string) ([]byte, error) {
	body, _ := json.Marshal(map[string]any{"model": "espeak/espeak-ng", "voice": "en", "text": text, "output": "wav"})
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + addr + "/v1/audio/speech")
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	req.SetBodyRaw(body)
	hc := &fasthttp.HostClient{Addr: addr, ReadTimeout: time.Minute}
	if err := hc.Do(req, resp); err != nil {
		return nil, err
	}
	if resp.StatusCode() != fasthttp.StatusOK {
		return nil, fmt.Errorf("status %d: %.200s", resp.StatusCode(), resp.Body())
	}
	return append([]byte(nil), resp.Body()...), nil
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
	for _, lv := range l.Leveling {
		add(figure{Name: fmt.Sprintf("leveling 60 s of eSpeak speech to %g LUFS / -1 dBTP, one core", lv.Lufs), Unit: "x realtime",
			Gateway: fmt.Sprintf("%.0fx", lv.XRealtime), Target: "≥ 500x", Pass: pass(lv.XRealtime >= 500), Value: lv.XRealtime})
	}
	add(figure{Name: fmt.Sprintf("eSpeak stream TTFB with loudness, learned voice (%.1f ms look-ahead; baseline: without), p50", l.LookaheadMs), Unit: "ms",
		Baseline: f3(l.Plain.P50), Gateway: f3(l.Learned.P50), Delta: fmt.Sprintf("%+.1f ms", l.Learned.P50-l.Plain.P50), Value: l.Learned.P50 - l.Plain.P50})
	add(figure{Name: "eSpeak stream TTFB with loudness, voice never measured (2 s look-ahead; baseline: without), p50", Unit: "ms",
		Baseline: f3(l.Plain.P50), Gateway: f3(l.New.P50), Delta: fmt.Sprintf("%+.1f ms", l.New.P50-l.Plain.P50), Value: l.New.P50 - l.Plain.P50})
}

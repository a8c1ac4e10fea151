package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
)

// The clients phase measures the requests real clients send, each against
// the same request sent straight to the provider and through nginx:
//
//   - pcm: voxgate's own body asking for the 144 KB clip as raw PCM (the
//     reference: the provider's bytes pass through untouched);
//   - pcm-records-off: the same as another organization of the same
//     gateway whose provenance records are off (no SHA-256 of the answer,
//     no signature): the relay's own cost, and by difference what the
//     signed record adds;
//   - pcm-32k: the same for a 32 KB clip, where per-request costs weigh
//     more than per-byte ones;
//   - openai-sdk: the OpenAI SDK's default body ({"model":"tts-1",
//     "input","voice":"alloy"}: no response_format, which is mp3) through
//     voxgate's OpenAI dialect; direct and nginx send the same body to the
//     fake, which answers its MP3;
//   - elevenlabs-sdk: the ElevenLabs SDK's default (output_format
//     mp3_44100_128, text and model_id, xi-api-key) through the ElevenLabs
//     dialect and the real ElevenLabs plugin;
//   - convert: mp3 asked of a model that has only pcm (the
//     openai-compatible plugin declared so), a conversion that must
//     happen; direct and nginx fetch the PCM the model does make.
//
// Each workload runs sequential triples (direct, nginx, gateway, the
// order rotating) for added latency, then closed-loop slots of nginx and
// the gateway alternating for CPU per request. Whether the gateway passed
// the provider's bytes through or converted them is read from its answer
// (X-Voxgate-Transcoded), from voxgate_audio_conversions_total, or else
// from the bytes themselves (identical to what the provider sent
// directly, or not).

// Workload ids (voxbench reports them; -only clients runs them all).
const (
	wlPCM        = "pcm"
	wlPCMRelay   = "pcm-records-off"
	wlPCMSmall   = "pcm-32k"
	wlOpenAISDK  = "openai-sdk"
	wlElevenSDK  = "elevenlabs-sdk"
	wlConversion = "convert"
)

// elevenModel is the model of the ElevenLabs SDK's default request.
const elevenModel = "eleven_multilingual_v2"

// elevenFormat is the ElevenLabs SDK's default output_format.
const elevenFormat = "mp3_44100_128"

// workload is one kind of request, as each leg sends it.
type workload struct {
	id, name string
	legs     [3]target // direct, nginx, gateway
	// floor, when set, is the same request through the floor relay
	// (floor.go), measured for CPU per request beside nginx and the
	// gateway: what a bare fasthttp relay costs on this host.
	floor *target
	// audioSeconds is the length of one answer's audio.
	audioSeconds float64
}

// workloadResult is what the clients phase measured of one workload.
type workloadResult struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Path is "passed through", "converted" or "" (not known); Evidence
	// says how that was told.
	Path     string `json:"path"`
	Evidence string `json:"evidence"`
	// Bytes and media types of one answer, direct and through the gateway.
	DirectBytes      int     `json:"direct_bytes"`
	GatewayBytes     int     `json:"gateway_bytes"`
	DirectMediaType  string  `json:"direct_media_type"`
	GatewayMediaType string  `json:"gateway_media_type"`
	AudioSeconds     float64 `json:"audio_seconds"`
	// Sequential latency of each leg, and the medians over rounds of each
	// relay's p50 and p99 minus direct's.
	Direct          latency `json:"direct"`
	Nginx           latency `json:"nginx"`
	Gateway         latency `json:"gateway"`
	NginxAddedP50   float64 `json:"nginx_added_p50_ms"`
	NginxAddedP99   float64 `json:"nginx_added_p99_ms"`
	GatewayAddedP50 float64 `json:"gateway_added_p50_ms"`
	GatewayAddedP99 float64 `json:"gateway_added_p99_ms"`
	// CPU per request of every process while each relay's slots ran.
	NginxCPU   cpuPerRequest `json:"nginx_cpu_us_per_request"`
	GatewayCPU cpuPerRequest `json:"gateway_cpu_us_per_request"`
	NginxRPS   float64       `json:"nginx_rps"`
	GatewayRPS float64       `json:"gateway_rps"`
	// CryptoShare is the share of the gateway's CPU profile of its slots
	// in a signed record's cryptography (pcm only; 0 when not taken).
	CryptoShare float64 `json:"crypto_share,omitempty"`
	// profiled says CryptoShare was read from a profile.
	profiled bool
	// FloorCPU and FloorRPS are the floor relay's, when it ran.
	FloorCPU *cpuPerRequest `json:"floor_relay_cpu_us_per_request,omitempty"`
	FloorRPS float64        `json:"floor_relay_rps,omitempty"`
	Errors   int            `json:"errors"`
}

// clientsResult is the clients phase.
type clientsResult struct {
	Clients   int              `json:"clients"`
	Workloads []workloadResult `json:"workloads"`
	// Record is the signed record's cryptography alone for the pcm
	// workload's answer, when pcm and pcm-records-off both ran.
	Record *recordCost `json:"record_crypto,omitempty"`
}

// workload returns the result of workload id, if it ran.
func (c *clientsResult) workload(id string) *workloadResult {
	for i := range c.Workloads {
		if c.Workloads[i].ID == id {
			return &c.Workloads[i]
		}
	}
	return nil
}

// workloads builds the phase's workloads on the load's fakes, nginx and
// gateway.
func (l *load) workloads() []workload {
	u, ng, gw := l.ups, l.ng, l.gw
	pcm := map[string]string{"format": "pcm"}
	speechURL := "http://" + gw.addr + "/v1/audio/speech"
	openAILegs := func(root, nginxName string, upBody, gwBody []byte) [3]target {
		return [3]target{
			{name: "direct", hc: clipHC(hostOf(root)), uri: root + openai.SpeechPath, auth: openai.Key, body: upBody},
			{name: "nginx", hc: clipHC(ng.addrs[nginxName]), uri: ng.url(nginxName) + openai.SpeechPath, auth: openai.Key, body: upBody},
			{name: "gateway", hc: clipHC(gw.addr), uri: speechURL, auth: l.key, body: gwBody},
		}
	}
	var floor *target
	if l.clipFloor != nil {
		floor = &target{name: "floor relay", hc: clipHC(l.clipFloor.addr), uri: "http://" + l.clipFloor.addr + openai.SpeechPath,
			auth: openai.Key, body: upstreamBody(l.p.ClipText, "pcm")}
	}
	elevenPath := elevenlabs.TTSPath(elevenlabs.VoiceRachel) + "?output_format=" + elevenFormat
	elevenBody, _ := json.Marshal(map[string]string{"text": l.p.ClipText, "model_id": elevenModel})
	return []workload{
		{id: wlPCM, name: fmt.Sprintf("voxgate body, pcm (%d KB clip)", int(l.p.ClipSeconds*48)), audioSeconds: l.p.ClipSeconds,
			legs: openAILegs(u.Clip, nginxClip, upstreamBody(l.p.ClipText, "pcm"), gatewayBody(provClip+"/tts-1", l.p.ClipText, pcm))},
		{id: wlPCMRelay, name: fmt.Sprintf("voxgate body, pcm (%d KB clip), records off", int(l.p.ClipSeconds*48)), audioSeconds: l.p.ClipSeconds,
			legs: relayLegs(openAILegs(u.Clip, nginxClip, upstreamBody(l.p.ClipText, "pcm"), gatewayBody(provClip+"/tts-1", l.p.ClipText, pcm)), l.relayKey), floor: floor},
		{id: wlPCMSmall, name: fmt.Sprintf("voxgate body, pcm (%d KB clip)", int(l.p.SmallClipSeconds*48+0.5)), audioSeconds: l.p.SmallClipSeconds,
			legs: openAILegs(u.Small, nginxSmall, upstreamBody(l.p.ClipText, "pcm"), gatewayBody(provSmall+"/tts-1", l.p.ClipText, pcm))},
		{id: wlOpenAISDK, name: "OpenAI SDK default (mp3)", audioSeconds: l.p.ClipSeconds,
			legs: openAILegs(u.Clip, nginxClip, upstreamBody(l.p.ClipText, ""), upstreamBody(l.p.ClipText, ""))},
		{id: wlElevenSDK, name: "ElevenLabs SDK default (" + elevenFormat + ")", audioSeconds: l.p.ClipSeconds,
			legs: [3]target{
				{name: "direct", hc: clipHC(hostOf(u.Eleven)), uri: u.Eleven + elevenPath, auth: elevenlabs.Key, authHeader: "xi-api-key", body: elevenBody},
				{name: "nginx", hc: clipHC(ng.addrs[nginxEleven]), uri: ng.url(nginxEleven) + elevenPath, auth: elevenlabs.Key, authHeader: "xi-api-key", body: elevenBody},
				{name: "gateway", hc: clipHC(gw.addr), uri: "http://" + gw.addr + "/elevenlabs" + elevenPath, auth: l.key, authHeader: "xi-api-key", body: elevenBody},
			}},
		{id: wlConversion, name: "mp3 from a pcm-only model (conversion)", audioSeconds: l.p.ClipSeconds,
			legs: openAILegs(u.Clip, nginxClip, upstreamBody(l.p.ClipText, "pcm"), gatewayBody(provPCMOnly+"/tts-1", l.p.ClipText, map[string]string{"format": "mp3"}))},
	}
}

// relayLegs are legs whose gateway leg runs as relayOrg.
func relayLegs(legs [3]target, key string) [3]target {
	legs[2].auth = key
	return legs
}

// mConversions counts the gateway's audio conversions (when it has the
// counter).
const mConversions = "voxgate_audio_conversions_total"

// headerTranscoded is set by a gateway that converted the answer.
const headerTranscoded = "X-Voxgate-Transcoded"

// clients runs the phase: the workloads named in only (comma-separated
// ids; "" is all). With perfDir set it records the gateway's CPU profile
// of each workload's slots (the gateway idles while nginx's run).
func (l *load) clients(ctx context.Context, res *Results, only, perfDir string) error {
	if l.ng == nil {
		return fmt.Errorf("the clients phase needs nginx")
	}
	res.Clients.Clients = l.p.ClientConcurrency
	for _, w := range l.workloads() {
		if only != "" && !slices.Contains(strings.Split(only, ","), w.id) {
			continue
		}
		logf("  workload %s: %s", w.id, w.name)
		r, err := l.runWorkload(ctx, w, perfDir)
		for i := range w.legs {
			w.legs[i].hc.CloseIdleConnections()
		}
		if w.floor != nil {
			w.floor.hc.CloseIdleConnections()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", w.id, err)
		}
		res.Clients.Workloads = append(res.Clients.Workloads, r)
		if w.id == wlPCMRelay && res.Clients.workload(wlPCM) != nil {
			rc := measureRecordCost(r.GatewayBytes, 300*time.Millisecond)
			if pcm := res.Clients.workload(wlPCM); pcm.profiled {
				rc.Profiled, rc.InGatewayShare = true, pcm.CryptoShare
				rc.InGatewayUS = pcm.CryptoShare * pcm.GatewayCPU.Gateway.sum()
			}
			res.Clients.Record = &rc
			logf("    the record's cryptography alone: SHA-256 of %d bytes %.1f µs, Ed25519 signature %.1f µs; in the gateway under load %.1f µs (%.0f%% of its CPU profile)",
				rc.Bytes, rc.SHA256US, rc.SignUS, rc.InGatewayUS, 100*rc.InGatewayShare)
		}
		logf("    %s; CPU per request nginx %.0f µs, gateway %.0f µs (+ plugin %.0f); added p50 nginx %+.3f ms, gateway %+.3f ms",
			r.Path, r.NginxCPU.Nginx.sum(), r.GatewayCPU.Gateway.sum(), r.GatewayCPU.Plugin.sum(), r.NginxAddedP50, r.GatewayAddedP50)
		if r.FloorCPU != nil {
			logf("    the floor relay (bare fasthttp): CPU per request %.0f µs", r.FloorCPU.Floor.sum())
		}
	}
	return nil
}

// runWorkload measures one workload.
func (l *load) runWorkload(ctx context.Context, w workload, perfDir string) (workloadResult, error) {
	r := workloadResult{ID: w.id, Name: w.name, AudioSeconds: w.audioSeconds}
	legs := []*target{&w.legs[0], &w.legs[1], &w.legs[2]}
	reqs := make([]*fasthttp.Request, len(legs))
	for i, t := range legs {
		reqs[i] = fasthttp.AcquireRequest()
		defer fasthttp.ReleaseRequest(reqs[i])
		t.prepare(reqs[i])
	}
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)

	// One answer of each leg: its size becomes what every later answer
	// must have, and the gateway's says what it did.
	var direct []byte
	fromHeader := false
	for i, t := range legs {
		if _, err := l.clip(t, reqs[i], resp); err != nil {
			return r, err
		}
		t.want = len(resp.Body())
		switch i {
		case 0:
			direct = append([]byte(nil), resp.Body()...)
			r.DirectBytes, r.DirectMediaType = len(direct), string(resp.Header.ContentType())
		case 2:
			r.GatewayBytes, r.GatewayMediaType = len(resp.Body()), string(resp.Header.ContentType())
			if v := resp.Header.Peek(headerTranscoded); len(v) > 0 {
				r.Path, r.Evidence, fromHeader = "converted", headerTranscoded+": "+string(v), true
			} else if bytes.Equal(resp.Body(), direct) {
				r.Path, r.Evidence = "passed through", "the provider's bytes, identical"
			} else {
				r.Path, r.Evidence = "converted", "bytes differ from the provider's"
			}
		}
	}
	for i, t := range legs {
		for range min(l.p.WarmUp, 50) {
			if _, err := l.clip(t, reqs[i], resp); err != nil {
				return r, err
			}
		}
	}

	// A counter with no conversion yet is not exposed at all: missing
	// before is zero.
	conv0, _ := l.gw.metricOr(mConversions)
	all := make([][]time.Duration, len(legs))
	var n50, n99, g50, g99 []float64
	for range l.p.ClientRounds {
		lat, err := interleave(ctx, legs, l.p.ClientPerRound, func(i int) (time.Duration, error) { return l.clip(legs[i], reqs[i], resp) })
		if err != nil {
			return r, err
		}
		d, n, g := summarize(lat[0]), summarize(lat[1]), summarize(lat[2])
		n50, n99 = append(n50, n.P50-d.P50), append(n99, n.P99-d.P99)
		g50, g99 = append(g50, g.P50-d.P50), append(g99, g.P99-d.P99)
		for i := range all {
			all[i] = append(all[i], lat[i]...)
		}
	}
	if conv1, ok := l.gw.metricOr(mConversions); ok && !fromHeader {
		// The counter is the gateway's own word; it wins over the bytes.
		per := (conv1 - conv0) / float64(len(all[2]))
		if per >= 0.5 {
			r.Path = "converted"
		} else {
			r.Path = "passed through"
		}
		r.Evidence = fmt.Sprintf("%s %+.0f over %d requests", mConversions, conv1-conv0, len(all[2]))
	}
	r.Direct, r.Nginx, r.Gateway = summarize(all[0]), summarize(all[1]), summarize(all[2])
	r.NginxAddedP50, r.NginxAddedP99 = median(n50), median(n99)
	r.GatewayAddedP50, r.GatewayAddedP99 = median(g50), median(g99)

	// The relays whose CPU is measured: nginx, the gateway, and the floor
	// relay when the workload has it.
	relays := legs[1:]
	if w.floor != nil {
		req := fasthttp.AcquireRequest()
		defer fasthttp.ReleaseRequest(req)
		w.floor.prepare(req)
		if _, err := l.clip(w.floor, req, resp); err != nil {
			return r, err
		}
		if !bytes.Equal(resp.Body(), direct) {
			return r, fmt.Errorf("the floor relay's answer differs from the provider's (%d bytes, %d direct)", len(resp.Body()), len(direct))
		}
		w.floor.want = len(direct)
		relays = append(relays, w.floor)
	}
	c := l.p.ClientConcurrency
	for _, t := range relays { // open c connections on every relay first
		if _, _, _, err := l.closedLoop(ctx, t, c, l.p.ClientSlot/4); err != nil {
			return r, err
		}
	}
	// The records-on workload is always profiled: its profile says what
	// the record's cryptography cost inside the gateway (cryptoInProfile).
	var prof chan error
	profPath := ""
	switch {
	case perfDir != "":
		profPath = filepath.Join(perfDir, "gateway-cpu-"+w.id+".pprof")
	case w.id == wlPCM:
		profPath = filepath.Join(os.TempDir(), fmt.Sprintf("voxbench-%d-gateway-cpu-%s.pprof", os.Getpid(), w.id))
		defer os.Remove(profPath)
	}
	if profPath != "" {
		prof = make(chan error, 1)
		d := time.Duration(len(relays)*l.p.ClientSlots) * l.p.ClientSlot
		go func() { prof <- l.gw.cpuProfile(d, profPath) }()
	}
	runs, err := l.slots(ctx, relays, c, l.p.ClientSlots, l.p.ClientSlot, nil)
	if prof != nil {
		if perr := <-prof; perr != nil {
			logf("pprof: %v", perr)
		} else if w.id == wlPCM {
			r.CryptoShare, perr = cryptoInProfile(profPath)
			if perr != nil {
				logf("the record's cryptography in the gateway's profile: %v", perr)
			}
			r.profiled = perr == nil || errors.Is(perr, errEmptyProfile)
		}
	}
	if err != nil {
		return r, err
	}
	r.NginxCPU, r.GatewayCPU = runs[0].cpu.perRequest(runs[0].requests), runs[1].cpu.perRequest(runs[1].requests)
	r.NginxRPS, r.GatewayRPS = runs[0].rps(), runs[1].rps()
	r.Errors = runs[0].errs + runs[1].errs
	if len(runs) > 2 {
		fc := runs[2].cpu.perRequest(runs[2].requests)
		r.FloorCPU, r.FloorRPS = &fc, runs[2].rps()
		r.Errors += runs[2].errs
	}
	return r, nil
}

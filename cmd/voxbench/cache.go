package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// The cache phase measures the response cache against rendering, in one
// gateway with a disk cache in front of the clip fake: a hit (the same
// text every time) next to a miss (a new text every time, so the fake
// renders it and the gateway stores it). Latency alternates the two one
// request at a time; throughput runs each closed-loop for a slot.

type cacheResult struct {
	Hit       latency `json:"hit"`
	Miss      latency `json:"miss"`
	LatencyX  float64 `json:"latency_ratio_p50"`
	HitRPS    float64 `json:"hit_rps"`
	MissRPS   float64 `json:"miss_rps"`
	TputX     float64 `json:"throughput_ratio"`
	Clients   int     `json:"clients"`
	HitErrors int     `json:"errors"`
}

// cacheConfig is the load gateway's config with a disk cache.
func cacheConfig(u *upstreams, o options) func(listen, dir, bin string) string {
	base := loadConfig(u, gwOptions{accessLog: o.accessLog, directHTTP: o.directHTTP})
	return func(listen, dir, bin string) string {
		return base(listen, dir, bin) + "cache:\n  driver: disk\n  ttl: 1h\n"
	}
}

// cacheBench runs the phase.
func cacheBench(ctx context.Context, bin, dir string, ups *upstreams, o options, p plan, res *Results) error {
	gw, err := startGateway(ctx, bin, dir, "cache", cacheConfig(ups, o))
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
	hc := &fasthttp.HostClient{Addr: gw.addr, MaxConns: 256, ReadTimeout: 60 * time.Second, NoDefaultUserAgentHeader: true, ReadBufferSize: 16 << 10}
	defer hc.CloseIdleConnections()
	var n atomic.Int64
	send := func(req *fasthttp.Request, resp *fasthttp.Response, hit bool) (time.Duration, error) {
		text := "The cached sentence, spoken once."
		if !hit {
			text = fmt.Sprintf("A new sentence, number %d, spoken for the first time.", n.Add(1))
		}
		req.Reset()
		req.SetRequestURI("http://" + gw.addr + "/v1/audio/speech")
		req.Header.SetMethod(fasthttp.MethodPost)
		req.Header.SetContentType("application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		req.SetBodyString(`{"model":"openai/tts-1","voice":"alloy","text":"` + text + `","output":{"format":"pcm"}}`)
		start := time.Now()
		err := hc.Do(req, resp)
		d := time.Since(start)
		if err == nil && resp.StatusCode() != 200 {
			err = fmt.Errorf("status %d: %.200s", resp.StatusCode(), resp.Body())
		}
		if err == nil && hit && string(resp.Header.Peek("X-Voxgate-Cache")) != "hit" {
			err = fmt.Errorf("the repeated request was a %q", resp.Header.Peek("X-Voxgate-Cache"))
		}
		return d, err
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	// Warm up both paths, and wait for the entry to be written.
	for i := range p.WarmUp {
		if _, err := send(req, resp, false); err != nil {
			return err
		}
		if i > p.WarmUp/2 {
			if _, err := send(req, resp, true); err == nil {
				continue
			}
		} else {
			_, _ = send(req, resp, true)
		}
	}
	pairs := p.SeqRounds * p.SeqPerRound / 2
	hits, misses := make([]time.Duration, 0, pairs), make([]time.Duration, 0, pairs)
	for i := range pairs {
		for k := range 2 {
			hit := (i+k)%2 == 0
			d, err := send(req, resp, hit)
			if err != nil {
				return err
			}
			if hit {
				hits = append(hits, d)
			} else {
				misses = append(misses, d)
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	c := &res.Cache
	c.Hit, c.Miss = summarize(hits), summarize(misses)
	c.LatencyX = c.Hit.P50 / c.Miss.P50

	loop := func(hit bool) (float64, int) {
		const n = 16
		var done, errs atomic.Int64
		stop := time.Now().Add(p.Slot)
		start := time.Now()
		clients(n, func(req *fasthttp.Request, resp *fasthttp.Response) {
			for time.Now().Before(stop) && ctx.Err() == nil {
				if _, err := send(req, resp, hit); err != nil {
					errs.Add(1)
					continue
				}
				done.Add(1)
			}
		})
		c.Clients = n
		return float64(done.Load()) / time.Since(start).Seconds(), int(errs.Load())
	}
	var e1, e2 int
	c.HitRPS, e1 = loop(true)
	c.MissRPS, e2 = loop(false)
	c.HitErrors = e1 + e2
	c.TputX = c.HitRPS / c.MissRPS
	return gw.shutdown(nil)
}

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

// jobsResult is the long-form jobs phase: one job of about Chars
// characters of Markdown on eSpeak through a gateway of its own, into
// MP3. Memory is the gateway's resident set (RSS) sampled while the job
// renders: at a tenth of its chunks and at nine tenths, so a job whose
// memory grew with its length shows as a late figure above the early one.
type jobsResult struct {
	Chars        int     `json:"chars"`
	Chunks       int     `json:"chunks"`
	AudioSeconds float64 `json:"audio_seconds"`
	// FirstChunk is from the 202 to the first chunk checkpointed; Render
	// to the last; Join from the last chunk to the job's success (the
	// chunks joined, encoded, chapters written); Total the whole.
	FirstChunkS float64 `json:"first_chunk_seconds"`
	RenderS     float64 `json:"render_seconds"`
	JoinS       float64 `json:"join_seconds"`
	TotalS      float64 `json:"total_seconds"`
	// CharsPerSec is rendered characters a second (Chars over Render).
	CharsPerSec float64 `json:"chars_per_second_rendered"`
	// RSSBefore is the gateway's RSS before the job; RSSEarly and
	// RSSLate at a tenth and nine tenths of the chunks; HWMAfter its peak
	// RSS (VmHWM) once the job succeeded (the join included).
	RSSBefore uint64 `json:"gateway_rss_before_bytes"`
	RSSEarly  uint64 `json:"gateway_rss_early_bytes"`
	RSSLate   uint64 `json:"gateway_rss_late_bytes"`
	HWMAfter  uint64 `json:"gateway_hwm_after_bytes"`
	FileBytes int64  `json:"file_bytes"`
}

// targetJobMemoryGrowth bounds the gateway's RSS at nine tenths of a
// job's chunks over its RSS at a tenth: memory must not grow with the
// job's length (a few MB of heap and page-cache noise pass).
const targetJobMemoryGrowth = 1.25

// jobsConfig is an eSpeak gateway whose worker looks for work often.
func jobsConfig(listen, dir, bin string) string {
	return espeakConfig(listen, dir, bin, "instances: 1") + "jobs:\n  poll: 100ms\n"
}

// jobText is a Markdown book of about chars characters: chapters of
// paragraphs of ordinary sentences.
func jobText(chars int) string {
	const sentence = "The narrator reads the chapter slowly, and the listener follows every word of it. "
	var b strings.Builder
	for ch := 1; b.Len() < chars; ch++ {
		fmt.Fprintf(&b, "# Chapter %d\n\n", ch)
		for p := 0; p < 30 && b.Len() < chars; p++ {
			b.WriteString(strings.Repeat(sentence, 5))
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

// jobsBench makes one job of chars characters and follows it every
// 100 ms to its end.
func jobsBench(ctx context.Context, bin, dir string, chars int, res *Results) error {
	if _, err := os.Stat(filepath.Join(bin, "plugins", "voxgate-espeak")); err != nil {
		return fmt.Errorf("%s is missing: run `make build` first", filepath.Join(bin, "plugins", "voxgate-espeak"))
	}
	gw, err := startGateway(ctx, bin, dir, "jobs", jobsConfig)
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
	hc := &fasthttp.HostClient{Addr: gw.addr, ReadTimeout: time.Minute, MaxResponseBodySize: 64 << 20}
	type jobJSON struct {
		ID          string `json:"id"`
		State       string `json:"state"`
		ChunksDone  int    `json:"chunks_done"`
		ChunksTotal int    `json:"chunks_total"`
		Characters  int    `json:"characters"`
		DurationMS  int64  `json:"duration_ms"`
		Bytes       int64  `json:"bytes"`
		Error       *struct {
			Code, Detail string
		} `json:"error"`
	}
	do := func(method, path string, body []byte) (jobJSON, error) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI("http://" + gw.addr + path)
		req.Header.SetMethod(method)
		req.Header.Set("Authorization", "Bearer "+key)
		if body != nil {
			req.Header.SetContentType("application/json")
			req.SetBodyRaw(body)
		}
		if err := hc.DoTimeout(req, resp, time.Minute); err != nil {
			return jobJSON{}, err
		}
		if s := resp.StatusCode(); s != 200 && s != 202 {
			return jobJSON{}, fmt.Errorf("%s %s: %d %.300s", method, path, s, resp.Body())
		}
		var env struct{ Data jobJSON }
		if err := json.Unmarshal(resp.Body(), &env); err != nil {
			return jobJSON{}, err
		}
		return env.Data, nil
	}
	// Warm up: a short job (the plugin, the encoder, the store's buckets).
	body := func(text string) []byte {
		b, _ := json.Marshal(map[string]any{"text": text, "textFormat": "markdown", "model": "espeak/espeak-ng", "voice": "en", "output": "mp3"})
		return b
	}
	wait := func(id string, each func(jobJSON, time.Duration)) (jobJSON, error) {
		start := time.Now()
		for {
			j, err := do("GET", "/v1/audio/jobs/"+id, nil)
			if err != nil {
				return j, err
			}
			if each != nil {
				each(j, time.Since(start))
			}
			if j.State != "queued" && j.State != "running" {
				return j, nil
			}
			select {
			case <-ctx.Done():
				return j, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	warm, err := do("POST", "/v1/audio/jobs", body(jobText(3000)))
	if err != nil {
		return fmt.Errorf("warm-up job: %w", err)
	}
	if _, err := wait(warm.ID, nil); err != nil {
		return err
	}
	before, err := procMemory(gw.pid())
	if err != nil {
		return err
	}
	text := jobText(chars)
	start := time.Now()
	j, err := do("POST", "/v1/audio/jobs", body(text))
	if err != nil {
		return err
	}
	r := jobsResult{Chars: len(text), Chunks: j.ChunksTotal, RSSBefore: before.RSS}
	var firstChunk, lastChunk time.Duration
	j, err = wait(j.ID, func(cur jobJSON, at time.Duration) {
		if cur.ChunksDone > 0 && firstChunk == 0 {
			firstChunk = at
		}
		if cur.ChunksDone == cur.ChunksTotal && lastChunk == 0 {
			lastChunk = at
		}
		m, err := procMemory(gw.pid())
		if err != nil {
			return
		}
		if r.RSSEarly == 0 && cur.ChunksDone*10 >= cur.ChunksTotal {
			r.RSSEarly = m.RSS
		}
		if r.RSSLate == 0 && cur.ChunksDone*10 >= 9*cur.ChunksTotal {
			r.RSSLate = m.RSS
		}
	})
	if err != nil {
		return err
	}
	total := time.Since(start)
	if j.State != "succeeded" {
		return fmt.Errorf("the job %s: %+v", j.State, j.Error)
	}
	after, err := procMemory(gw.pid())
	if err != nil {
		return err
	}
	r.AudioSeconds, r.FileBytes = float64(j.DurationMS)/1000, j.Bytes
	r.FirstChunkS, r.RenderS, r.TotalS = firstChunk.Seconds(), lastChunk.Seconds(), total.Seconds()
	r.JoinS = max(total-lastChunk, 0).Seconds()
	if r.RenderS > 0 {
		r.CharsPerSec = float64(r.Chars) / r.RenderS
	}
	r.HWMAfter = after.HWM
	res.Jobs = r
	logf("job: %d chars, %d chunks, %.0f s of audio: first chunk %.2f s, rendered in %.1f s, joined in %.1f s; RSS %.0f -> %.0f MB, peak %.0f MB",
		r.Chars, r.Chunks, r.AudioSeconds, r.FirstChunkS, r.RenderS, r.JoinS, float64(r.RSSEarly)/1e6, float64(r.RSSLate)/1e6, float64(r.HWMAfter)/1e6)
	return gw.shutdown(nil)
}

// jobsFigures adds the jobs phase's figures.
func (r *Results) jobsFigures(add func(figure)) {
	j := r.Jobs
	if j.Chunks == 0 {
		return
	}
	add(figure{Name: fmt.Sprintf("long-form job on eSpeak, %d chars in %d chunks, characters rendered a second", j.Chars, j.Chunks), Unit: "chars/s",
		Gateway: fmt.Sprintf("%.0f", j.CharsPerSec), Delta: fmt.Sprintf("%.0f s of audio in %.1f s", j.AudioSeconds, j.RenderS), Value: j.CharsPerSec})
	add(figure{Name: "long-form job, time to its first chunk checkpointed", Unit: "s",
		Gateway: fmt.Sprintf("%.2f", j.FirstChunkS), Value: j.FirstChunkS})
	growth := 0.0
	if j.RSSEarly > 0 {
		growth = float64(j.RSSLate) / float64(j.RSSEarly)
	}
	add(figure{Name: "long-form job, gateway RSS at 9/10 of its chunks (baseline: at 1/10)", Unit: "MB",
		Baseline: fmt.Sprintf("%.1f", float64(j.RSSEarly)/1e6), Gateway: fmt.Sprintf("%.1f", float64(j.RSSLate)/1e6),
		Delta: fmt.Sprintf("%.2fx", growth), Target: fmt.Sprintf("≤ %.2fx", targetJobMemoryGrowth), Pass: pass(growth <= targetJobMemoryGrowth), Value: growth})
	share := 0.0
	if j.TotalS > 0 {
		share = j.JoinS / j.TotalS
	}
	add(figure{Name: "long-form job, the join (chunks joined and encoded to MP3 with chapters; baseline: rendering)", Unit: "s",
		Baseline: fmt.Sprintf("%.1f", j.RenderS), Gateway: fmt.Sprintf("%.1f", j.JoinS), Delta: fmt.Sprintf("%.0f%% of the job", 100*share), Value: j.JoinS})
	add(figure{Name: "long-form job, gateway peak RSS after the job (baseline: RSS before it)", Unit: "MB",
		Baseline: fmt.Sprintf("%.1f", float64(j.RSSBefore)/1e6), Gateway: fmt.Sprintf("%.1f", float64(j.HWMAfter)/1e6), Value: float64(j.HWMAfter) / 1e6})
}

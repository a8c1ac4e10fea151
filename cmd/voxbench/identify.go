package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/provenance"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
)

// identifyResult is the identify phase: POST /v1/provenance/identify's
// work (fingerprint the 6 s query, find candidates in the index, compare
// them) against a bbolt index of Size fingerprints, for a clip that is in
// it (the very audio indexed) and one that is not.
type identifyResult struct {
	// Size is the fingerprints indexed; Build how long filling took;
	// FileBytes the bbolt file's size.
	Size      int     `json:"size"`
	BuildSecs float64 `json:"build_seconds"`
	FileBytes int64   `json:"file_bytes"`
	// Growth is the store lookup's median (the clip not in the index)
	// at each size measured: a tenth, a third and all of Size.
	Growth []identifyStep `json:"growth"`
	// In and Out are whole identifies (fingerprinting the 6 s query
	// included); InLookup and OutLookup the store's candidate lookup
	// alone (MatchFingerprints).
	In        latency `json:"in_index"`
	Out       latency `json:"not_in_index"`
	InLookup  latency `json:"in_index_lookup"`
	OutLookup latency `json:"not_in_index_lookup"`
	// Found says the clip in the index was found first, and Score its
	// score; OutFound how many matches the other clip got (want 0).
	Found    bool    `json:"found"`
	Score    float64 `json:"score"`
	OutFound int     `json:"not_in_index_matches"`
	// FingerprintMSPerSec is the time to fingerprint a second of audio
	// (the 6 s query clip, decoded and fingerprinted in this process on
	// one goroutine): what the index costs per clip indexed.
	FingerprintMSPerSec float64 `json:"fingerprint_ms_per_audio_second"`
}

// identifyStep is the lookup's median at one index size.
type identifyStep struct {
	Size     int     `json:"size"`
	LookupMS float64 `json:"lookup_p50_ms"`
}

// identifyOrg is the organization the index is filled for.
const identifyOrg = "acme"

// synthClip is a deterministic 6 s, 11025 Hz WAV "melody": a new pair of
// tones every 120 ms, chosen by seed, so that Chromaprint's chroma
// features change as they do in speech (a steady tone would give it
// nothing to tell clips apart by).
func synthClip(seed uint64) []byte {
	const rate, secs = 11025, 6
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	n := rate * secs
	pcm := make([]byte, 44+2*n)
	var f1, f2 float64
	for i := range n {
		if i%(rate*120/1000) == 0 {
			f1 = 110 * math.Pow(2, float64(r.IntN(36))/12)
			f2 = f1 * math.Pow(2, float64(3+r.IntN(5))/12)
		}
		t := float64(i) / rate
		v := 0.4*math.Sin(2*math.Pi*f1*t) + 0.3*math.Sin(2*math.Pi*f2*t)
		binary.LittleEndian.PutUint16(pcm[44+2*i:], uint16(int16(v*32767)))
	}
	copy(pcm, "RIFF")
	binary.LittleEndian.PutUint32(pcm[4:], uint32(36+2*n))
	copy(pcm[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(pcm[16:], 16)
	binary.LittleEndian.PutUint16(pcm[20:], 1)
	binary.LittleEndian.PutUint16(pcm[22:], 1)
	binary.LittleEndian.PutUint32(pcm[24:], rate)
	binary.LittleEndian.PutUint32(pcm[28:], rate*2)
	binary.LittleEndian.PutUint16(pcm[32:], 2)
	binary.LittleEndian.PutUint16(pcm[34:], 16)
	copy(pcm[36:], "data")
	binary.LittleEndian.PutUint32(pcm[40:], uint32(2*n))
	return pcm
}

// synthFingerprint is fingerprint i of a ~6 s clip without the clip: 24
// values (synthClip's 6 s give 27) from a generator seeded by
// i, so the index's keys (each value's top 16 bits) spread evenly. Real
// fingerprints of one voice share more keys than these, so a real
// index's candidate lists would be longer than here (a limit of this
// bench).
func synthFingerprint(i int, ts time.Time) store.Fingerprint {
	r := rand.New(rand.NewPCG(uint64(i), 0x5eed))
	v := make([]uint32, 24)
	for j := range v {
		v[j] = r.Uint32()
	}
	return store.Fingerprint{OrgID: identifyOrg, RequestID: fmt.Sprintf("%010d", i), TS: ts, Values: v, Keys: provenance.Keys(v)}
}

// identifyBench measures identify against bbolt indexes of growing
// sizes up to size (a tenth, a third, all of it: each filled anew with
// bolt.Store.LoadFingerprints, the clip to find among them), for the
// clip in the index and one that is not, rounds of each. An index whose
// filling outlasts deadline ends the phase at the sizes reached.
func identifyBench(ctx context.Context, dir string, size, rounds int, deadline time.Duration, res *Results) error {
	in, out := synthClip(1), synthClip(2)
	needle, err := provenance.FingerprintAudio(in, "audio/wav")
	if err != nil {
		return fmt.Errorf("fingerprint the clip: %w", err)
	}
	ir := identifyResult{}
	const fpRounds, clipSecs = 20, 6
	t0 := time.Now()
	for range fpRounds {
		if _, err := provenance.FingerprintAudio(in, "audio/wav"); err != nil {
			return fmt.Errorf("fingerprint the clip: %w", err)
		}
	}
	fpPerSec := float64(time.Since(t0).Microseconds()) / 1000 / (fpRounds * clipSecs)
	start := time.Now()
	for _, n := range []int{size / 10, size / 3, size} {
		if n < 1 {
			continue
		}
		if time.Since(start) > deadline {
			logf("identify: stopped before %d fingerprints: the deadline (%s) passed", n, deadline)
			break
		}
		if err := identifyAt(ctx, dir, n, rounds, needle, in, out, &ir); err != nil {
			return err
		}
	}
	ir.FingerprintMSPerSec = fpPerSec
	res.Identify = ir
	return nil
}

// identifyFigures adds the identify phase's figures.
func (r *Results) identifyFigures(add func(figure)) {
	ir := r.Identify
	if ir.Size == 0 {
		return
	}
	add(figure{Name: "fingerprint of a second of audio (decode and Chromaprint, one goroutine)", Unit: "ms",
		Gateway: fmt.Sprintf("%.2f", ir.FingerprintMSPerSec), Value: ir.FingerprintMSPerSec})
	add(figure{Name: fmt.Sprintf("identify a 6 s clip among %d indexed clips on bbolt (found %v), p50", ir.Size, ir.Found), Unit: "ms",
		Gateway: fmt.Sprintf("%.1f", ir.In.P50), Delta: fmt.Sprintf("p99 %.1f ms; not indexed p50 %.1f, p99 %.1f", ir.In.P99, ir.Out.P50, ir.Out.P99), Value: ir.In.P50})
}

// identifyAt fills a fresh index with n fingerprints and measures it.
func identifyAt(ctx context.Context, dir string, n, rounds int, needle []uint32, in, out []byte, ir *identifyResult) error {
	path := filepath.Join(dir, "identify.db")
	_ = os.Remove(path)
	defer os.Remove(path)
	st, err := bolt.Open(path, store.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now()
	at := n / 2
	t := time.Now()
	err = st.LoadFingerprints(ctx, identifyOrg, n, func(i int) store.Fingerprint {
		if i == at {
			return store.Fingerprint{OrgID: identifyOrg, RequestID: fmt.Sprintf("%010d", i), TS: now, Values: needle, Keys: provenance.Keys(needle)}
		}
		return synthFingerprint(i, now)
	})
	if err != nil {
		return err
	}
	build := time.Since(t)
	var fileBytes int64
	if fi, err := os.Stat(path); err == nil {
		fileBytes = fi.Size()
	}
	keysOf := func(clip []byte) []uint32 {
		fp, _ := provenance.FingerprintAudio(clip, "audio/wav")
		return provenance.Keys(fp)
	}
	inKeys, outKeys := keysOf(in), keysOf(out)
	lookup := func(keys []uint32) time.Duration {
		t := time.Now()
		_, _ = st.MatchFingerprints(ctx, identifyOrg, keys, 100)
		return time.Since(t)
	}
	ix := provenance.NewIndex(st, zap.NewNop(), 1, provenance.InProcess{}, provenance.InProcess{})
	defer ix.Close()
	var inT, outT, inL, outL []time.Duration
	found, score, outFound := false, 0.0, 0
	for i := range rounds {
		t := time.Now()
		m, err := ix.Identify(ctx, identifyOrg, in, "audio/wav")
		inT = append(inT, time.Since(t))
		if err != nil {
			return err
		}
		if i == 0 && len(m) > 0 && m[0].RequestID == fmt.Sprintf("%010d", at) {
			found, score = true, m[0].Score
		}
		t = time.Now()
		m, err = ix.Identify(ctx, identifyOrg, out, "audio/wav")
		outT = append(outT, time.Since(t))
		if err != nil {
			return err
		}
		outFound = max(outFound, len(m))
		inL = append(inL, lookup(inKeys))
		outL = append(outL, lookup(outKeys))
	}
	*ir = identifyResult{Size: n, BuildSecs: build.Seconds(), FileBytes: fileBytes, Growth: ir.Growth,
		In: summarize(inT), Out: summarize(outT), InLookup: summarize(inL), OutLookup: summarize(outL),
		Found: found, Score: score, OutFound: outFound}
	ir.Growth = append(ir.Growth, identifyStep{Size: n, LookupMS: ir.OutLookup.P50})
	logf("identify: %d fingerprints (%.0f MB file, built in %.0f s): in the index p50 %.1f ms p99 %.1f ms (found %v, score %.2f); not in it p50 %.1f ms p99 %.1f ms (%d matches); store lookup alone: in p50 %.1f p99 %.1f ms, out p50 %.1f p99 %.1f ms",
		n, float64(fileBytes)/1e6, build.Seconds(), ir.In.P50, ir.In.P99, found, score, ir.Out.P50, ir.Out.P99, outFound,
		ir.InLookup.P50, ir.InLookup.P99, ir.OutLookup.P50, ir.OutLookup.P99)
	return nil
}

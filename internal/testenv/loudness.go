package testenv

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// Loudness is what FFmpeg's ebur128 filter reports of a file: the judge of
// every test of the loudness feature, so that the gateway's own meter is
// never what checks it.
type Loudness struct {
	// Integrated is the summary's integrated loudness (I:) in LUFS; FFmpeg
	// reports -70 for audio with no gated 400 ms block.
	Integrated float64
	// TruePeak is the summary's true peak (Peak:) in dBTP, measured at
	// 192 kHz.
	TruePeak float64
}

var (
	ebuI    = regexp.MustCompile(`(?m)^\s*I:\s+(-?[0-9.]+|-inf) LUFS`)
	ebuPeak = regexp.MustCompile(`(?m)^\s*Peak:\s+(-?[0-9.]+|-inf) dBFS`)
)

// FFmpegLoudness writes data to a file named with ext and measures it with
// `ffmpeg -nostats -i f -af ebur128=peak=true -f null -`; input are
// ffmpeg's options before -i (raw formats: -f mulaw -ar 8000; -stream_loop
// N to measure a short clip played N+1 times).
func FFmpegLoudness(t testing.TB, data []byte, ext string, input ...string) Loudness {
	t.Helper()
	ffmpeg := NeedTool(t, "ffmpeg")
	path := filepath.Join(t.TempDir(), "answer."+ext)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-hide_banner", "-nostats"}, input...)
	args = append(args, "-i", path, "-af", "ebur128=peak=true", "-f", "null", "-")
	out, err := exec.Command(ffmpeg, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg ebur128: %v: %s", err, out)
	}
	sum := out
	if i := bytes.LastIndex(out, []byte("Summary:")); i >= 0 {
		sum = out[i:]
	}
	parse := func(re *regexp.Regexp, what string) float64 {
		m := re.FindSubmatch(sum)
		if m == nil {
			t.Fatalf("ffmpeg ebur128 reported no %s:\n%s", what, sum)
		}
		if string(m[1]) == "-inf" {
			return -200
		}
		v, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			t.Fatalf("ffmpeg ebur128 %s %q: %v", what, m[1], err)
		}
		return v
	}
	return Loudness{Integrated: parse(ebuI, "integrated loudness"), TruePeak: parse(ebuPeak, "true peak")}
}

package jobs

import (
	"fmt"
	"math"
	"testing"

	"github.com/voxgate/voxgate/internal/testenv"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestLoudness levels a job's whole file to its loudness target at the
// join, judged by FFmpeg's ebur128: a lossless file and a lossy one, at a
// target eSpeak reaches without the limiter and at one that needs it;
// and a target out of bounds is refused.
func TestLoudness(t *testing.T) {
	t.Parallel()
	tg := startBuilt(t)
	text, _ := book(2_500, 2)
	for _, tc := range []struct {
		format, ext          string
		integrated, truePeak float64
		// tolerance is ±0.5 LU for a lossless file, as for clips; ±1 LU
		// for a lossy one, as for streams: the file is measured after its
		// encoder and encoded again only when it is over the true peak or
		// more than 1 LU off (each pass costs the whole file), and heavy
		// limiting (eSpeak at -14 LUFS under -2 dBTP) leaves the
		// encoder's band-limiting to shift the loudness by a few tenths.
		tolerance float64
	}{
		{"wav", "wav", -23, -1, 0.5},
		{"mp3", "mp3", -14, -2, 1},
		{"opus", "ogg", -16, -1, 1},
		// Opus overshoots this ceiling by a dB after the limiter's work
		// (0.1 dBTP when the file was not measured after encoding): the
		// file is encoded again, quieter, as the true peak is a ceiling
		// and the loudness a target.
		{"opus", "ogg", -14, -1, 3},
	} {
		t.Run(fmt.Sprintf("%s %g LUFS %g dBTP", tc.format, tc.integrated, tc.truePeak), func(t *testing.T) {
			t.Parallel()
			j := decodeJob(t, tg.Do("POST", "/v1/audio/jobs", "acme", map[string]any{
				"text": text, "textFormat": "markdown", "model": "espeak/espeak-ng", "voice": "en", "speed": 2,
				"output": tc.format, "loudness": map[string]any{"integrated": tc.integrated, "truePeak": tc.truePeak},
			}), 202)
			if j.Loudness == nil || *j.Loudness.Integrated != tc.integrated || *j.Loudness.TruePeak != tc.truePeak {
				t.Fatalf("the job's loudness: %+v", j.Loudness)
			}
			j = waitJob(t, func() job { return decodeJob(t, tg.Do("GET", "/v1/audio/jobs/"+j.ID, "acme", nil), 200) }, finished)
			if j.State != "succeeded" {
				t.Fatalf("finished %+v", j)
			}
			a := tg.Do("GET", j.AudioURL, "acme", nil)
			got := testenv.FFmpegLoudness(t, a.Body, tc.ext)
			t.Logf("%s: %.2f LUFS, %.2f dBTP", tc.format, got.Integrated, got.TruePeak)
			if math.Abs(got.Integrated-tc.integrated) > tc.tolerance || got.TruePeak > tc.truePeak+0.1 {
				t.Errorf("%s file at %.2f LUFS, %.2f dBTP; want %g LUFS under %g dBTP", tc.format, got.Integrated, got.TruePeak, tc.integrated, tc.truePeak)
			}
		})
	}
	t.Run("out of bounds", func(t *testing.T) {
		t.Parallel()
		r := tg.Do("POST", "/v1/audio/jobs", "acme", map[string]any{
			"text": "Hello.", "model": "espeak/espeak-ng", "voice": "en", "loudness": map[string]any{"integrated": -3, "truePeak": 2},
		})
		harness.AssertPaths(t, r.Problem(t, 400, "validation_failed"), "loudness.integrated", "loudness.truePeak")
	})
}

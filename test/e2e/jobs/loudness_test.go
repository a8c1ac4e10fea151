package jobs

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/testenv"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestLoudness levels a job's whole file to its loudness target at the
// join, judged by FFmpeg's ebur128: a lossless file and a lossy one, at a
// target eSpeak reaches without the limiter and at one that needs it,
// a short Opus file and a longer one; and a target out of bounds is
// refused. A file that ends quieter than its target says so in the
// job's warnings (checkQuieterWarning).
func TestLoudness(t *testing.T) {
	t.Parallel()
	tg := startBuilt(t)
	long, _ := book(2_500, 2)
	// About 26 s of speech at speed 2: few peaks, so the Opus encoder's
	// overshoot of the limited ones is its own and the file was leveled
	// again to -18.6 LUFS (a trim after the limiter took a dB of loudness
	// for every dB of peak, twice over).
	short, _ := book(1_000, 2)
	for _, tc := range []struct {
		format, ext          string
		integrated, truePeak float64
		text                 string
		// tolerance is ±0.5 LU for a lossless file, as for clips; ±1 LU
		// for a lossy one, as for streams: the file is measured after its
		// encoder and encoded again only when it is over the true peak or
		// more than 1 LU off (each pass costs the whole file), and
		// limiting under a ceiling lowered for the encoder's overshoot
		// leaves Opus's band-limiting to take half a LU or more.
		tolerance float64
		// quieter says the file ends quieter than its target, which
		// the job's warnings must say.
		quieter bool
	}{
		{"wav", "wav", -23, -1, long, 0.5, false},
		{"mp3", "mp3", -14, -2, long, 1, false},
		{"opus", "ogg", -16, -1, long, 1, false},
		{"opus", "ogg", -16, -1, short, 1, false},
		// Out of reach: eSpeak's peaks stand some 20 dB over its
		// loudness and Opus overshoots the limited ones by up to 3 dB,
		// so the file comes out quieter (the true peak is a ceiling, the
		// loudness a target), some 1.8 LU.
		{"opus", "ogg", -14, -1, long, 3, true},
	} {
		t.Run(fmt.Sprintf("%s %g LUFS %g dBTP %d chars", tc.format, tc.integrated, tc.truePeak, len(tc.text)), func(t *testing.T) {
			t.Parallel()
			j := decodeJob(t, tg.Do("POST", "/v1/audio/jobs", "acme", map[string]any{
				"text": tc.text, "textFormat": "markdown", "model": "espeak/espeak-ng", "voice": "en", "speed": 2,
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
			t.Logf("%s: %.2f LUFS, %.2f dBTP; warnings %q", tc.format, got.Integrated, got.TruePeak, j.Warnings)
			if math.Abs(got.Integrated-tc.integrated) > tc.tolerance || got.TruePeak > tc.truePeak+0.1 {
				t.Errorf("%s file at %.2f LUFS, %.2f dBTP; want %g LUFS under %g dBTP", tc.format, got.Integrated, got.TruePeak, tc.integrated, tc.truePeak)
			}
			checkQuieterWarning(t, j.Warnings, "the job's", tc.integrated, tc.truePeak, got.Integrated, tc.quieter)
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

// TestLoudnessOrgDefault: a job without a loudness of its own gets its
// organization's default, which levels each chunk as a PCM clip with no
// room for an encoder; a lossy file is leveled to it again for its
// encoder and measured after it, so Opus's overshoot of the limited
// peaks does not lift the file over the ceiling (it came out at -0.1
// and -0.3 dBTP under a ceiling of -1). MP3 overshoots less. A file
// that ends quieter than the default says so in its warnings.
func TestLoudnessOrgDefault(t *testing.T) {
	t.Parallel()
	yaml := strings.NewReplacer("127.0.0.1:0", "%ADDR%",
		"  acme:\n", "  acme:\n    dev_key: true\n    loudness: {integrated: -16, true_peak: -1}\n").Replace(jobsConfig)
	tg := harness.StartProcess(t, t.TempDir(), yaml, nil)
	short, _ := book(1_000, 2)
	long, _ := book(2_500, 2)
	for _, tc := range []struct {
		format, ext string
		text        string
		tolerance   float64
		quieter     bool // the job's warnings must say the file is quieter
	}{
		{"opus", "ogg", short, 1, false},
		{"mp3", "mp3", short, 1, false},
		// Three passes stay over the ceiling (lowering it only grows
		// Opus's overshoot of the limiting that keeps the loudness):
		// the last one trades loudness for the peak, and the job says
		// so.
		{"opus", "ogg", long, 2, true},
	} {
		t.Run(fmt.Sprintf("%s %d chars", tc.format, len(tc.text)), func(t *testing.T) {
			t.Parallel()
			j := decodeJob(t, tg.Do("POST", "/v1/audio/jobs", "acme", map[string]any{
				"text": tc.text, "textFormat": "markdown", "model": "espeak/espeak-ng", "voice": "en", "speed": 2, "output": tc.format,
			}), 202)
			j = waitJob(t, func() job { return decodeJob(t, tg.Do("GET", "/v1/audio/jobs/"+j.ID, "acme", nil), 200) }, finished)
			if j.State != "succeeded" {
				t.Fatalf("finished %+v", j)
			}
			got := testenv.FFmpegLoudness(t, tg.Do("GET", j.AudioURL, "acme", nil).Body, tc.ext)
			t.Logf("%s: %.2f LUFS, %.2f dBTP; warnings %q", tc.format, got.Integrated, got.TruePeak, j.Warnings)
			if math.Abs(got.Integrated+16) > tc.tolerance || got.TruePeak > -1+0.1 {
				t.Errorf("%s file at %.2f LUFS, %.2f dBTP; want -16 LUFS under -1 dBTP", tc.format, got.Integrated, got.TruePeak)
			}
			checkQuieterWarning(t, j.Warnings, "the organization's", -16, -1, got.Integrated, tc.quieter)
		})
	}
}

// checkQuieterWarning checks a finished job's warnings against its file,
// whose loudness FFmpeg measured at got: a file quieter than its target
// (want) has one warning that names whose target it missed and a
// loudness within half a LU of FFmpeg's; a file FFmpeg finds within
// half a LU of its target has none. Between the two the gateway's meter
// decides (its tolerance is 1 LU), and either is right.
func checkQuieterWarning(t *testing.T, warnings []string, whose string, integrated, truePeak, got float64, want bool) {
	t.Helper()
	prefix := fmt.Sprintf("The file could not reach %s loudness target, %g LUFS under a true peak of %g dBTP: it is at ", whose, integrated, truePeak)
	if len(warnings) == 0 {
		if want || got < integrated-1.5 {
			t.Errorf("a file at %.2f LUFS, under its target of %g, finished without a warning", got, integrated)
		}
		return
	}
	var named float64
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], prefix) {
		t.Errorf("warnings %q; want one starting %q", warnings, prefix)
	} else if _, err := fmt.Sscanf(warnings[0][len(prefix):], "%g", &named); err != nil || math.Abs(named-got) > 0.5 {
		t.Errorf("the warning names %g LUFS (%v); FFmpeg measures the file at %.2f", named, err, got)
	}
	if got > integrated-0.5 {
		t.Errorf("a file at %.2f LUFS, its target %g, warns %q", got, integrated, warnings)
	}
}

package jobs

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/voxgate/voxgate/internal/testenv"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestLoudness levels a job's whole file to its loudness target at the
// join, judged by FFmpeg's ebur128: a lossless file and a lossy one, at a
// target eSpeak reaches without the limiter and at one that needs it,
// a short Opus file and a longer one; and a target out of bounds is
// refused. A file that ends quieter than its target says so in the
// job's warnings (checkQuieterWarning), and in its webhook's signed
// body as the job has them (checkHookWarnings).
func TestLoudness(t *testing.T) {
	t.Parallel()
	tg := startBuilt(t)
	hooks := newHookRecorder(t)
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
				"webhook": map[string]any{"url": hooks.url, "secret": hookSecret},
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
			hooks.checkWarnings(t, j)
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

// hookSecret is the webhook secret of hookRecorder's jobs.
const hookSecret = "whsec_test_0123456789abcdef"

// hookRecorder is a webhook receiver that keeps each job's delivery
// (its headers and body), answering 204.
type hookRecorder struct {
	url string
	mu  sync.Mutex
	got map[string]hookDelivery // by the body's data.id
}

type hookDelivery struct {
	header http.Header
	body   []byte
}

func newHookRecorder(t *testing.T) *hookRecorder {
	t.Helper()
	h := &hookRecorder{got: map[string]hookDelivery{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev struct {
			Data struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &ev)
		h.mu.Lock()
		h.got[ev.Data.ID] = hookDelivery{r.Header.Clone(), body}
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL + "/hook"
	return h
}

// checkWarnings waits for finished job j's webhook delivery and checks
// that its body, signed, has the job's warnings as the job resource
// has them: the same strings, or [] when there are none.
func (h *hookRecorder) checkWarnings(t *testing.T, j job) {
	t.Helper()
	var d hookDelivery
	harness.WaitFor(t, "the job's webhook delivery", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		var ok bool
		d, ok = h.got[j.ID]
		return ok
	})
	checkSigned(t, "the webhook", hookSecret, d.header, d.body)
	var ev struct {
		Data struct {
			Warnings json.RawMessage `json:"warnings"`
		} `json:"data"`
	}
	if err := json.Unmarshal(d.body, &ev); err != nil {
		t.Fatalf("webhook body %s: %v", d.body, err)
	}
	if len(j.Warnings) == 0 {
		if string(ev.Data.Warnings) != "[]" {
			t.Errorf("the webhook's warnings %s of a job with none, want []", ev.Data.Warnings)
		}
		return
	}
	var got []string
	if err := json.Unmarshal(ev.Data.Warnings, &got); err != nil || !slices.Equal(got, j.Warnings) {
		t.Errorf("the webhook's warnings %s (%v), the job's %q", ev.Data.Warnings, err, j.Warnings)
	}
}

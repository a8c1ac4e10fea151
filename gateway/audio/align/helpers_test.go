package align

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// passages are what the test clips say: narration, dialogue, numbers and
// lists, long and short sentences.
var passages = []string{
	"The quick brown fox jumps over the lazy dog. Every morning, the old lighthouse keeper climbed the spiral stairs, " +
		"polished the great lens, and wrote a single line in his logbook before the sun rose over the harbour.",
	"Voxgate sits in front of every text-to-speech provider. It checks each request, renders the audio, " +
		"levels it to the requested loudness, and writes one row to the request log; nothing else is kept.",
	"Please remember to bring three things tomorrow: your passport, a pen, and the signed contract. " +
		"The meeting starts at nine thirty sharp, and the doors close five minutes later.",
	"She asked whether the train was late again. He shrugged, folded his newspaper, and said that it had been " +
		"late every day this week, which was, in its own way, a kind of reliability.",
	"Photosynthesis converts light energy into chemical energy. Plants absorb carbon dioxide through tiny pores " +
		"in their leaves, and release oxygen as a by-product of splitting water molecules.",
	"If you can hear this sentence clearly, the alignment is working. Short words like a, an, and of are " +
		"the hardest to place, because they are spoken quickly and often blur into their neighbours.",
}

// binDir is where `make build` put the binaries.
func binDir() string {
	if d := os.Getenv("VOXGATE_BIN_DIR"); d != "" {
		return d
	}
	wd, _ := os.Getwd()
	return filepath.Join(wd, "..", "..", "bin")
}

// espeakPlugin starts the real eSpeak plugin for one test.
func espeakPlugin(tb testing.TB) sdk.Provider {
	tb.Helper()
	path := filepath.Join(binDir(), "plugins", "voxgate-espeak")
	if _, err := os.Stat(path); err != nil {
		tb.Fatalf("%s missing: run `make build` first", path)
	}
	return sdktest.StartPlugin(tb, path)
}

// rendered is an eSpeak clip with its own word events as timestamps.
type rendered struct {
	clip  *audio.Clip
	words []sdk.WordTimestamp
}

// render speaks text in voice at speed through the plugin.
func render(tb testing.TB, p sdk.Provider, text, voice string, speed float64) rendered {
	tb.Helper()
	resp, err := p.Synthesize(context.Background(), &sdk.SynthesizeRequest{
		Model: "espeak-ng", Voice: voice, Text: text, Speed: speed, Format: sdk.FormatPCM, Timestamps: true,
	})
	if err != nil {
		tb.Fatalf("espeak %s x%g: %v", voice, speed, err)
	}
	c, err := audio.Decode(resp.Audio, resp.MediaType)
	if err != nil {
		tb.Fatal(err)
	}
	return rendered{clip: c, words: resp.Timestamps}
}

// errorStats are word-boundary errors of one test set, in seconds.
type errorStats struct {
	errs []float64
}

func (s *errorStats) add(truth, got []sdk.WordTimestamp) error {
	if len(truth) != len(got) {
		return fmt.Errorf("%d words, want %d", len(got), len(truth))
	}
	for k := range truth {
		s.errs = append(s.errs, math.Abs(truth[k].Start-got[k].Start), math.Abs(truth[k].End-got[k].End))
	}
	return nil
}

func (s *errorStats) quantile(q float64) float64 {
	e := slices.Clone(s.errs)
	slices.Sort(e)
	if len(e) == 0 {
		return 0
	}
	return e[min(int(q*float64(len(e))), len(e)-1)]
}

func (s *errorStats) String() string {
	return fmt.Sprintf("%d boundaries: median %.0f ms, p90 %.0f ms, p95 %.0f ms, p99 %.0f ms, max %.0f ms",
		len(s.errs), 1000*s.quantile(0.5), 1000*s.quantile(0.9), 1000*s.quantile(0.95), 1000*s.quantile(0.99), 1000*s.quantile(1))
}

// checkWords asserts the invariants every alignment keeps: one timestamp
// per word, in order, inside the clip.
func checkWords(tb testing.TB, words []sdk.WordTimestamp, want []sdk.WordTimestamp, seconds float64) {
	tb.Helper()
	if len(words) != len(want) {
		tb.Fatalf("%d words, want %d", len(words), len(want))
	}
	prev := 0.0
	for k, w := range words {
		if w.Text != want[k].Text {
			tb.Fatalf("word %d is %q, want %q", k, w.Text, want[k].Text)
		}
		if w.Start < prev || w.End < w.Start || w.End > seconds {
			tb.Fatalf("word %d %q [%.3f, %.3f] is out of order or outside the clip (%.3f s, previous end %.3f)", k, w.Text, w.Start, w.End, seconds, prev)
		}
		prev = w.End
	}
}

func joinWords(ws []sdk.WordTimestamp) string {
	var b strings.Builder
	for _, w := range ws {
		fmt.Fprintf(&b, "%s[%.2f-%.2f] ", w.Text, w.Start, w.End)
	}
	return b.String()
}

// festival renders text with the Festival speech synthesizer (another
// engine entirely: a diphone or an HTS voice built from a human speaker)
// and returns the clip with Festival's own word times. `make deps`
// installs it; without it the test is skipped, except under CI.
func festival(tb testing.TB, text, voice string) rendered {
	tb.Helper()
	bin, err := exec.LookPath("festival")
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatal("festival not installed (make deps installs it)")
		}
		tb.Skip("festival not installed: run `make deps`")
	}
	dir := tb.TempDir()
	wav := filepath.Join(dir, "f.wav")
	script := fmt.Sprintf(`(voice_%s)
(set! utt (Utterance Text %q))
(utt.synth utt)
(utt.save.wave utt %q 'riff)
(mapcar (lambda (w) (format t "%%s %%f %%f\n" (item.name w) (item.feat w "word_start") (item.feat w "word_end"))) (utt.relation.items utt 'Word))
`, voice, text, wav)
	sp := filepath.Join(dir, "s.scm")
	if err := os.WriteFile(sp, []byte(script), 0o600); err != nil {
		tb.Fatal(err)
	}
	out, err := exec.Command(bin, "-b", sp).CombinedOutput()
	if err != nil {
		tb.Fatalf("festival: %v: %s", err, out)
	}
	data, err := os.ReadFile(wav)
	if err != nil {
		tb.Fatalf("festival voice %s (make deps installs it): %s", voice, out)
	}
	c, err := audio.Decode(data, "audio/wav")
	if err != nil {
		tb.Fatal(err)
	}
	var words []sdk.WordTimestamp
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var w sdk.WordTimestamp
		if _, err := fmt.Sscanf(line, "%s %f %f", &w.Text, &w.Start, &w.End); err == nil {
			words = append(words, w)
		}
	}
	return rendered{clip: c, words: words}
}

// matchWords pairs truth words with aligned words of the same text, in
// order, for engines that split the text differently ("by-product" is
// two words to Festival).
func matchWords(truth, got []sdk.WordTimestamp) (t, g []sdk.WordTimestamp) {
	norm := func(s string) string { return strings.ToLower(strings.Trim(s, ".,;:!?\"'")) }
	k := 0
	for _, w := range truth {
		for j := k; j < len(got) && j < k+3; j++ {
			if norm(got[j].Text) == norm(w.Text) {
				t, g = append(t, w), append(g, got[j])
				k = j + 1
				break
			}
		}
	}
	return t, g
}

func resampleTo(c *audio.Clip, rate int) (*audio.Clip, error) { return audio.Resample(c, rate) }

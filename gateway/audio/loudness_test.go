package audio

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/testenv"
)

// espeakVoice renders text with the espeak-ng tool in voice at speed
// words per minute and decodes it.
func espeakVoice(tb testing.TB, voice string, wpm int, text string) *Clip {
	tb.Helper()
	bin := testenv.NeedTool(tb, "espeak-ng")
	path := filepath.Join(tb.TempDir(), "speech.wav")
	if out, err := exec.Command(bin, "-v", voice, "-s", strconv.Itoa(wpm), "-w", path, text).CombinedOutput(); err != nil {
		tb.Fatalf("espeak-ng: %v: %s", err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := Decode(b, "audio/wav")
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// loudnessVoices are eSpeak voices of several languages and speeds.
var loudnessVoices = []struct {
	voice string
	wpm   int
	text  string
}{
	{"en-us", 175, "The quick brown fox jumps over the lazy dog. Peter Piper picked a peck of pickled peppers."},
	{"de", 120, "Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich, und es regnet."},
	{"fr", 260, "Portez ce vieux whisky au juge blond qui fume, puis chantez une chanson douce."},
	{"es", 200, "El veloz murciélago hindú comía feliz cardillo y kiwi; la cigüeña tocaba el saxofón."},
}

// encodeExt is the file extension and ffmpeg input options of format.
func encodeExt(format string) (string, []string) {
	switch format {
	case FormatULaw:
		return "ul", []string{"-f", "mulaw", "-ar", "8000"}
	case FormatALaw:
		return "al", []string{"-f", "alaw", "-ar", "8000"}
	case FormatPCM:
		return "pcm", []string{"-f", "s16le", "-ar", "48000"}
	case FormatOpus:
		return "opus", nil
	}
	return format, nil
}

// TestNormalizeLoudnessFFmpeg levels eSpeak speech of four languages and
// speeds to several targets, encodes it in every output format (every
// pair of the three, 48 cases), and has
// FFmpeg's ebur128 filter judge the answer: integrated within ±0.5 LU of
// the target, true peak at most the ceiling + 0.1 dB.
func TestNormalizeLoudnessFFmpeg(t *testing.T) {
	testenv.NeedTool(t, "ffmpeg")
	targets := []LoudnessTarget{{-16, -1}, {-23, -1}, {-14, -1}, {-30, -6}}
	formats := []string{FormatWAV, FormatFLAC, FormatMP3, FormatOpus, FormatULaw, FormatALaw}
	for vi, v := range loudnessVoices {
		src := espeakVoice(t, v.voice, v.wpm, v.text)
		for ti, tg := range targets {
			for fi, f := range formats {
				// Half the cross product, chosen by parity: every pair of
				// voice, target and format still meets (each has values of
				// both parities), at half the suite time; -run with a
				// name runs any case.
				if (vi+ti+fi)%2 == 1 {
					continue
				}
				t.Run(fmt.Sprintf("%s-%d/%g,%g/%s", v.voice, v.wpm, tg.Integrated, tg.TruePeak, f), func(t *testing.T) {
					t.Parallel()
					c := &Clip{Rate: src.Rate, Samples: append([]float32(nil), src.Samples...)}
					b, _, rep, err := EncodeLoudness(c, tg, Output{Format: f}, Limits{})
					if err != nil {
						t.Fatal(err)
					}
					ext, in := encodeExt(f)
					got := testenv.FFmpegLoudness(t, b, ext, in...)
					t.Logf("ffmpeg: I=%+.2f LU off the target, peak %.2f dBTP", got.Integrated-tg.Integrated, got.TruePeak)
					if rep.Missed {
						// Out of reach under the ceiling (eSpeak at -14 LUFS in
						// 32 kbps Opus): the ceiling still holds, the answer is
						// quieter, never louder, and the service warns.
						if got.TruePeak > tg.TruePeak+0.1 || got.Integrated > tg.Integrated+0.5 {
							t.Errorf("missed target: ffmpeg measures I=%.2f LUFS, peak %.2f dBTP", got.Integrated, got.TruePeak)
						}
						t.Logf("target out of reach: ffmpeg measures I=%.2f LUFS, peak %.2f dBTP", got.Integrated, got.TruePeak)
						return
					}
					// ±0.5 LU is the bound; every answer is measured
					// after its encoder (lossless ones need none), so each
					// lands within ±0.2 (MP3 on a fixed headroom, unmeasured,
					// came out 0.4 to 0.5 LU low).
					if math.Abs(got.Integrated-tg.Integrated) > 0.2 || got.TruePeak > tg.TruePeak+0.1 {
						t.Errorf("ffmpeg measures I=%.2f LUFS, peak %.2f dBTP; want %.1f ±0.2 LUFS, peak ≤ %.1f (ours: %+v)",
							got.Integrated, got.TruePeak, tg.Integrated, tg.TruePeak+0.1, rep)
					}
				})
			}
		}
	}
}

// TestNormalizeLoudnessShortClip levels a word shorter than the 400 ms
// gating block, which is measured ungated: played four times in a row
// (ffmpeg -stream_loop 3) it must measure at the target.
func TestNormalizeLoudnessShortClip(t *testing.T) {
	c := espeakVoice(t, "en-us", 300, "yes")
	if c.Seconds() >= GatingBlock {
		c.Samples = c.Samples[:int(0.35*float64(c.Rate))]
	}
	tg := LoudnessTarget{Integrated: -18, TruePeak: -1}
	rep, err := NormalizeLoudness(c, tg, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Short {
		t.Fatalf("a %.2f s clip was not measured as short: %+v", c.Seconds(), rep)
	}
	b, _, err := Encode(c, Output{Format: FormatWAV})
	if err != nil {
		t.Fatal(err)
	}
	got := testenv.FFmpegLoudness(t, b, "wav", "-stream_loop", "3")
	if math.Abs(got.Integrated-tg.Integrated) > 0.5 || got.TruePeak > tg.TruePeak+0.1 {
		t.Errorf("ffmpeg measures the looped clip at I=%.2f LUFS, peak %.2f dBTP; want %g ±0.5, peak ≤ %g (ours: %+v)",
			got.Integrated, got.TruePeak, tg.Integrated, tg.TruePeak+0.1, rep)
	}
}

// TestNormalizeLoudnessSilence leaves digital silence alone.
func TestNormalizeLoudnessSilence(t *testing.T) {
	c := &Clip{Rate: 24000, Samples: make([]float32, 24000)}
	rep, err := NormalizeLoudness(c, LoudnessTarget{-16, -1}, 0)
	if err != nil || !rep.Gated {
		t.Fatalf("silence: %+v, %v", rep, err)
	}
	for _, s := range c.Samples {
		if s != 0 {
			t.Fatal("silence was changed")
		}
	}
}

func TestLoudnessParamsValidate(t *testing.T) {
	for _, tc := range []struct {
		p   LoudnessParams
		bad []string
	}{
		{LoudnessParams{Integrated: ptr(-16.0)}, nil},
		{LoudnessParams{Integrated: ptr(-16.0), TruePeak: ptr(-1.5)}, nil},
		{LoudnessParams{}, []string{"integrated"}},
		{LoudnessParams{Integrated: ptr(-4.0)}, []string{"integrated"}},
		{LoudnessParams{Integrated: ptr(-71.0), TruePeak: ptr(0.5)}, []string{"integrated", "truePeak"}},
		{LoudnessParams{Integrated: ptr(-20.0), TruePeak: ptr(-21.0)}, []string{"truePeak"}},
	} {
		errs := tc.p.Validate("loudness")
		if len(errs) != len(tc.bad) {
			t.Errorf("%+v: %v, want errors on %v", tc.p, errs, tc.bad)
			continue
		}
		for i, e := range errs {
			if len(e.Path) != 2 || e.Path[0] != "loudness" || e.Path[1] != tc.bad[i] || e.Message == "" {
				t.Errorf("%+v: error %d is %+v, want on loudness.%s", tc.p, i, e, tc.bad[i])
			}
		}
	}
}

// TestStreamLeveler levels eSpeak speech written in 20 ms chunks, with
// the voice's loudness known (audio leaves from the first chunk on,
// 5.5 ms late), known 4 LU wrong, and unknown (the first two seconds are
// held back, then measured), at a moderate and at two loud targets whose
// peaks need much limiting, and has FFmpeg judge each: within ±1 LU, true
// peak under the ceiling. The learned voice at -16 and -14 LUFS, and the
// wrong estimate, land there only through the running correction of what
// was sent (without it, 1.5 to 3 LU low).
func TestStreamLeveler(t *testing.T) {
	one := espeakVoice(t, "en-us", 175, loudnessVoices[0].text)
	// 5.6 s and 22 s of speech: a sentence, and a paragraph.
	long := &Clip{Rate: one.Rate, Samples: slices.Concat(one.Samples, one.Samples, one.Samples, one.Samples)}
	for _, tc := range []struct {
		name     string
		src      *Clip
		estimate float64 // LU from the clip's own loudness; NaN: unknown
		target   float64
	}{
		{"learned/-16", one, 0, -16}, {"learned/-14", one, 0, -14}, {"learned/-23", one, 0, -23},
		{"wrong/-16", one, -4, -16}, {"unknown/-16", one, math.NaN(), -16},
		{"long/learned/-16", long, 0, -16}, {"long/learned/-14", long, 0, -14}, {"long/learned/-23", long, 0, -23},
		{"long/wrong/-16", long, 4, -16},
	} {
		src := tc.src
		in, _, err := MeasureLoudness(src)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(tc.name, func(t *testing.T) {
			tc.estimate += in
			tg := LoudnessTarget{Integrated: tc.target, TruePeak: -1}
			l, err := NewStreamLeveler(src.Rate, tg, tc.estimate, 2*time.Second, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			var out []float32
			step := src.Rate / 50
			for i := 0; i < len(src.Samples); i += step {
				before := len(out)
				if out, err = l.Write(src.Samples[i:min(i+step, len(src.Samples))], out); err != nil {
					t.Fatal(err)
				}
				held := len(out) == before
				if learned := !math.IsNaN(tc.estimate); i > src.Rate/100 && i+step < 2*src.Rate && held == learned {
					t.Fatalf("at %d samples: held back %v with the voice's loudness known %v", i, held, learned)
				}
			}
			out = l.Flush(out)
			if len(out) != len(src.Samples) {
				t.Fatalf("%d samples out of %d", len(out), len(src.Samples))
			}
			if got := l.InputLufs(); math.Abs(got-in) > 0.01 {
				t.Errorf("InputLufs %.2f, the clip measures %.2f", got, in)
			}
			b, _, err := Encode(&Clip{Rate: src.Rate, Samples: out}, Output{Format: FormatWAV})
			if err != nil {
				t.Fatal(err)
			}
			got := testenv.FFmpegLoudness(t, b, "wav")
			t.Logf("%.1f s: ffmpeg I=%.2f LUFS, peak %.2f dBTP; correction at the end %+.1f dB", src.Seconds(), got.Integrated, got.TruePeak, l.CorrectionDb())
			if math.Abs(got.Integrated-tg.Integrated) > 1 || got.TruePeak > tg.TruePeak+0.1 {
				t.Errorf("ffmpeg measures I=%.2f LUFS, peak %.2f dBTP; want %g ±1, peak ≤ %g", got.Integrated, got.TruePeak, tg.Integrated, tg.TruePeak+0.1)
			}
		})
	}
}

package audio

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// speechTexts are what the eSpeak clips say: a short phrase, a sentence
// with plosives and sibilants (high crest factor), and a longer passage.
var speechTexts = []string{
	"Hello from the gateway.",
	"Peter Piper picked a peck of pickled peppers; six sticky skeletons stood still.",
	"The quick brown fox jumps over the lazy dog. Voxgate levels every clip to the requested loudness, " +
		"converts its sample rate, and encodes it once for the client.",
}

// espeakWAV renders text with the espeak-ng command line tool (real
// eSpeak NG output, 22050 Hz 16-bit mono WAV) and returns the file's bytes.
// It skips the test when the tool is absent.
func espeakWAV(tb testing.TB, text string) []byte {
	tb.Helper()
	bin, err := exec.LookPath("espeak-ng")
	if err != nil {
		tb.Skip("espeak-ng not installed (apt-get install espeak-ng)")
	}
	path := filepath.Join(tb.TempDir(), "speech.wav")
	if out, err := exec.Command(bin, "-w", path, text).CombinedOutput(); err != nil {
		tb.Fatalf("espeak-ng: %v: %s", err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// espeakClip renders text with eSpeak NG and decodes it with Decode.
func espeakClip(tb testing.TB, text string) *Clip {
	tb.Helper()
	c, err := Decode(espeakWAV(tb, text), "audio/wav")
	if err != nil {
		tb.Fatalf("decoding eSpeak WAV: %v", err)
	}
	if c.Rate != 22050 || len(c.Samples) < c.Rate/2 {
		tb.Fatalf("eSpeak clip: %d samples at %d Hz", len(c.Samples), c.Rate)
	}
	return c
}

// speechClip returns about seconds of real eSpeak speech, the longest
// passage repeated.
func speechClip(tb testing.TB, seconds float64) *Clip {
	tb.Helper()
	one := espeakClip(tb, strings.Repeat(speechTexts[2]+" ", 3))
	want := int(seconds * float64(one.Rate))
	out := make([]float32, 0, want)
	for len(out) < want {
		out = append(out, one.Samples[:min(len(one.Samples), want-len(out))]...)
	}
	return &Clip{Rate: one.Rate, Samples: out}
}

// sine returns amplitude·sin(2π·freq·t) sampled at rate for seconds.
func sine(rate int, freq, amplitude, seconds float64) *Clip {
	n := int(seconds * float64(rate))
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(amplitude * math.Sin(2*math.Pi*freq*float64(i)/float64(rate)))
	}
	return &Clip{Rate: rate, Samples: s}
}

// addSine adds a tone to c in place.
func addSine(c *Clip, freq, amplitude float64) {
	for i := range c.Samples {
		c.Samples[i] += float32(amplitude * math.Sin(2*math.Pi*freq*float64(i)/float64(c.Rate)))
	}
}

// noise returns uniform white noise of the given peak amplitude, seeded so
// every run sees the same signal.
func noise(rate int, amplitude, seconds float64, seed uint64) *Clip {
	r := rand.New(rand.NewPCG(seed, 42))
	s := make([]float32, int(seconds*float64(rate)))
	for i := range s {
		s[i] = float32(amplitude * (2*r.Float64() - 1))
	}
	return &Clip{Rate: rate, Samples: s}
}

// toneAmplitude measures the amplitude of the freq component of s with the
// Goertzel algorithm over a Hann window (so leakage from other tones stays
// below -100 dB a few bins away); a sine of amplitude A reads A.
func toneAmplitude(s []float32, rate int, freq float64) float64 {
	n := len(s)
	w := 2 * math.Pi * freq / float64(rate)
	coeff := 2 * math.Cos(w)
	var s1, s2, wsum float64
	for i, x := range s {
		h := 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(n-1))
		wsum += h
		s0 := float64(x)*h + coeff*s1 - s2
		s2, s1 = s1, s0
	}
	re := s1 - s2*math.Cos(w)
	im := s2 * math.Sin(w)
	return 2 * math.Hypot(re, im) / wsum
}

// zeroCrossingFreq estimates the frequency of a pure tone from its rising
// zero crossings, interpolated between samples.
func zeroCrossingFreq(s []float32, rate int) float64 {
	first, last, count := -1.0, -1.0, 0
	for i := 1; i < len(s); i++ {
		if s[i-1] < 0 && s[i] >= 0 {
			t := float64(i-1) + float64(-s[i-1])/float64(s[i]-s[i-1])
			if first < 0 {
				first = t
			} else {
				count++
			}
			last = t
		}
	}
	if count == 0 {
		return 0
	}
	return float64(count) * float64(rate) / (last - first)
}

// middle returns the central part of s, dropping frac of its length at each
// end (filter transients).
func middle(s []float32, frac float64) []float32 {
	k := int(float64(len(s)) * frac)
	return s[k : len(s)-k]
}

func db(x float64) float64 { return 20 * math.Log10(x) }

func ptr[T any](v T) *T { return &v }

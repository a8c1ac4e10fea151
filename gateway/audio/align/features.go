package align

import (
	"math"

	"gonum.org/v1/gonum/dsp/fourier"
)

// Feature extraction parameters. The clip and the reference are both
// resampled to featureRate first, so one filterbank serves every request.
const (
	// featureRate is the rate features are computed at: speech carries
	// what matters for telling phones apart below 8 kHz.
	featureRate = 16000
	// frameHop is the frame step, 10 ms: the resolution of the fine DTW
	// and so of the word boundaries before refinement.
	frameHop = featureRate / 100
	// frameLen is the analysis window, 25 ms: the usual speech window,
	// long enough for two pitch periods of a low voice.
	frameLen = featureRate / 40
	// fftSize is the FFT length, the next power of two above frameLen.
	fftSize = 512
	// melBands is the number of triangular mel filters (as in aeneas).
	melBands = 40
	// cepstra is the number of cepstral coefficients kept per frame, c1
	// to c12. c0 (overall level) is left out: loudness differs between
	// voices and says nothing about which sound is spoken.
	cepstra = 8
	// dims is the size of a frame's vector: the cepstra and one level
	// dimension (loudness relative to the clip's speech, see level), so
	// that pauses match pauses.
	dims = 2*cepstra + 1
	// preEmphasis flattens speech's spectral tilt before analysis.
	preEmphasis = 0.97
	// melLow and melHigh bound the filterbank, as in aeneas: below
	// 133 Hz is pitch and hum, above 6.9 kHz little but noise.
	melLow, melHigh = 133.3333, 6855.4976
)

// frameSeconds is the duration of one frame step.
const frameSeconds = float64(frameHop) / featureRate

// features are the per-frame descriptors of one clip.
type features struct {
	// n is the number of frames.
	n int
	// mfcc holds n rows of dims values, row-major: the cepstra, mean-
	// and variance-normalized over the clip's speech (so a voice's
	// average timbre and the channel cancel out), then the level.
	mfcc []float32
	// energy is each frame's log energy in dB relative to full scale.
	energy []float32
	// speech marks the frames that carry sound (see prepare).
	speech []bool
}

// row returns frame i's coefficients.
func (f *features) row(i int) []float32 {
	return f.mfcc[i*dims : (i+1)*dims : (i+1)*dims]
}

// analyzer holds what feature extraction reuses between frames and clips:
// the FFT plan, the window, the filterbank and the DCT matrix. It is not
// safe for concurrent use; each alignment makes its own (a few KB).
type analyzer struct {
	fft    *fourier.FFT
	window [frameLen]float64
	// filters are the mel filters as runs of FFT bins with weights.
	filters [melBands]melFilter
	dct     [cepstra][melBands]float64
	buf     []float64
	coeff   []complex128
	power   []float64
	logMel  [melBands]float64
}

type melFilter struct {
	first   int
	weights []float64
}

func newAnalyzer() *analyzer {
	a := &analyzer{
		fft:   fourier.NewFFT(fftSize),
		buf:   make([]float64, fftSize),
		coeff: make([]complex128, fftSize/2+1),
		power: make([]float64, fftSize/2+1),
	}
	for i := range a.window {
		a.window[i] = 0.54 - 0.46*math.Cos(2*math.Pi*float64(i)/float64(frameLen-1)) // Hamming
	}
	mel := func(hz float64) float64 { return 2595 * math.Log10(1+hz/700) }
	hz := func(m float64) float64 { return 700 * (math.Pow(10, m/2595) - 1) }
	lo, hi := mel(melLow), mel(melHigh)
	var edges [melBands + 2]float64 // in FFT bins, fractional
	for i := range edges {
		edges[i] = hz(lo+(hi-lo)*float64(i)/float64(melBands+1)) * fftSize / featureRate
	}
	for b := range melBands {
		left, center, right := edges[b], edges[b+1], edges[b+2]
		first := int(math.Ceil(left))
		var w []float64
		for k := first; float64(k) < right; k++ {
			x := float64(k)
			if x <= center {
				w = append(w, (x-left)/(center-left))
			} else {
				w = append(w, (right-x)/(right-center))
			}
		}
		a.filters[b] = melFilter{first: first, weights: w}
	}
	for c := range cepstra {
		for b := range melBands {
			// DCT-II of the log mel energies, skipping c0.
			a.dct[c][b] = math.Cos(math.Pi * float64(c+1) * (float64(b) + 0.5) / melBands)
		}
	}
	return a
}

// extract computes the features of samples (mono, at featureRate).
//
// Hot path: one FFT, 40 short dot products and a 12×40 DCT per 10 ms of
// audio, into buffers reused across frames; BenchmarkAlign covers it.
// Left out of the race detector's instrumentation (go:norace), which
// made every load of these loops a call into it: extract reads samples
// and writes only the analyzer's scratch (each alignment makes its own
// analyzer) and the features it returns, whose later readers are
// instrumented, as are the FFT's own loads. No effect on other builds.
//
//go:norace
func (a *analyzer) extract(samples []float32) *features {
	n := 0
	if len(samples) >= frameLen {
		n = 1 + (len(samples)-frameLen)/frameHop
	} else if len(samples) > 0 {
		n = 1
	}
	f := &features{n: n, mfcc: make([]float32, n*dims), energy: make([]float32, n)}
	for i := range n {
		start := i * frameHop
		prev := float64(0)
		if start > 0 {
			prev = float64(samples[start-1])
		}
		energy := 0.0
		for k := range frameLen {
			x := 0.0
			if start+k < len(samples) {
				x = float64(samples[start+k])
			}
			energy += x * x
			a.buf[k] = (x - preEmphasis*prev) * a.window[k]
			prev = x
		}
		clear(a.buf[frameLen:])
		f.energy[i] = float32(10 * math.Log10(energy/frameLen+1e-10))
		a.fft.Coefficients(a.coeff, a.buf)
		for k, c := range a.coeff {
			a.power[k] = real(c)*real(c) + imag(c)*imag(c)
		}
		for b := range a.filters {
			flt := &a.filters[b]
			s := 0.0
			for k, w := range flt.weights {
				s += w * a.power[flt.first+k]
			}
			// The floor keeps digital silence finite; it sits far below
			// any audible band energy.
			a.logMel[b] = math.Log(s + 1e-8)
		}
		row := f.row(i)
		for c := range cepstra {
			s := 0.0
			for b, v := range a.logMel {
				s += a.dct[c][b] * v
			}
			row[c] = float32(s)
		}
	}
	return f
}

// normalize applies cepstral mean and variance normalization over the
// frames that carry sound, so that voices of different timbre, and
// clips of different loudness and channel, become comparable. Silent
// frames are left out of the statistics: a clip with long pauses would
// otherwise be normalized towards silence.
func (f *features) normalize(speech []bool) {
	var mean, sq [cepstra]float64
	count := 0
	for i := range f.n {
		if speech != nil && !speech[i] {
			continue
		}
		for c, v := range f.row(i)[:cepstra] {
			mean[c] += float64(v)
			sq[c] += float64(v) * float64(v)
		}
		count++
	}
	if count == 0 {
		return
	}
	var scale [cepstra]float64
	for c := range mean {
		mean[c] /= float64(count)
		variance := sq[c]/float64(count) - mean[c]*mean[c]
		scale[c] = 1 / math.Sqrt(max(variance, 1e-6))
	}
	for i := range f.n {
		row := f.row(i)
		for c := range cepstra {
			row[c] = float32((float64(row[c]) - mean[c]) * scale[c])
		}
	}
}

package audio

import (
	"fmt"
	"math"

	"github.com/voxgate/voxgate/gateway/audio/internal/ebur128"
	"github.com/voxgate/voxgate/gateway/audio/internal/opus"
)

// Loudness bounds of the request's loudness field (EBU R128 / ITU-R
// BS.1770-4): integrated loudness in LUFS, true-peak ceiling in dBTP.
const (
	// MinIntegratedLufs and MaxIntegratedLufs bound loudness.integrated:
	// -70 LUFS is R128's absolute gate (quieter is silence to the meter);
	// louder than -5 LUFS is beyond what speech reaches under any
	// ceiling without audible distortion.
	MinIntegratedLufs = -70.0
	MaxIntegratedLufs = -5.0
	// MinTruePeakDbtp and MaxTruePeakDbtp bound loudness.truePeak.
	MinTruePeakDbtp = -20.0
	MaxTruePeakDbtp = 0.0
	// DefaultTruePeakDbtp is the ceiling when a target names none: EBU
	// R128's -1 dBTP, which leaves lossy encoders their headroom.
	DefaultTruePeakDbtp = -1.0
	// GateLufs is R128's absolute gate: a clip measuring below it is
	// silence and NormalizeLoudness leaves it alone.
	GateLufs = -70.0
	// GatingBlock is BS.1770's gating block: a clip shorter than this has
	// no gated measurement at all (see NormalizeLoudness).
	GatingBlock = 0.4 // seconds
)

// Loudness tuning.
const (
	// loudnessTolerance is how close (LU) the leveling search gets the
	// integrated loudness to the target before it stops: a tenth of the
	// ±0.5 LU that EBU's tech 3341 allows a meter.
	loudnessTolerance = 0.05
	// truePeakSafetyDb is how far under the ceiling the limiter aims: our
	// oversampled peak and a meter's (FFmpeg's ebur128 resamples to
	// 192 kHz with a longer filter) differ by up to a tenth of a dB on
	// peaks near Nyquist (see tpTaps).
	truePeakSafetyDb = 0.1
	// tpTaps is the interpolation filter's length per phase. BS.1770-4's
	// annex 2 uses 12 (48 taps at 4x), whose passband droops near
	// Nyquist; a limiter pushes exactly such peaks to the ceiling, where
	// 12 taps read eSpeak's sibilants up to 0.5 dB low against FFmpeg's
	// 192 kHz resampling, 24 taps (Kaiser β 5) at most 0.12 dB.
	tpTaps = 24
	// tpMinRate is the oversampled rate the true-peak detector reaches at
	// least: 4x at 24 kHz, 6x at 16 kHz, 12x at 8 kHz (BS.1770 asks 4x
	// at 48 kHz; lower rates need more phases to see the same peaks).
	tpMinRate = 96000
	// maxLoudnessMakeupDb bounds the extra gain the search adds to make up
	// for what the limiter takes. Synthetic speech (eSpeak) has a peak to
	// loudness ratio near 20 dB, so -14 LUFS under -2 dBTP takes some
	// 17 dB of limiting on its loudest peaks.
	maxLoudnessMakeupDb = 30.0
	// lossyPeakMarginDb is how far under the ceiling a lossy answer's
	// decoded true peak must be, as the gateway measures it: decoders
	// differ by tenths of a dB on a lossy stream's peaks (FFmpeg's own
	// Opus decoder against libopus).
	lossyPeakMarginDb = 0.3
	// mp3PeakMarginDb is lossyPeakMarginDb for MP3, which libmpg123 and
	// FFmpeg decode alike to a hundredth of a dB: what is left is the
	// true-peak meters' own difference (see truePeakSafetyDb).
	mp3PeakMarginDb = 0.15
)

// LossyPeakMarginDb is how far under the true-peak ceiling a lossy
// format's decoded answer must measure by the gateway's own decoder and
// meter, so that FFmpeg's, which decode and interpolate a little
// differently, find it under the ceiling too (a job's file is held to
// it as a clip's answer is).
func LossyPeakMarginDb(format string) float64 {
	if format == FormatMP3 {
		return mp3PeakMarginDb
	}
	return lossyPeakMarginDb
}

// LoudnessParams is the request's loudness object: nil fields were absent.
type LoudnessParams struct {
	// Integrated is the target integrated loudness in LUFS (required).
	Integrated *float64
	// TruePeak is the true-peak ceiling in dBTP (default -1).
	TruePeak *float64
}

// LoudnessTarget is a resolved loudness target.
type LoudnessTarget struct {
	// Integrated is the integrated loudness in LUFS.
	Integrated float64
	// TruePeak is the ceiling in dBTP no true peak of the answer passes.
	TruePeak float64
}

// Target resolves p's defaults; p must be valid.
func (p *LoudnessParams) Target() LoudnessTarget {
	t := LoudnessTarget{TruePeak: DefaultTruePeakDbtp}
	if p.Integrated != nil {
		t.Integrated = *p.Integrated
	}
	if p.TruePeak != nil {
		t.TruePeak = *p.TruePeak
	}
	return t
}

// Validate checks p with paths under root (e.g. "loudness").
func (p *LoudnessParams) Validate(root ...string) []FieldError {
	var errs []FieldError
	at := func(f string) []string { return append(append([]string(nil), root...), f) }
	switch v := p.Integrated; {
	case v == nil:
		errs = append(errs, FieldError{Path: at("integrated"), Message: fmt.Sprintf("integrated is required: the target loudness in LUFS, %g to %g (e.g. -16 for spoken word, -23 for broadcast)", MinIntegratedLufs, MaxIntegratedLufs)})
	case !(*v >= MinIntegratedLufs && *v <= MaxIntegratedLufs):
		errs = append(errs, FieldError{Path: at("integrated"), Message: fmt.Sprintf("integrated must be between %g and %g LUFS", MinIntegratedLufs, MaxIntegratedLufs)})
	}
	if v := p.TruePeak; v != nil && !(*v >= MinTruePeakDbtp && *v <= MaxTruePeakDbtp) {
		errs = append(errs, FieldError{Path: at("truePeak"), Message: fmt.Sprintf("truePeak must be between %g and %g dBTP", MinTruePeakDbtp, MaxTruePeakDbtp)})
	}
	return errs
}

// EncoderHeadroomDb is how far under the requested true-peak ceiling the
// limiter puts a clip that format will encode, so that the decoded
// answer's true peak stays under the ceiling: lossy coders change the
// waveform (MP3's and Opus's quantisation noise and band-limiting add
// up to several tenths of a dB to speech peaks; μ-law and A-law round
// coarsely near full scale). A clip's answer starts from it and is
// measured after encoding (EncodeLoudness), which corrects it; a stream,
// which cannot be encoded twice, keeps it (StreamLeveler). The tests
// measure every format's answer with FFmpeg to hold these figures.
func EncoderHeadroomDb(format string) float64 {
	switch format {
	case FormatMP3:
		return 1.0
	case FormatOpus:
		return 1.5
	case FormatULaw, FormatALaw:
		return 0.3
	}
	return 0
}

// LoudnessLeveling reports what NormalizeLoudness did, for logs, warnings
// and the per-voice estimates of streams.
type LoudnessLeveling struct {
	// InputLufs is the clip's loudness before, OutputLufs after (gated
	// integrated, or ungated for a clip shorter than a gating block).
	InputLufs, OutputLufs float64
	// GainDb is the static gain applied ahead of the limiter.
	GainDb float64
	// TruePeakDbtp is the output's true peak as this package measures it.
	TruePeakDbtp float64
	// Limited is set when the true-peak limiter reduced any peak.
	Limited bool
	// Short is set for a clip shorter than one gating block, measured
	// ungated over its whole length.
	Short bool
	// Gated is set when the clip measured below GateLufs (silence) and
	// was left untouched.
	Gated bool
	// Missed is set when the target was out of reach under the ceiling
	// within maxLoudnessMakeupDb of limiting; OutputLufs says how close it got.
	Missed bool
}

// MeasureLoudness returns the clip's integrated loudness in LUFS (gated;
// ungated over the whole clip when it is shorter than one gating block;
// -Inf for silence) and its true peak in dBTP.
func MeasureLoudness(c *Clip) (lufs, truePeak float64, err error) {
	m, err := newLoudnessMeter(c)
	if err != nil {
		return 0, 0, err
	}
	defer m.close()
	lufs, err = m.measure(c.Samples)
	if err != nil {
		return 0, 0, err
	}
	return lufs, dbfs(newPeakEnvelope(newTruePeak(c.Rate), c.Samples).truePeak()), nil
}

// loudnessMeter measures whole clips of one length and rate, each pass on
// a fresh libebur128 state (the library has no reset).
type loudnessMeter struct {
	rate  int
	short bool
	ms    int
	m     *ebur128.Meter
}

func newLoudnessMeter(c *Clip) (*loudnessMeter, error) {
	if c.Rate <= 0 {
		return nil, fmt.Errorf("%w: sample rate %d", ErrInvalidParams, c.Rate)
	}
	lm := &loudnessMeter{rate: c.Rate, short: c.Seconds() < GatingBlock}
	lm.ms = max(1, int(math.Round(c.Seconds()*1000)))
	return lm, nil
}

// measure returns the loudness of s: gated, or for a short clip the
// ungated K-weighted mean over all of it.
func (lm *loudnessMeter) measure(s []float32) (float64, error) {
	lm.close()
	m, err := ebur128.NewMeter(lm.rate, 0)
	if err != nil {
		return 0, fmt.Errorf("audio: %w", err)
	}
	lm.m = m
	if err := m.Add(s); err != nil {
		return 0, fmt.Errorf("audio: %w", err)
	}
	if lm.short {
		return m.Window(min(lm.ms, 400))
	}
	return m.Integrated()
}

func (lm *loudnessMeter) close() {
	if lm.m != nil {
		lm.m.Close()
		lm.m = nil
	}
}

// NormalizeLoudness levels the clip in place to t.Integrated LUFS with no
// true peak above t.TruePeak - headroomDb dBTP (headroomDb: see
// EncoderHeadroomDb).
//
// The static gain is the target minus the measured loudness; where it
// would lift a true peak over the ceiling, a look-ahead limiter (the one
// Normalize uses: the gain starts falling 5 ms before a peak and recovers
// with a 50 ms release, smoothed by a moving average, so the gain has no
// step and the limiter no click) works on the oversampled true-peak
// envelope instead of the sample peaks. Limiting lowers the loudness, so
// the static gain is then searched for (Illinois method, as Normalize)
// until the limited clip is within 0.05 LU of the target, with at most
// maxLoudnessMakeupDb of extra gain (Missed when that is not enough). The
// search steps estimate the loudness from the clip's K-weighted power and
// the limiter's gain (kWeighted); libebur128 measures the result, and a
// miss corrects the aim for another search, at most loudnessChecks times.
//
// A clip shorter than one 400 ms gating block has no gated loudness: it
// is measured ungated (the K-weighted mean square over its whole length),
// which for a short word is what the gated measure of a longer clip of it
// would give, and Short is set. A clip measuring under GateLufs is left
// alone (Gated).
func NormalizeLoudness(c *Clip, t LoudnessTarget, headroomDb float64) (LoudnessLeveling, error) {
	lm, err := newLoudnessMeter(c)
	if err != nil {
		return LoudnessLeveling{}, err
	}
	defer lm.close()
	in, err := lm.measure(c.Samples)
	if err != nil {
		return LoudnessLeveling{}, err
	}
	rep := LoudnessLeveling{InputLufs: in, OutputLufs: in, Short: lm.short}
	if !(in >= GateLufs) || len(c.Samples) == 0 {
		rep.Gated = true
		return rep, nil
	}
	ceilDb := t.TruePeak - headroomDb - truePeakSafetyDb
	peaks := newPeakEnvelope(newTruePeak(c.Rate), c.Samples)
	g0 := t.Integrated - in
	if peak := peaks.truePeak(); peak == 0 || dbfs(peak)+g0 <= ceilDb {
		scale(c.Samples, float32(fromDb(g0)))
		rep.GainDb, rep.OutputLufs, rep.TruePeakDbtp = g0, t.Integrated, dbfs(peak)+g0
		return rep, nil
	}
	l := newLimiter(c.Rate, fromDb(ceilDb))
	l.peaks = peaks
	// The search runs on our own K-weighted estimate (kWeighted says
	// why), offset by how far it reads the input from libebur128; the
	// result is measured by libebur128 once, and the aim corrected by
	// what it finds when the two disagree.
	kw := newKWeighted(c.Samples, c.Rate)
	var edges []float64
	bias := in - kw.loudness(nil, &edges)
	gains := make([]float32, len(c.Samples))
	// The leveled clip is written over the gains (apply reads each gain
	// before it writes that sample; the next search step writes them all
	// again): one clip-sized array less to allocate and fault in.
	scratch := gains
	aim := t.Integrated
	var g, miss float64
	traced := math.NaN() // the gain of l's trace
	for pass := range loudnessChecks {
		level := func(gDb float64) float64 {
			gl := fromDb(gDb)
			l.trace(c.Samples, gl, gains)
			traced = gDb
			l.fillGains(gl, gains)
			return kw.loudness(gains, &edges) + bias - aim
		}
		g, _ = searchLoudness(level, aim-in, g0+maxLoudnessMakeupDb)
		gl := fromDb(g)
		if g != traced { // the search's answer is mostly its last step
			l.trace(c.Samples, gl, gains)
		}
		l.apply(c.Samples, scratch, gl, gains)
		traced = math.NaN()
		v, err := lm.measure(scratch)
		if err != nil {
			return rep, err
		}
		miss = v - t.Integrated
		if math.Abs(miss) <= loudnessTolerance || pass == loudnessChecks-1 {
			break
		}
		aim -= miss
	}
	copy(c.Samples, scratch)
	rep.GainDb, rep.Limited = g, true
	rep.OutputLufs = t.Integrated + miss
	rep.Missed = miss < -2*loudnessTolerance
	// The limiter holds every envelope point under the ceiling; measuring
	// the output again would double the detector's cost for a figure the
	// limiter already guarantees.
	rep.TruePeakDbtp = ceilDb
	return rep, nil
}

// searchLoudness finds the static gain in [lo, max] (dB) at which f, the
// limited clip's distance from the target in LU, is within
// loudnessTolerance of zero. Each f is a limiter pass and a measurement,
// the cost of leveling, so it brackets the root from below in steps
// sized by the deficit (limiting returns less than a dB of loudness per
// dB of gain, so a step of 1.5 deficits usually lands past the root)
// instead of probing max first, then narrows the bracket with
// solveGainTol. It returns the gain and f there.
func searchLoudness(f func(float64) float64, lo, maxG float64) (float64, float64) {
	flo := f(lo)
	if flo >= -loudnessTolerance {
		return lo, flo
	}
	step := -1.5 * flo
	for lo < maxG {
		hi := math.Min(lo+step, maxG)
		fhi := f(hi)
		switch {
		case math.Abs(fhi) <= loudnessTolerance:
			return hi, fhi
		case fhi > 0:
			return solveGainTol(func(g float64) float64 {
				switch g {
				case lo:
					return flo
				case hi:
					return fhi
				}
				return f(g)
			}, lo, hi, loudnessTolerance)
		}
		lo, flo = hi, fhi
		step = math.Max(2*step, -2*fhi)
	}
	return lo, flo
}

// truePeak estimates inter-sample peaks by polyphase interpolation with a
// Kaiser-windowed sinc (tpTaps taps per phase), oversampling to at least
// tpMinRate: BS.1770-4 annex 2's method, with more phases at lower rates.
// Hand-written because libebur128 reports only a clip's maximum true
// peak, and the limiter needs one per sample.
type truePeak struct {
	phases int
	coef   []float32 // (phases-1) × tpTaps: phase p ≥ 1, tap m
	bound  float32   // gain(), for bounds
}

func newTruePeak(rate int) *truePeak {
	L := max(4, (tpMinRate+rate-1)/max(rate, 1))
	tp := &truePeak{phases: L, coef: make([]float32, (L-1)*tpTaps)}
	half := float64(tpTaps / 2)
	const beta = 5.0
	i0b := besselI0(beta)
	for p := 1; p < L; p++ {
		var sum float64
		row := tp.coef[(p-1)*tpTaps : p*tpTaps]
		for i := range tpTaps {
			m := float64(i) - half + 1 // sample offsets -5..6 around k
			d := float64(p)/float64(L) - m
			x := d / half
			w := 0.0
			if x > -1 && x < 1 {
				w = besselI0(beta*math.Sqrt(1-x*x)) / i0b
			}
			v := sinc(d) * w
			row[i] = float32(v)
			sum += v
		}
		for i := range row { // unity gain at DC in every phase
			row[i] = float32(float64(row[i]) / sum)
		}
	}
	tp.bound = tp.gain()
	return tp
}

func sinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	return math.Sin(math.Pi*x) / (math.Pi * x)
}

// besselI0 is the modified Bessel function of order 0, by its series.
func besselI0(x float64) float64 {
	sum, term := 1.0, 1.0
	for k := 1; k < 50; k++ {
		term *= (x / 2) / float64(k)
		sum += term * term
		if term*term < 1e-12*sum {
			break
		}
	}
	return sum
}

// at returns the largest magnitude of x's samples k and the interpolated
// points between k and k+1. Hot path, not instrumented by the race
// detector: see points.
//
//go:norace
func (tp *truePeak) at(x []float32, k int) float32 {
	best := max(x[k], -x[k])
	lo := k - tpTaps/2 + 1
	if lo >= 0 && lo+tpTaps <= len(x) {
		win := x[lo : lo+tpTaps]
		for p := 0; p < tp.phases-1; p++ {
			row := tp.coef[p*tpTaps : (p+1)*tpTaps]
			var y float32
			for i, c := range row {
				y += c * win[i]
			}
			best = max(best, y, -y)
		}
		return best
	}
	for p := 0; p < tp.phases-1; p++ { // the edges: samples outside are 0
		row := tp.coef[p*tpTaps : (p+1)*tpTaps]
		var y float32
		for i, c := range row {
			if j := lo + i; j >= 0 && j < len(x) {
				y += c * x[j]
			}
		}
		best = max(best, y, -y)
	}
	return best
}

// loudnessChecks bounds libebur128's checks of a leveled clip (each
// after a search on the estimate, see NormalizeLoudness).
const loudnessChecks = 3

// lossyPasses bounds the level-encode-measure passes of a lossy answer.
const lossyPasses = 3

// EncodeLoudness levels c to t and encodes it as out (resolved against
// c's rate; c is resampled to the output's rate first, so that the
// limiter's ceiling holds on the samples that are encoded). c's samples
// are changed.
//
// A lossless answer (WAV, PCM, FLAC) is leveled once. An MP3, Opus, μ-law
// or A-law one is leveled with EncoderHeadroomDb under the ceiling,
// encoded, decoded again by the gateway itself (MP3 by libmpg123, whose
// decoding matches FFmpeg's to a hundredth of a dB, unlike go-mp3's that
// misread MPEG-2 at 22.05 kHz and kept MP3 on a fixed headroom before)
// and measured:
// lossy coders move both figures (Opus at speech bitrates drops the top
// of the band, which K-weighting counts, so a clip can lose half a LU;
// heavily limited peaks overshoot by up to a dB and a half). When the
// decoded answer is off the target by more than loudnessTolerance, or
// over the ceiling, the clip is leveled again from its original samples
// with the target and the headroom corrected by what was measured, up to
// lossyPasses times; the answer is the last encoding. That costs one
// decode and one encode more per pass, only for lossy answers with a
// loudness target.
func EncodeLoudness(c *Clip, t LoudnessTarget, out Output, lim Limits) ([]byte, string, LoudnessLeveling, error) {
	o, err := out.Resolve(c.Rate)
	if err != nil {
		return nil, "", LoudnessLeveling{}, err
	}
	if c, err = Resample(c, o.SampleRate); err != nil {
		return nil, "", LoudnessLeveling{}, err
	}
	if err := lim.Check(len(c.Samples), o); err != nil {
		return nil, "", LoudnessLeveling{}, err
	}
	headroom := EncoderHeadroomDb(o.Format)
	encode := func() ([]byte, string, error) {
		return encodeStream(&seqReader{src: clipSource{c}}, len(c.Samples), o, lim)
	}
	if headroom == 0 {
		rep, err := NormalizeLoudness(c, t, headroom)
		if err != nil {
			return nil, "", rep, err
		}
		b, mt, err := encode()
		return b, mt, rep, err
	}
	orig := append([]float32(nil), c.Samples...)
	aim := t.Integrated
	var (
		b   []byte
		mt  string
		rep LoudnessLeveling
	)
	for pass := range lossyPasses {
		if pass > 0 {
			copy(c.Samples, orig)
		}
		if rep, err = NormalizeLoudness(c, LoudnessTarget{Integrated: aim, TruePeak: t.TruePeak}, headroom); err != nil {
			return nil, "", rep, err
		}
		if rep.Gated {
			b, mt, err = encode()
			return b, mt, rep, err
		}
		if b, mt, err = encode(); err != nil {
			return nil, "", rep, err
		}
		dec, err := decodeOwn(b, o)
		if err != nil {
			return nil, "", rep, err
		}
		gotI, gotTP, err := MeasureLoudness(dec)
		if err != nil {
			return nil, "", rep, err
		}
		over := gotTP - (t.TruePeak - LossyPeakMarginDb(o.Format))
		off := gotI - t.Integrated
		rep.OutputLufs, rep.TruePeakDbtp = gotI, gotTP
		if math.Abs(off) <= 2*loudnessTolerance && over <= 0 {
			break
		}
		aim = math.Min(aim-off, MaxIntegratedLufs)
		headroom = math.Max(0, headroom+over)
	}
	return b, mt, rep, nil
}

// decodeOwn decodes an Opus, MP3 or G.711 answer this package encoded as o.
func decodeOwn(b []byte, o Output) (*Clip, error) {
	switch o.Format {
	case FormatOpus:
		s, err := opus.Decode(b)
		if err != nil {
			return nil, fmt.Errorf("audio: measure the Opus answer: %w", err)
		}
		return &Clip{Rate: opus.Rate, Samples: s}, nil
	case FormatULaw, FormatALaw:
		return decodeG711(b, MediaType{Format: o.Format, Rate: o.SampleRate}), nil
	case FormatMP3:
		c, err := decodeMP3(b)
		if err != nil {
			return nil, fmt.Errorf("audio: measure the MP3 answer: %w", err)
		}
		return c, nil
	}
	return nil, fmt.Errorf("%w: no measuring decoder for %s", ErrInvalidParams, o.Format)
}

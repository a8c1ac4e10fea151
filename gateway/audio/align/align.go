package align

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/sdk"
)

// Errors of Align. Both mean the clip gets no timestamps: the caller says
// why instead of guessing.
var (
	// ErrNoSpeech: the clip holds no audible sound.
	ErrNoSpeech = errors.New("no speech in the clip")
	// ErrNoMatch: the clip does not sound like the text read aloud:
	// noise, a tone, another text or another language.
	ErrNoMatch = errors.New("the clip does not match the text")
)

// Reference is a rendering of the text whose word times are known: the
// clip's words are found by matching it against this.
type Reference struct {
	// Clip is the reference audio.
	Clip *audio.Clip
	// Words are the reference's word timestamps, in order, in seconds
	// from the start of Clip.
	Words []sdk.WordTimestamp
}

// Result is an alignment.
type Result struct {
	// Words has one timestamp per word of the chosen reference, in
	// order, on the clip's timeline, each inside the clip.
	Words []sdk.WordTimestamp
	// Reference is the index of the reference the clip was aligned
	// against: the one it matched best.
	Reference int
	// Match says how well the clip follows the reference: the cost of
	// the best alignment divided by the cost of aligning the clip with
	// the reference played backwards (which sounds alike frame by frame
	// but says nothing in order). Near 1 the order of sounds in the clip
	// owes nothing to the text; two voices reading one text score 0.5
	// to 0.9. Align refuses above MaxMatch.
	Match float64
}

// MaxMatch is the Match above which a clip is taken not to speak the
// text. In the package's tests, eSpeak voices reading the reference's text
// score 0.5 to 0.8 and Festival's voices (another engine, built from
// recordings of people) up to 0.91, while eSpeak reading another English
// text or German, noise and tones score 0.97 to 1.0.
const MaxMatch = 0.93

// params are the tunable constants of the method, gathered so the tests
// can show what each is worth.
type params struct {
	// coarse is how many frames the first pass pools into one.
	coarse int
	// radius is how far (in fine frames) the second pass may stray from
	// the first pass's path.
	radius int
	// minMargin and maxMargin bound the first pass's stripe, in seconds
	// off the average speaking rate.
	minMargin, maxMargin float64
	// levelWeight scales the level dimension against the cepstra.
	levelWeight float32
	// deltaWeight scales the cepstra's deltas.
	deltaWeight float32
	// pauses turns on the refinement of boundaries at pauses.
	pauses bool
}

var defaultParams = params{coarse: 6, radius: 16, minMargin: 10, maxMargin: 30, levelWeight: 1.5, deltaWeight: 1, pauses: true}

// Align finds each word of the text in clip, which must speak it (in any
// voice, at any pace). refs are renderings of the text, for instance in
// a male and a female voice; the clip is aligned against the one it
// matches best. See the package documentation for the method.
func Align(clip *audio.Clip, refs ...Reference) (*Result, error) {
	return alignWith(clip, refs, defaultParams)
}

// candidate is one reference's first pass.
type candidate struct {
	f     *features
	path  []step
	match float64
}

func alignWith(clip *audio.Clip, refs []Reference, p params) (*Result, error) {
	if len(refs) == 0 {
		return nil, errors.New("no reference")
	}
	an := newAnalyzer()
	cf, err := an.analyze(clip)
	if err != nil {
		return nil, fmt.Errorf("clip: %w", err)
	}
	if cf.prepare(p.levelWeight, p.deltaWeight) < minSpeechFrames {
		return nil, ErrNoSpeech
	}
	if len(refs[0].Words) <= 1 {
		// One word (or none): it is all the clip says, from its first
		// sound to its last. There is no order of sounds to check.
		return &Result{Words: mapWords(refs[0].Words, nil, nil, cf, clip.Seconds(), p)}, nil
	}
	cc := cf.pool(p.coarse)
	best := -1
	var cands []candidate
	for k, ref := range refs {
		rf, err := an.analyze(ref.Clip)
		if err != nil {
			return nil, fmt.Errorf("reference %d: %w", k, err)
		}
		if rf.prepare(p.levelWeight, p.deltaWeight) < minSpeechFrames {
			return nil, fmt.Errorf("reference %d: %w", k, ErrNoSpeech)
		}
		// First pass: pooled frames, in a stripe around the average
		// speaking rate; and the same against the reference reversed,
		// which says how much of the match is owed to the order of
		// the sounds, that is to the text.
		rc := rf.pool(p.coarse)
		perSecond := 1 / (frameSeconds * float64(p.coarse))
		w := int(min(max(0.2*float64(max(rc.n, cc.n)), p.minMargin*perSecond), p.maxMargin*perSecond))
		w = max(w, abs(rc.n-cc.n)/8+2)
		b := stripe(rc.n, cc.n, w)
		path, cost := warp(rc, cc, b)
		_, null := warp(rc.reversed(), cc, b)
		match := 1.0
		if null > 0 {
			match = cost / null
		}
		cands = append(cands, candidate{f: rf, path: path, match: match})
		if best < 0 || match < cands[best].match {
			best = k
		}
	}
	c := cands[best]
	res := &Result{Reference: best, Match: c.match}
	if c.match > MaxMatch {
		return res, ErrNoMatch
	}
	// Second pass: every frame, near the first pass's path.
	path, _ := warp(c.f, cf, around(c.path, p.coarse, p.radius, c.f.n, cf.n))
	res.Words = mapWords(refs[best].Words, path, c.f, cf, clip.Seconds(), p)
	return res, nil
}

// minSpeechFrames is the least sound (in frames) a clip must hold to be
// aligned: a tenth of a second.
const minSpeechFrames = 10

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// analyze resamples c to the feature rate and extracts its features.
func (a *analyzer) analyze(c *audio.Clip) (*features, error) {
	if c == nil || c.Rate <= 0 || len(c.Samples) == 0 {
		return nil, ErrNoSpeech
	}
	r, err := audio.Resample(c, featureRate)
	if err != nil {
		return nil, err
	}
	return a.extract(r.Samples), nil
}

// speechFloorDb and speechRangeDb decide which frames carry sound: louder
// than -60 dBFS, and within 35 dB of the clip's loud frames.
const (
	speechFloorDb = -60
	speechRangeDb = 35
)

// prepare marks the frames that carry sound, normalizes the cepstra over
// them and fills in the level dimension. It returns the number of sound
// frames.
func (f *features) prepare(levelWeight, deltaWeight float32) int {
	loud := f.loudness()
	threshold := max(float32(speechFloorDb), loud-speechRangeDb)
	f.speech = make([]bool, f.n)
	count := 0
	for i, e := range f.energy {
		if e > threshold {
			f.speech[i] = true
			count++
		}
	}
	f.normalize(f.speech)
	for i := range f.n {
		// 0 at speaking level, down to -1 at the threshold and below;
		// digital silence and room noise look alike.
		l := (f.energy[i] - loud) / speechRangeDb
		f.row(i)[cepstra] = levelWeight * max(min(l, 0), -1)
	}
	if deltaWeight != 0 {
		for i := range f.n {
			row := f.row(i)
			a, b := f.row(max(i-1, 0)), f.row(min(i+1, f.n-1))
			aa, bb := f.row(max(i-2, 0)), f.row(min(i+2, f.n-1))
			for c := range cepstra {
				row[cepstra+1+c] = deltaWeight * (bb[c] - aa[c] + 2*(b[c]-a[c])) / 10
			}
		}
	}
	return count
}

// loudness is the level of the clip's loud frames: the 90th percentile of
// frame energies.
func (f *features) loudness() float32 {
	if f.n == 0 {
		return speechFloorDb
	}
	e := slices.Clone(f.energy)
	slices.Sort(e)
	return e[len(e)*9/10]
}

// mapWords carries each reference word's boundaries through the path to
// the clip's timeline: a boundary at reference frame r lands on the first
// clip frame matched with r. Boundaries at a pause of the reference are
// then refined (see pauses): inside a pause every frame matches every
// other, so the path alone cannot say where in the clip the pause is.
func mapWords(words []sdk.WordTimestamp, path []step, rf, cf *features, seconds float64, p params) []sdk.WordTimestamp {
	out := make([]sdk.WordTimestamp, len(words))
	if len(out) == 0 {
		return out
	}
	if path == nil {
		out[0] = sdk.WordTimestamp{Text: words[0].Text, End: seconds}
		clampToSound(out, cf, seconds)
		return out
	}
	n := rf.n
	first := make([]int32, n+1)
	for k := len(path) - 1; k >= 0; k-- {
		first[path[k].i] = path[k].j
	}
	first[n] = int32(cf.n)
	at := func(t float64) float64 {
		r := t / frameSeconds
		i := min(max(int(r), 0), n-1)
		// Within a frame, move at the clip's local pace.
		frac := min(max(r-float64(i), 0), 1)
		return (float64(first[i]) + frac*float64(first[i+1]-first[i])) * frameSeconds
	}
	for k, w := range words {
		out[k] = sdk.WordTimestamp{Text: w.Text, Start: at(w.Start), End: at(w.End)}
	}
	if p.pauses {
		refinePauses(words, out, first, rf, cf)
	}
	clampToSound(out, cf, seconds)
	return out
}

// clampToSound keeps the words out of the clip's leading and trailing
// silence, where nothing is spoken whatever the reference's own edges
// were, and makes them ordered and inside the clip.
func clampToSound(out []sdk.WordTimestamp, cf *features, seconds float64) {
	on, off := 0, cf.n
	for on < cf.n && !cf.speech[on] {
		on++
	}
	for off > on && !cf.speech[off-1] {
		off--
	}
	out[0].Start = max(out[0].Start, float64(on)*frameSeconds)
	last := &out[len(out)-1]
	last.End = min(last.End, float64(off)*frameSeconds)
	prevEnd := 0.0
	for k := range out {
		w := &out[k]
		w.Start = min(max(w.Start, prevEnd), seconds)
		w.End = min(max(w.End, w.Start), seconds)
		prevEnd = w.End
	}
}

// Pause refinement bounds, in frames.
const (
	// minRefPause is the shortest pause of the reference that is taken
	// for a pause between words rather than the closure of a stop
	// consonant inside one.
	minRefPause = 8
	// minClipPause is the shortest silence of the clip that can hold
	// the reference's pause.
	minClipPause = 3
	// pauseReach is how far around the path's image of a reference
	// pause the clip's pause is looked for.
	pauseReach = 20
	// pauseSlack is how far a word boundary may lie from the pause's
	// edge in the reference and still be taken to touch it (eSpeak's
	// word ends and the VAD's edges differ by a frame or two).
	pauseSlack = 10
)

// refinePauses moves the boundaries around each pause of the reference
// onto the matching pause of the clip: the word before the pause ends
// where the clip falls silent, the word after it starts where the clip
// speaks again. A pause the clip does not have leaves the boundaries as
// the path put them.
func refinePauses(ref, out []sdk.WordTimestamp, first []int32, rf, cf *features) {
	frame := func(t float64) int { return int(math.Round(t / frameSeconds)) }
	for p0 := 0; p0 < rf.n; {
		if rf.speech[p0] {
			p0++
			continue
		}
		p1 := p0
		for p1 < rf.n && !rf.speech[p1] {
			p1++
		}
		pause := p0
		p0 = p1
		if p1-pause < minRefPause && pause > 0 && p1 < rf.n {
			continue
		}
		// The words on either side: the last one ending at the pause,
		// the first one starting after it.
		before, after := -1, -1
		for k, w := range ref {
			if frame(w.Start) < pause {
				before = k
			} else if after < 0 {
				after = k
			}
		}
		if before >= 0 && frame(ref[before].End) < pause-pauseSlack {
			before = -1 // it ended well before: something unspoken lies between
		}
		if after >= 0 && frame(ref[after].Start) > p1+pauseSlack {
			after = -1
		}
		if before < 0 && after < 0 {
			continue
		}
		q0, q1 := longestSilence(cf, int(first[pause])-pauseReach, int(first[p1])+pauseReach)
		if q1-q0 < minClipPause && !(q0 == 0 && q1 > 0) && !(q1 == cf.n && q0 < cf.n) {
			continue
		}
		if before >= 0 {
			out[before].End = float64(q0) * frameSeconds
		}
		if after >= 0 {
			out[after].Start = float64(q1) * frameSeconds
		}
	}
}

// longestSilence returns the longest run of silent frames of f within
// [from, to), clipped to the clip.
func longestSilence(f *features, from, to int) (int, int) {
	from, to = max(from, 0), min(to, f.n)
	bq0, bq1 := from, from
	for i := from; i < to; {
		if f.speech[i] {
			i++
			continue
		}
		j := i
		for j < to && !f.speech[j] {
			j++
		}
		if j-i > bq1-bq0 {
			bq0, bq1 = i, j
		}
		i = j
	}
	return bq0, bq1
}

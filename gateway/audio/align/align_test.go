package align

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/sdk"
)

// references renders text the way the gateway does: eSpeak's voice for
// the language at normal speed, male and female.
func references(tb testing.TB, p sdk.Provider, text, lang string) ([]Reference, []rendered) {
	var refs []Reference
	var rs []rendered
	for _, v := range []string{lang, lang + "+f3"} {
		r := render(tb, p, text, v, 1)
		refs = append(refs, Reference{Clip: r.clip, Words: r.words})
		rs = append(rs, r)
	}
	return refs, rs
}

// TestAccuracyESpeak aligns eSpeak clips of other voices and speeds
// against the gateway's references; each clip's own word events are the
// truth. The error distribution per set is what BENCHMARKS.md reports.
func TestAccuracyESpeak(t *testing.T) {
	p := espeakPlugin(t)
	sets := []struct {
		voice string
		speed float64
	}{
		{"en-us", 1},
		{"en-us+f3", 1.3},
		{"en-gb-x-rp+m5", 0.8},
		{"en+klatt", 1.6},
		{"en-gb-scotland+f2", 1.1},
		{"en-us+m3", 0.6},
	}
	var all errorStats
	for _, set := range sets {
		var st errorStats
		worst := 0.0
		for _, text := range passages {
			refs, _ := references(t, p, text, "en")
			clip := render(t, p, text, set.voice, set.speed)
			res, err := Align(clip.clip, refs...)
			if err != nil {
				t.Fatalf("%s x%g: %v (match %.2f)", set.voice, set.speed, err, res.Match)
			}
			checkWords(t, res.Words, clip.words, clip.clip.Seconds())
			if err := st.add(clip.words, res.Words); err != nil {
				t.Fatal(err)
			}
			worst = max(worst, res.Match)
		}
		t.Logf("%s x%g: %s; worst match %.2f", set.voice, set.speed, &st, worst)
		all.errs = append(all.errs, st.errs...)
		if st.quantile(0.5) > 0.040 || st.quantile(0.95) > 0.120 {
			t.Errorf("%s x%g: %s; want median <= 40 ms, p95 <= 120 ms", set.voice, set.speed, &st)
		}
	}
	t.Logf("all: %s", &all)
	if all.quantile(0.5) > 0.040 || all.quantile(0.95) > 0.120 {
		t.Errorf("all: %s; want median <= 40 ms, p95 <= 120 ms", &all)
	}
}

// TestAccuracyFestival aligns clips of another synthesizer, Festival
// (a diphone voice and an HTS voice built from recordings of a person),
// against eSpeak references: the closest the offline tests get to a cloud
// voice. Festival's own word times are the truth.
func TestAccuracyFestival(t *testing.T) {
	p := espeakPlugin(t)
	var all errorStats
	for _, voice := range []string{"kal_diphone", "cmu_us_slt_arctic_hts"} {
		var st errorStats
		worst := 0.0
		for _, text := range passages {
			refs, _ := references(t, p, text, "en-us")
			clip := festival(t, text, voice)
			res, err := Align(clip.clip, refs...)
			if err != nil {
				t.Fatalf("%s: %v (match %.2f)", voice, err, res.Match)
			}
			checkWords(t, res.Words, refs[res.Reference].Words, clip.clip.Seconds())
			truth, got := matchWords(clip.words, res.Words)
			if len(truth) < len(clip.words)*9/10 {
				t.Fatalf("%s: only %d of %d words compared", voice, len(truth), len(clip.words))
			}
			if err := st.add(truth, got); err != nil {
				t.Fatal(err)
			}
			worst = max(worst, res.Match)
		}
		t.Logf("festival %s: %s; worst match %.2f", voice, &st, worst)
		all.errs = append(all.errs, st.errs...)
	}
	t.Logf("all: %s", &all)
	// Another engine's voices are further from eSpeak's than eSpeak's
	// own: the bounds are looser, and guard against regressions.
	if all.quantile(0.5) > 0.040 || all.quantile(0.95) > 0.250 {
		t.Errorf("all: %s; want median <= 40 ms, p95 <= 250 ms", &all)
	}
}

// TestShortTexts: a word or a few, the texts a conversation turn often
// has, still align, every word once, in order, inside the clip.
func TestShortTexts(t *testing.T) {
	p := espeakPlugin(t)
	for _, text := range []string{"Hello.", "Supercalifragilistic", "Yes, please.", "Good morning to you.", "Thanks!", "What time is it?"} {
		refs, _ := references(t, p, text, "en")
		clip := render(t, p, text, "en-us+f2", 1.2)
		res, err := Align(clip.clip, refs...)
		if err != nil {
			t.Errorf("%q: %v (match %.2f)", text, err, res.Match)
			continue
		}
		checkWords(t, res.Words, clip.words, clip.clip.Seconds())
		t.Logf("%q: match %.2f", text, res.Match)
		var st errorStats
		_ = st.add(clip.words, res.Words)
		if st.quantile(1) > 0.120 {
			t.Errorf("%q: %s\n truth %s\n got   %s", text, &st, joinWords(clip.words), joinWords(res.Words))
		}
	}
}

// TestRefusesWhatItCannotMatch: silence gets ErrNoSpeech; noise, a tone,
// another text and another language get ErrNoMatch, never timestamps.
func TestRefusesWhatItCannotMatch(t *testing.T) {
	p := espeakPlugin(t)
	text := passages[0]
	refs, rs := references(t, p, text, "en")
	seconds := rs[0].clip.Seconds()
	const rate = 24000
	n := int(seconds * rate)
	silence := &audio.Clip{Rate: rate, Samples: make([]float32, n)}
	noise := &audio.Clip{Rate: rate, Samples: make([]float32, n)}
	rng := rand.New(rand.NewPCG(1, 2))
	for k := range noise.Samples {
		noise.Samples[k] = float32(rng.Float64()*0.4 - 0.2)
	}
	// A tone spoken like words: on for a third of a second, off for
	// another (the fake providers' "speech").
	tone := &audio.Clip{Rate: rate, Samples: make([]float32, n)}
	for k := range tone.Samples {
		if (k/(rate/3))%2 == 0 {
			tone.Samples[k] = float32(0.3 * math.Sin(2*math.Pi*440*float64(k)/rate))
		}
	}
	german := render(t, p, "Der schnelle braune Fuchs springt über den faulen Hund. Jeden Morgen stieg der alte "+
		"Leuchtturmwärter die Wendeltreppe hinauf, polierte die große Linse und schrieb eine Zeile in sein Logbuch.", "de", 1.1)
	other := render(t, p, passages[3], "en-us+f2", 1.1)
	for _, c := range []struct {
		name string
		clip *audio.Clip
		want error
	}{
		{"silence", silence, ErrNoSpeech},
		{"noise", noise, ErrNoMatch},
		{"tone", tone, ErrNoMatch},
		{"german", german.clip, ErrNoMatch},
		{"another text", other.clip, ErrNoMatch},
	} {
		res, err := Align(c.clip, refs...)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
		if err == nil || res != nil && len(res.Words) > 0 {
			t.Errorf("%s: timestamps for a clip that does not match: %v", c.name, res)
		}
		if res != nil {
			t.Logf("%s: match %.2f", c.name, res.Match)
		}
	}
}

// TestEdges covers what has no audio to analyze.
func TestEdges(t *testing.T) {
	ref := Reference{Clip: &audio.Clip{Rate: 16000, Samples: make([]float32, 16000)}, Words: []sdk.WordTimestamp{{Text: "a", End: 1}}}
	if _, err := Align(&audio.Clip{Rate: 16000}, ref); !errors.Is(err, ErrNoSpeech) {
		t.Errorf("empty clip: %v", err)
	}
	if _, err := Align(&audio.Clip{Rate: 16000, Samples: make([]float32, 100)}); err == nil {
		t.Error("no reference: no error")
	}
}

// TestWarpFindsTheDiagonal checks the DTW on sequences whose alignment
// is known: b is a with every frame doubled.
func TestWarpFindsTheDiagonal(t *testing.T) {
	const n = 50
	a := &features{n: n, mfcc: make([]float32, n*dims), energy: make([]float32, n)}
	b := &features{n: 2 * n, mfcc: make([]float32, 2*n*dims), energy: make([]float32, 2*n)}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range n {
		for c := range dims {
			v := float32(rng.NormFloat64())
			a.row(i)[c] = v
			b.row(2 * i)[c] = v
			b.row(2*i + 1)[c] = v
		}
	}
	for _, bd := range []band{stripe(n, 2*n, 2*n), stripe(n, 2*n, 10)} {
		path, cost := warp(a, b, bd)
		if cost != 0 {
			t.Errorf("cost %g, want 0", cost)
		}
		for _, s := range path {
			if s.j/2 != s.i {
				t.Fatalf("step %v off the known alignment", s)
			}
		}
	}
	// The fine pass around the coarse path finds it too.
	coarse, _ := warp(a.pool(2), b.pool(2), stripe(n/2, n, n))
	path, _ := warp(a, b, around(coarse, 2, 4, n, 2*n))
	for _, s := range path {
		if s.j/2 != s.i {
			t.Fatalf("fine step %v off the known alignment", s)
		}
	}
}

func TestCheckWordsTexts(t *testing.T) {
	// The reference words come through with their texts untouched.
	p := espeakPlugin(t)
	text := "Numbers like 42 and words like well-known stay whole."
	refs, _ := references(t, p, text, "en")
	clip := render(t, p, text, "en-us", 1.1)
	res, err := Align(clip.clip, refs...)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range res.Words {
		got = append(got, w.Text)
	}
	if strings.Join(got, " ") != "Numbers like 42 and words like well-known stay whole" {
		t.Errorf("words %q", got)
	}
}

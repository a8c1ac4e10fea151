package audio

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

// TestConcat joins real eSpeak turns at three different rates, leveled to
// one volume with 300 ms gaps, and checks the offsets, the silence between
// turns, each turn's level, and that the inputs were not modified.
func TestConcat(t *testing.T) {
	a := espeakClip(t, speechTexts[0]) // 22050 Hz
	b, err := Resample(espeakClip(t, speechTexts[1]), 16000)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Resample(espeakClip(t, speechTexts[0]), 48000)
	if err != nil {
		t.Fatal(err)
	}
	scale(c.Samples, 0.05) // a much quieter turn
	before := [][]float32{slices.Clone(a.Samples), slices.Clone(b.Samples), slices.Clone(c.Samples)}

	out, starts, err := Concat([]*Clip{a, b, c}, ConcatOptions{Rate: 24000, Gap: 300 * time.Millisecond, VolumeDbfs: ptr(-20.0)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Rate != 24000 {
		t.Fatalf("rate %d", out.Rate)
	}
	durs := []float64{a.Seconds(), b.Seconds(), c.Seconds()}
	want := 0.0
	for i, d := range durs {
		if math.Abs(starts[i]-want) > 1.0/24000*2 {
			t.Errorf("turn %d starts at %.5f s, want %.5f", i, starts[i], want)
		}
		from := int(math.Round(starts[i] * 24000))
		to := from + int(math.Round(d*24000))
		turn := &Clip{Rate: 24000, Samples: out.Samples[from:to]}
		if got := RMSDbfs(turn); math.Abs(got+20) > 0.5 {
			t.Errorf("turn %d at %.2f dBFS, want -20", i, got)
		}
		if i < len(durs)-1 {
			gap := out.Samples[to : to+int(0.3*24000)-1]
			if p := PeakDbfs(&Clip{Rate: 24000, Samples: gap}); !math.IsInf(p, -1) {
				t.Errorf("gap after turn %d not silent: peak %.1f dBFS", i, p)
			}
		}
		want += d + 0.3
	}
	if got, total := out.Seconds(), want-0.3; math.Abs(got-total) > 0.001 {
		t.Errorf("total %.4f s, want %.4f", got, total)
	}
	for i, clip := range []*Clip{a, b, c} {
		if !slices.Equal(clip.Samples, before[i]) {
			t.Errorf("input %d was modified", i)
		}
	}
}

func TestConcatDefaultsAndErrors(t *testing.T) {
	a, b := sine(16000, 440, 0.5, 0.5), sine(44100, 440, 0.5, 0.25)
	out, starts, err := Concat([]*Clip{a, b}, ConcatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Rate != 44100 || !slices.Equal(starts, []float64{0, 0.5}) || math.Abs(out.Seconds()-0.75) > 1e-4 {
		t.Errorf("default options: rate %d, starts %v, %.4f s", out.Rate, starts, out.Seconds())
	}
	if f := zeroCrossingFreq(middle(out.Samples[:22050], 0.05), 44100); math.Abs(f-440) > 0.5 {
		t.Errorf("resampled turn at %.2f Hz", f)
	}
	for _, tt := range []struct {
		name  string
		clips []*Clip
		opt   ConcatOptions
	}{
		{"no clips, no rate", nil, ConcatOptions{}},
		{"nil clip", []*Clip{a, nil}, ConcatOptions{}},
		{"negative gap", []*Clip{a}, ConcatOptions{Gap: -time.Second}},
	} {
		if _, _, err := Concat(tt.clips, tt.opt); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("%s: err = %v", tt.name, err)
		}
	}
	empty, starts, err := Concat(nil, ConcatOptions{Rate: 8000})
	if err != nil || len(empty.Samples) != 0 || len(starts) != 0 {
		t.Errorf("no clips with a rate: %+v %v %v", empty, starts, err)
	}
}

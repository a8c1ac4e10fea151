package audio

import (
	"fmt"
	"math"
	"time"
)

// ConcatOptions control Concat.
type ConcatOptions struct {
	// Rate is the sample rate of the result; 0 means the highest rate
	// among the clips, so no clip loses bandwidth.
	Rate int
	// Gap is the silence inserted between consecutive clips.
	Gap time.Duration
	// VolumeDbfs, when not nil, levels each clip to this RMS (see
	// Normalize) before joining, so turns of different providers and
	// voices play at one loudness.
	VolumeDbfs *float64
	// Loudness, when not nil, levels each clip to this EBU R128 target
	// (NormalizeLoudness, no encoder headroom: the caller levels the
	// joined clip once more for its output format).
	Loudness *LoudnessTarget
	// Measured, when set with Loudness, is told each clip's loudness
	// before it was leveled, by the clip's index.
	Measured func(i int, inputLufs float64)
}

// Concat joins clips, in order, into one clip at one rate with opt.Gap of
// silence between them, for rendering a conversation. Clips at another
// rate are resampled first; each is leveled on its own when
// opt.VolumeDbfs is set. The inputs are not modified.
//
// It also returns the start of each clip in the result, in seconds, which
// is what a clip's own word timestamps must be shifted by. Resampling
// preserves time, so timestamps need no scaling.
func Concat(clips []*Clip, opt ConcatOptions) (*Clip, []float64, error) {
	rate := opt.Rate
	if rate == 0 {
		for _, c := range clips {
			if c != nil {
				rate = max(rate, c.Rate)
			}
		}
	}
	if rate <= 0 || rate > maxRate {
		return nil, nil, fmt.Errorf("%w: concat rate %d", ErrInvalidParams, rate)
	}
	if opt.Gap < 0 {
		return nil, nil, fmt.Errorf("%w: negative gap %v", ErrInvalidParams, opt.Gap)
	}
	gap := int(math.Round(opt.Gap.Seconds() * float64(rate)))
	parts := make([]*Clip, len(clips))
	total := 0
	for i, c := range clips {
		if c == nil {
			return nil, nil, fmt.Errorf("%w: clip %d is nil", ErrInvalidParams, i)
		}
		r, err := Resample(c, rate)
		if err != nil {
			return nil, nil, fmt.Errorf("clip %d: %w", i, err)
		}
		parts[i] = r
		total += len(r.Samples)
		if i > 0 {
			total += gap
		}
	}
	out := make([]float32, total) // gaps are the zeros make leaves
	starts := make([]float64, len(parts))
	pos := 0
	for i, p := range parts {
		if i > 0 {
			pos += gap
		}
		starts[i] = float64(pos) / float64(rate)
		seg := out[pos : pos+len(p.Samples)]
		copy(seg, p.Samples)
		// Leveling the copy in place leaves the caller's clip untouched
		// even when Resample returned it as is.
		if opt.VolumeDbfs != nil {
			Normalize(&Clip{Rate: rate, Samples: seg}, *opt.VolumeDbfs)
		}
		if opt.Loudness != nil {
			rep, err := NormalizeLoudness(&Clip{Rate: rate, Samples: seg}, *opt.Loudness, 0)
			if err != nil {
				return nil, nil, fmt.Errorf("clip %d: %w", i, err)
			}
			if opt.Measured != nil {
				opt.Measured(i, rep.InputLufs)
			}
		}
		pos += len(p.Samples)
	}
	return &Clip{Rate: rate, Samples: out}, starts, nil
}

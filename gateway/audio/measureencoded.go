package audio

import (
	"fmt"
	"io"

	"github.com/voxgate/voxgate/gateway/audio/internal/mpg123"
	"github.com/voxgate/voxgate/gateway/audio/internal/opus"
)

// measureBlock is how many samples MeasureEncoded gathers before it
// measures them: the true peak is interpolated within a block, so few
// block edges (one a second at 48 kHz) leave few places to misread it.
const measureBlock = 48000

// MeasureEncoded measures what a listener's decoder gives of an MP3 or
// Ogg Opus stream this package encoded, read from r a piece at a time:
// its integrated loudness (LUFS) and true peak (dBTP). It is the
// measurement EncodeLoudness makes of a clip's answer, for a file too
// long to hold (a long-form job's): memory does not grow with its
// length.
func MeasureEncoded(r io.Reader, format string) (integrated, truePeakDbtp float64, err error) {
	var (
		m     *LoudnessMeter
		block []float32
	)
	defer func() {
		if m != nil {
			m.Close()
		}
	}()
	add := func(s []float32, rate int) error {
		if m == nil {
			if m, err = NewLoudnessMeter(rate); err != nil {
				return err
			}
			block = make([]float32, 0, measureBlock)
		}
		for len(s) > 0 {
			n := min(len(s), measureBlock-len(block))
			block, s = append(block, s[:n]...), s[n:]
			if len(block) == measureBlock {
				if err := m.Add(block); err != nil {
					return err
				}
				block = block[:0]
			}
		}
		return nil
	}
	switch format {
	case FormatMP3:
		err = mpg123.DecodeMonoStream(r, add)
	case FormatOpus:
		err = opus.DecodeStream(r, func(s []float32) error { return add(s, opus.Rate) })
	default:
		return 0, 0, fmt.Errorf("%w: no measuring decoder for %s", ErrInvalidParams, format)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("audio: measure the encoded file: %w", err)
	}
	if m == nil {
		return 0, 0, fmt.Errorf("audio: measure the encoded file: no audio")
	}
	if len(block) > 0 {
		if err := m.Add(block); err != nil {
			return 0, 0, err
		}
	}
	return m.Integrated(), m.TruePeakDbtp(), nil
}

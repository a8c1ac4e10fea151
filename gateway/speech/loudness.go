package speech

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/sdk"
)

// prepareLoudness readies a job with a loudness target: a clip teaches
// the voice's loudness to the stream leveler (voiceLoudness); a stream is
// asked of the provider as PCM, which the gateway levels as it passes
// (levelStream).
func (s *Service) prepareLoudness(j *Job, r *Request) error {
	if j.Params.Loudness == nil {
		return nil
	}
	key := voiceKey(j)
	j.Params.Measured = func(rep audio.LoudnessLeveling) {
		s.voices.learn(key, rep.InputLufs)
		j.missedLoudness = rep.Missed
	}
	if j.Delivery != DeliverStream {
		return nil
	}
	name := j.Provider.ID + "/" + j.Model.ID
	e, ok := j.Model.FindStreamEncoding(sdk.FormatPCM, 0, 0)
	if ok && r.StreamFormat != nil && r.StreamFormat.Format != sdk.FormatPCM {
		ok = false
	}
	if !ok {
		return &problem.Error{Code: problem.ParamNotAllowedOnStream,
			Detail:     fmt.Sprintf("model %s does not stream raw PCM here, which a leveled stream needs; use POST /v1/audio/speech", name),
			Validation: []problem.FieldError{problem.Field("needs a model that streams PCM", "loudness")}}
	}
	if r.StreamFormat == nil {
		j.Stream = StreamFormat{Format: e.Format, SampleRate: e.SampleRate, Bitrate: e.Bitrate}
	}
	return nil
}

// missedLoudnessWarning is the answer's warning when the loudness target
// was out of reach under its ceiling.
func missedLoudnessWarning(t audio.LoudnessTarget) string {
	return fmt.Sprintf("The clip could not reach %g LUFS under a true peak of %g dBTP without more than 30 dB of limiting; it is as loud as that allows, and quieter than asked.", t.Integrated, t.TruePeak)
}

// levelStream wraps a PCM stream of j in a leveler when j has a loudness
// target (else returns src): the gain comes from the voice's learned
// loudness, or, for a voice never measured, from the stream's first
// StreamLookahead; at the end the stream's own loudness is learned.
func (s *Service) levelStream(j *Job, src Source) Source {
	if j.Params.Loudness == nil {
		return src
	}
	key := voiceKey(j)
	return &levelSource{src: src, target: j.Params.Loudness.Target(), estimate: s.voices.estimate(key),
		learn: func(lufs float64) { s.voices.learn(key, lufs) }}
}

// levelSource levels a 16-bit PCM stream chunk by chunk
// (audio.StreamLeveler).
type levelSource struct {
	src      Source
	target   audio.LoudnessTarget
	estimate float64
	learn    func(float64)
	lev      *audio.StreamLeveler
	odd      []byte // a sample split across chunks
	in, out  []float32
	buf      []byte
	// ended says the provider's stream has ended, flushed that the
	// leveler's last samples have been sent.
	ended, flushed bool
}

func (l *levelSource) MediaType() string { return l.src.MediaType() }

// Next reads until the leveler has audio to give (a voice never measured
// holds its first seconds back), and returns it as 16-bit PCM. Hot path.
func (l *levelSource) Next() ([]byte, error) {
	for !l.ended {
		b, err := l.src.Next()
		if errors.Is(err, io.EOF) {
			l.ended = true
			break
		}
		if err != nil {
			return nil, err
		}
		if l.lev == nil {
			mt, perr := audio.ParseMediaType(l.src.MediaType())
			if perr != nil || mt.Format != audio.FormatPCM || mt.Rate <= 0 {
				return nil, fmt.Errorf("level a stream of %q: not raw PCM", l.src.MediaType())
			}
			if l.lev, err = audio.NewStreamLeveler(mt.Rate, l.target, l.estimate, StreamLookahead); err != nil {
				return nil, err
			}
		}
		l.in = l.samples(b)
		l.out, err = l.lev.Write(l.in, l.out[:0])
		if err != nil {
			return nil, err
		}
		if len(l.out) > 0 {
			return l.bytes(l.out), nil
		}
	}
	if l.lev == nil || l.flushed {
		return nil, io.EOF
	}
	l.flushed = true
	if l.learn != nil {
		l.learn(l.lev.InputLufs())
	}
	if l.out = l.lev.Flush(l.out[:0]); len(l.out) > 0 {
		return l.bytes(l.out), nil
	}
	return nil, io.EOF
}

// samples decodes b (with a byte left from the last chunk) to floats.
func (l *levelSource) samples(b []byte) []float32 {
	if len(l.odd) > 0 {
		b = append(append([]byte(nil), l.odd...), b...) // rare: a chunk of odd length
		l.odd = l.odd[:0]
	}
	n := len(b) / 2
	if len(b)%2 == 1 {
		l.odd = append(l.odd, b[len(b)-1])
	}
	l.in = l.in[:0]
	for i := range n {
		l.in = append(l.in, float32(int16(binary.LittleEndian.Uint16(b[2*i:])))/32768)
	}
	return l.in
}

// bytes encodes s as 16-bit little-endian PCM into the source's buffer.
func (l *levelSource) bytes(s []float32) []byte {
	l.buf = l.buf[:0]
	for _, x := range s {
		v := math.Round(float64(x) * 32768)
		v = math.Max(-32768, math.Min(32767, v))
		l.buf = binary.LittleEndian.AppendUint16(l.buf, uint16(int16(v)))
	}
	return l.buf
}

func (l *levelSource) Close() error {
	if l.lev != nil {
		l.lev.Close()
	}
	return l.src.Close()
}

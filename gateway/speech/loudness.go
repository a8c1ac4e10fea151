package speech

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/sdk"
)

// prepareLoudness readies a job with a loudness target: a clip teaches
// the voice's loudness to the stream leveler (voiceLoudness); a stream is
// asked of the provider as PCM, which the gateway levels as it passes
// (levelStream) and then encodes as the stream would have been without
// the target (levelledStreamFormat).
func (s *Service) prepareLoudness(j *Job, r *Request) error {
	if j.Params.Loudness == nil {
		return nil
	}
	if j.Delivery == DeliverStream {
		if err := j.levelledStreamFormat(r); err != nil {
			if !r.loudnessByDefault {
				return err
			}
			// The organization's default does not refuse a stream the
			// gateway cannot level: it passes as it is, and says so.
			j.Params.Loudness = nil
			j.Warnings = append(j.Warnings, "Not leveled to the organization's loudness target: "+problem.From(err, "").Detail+".")
			return nil
		}
	}
	key := voiceKey(j)
	j.Params.Measured = func(rep audio.LoudnessLeveling) {
		s.voices.learn(key, rep.InputLufs)
		j.missedLoudness = rep.Missed
	}
	return nil
}

// levelledStreamFormat asks j's provider for the raw PCM a leveled stream
// needs, and has the gateway encode the leveled stream (transcode) as the
// stream would have been without loudness, when that is not PCM: the
// format a dialect asked for (j's stream format as applyStreamFormat
// left it), else the model's first stream encoding. The gateway encodes
// PCM, WAV, MP3, Opus and G.711 on the fly (audio.StreamEncodes); a model
// that does not stream PCM, or a format the gateway does not stream
// (AAC), is a 400 param_not_allowed_on_stream. A voxgate request with
// loudness and a model whose first stream encoding the gateway cannot
// produce gets raw PCM, as before streams were encoded.
func (j *Job) levelledStreamFormat(r *Request) error {
	name := j.Provider.ID + "/" + j.Model.ID
	pcm, ok := j.Model.FindStreamEncoding(sdk.FormatPCM, 0, 0)
	if !ok {
		return &problem.Error{Code: problem.ParamNotAllowedOnStream,
			Detail:     fmt.Sprintf("model %s does not stream raw PCM here, which a leveled stream needs; use POST /v1/audio/speech", name),
			Validation: []problem.FieldError{problem.Field("needs a model that streams PCM", "loudness")}}
	}
	if j.Params.Output != nil { // applyStreamFormat converts PCM already
		return nil
	}
	want := j.Stream // what applyStreamFormat asked the provider for
	if r.StreamFormat == nil {
		if es := j.Model.NativeStreamEncodings(); len(es) > 0 {
			want = StreamFormat{Format: es[0].Format, SampleRate: es[0].SampleRate, Bitrate: es[0].Bitrate}
		}
		if !audio.StreamEncodes(want.Format) {
			want = StreamFormat{Format: sdk.FormatPCM}
		}
	}
	if want.Format == "" || want.Format == sdk.FormatPCM {
		if want.Format == "" || r.StreamFormat == nil {
			want = StreamFormat{Format: pcm.Format, SampleRate: pcm.SampleRate, Bitrate: pcm.Bitrate}
		}
		if _, ok := j.Model.FindStreamEncoding(sdk.FormatPCM, want.SampleRate, 0); ok {
			j.Stream = want
			return nil
		}
	}
	if !audio.StreamEncodes(want.Format) {
		return &problem.Error{Code: problem.ParamNotAllowedOnStream,
			Detail: fmt.Sprintf("a leveled stream is encoded by the gateway, which streams %s, not %s; use POST /v1/audio/speech",
				strings.Join(audio.StreamFormats(), ", "), want.Format),
			Validation: []problem.FieldError{problem.Field("needs a stream format the gateway encodes", "loudness")}}
	}
	out := &audio.OutputParams{Format: want.Format}
	if want.SampleRate != 0 {
		out.SampleRate = &want.SampleRate
	}
	if want.Bitrate != 0 {
		out.Bitrate = &want.Bitrate
	}
	if bad := (audio.Params{Output: out}).Validate(); len(bad) > 0 {
		out.SampleRate, out.Bitrate = nil, nil // the gateway's defaults for the format
	}
	o := out.Output()
	src := pcmSourceRate(j.Model, targetRate(o))
	guess := src
	if guess == 0 {
		guess = j.Model.NativeSampleRate
	}
	resolved, err := o.Resolve(max(guess, 1))
	if err != nil {
		return &problem.Error{Code: problem.ParamNotAllowedOnStream,
			Detail:     fmt.Sprintf("model %s cannot stream a leveled %s: %v", name, want.Format, err),
			Validation: []problem.FieldError{problem.Field("needs a stream format the gateway encodes", "loudness")}}
	}
	j.Stream = StreamFormat{Format: sdk.FormatPCM, SampleRate: src}
	j.Params.Output = out
	j.conv = &Conversion{From: sdk.Encoding{Format: sdk.FormatPCM, SampleRate: guess}, Reason: ReasonProcessing,
		To: sdk.Encoding{Format: resolved.Format, SampleRate: resolved.SampleRate, Bitrate: resolved.Bitrate}}
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
	headroom := 0.0
	if o := j.Params.Output; o != nil { // encoded after leveling (transcode)
		headroom = audio.EncoderHeadroomDb(o.Format)
	}
	return &levelSource{src: src, target: j.Params.Loudness.Target(), estimate: s.voices.estimate(key), headroom: headroom,
		learn: func(lufs float64) { s.voices.learn(key, lufs) }}
}

// levelSource levels a 16-bit PCM stream chunk by chunk
// (audio.StreamLeveler).
type levelSource struct {
	src      Source
	target   audio.LoudnessTarget
	estimate float64
	headroom float64 // under the ceiling, for the stream's encoder
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
			if l.lev, err = audio.NewStreamLeveler(mt.Rate, l.target, l.estimate, StreamLookahead, l.headroom); err != nil {
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

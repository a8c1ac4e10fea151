package speech

import (
	"slices"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/sdk"
)

// Format negotiation: the one place that decides what a provider is asked
// for and whether the gateway converts its answer.
//
// The gateway is a relay first. When the model produces the encoding a
// client asked for (format, and the rate and bitrate if given: see
// sdk.Model.FindEncoding), the provider is asked for exactly that and its
// bytes pass through untouched: no decoding, no re-encoding, no copy, and
// the smallest upstream transfer. It converts only when it must:
//
//   - the model does not produce the format, rate or bitrate asked for;
//   - the request names no format and the model's default is raw PCM,
//     which is answered as WAV (defaultFormat) when the model has no WAV;
//   - the gateway itself works on the samples: volumeDbfs, a speed the
//     model cannot honour (time-stretch), the pieces of a long text or
//     turns of a conversation joined, words timed by alignment in a
//     format it cannot decode.
//
// A conversion is visible: the answer's X-Voxgate-Transcoded header and
// the log row's transcoded field name it, and
// voxgate_audio_conversions_total{from,to,reason} counts it.

// Reasons for a conversion, the reason label of
// voxgate_audio_conversions_total.
const (
	// ReasonFormat: the model does not produce the format asked for.
	ReasonFormat = "format"
	// ReasonRate: the model produces the format, not at the rate asked.
	ReasonRate = "sample_rate"
	// ReasonBitrate: the model produces the format and rate, not at the
	// bitrate asked.
	ReasonBitrate = "bitrate"
	// ReasonHeader: no format was asked, the model's default is raw PCM
	// and it has no WAV; the samples are answered in a WAV header.
	ReasonHeader = "header"
	// ReasonProcessing: volumeDbfs or a time-stretch changes the samples.
	ReasonProcessing = "processing"
	// ReasonJoin: a long text's pieces are joined into one clip.
	ReasonJoin = "join"
	// ReasonTimestamps: the gateway times the words itself and must
	// decode the audio to do so.
	ReasonTimestamps = "timestamps"
)

// Conversion says what the gateway converted an answer from and to, and
// why.
type Conversion struct {
	// From is what the provider was asked for; To what the client got.
	From, To sdk.Encoding
	// Reason is one of the Reason constants.
	Reason string
}

// String is the X-Voxgate-Transcoded header's value:
// "pcm_24000->mp3_24000_96".
func (c *Conversion) String() string { return c.From.String() + "->" + c.To.String() }

// rendition is how one provider answer becomes what the client gets: the
// encoding the provider is asked for and, when the gateway converts, the
// conversion and the output it encodes.
type rendition struct {
	ask sdk.Encoding
	// conv is nil when the provider's bytes pass through untouched.
	conv *Conversion
	// out is the encoding the gateway produces when it converts.
	out audio.Output
}

// passThrough reports whether the provider's bytes reach the client as
// they are.
func (r rendition) passThrough() bool { return r.conv == nil }

// negotiate decides how to render a clip of model m for a client that
// asked for want (nil: no format named). must, when not empty, is the
// reason the gateway has to work on the samples whatever the model offers
// (ReasonProcessing, ReasonJoin, ReasonTimestamps).
func negotiate(m *sdk.Model, want *audio.OutputParams, must string) rendition {
	if must == "" {
		if want == nil {
			f := defaultFormat(m)
			if e, ok := m.FindEncoding(f, 0, 0); ok {
				return rendition{ask: e}
			}
			if f != audio.FormatWAV || !slices.Contains(m.OutputFormats, sdk.FormatPCM) {
				// A provider-specific default passes through as the
				// model sends it.
				e, _ := m.FindEncoding(firstFormat(m), 0, 0)
				return rendition{ask: e}
			}
			must = ReasonHeader
		} else {
			rate, bitrate := deref(want.SampleRate), deref(want.Bitrate)
			if e, ok := m.FindEncoding(want.Format, rate, bitrate); ok {
				return rendition{ask: e}
			}
			switch {
			case !slices.Contains(m.OutputFormats, want.Format):
				must = ReasonFormat
			case !hasRate(m, want.Format, rate):
				must = ReasonRate
			default:
				must = ReasonBitrate
			}
		}
	}
	out := audio.Output{Format: defaultFormat(m)}
	if !audio.Encodes(out.Format) {
		out.Format = audio.FormatWAV
	}
	if want != nil {
		out = want.Output()
	}
	src := sourceEncoding(m, targetRate(out))
	if r := src.SampleRate; r > 0 {
		if resolved, err := out.Resolve(r); err == nil {
			out = resolved
		}
	}
	return rendition{ask: src, out: out, conv: &Conversion{
		From:   src,
		To:     sdk.Encoding{Format: out.Format, SampleRate: out.SampleRate, Bitrate: out.Bitrate},
		Reason: must,
	}}
}

// sourceEncoding is what to ask m for when the gateway decodes the answer
// to produce audio at want Hz (0: any): PCM at the rate pcmSourceRate
// picks, which costs nothing to decode, else WAV likewise, else MP3 (the
// last format the gateway decodes), else the model's default.
func sourceEncoding(m *sdk.Model, want int) sdk.Encoding {
	for _, f := range []string{sdk.FormatPCM, sdk.FormatWAV} {
		if !slices.Contains(m.OutputFormats, f) {
			continue
		}
		if e, ok := m.FindEncoding(f, pcmSourceRate(m, want), 0); ok {
			return e
		}
		e, _ := m.FindEncoding(f, 0, 0)
		return e
	}
	if e, ok := m.FindEncoding(sdk.FormatMP3, 0, 0); ok {
		return e
	}
	e, _ := m.FindEncoding(firstFormat(m), 0, 0)
	return e
}

// decodable reports whether the gateway can decode audio in format f.
func decodable(f string) bool {
	switch f {
	case sdk.FormatPCM, sdk.FormatWAV, sdk.FormatMP3, sdk.FormatULaw, sdk.FormatALaw:
		return true
	}
	return false
}

// hasRate reports whether m produces format at rate (0: any).
func hasRate(m *sdk.Model, format string, rate int) bool {
	_, ok := m.FindEncoding(format, rate, 0)
	return ok
}

func firstFormat(m *sdk.Model) string {
	if len(m.OutputFormats) == 0 {
		return ""
	}
	return m.OutputFormats[0]
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

package speech

import (
	"fmt"
	"slices"
	"strings"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/sdk"
)

// StreamFormat is the encoding a stream is asked for in. The dialects
// (OpenAI's response_format on SSE, ElevenLabs' output_format on
// /stream) need it to stream what their clients expect.
//
// An encoding the model streams itself (format, and the rate and bitrate
// if given: sdk.Model.FindEncoding) is asked of the provider and its
// bytes pass through untouched. Otherwise, when the model streams raw
// PCM, the gateway asks for that and converts the stream chunk by chunk
// as it arrives (audio.StreamEncoder): to PCM at another rate, WAV, MP3,
// Opus, or G.711 μ-law or A-law; the job's conversion says so.
type StreamFormat struct {
	// Format is an output format (sdk.FormatPCM, audio.FormatMP3, ...).
	Format string
	// SampleRate is the rate to stream at; 0 is the model's first rate
	// for the format (for a converted stream, what audio.Output.Resolve
	// picks).
	SampleRate int
	// Bitrate is the MP3 or Opus bitrate in kbps; 0 is the model's
	// first bitrate for the format and rate (for a converted stream, the
	// gateway's default).
	Bitrate int
}

// applyStreamFormat checks f against j's model and records it on j:
// j.Stream is what the provider is asked to stream, and a stream the
// gateway converts keeps its encoding in j.Params.Output, where a clip
// keeps its own (so it is part of the cache key as a clip's output is).
// Failures name the request's output format, which the dialects map to
// their own field.
func (j *Job) applyStreamFormat(f *StreamFormat) error {
	if f == nil {
		return nil
	}
	if j.Delivery != DeliverStream {
		return fmt.Errorf("speech: a stream format on a %v request", j.Delivery)
	}
	m := j.Model
	if e, ok := m.FindStreamEncoding(f.Format, f.SampleRate, f.Bitrate); ok {
		j.Stream = StreamFormat{Format: e.Format, SampleRate: e.SampleRate, Bitrate: e.Bitrate}
		return nil
	}
	name := j.Provider.ID + "/" + j.Model.ID
	if _, pcm := m.FindStreamEncoding(sdk.FormatPCM, 0, 0); !audio.StreamEncodes(f.Format) || !pcm {
		how := "it streams " + strings.Join(m.OutputFormats, ", ")
		if slices.Contains(m.OutputFormats, sdk.FormatPCM) {
			how += "; the gateway converts its PCM stream to " + strings.Join(audio.StreamFormats(), ", ")
		}
		return problem.Validation(problem.Field(fmt.Sprintf("model %s cannot stream %s: %s (other formats need the whole clip)",
			name, f.Format, how), "output", "format"))
	}
	out := &audio.OutputParams{Format: f.Format}
	if f.SampleRate != 0 {
		out.SampleRate = &f.SampleRate
	}
	if f.Bitrate != 0 {
		out.Bitrate = &f.Bitrate
	}
	if bad := (audio.Params{Output: out}).Validate(); len(bad) > 0 {
		return problem.Validation(problem.Field(bad[0].Message, bad[0].Path...))
	}
	o := out.Output()
	src := pcmSourceRate(m, targetRate(o))
	guess := src
	if guess == 0 {
		guess = m.NativeSampleRate
	}
	resolved, err := o.Resolve(max(guess, 1))
	if err != nil {
		return problem.Validation(problem.Field(fmt.Sprintf("model %s cannot stream %s: %v", name, f.Format, err), "output", "format"))
	}
	reason := ReasonFormat
	if _, streams := m.FindStreamEncoding(f.Format, 0, 0); streams {
		reason = ReasonBitrate
		if _, atRate := m.FindStreamEncoding(f.Format, f.SampleRate, 0); !atRate {
			reason = ReasonRate
		}
	}
	j.Stream = StreamFormat{Format: sdk.FormatPCM, SampleRate: src}
	j.Params.Output = out
	j.conv = &Conversion{From: sdk.Encoding{Format: sdk.FormatPCM, SampleRate: guess}, Reason: reason,
		To: sdk.Encoding{Format: resolved.Format, SampleRate: resolved.SampleRate, Bitrate: resolved.Bitrate}}
	return nil
}

// targetRate is the rate a converted stream is encoded at when the
// output fixes it (G.711, Opus, or a rate asked for); 0 when it follows
// the source's.
func targetRate(o audio.Output) int {
	switch o.Format {
	case audio.FormatULaw, audio.FormatALaw:
		return audio.G711Rate
	case audio.FormatOpus:
		return audio.OpusRate
	}
	return o.SampleRate
}

// pcmSourceRate picks the rate to ask m's PCM stream in for a stream
// converted to want Hz (0: any): want itself when the model has it (then
// nothing is resampled), else the lowest of its rates above want (no
// detail is made up, and little is computed that is thrown away), else
// its highest; 0, the model's choice, when it lists none or want is 0.
func pcmSourceRate(m *sdk.Model, want int) int {
	if want == 0 || len(m.SampleRates) == 0 {
		return 0
	}
	rates := slices.Sorted(slices.Values(m.SampleRates))
	if i, found := slices.BinarySearch(rates, want); found {
		return want
	} else if i < len(rates) {
		return rates[i]
	}
	return rates[len(rates)-1]
}

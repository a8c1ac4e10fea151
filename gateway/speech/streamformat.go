package speech

import (
	"fmt"
	"slices"
	"strings"

	"github.com/voxgate/voxgate/gateway/problem"
)

// StreamFormat asks the provider to stream in one of its own encodings.
// A stream is the provider's audio as it is produced, never converted by
// the gateway, so only what the model itself offers can be asked for; the
// dialects (OpenAI's response_format on SSE, ElevenLabs' output_format on
// /stream) need this to stream what their clients expect.
type StreamFormat struct {
	// Format is one of the model's output formats (sdk.FormatPCM, ...).
	Format string
	// SampleRate is the PCM rate to ask for; 0 is the model's choice.
	SampleRate int
}

// applyStreamFormat checks f against j's model and records it on j.
// Failures name the request's output format, which the dialects map to
// their own field.
func (j *Job) applyStreamFormat(f *StreamFormat) error {
	if f == nil {
		return nil
	}
	if j.Delivery != DeliverStream {
		return fmt.Errorf("speech: a stream format on a %v request", j.Delivery)
	}
	name := j.Provider.ID + "/" + j.Model.ID
	if !slices.Contains(j.Model.OutputFormats, f.Format) {
		return problem.Validation(problem.Field(fmt.Sprintf("model %s cannot stream %s; it streams %s (other formats need the whole clip)",
			name, f.Format, strings.Join(j.Model.OutputFormats, ", ")), "output", "format"))
	}
	if r := f.SampleRate; r != 0 && r != j.Model.NativeSampleRate && !slices.Contains(j.Model.SampleRates, r) {
		return problem.Validation(problem.Field(fmt.Sprintf("model %s cannot stream at %d Hz (rates: %s)",
			name, r, rates(j.Model.SampleRates, j.Model.NativeSampleRate)), "output", "sampleRate"))
	}
	j.Stream = *f
	return nil
}

func rates(list []int, native int) string {
	if len(list) == 0 {
		list = []int{native}
	}
	s := make([]string, len(list))
	for i, r := range list {
		s[i] = fmt.Sprint(r)
	}
	return strings.Join(s, ", ")
}

package jobs

import (
	"encoding/json"
	"fmt"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/speech"
)

// Spec is a job's request without its text (which is in its chunks), as
// kept in the job record (store.Job.Spec, JSON). Part of the storage
// format: names never change, new fields come with omitempty.
type Spec struct {
	// Voice speaks every chunk without a voice of its own.
	Voice VoiceSpec `json:"voice"`
	// Voices are the voices of speaker labels and chapter titles.
	Voices map[string]VoiceSpec `json:"voices,omitempty"`
	// Format is the finished file's format (mp3, opus, wav); Bitrate its
	// kbps (mp3, opus; 0: the default).
	Format  string `json:"format"`
	Bitrate int    `json:"bitrate,omitempty"`
	// Rate is the sample rate the chunks are rendered at, and the
	// finished file's (but Opus, always 48 kHz).
	Rate int `json:"rate"`
	// Captions asks for captions (VTT and SRT) of the whole file.
	Captions bool `json:"captions,omitempty"`
	// Chapters are the text's chapters; chunks name them by index.
	Chapters []Chapter `json:"chapters"`
	// Webhook, when set, is told when the job ends.
	Webhook *Webhook `json:"webhook,omitempty"`
	// Loudness, when set, is the EBU R128 target the whole file is
	// leveled to at the join (one gain for the file, not one per chunk).
	Loudness *Loudness `json:"loudness,omitempty"`
}

// Loudness is a job's loudness target, resolved (audio.LoudnessTarget).
type Loudness struct {
	Integrated float64 `json:"integrated"`
	TruePeak   float64 `json:"true_peak"`
}

func (l *Loudness) target() audio.LoudnessTarget {
	return audio.LoudnessTarget{Integrated: l.Integrated, TruePeak: l.TruePeak}
}

// VoiceSpec is a voice as a speech request names it: a saved voice, or
// an inline model and voice, with options.
type VoiceSpec struct {
	VoiceID         string          `json:"voice_id,omitempty"`
	Model           string          `json:"model,omitempty"`
	Voice           string          `json:"voice,omitempty"`
	ProviderOptions json.RawMessage `json:"provider_options,omitempty"`
	Speed           *float64        `json:"speed,omitempty"`
}

// Webhook is where a job's end is POSTed, and the secret its signature is
// made with. The secret is never returned by the API.
type Webhook struct {
	URL    string `json:"url"`
	Secret string `json:"secret"`
}

// request is the speech request of one chunk of text in voice v: a clip
// of raw PCM at rate, with word timestamps when captions are asked for
// (if the model can have them).
func (v VoiceSpec) request(text string, rate int, captions bool) *speech.Request {
	r := &speech.Request{VoiceID: v.VoiceID, Model: v.Model, Voice: v.Voice, Text: &text, ProviderOptions: v.ProviderOptions, Speed: v.Speed}
	r.Output = pcmOutput(rate)
	if captions {
		r.Timestamps = speech.TimestampsAuto
	}
	return r
}

// voice returns the voice of label ("" is the job's voice).
func (s *Spec) voice(label string) (VoiceSpec, error) {
	if label == "" {
		return s.Voice, nil
	}
	v, ok := s.Voices[label]
	if !ok {
		return VoiceSpec{}, fmt.Errorf("no voice for label %q", label)
	}
	return v, nil
}

func decodeSpec(b []byte) (*Spec, error) {
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("job spec: %w", err)
	}
	return &s, nil
}

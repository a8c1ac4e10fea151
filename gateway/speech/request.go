package speech

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/problem"
)

// Delivery says how a request wants its audio (the speech endpoint it came
// in on: a whole clip, a clip with timestamps, or a stream); the rules for
// whole-clip parameters and capabilities differ.
type Delivery int

const (
	// DeliverClip is POST /v1/audio/speech.
	DeliverClip Delivery = iota
	// DeliverTimestamps is POST /v1/audio/speech/with-timestamps.
	DeliverTimestamps
	// DeliverStream is POST /v1/audio/speech/stream.
	DeliverStream
)

// Request is the speech request body. Field names and shapes follow the
// public @speech-sdk/core gateway client.
type Request struct {
	Mode            string
	VoiceID         string
	Model           string
	Voice           string
	Text            *string
	ProviderOptions json.RawMessage
	Output          *audio.OutputParams
	VolumeDbfs      *float64
	// Loudness is the EBU R128 target (integrated LUFS, true-peak dBTP);
	// not with VolumeDbfs. Without either, the organization's default
	// target, if it has one, applies (Service.orgLoudness).
	Loudness *audio.LoudnessParams
	// LoudnessOff opts the request out of the organization's default
	// target (wire: "loudness": "off"); not with Loudness.
	LoudnessOff         bool
	Speed               *float64
	Pronunciations      *Pronunciations
	ModerationRulesetID string
	// NoCache asks for a fresh rendering, bypassing the response cache
	// (Cache-Control: no-cache); the answer is still stored.
	NoCache bool
	// StreamFormat picks a stream's encoding (DeliverStream only): the
	// provider's own when the model streams it, else converted by the
	// gateway from the model's PCM stream (see applyStreamFormat); nil is
	// the model's preferred one. No wire field of voxgate's own sets it:
	// the dialects do.
	StreamFormat *StreamFormat
	// Instructions steer delivery ("speak calmly") on models that follow
	// them (sdk.Capabilities.Instructions), which get them as
	// providerOptions.instructions; elsewhere they are dropped with a
	// warning. voxgate's body and the OpenAI dialect set them.
	Instructions *string
	// OptionsFor, when set, names the one provider ProviderOptions are
	// meant for; a request that resolves to another provider drops them
	// with a warning. Set by the ElevenLabs dialect for its
	// voice_settings and other ElevenLabs-only fields.
	OptionsFor string
	// Captions asks the with-timestamps endpoint for captions of the
	// timestamps: CaptionsSRT or CaptionsVTT.
	Captions string
	// Timestamps is "on" (the default), "auto" or "off": whether the
	// with-timestamps endpoint must produce word timestamps, may go
	// without them, or skips them.
	Timestamps string

	// loudnessByDefault says Loudness is the organization's default, not
	// the request's: a stream that cannot be leveled passes unleveled.
	loudnessByDefault bool
	// rules, when set, are the resolved pronunciation rule sources (a
	// conversation resolves them once for all its turns).
	rules [][]PronunciationRule
}

// Timestamp modes of the request's timestamps field.
const (
	// TimestampsOn: word timestamps are required; a request that cannot
	// get them fails with 503 timestamps_unavailable.
	TimestampsOn = "on"
	// TimestampsAuto: word timestamps when they can be had, else the audio
	// alone with a warning.
	TimestampsAuto = "auto"
	// TimestampsOff: no word timestamps.
	TimestampsOff = "off"
)

// maxInstructionsChars bounds the instructions field.
const maxInstructionsChars = 4000

// validateTimestamps checks a timestamps mode against the endpoint: the
// plain endpoints return no timestamps, so only "off" (or nothing) is
// accepted there.
func validateTimestamps(mode string, withTimestamps bool, path ...string) []problem.FieldError {
	switch mode {
	case "", TimestampsOff:
		return nil
	case TimestampsOn, TimestampsAuto:
		if !withTimestamps {
			return []problem.FieldError{problem.Field("this endpoint returns no word timestamps; use its /with-timestamps twin", path...)}
		}
		return nil
	}
	return []problem.FieldError{problem.Field(`must be "on", "auto" or "off"`, path...)}
}

// validateInstructions checks the instructions field.
func validateInstructions(in *string, path ...string) []problem.FieldError {
	if in == nil {
		return nil
	}
	if strings.TrimSpace(*in) == "" || utf8.RuneCountInString(*in) > maxInstructionsChars {
		return []problem.FieldError{problem.Field(fmt.Sprintf("must be 1 to %d characters", maxInstructionsChars), path...)}
	}
	return nil
}

// Speed bounds of the speech body: what the gateway's time-stretch does.
const (
	MinSpeed = audio.MinSpeed
	MaxSpeed = audio.MaxSpeed
)

// Params returns the whole-clip audio parameters of r.
func (r *Request) Params() audio.Params {
	return audio.Params{VolumeDbfs: r.VolumeDbfs, Loudness: r.Loudness, Output: r.Output}
}

// Validate checks everything that needs no catalog or store: required
// fields, the voice rule, bounds, and the stream endpoint's restrictions.
func (r *Request) Validate(ep Delivery) error {
	if ep == DeliverStream {
		var bad []problem.FieldError
		if r.Output != nil {
			bad = append(bad, problem.Field("output is a whole-clip parameter; use POST /v1/audio/speech", "output"))
		}
		if r.VolumeDbfs != nil {
			bad = append(bad, problem.Field("volumeDbfs is a whole-clip parameter; use POST /v1/audio/speech", "volumeDbfs"))
		}
		if len(bad) > 0 {
			return &problem.Error{Code: problem.ParamNotAllowedOnStream, Detail: bad[0].Message, Validation: bad}
		}
	}
	hasSaved := r.VoiceID != ""
	hasInline := r.Model != "" || r.Voice != ""
	if hasSaved && hasInline {
		return &problem.Error{Code: problem.VoiceConflict, Detail: "give either voiceId (a saved voice) or model and voice (inline), not both",
			Validation: []problem.FieldError{problem.Field("conflicts with model/voice", "voiceId")}}
	}
	var fe []problem.FieldError
	switch {
	case !hasSaved && !hasInline:
		fe = append(fe, problem.Field("give voiceId, or model and voice", "voiceId"))
	case hasInline && r.Model == "":
		fe = append(fe, problem.Field("model is required with voice (e.g. \"espeak/espeak-ng\")", "model"))
	case hasInline && r.Voice == "":
		fe = append(fe, problem.Field("voice is required with model", "voice"))
	}
	switch r.Mode {
	case "":
	case "inline":
		if hasSaved {
			fe = append(fe, problem.Field("mode \"inline\" takes model and voice, not voiceId", "mode"))
		}
	case "voice":
		if hasInline {
			fe = append(fe, problem.Field("mode \"voice\" takes voiceId, not model and voice", "mode"))
		}
	default:
		fe = append(fe, problem.Field("must be \"inline\" or \"voice\"", "mode"))
	}
	if r.Text == nil || strings.TrimSpace(*r.Text) == "" {
		fe = append(fe, problem.Field("is required and must not be blank", "text"))
	} else if !utf8.ValidString(*r.Text) {
		fe = append(fe, problem.Field("must be valid UTF-8", "text"))
	}
	// Each validator below is called only when its field was sent: a call
	// builds its path ("providerOptions"...) on the heap, as the problem it
	// may return keeps it, and this runs on every request.
	if len(r.ProviderOptions) > 0 {
		fe = append(fe, validateOptions(r.ProviderOptions, "providerOptions")...)
	}
	if r.Speed != nil && !(*r.Speed >= MinSpeed && *r.Speed <= MaxSpeed) {
		fe = append(fe, problem.Field(fmt.Sprintf("must be between %g and %g", MinSpeed, MaxSpeed), "speed"))
	}
	for _, e := range r.Params().Validate() {
		fe = append(fe, problem.FieldError{Path: e.Path, Message: e.Message})
	}
	if r.Pronunciations != nil {
		fe = append(fe, r.Pronunciations.Validate("pronunciations")...)
	}
	fe = append(fe, validateCaptions(r.Captions, ep == DeliverTimestamps)...)
	if r.Timestamps != "" {
		fe = append(fe, validateTimestamps(r.Timestamps, ep == DeliverTimestamps, "timestamps")...)
	}
	if r.Instructions != nil {
		fe = append(fe, validateInstructions(r.Instructions, "instructions")...)
	}
	if len(fe) > 0 {
		return problem.Validation(fe...)
	}
	return nil
}

// validateCaptions checks the captions field: srt or vtt, and only where
// there are timestamps to caption.
func validateCaptions(format string, timestamps bool) []problem.FieldError {
	switch {
	case format == "":
		return nil
	case format != CaptionsSRT && format != CaptionsVTT:
		return []problem.FieldError{problem.Field(`must be "srt" or "vtt"`, "captions")}
	case !timestamps:
		return []problem.FieldError{problem.Field("captions come with word timestamps: use the with-timestamps endpoint", "captions")}
	}
	return nil
}

// validateOptions requires providerOptions, when present, to be an object.
func validateOptions(raw json.RawMessage, path ...string) []problem.FieldError {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil
	}
	if t[0] != '{' {
		return []problem.FieldError{problem.Field("must be an object", path...)}
	}
	return nil
}

// unavailableOutput refuses, with 422, an output format that is real audio
// but that this gateway cannot produce (AAC), naming the formats it can;
// an unknown name stays a validation error (a typo). A clip only gets
// here when the gateway would have to encode it (see Job.checkEncodable):
// a model that produces the format itself passes it through.
func unavailableOutput(o *audio.OutputParams) error {
	if o == nil {
		return nil
	}
	reason, ok := audio.Unavailable(o.Format)
	if !ok {
		return nil
	}
	msg := fmt.Sprintf("format %q is not supported: use one of %s, or a model that produces %s itself", o.Format, strings.Join(audio.OutputFormats(), ", "), o.Format)
	return &problem.Error{Code: problem.OutputFormatUnsupported, Detail: msg + " (" + reason + ")",
		Validation: []problem.FieldError{problem.Field(msg, "output", "format")}}
}

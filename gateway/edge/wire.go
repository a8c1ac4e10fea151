package edge

import (
	"encoding/json"
	"time"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/pricing"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
)

// The JSON shapes of the resources the API returns. Storage records carry
// no wire encoding; these types are the one place their JSON form is
// defined, so a storage change never changes the API by accident.

// page is the spec's page envelope.
type page[T any] struct {
	Data       []T    `json:"data"`
	NextCursor string `json:"next_cursor"`
	HasMore    bool   `json:"has_more"`
	Limit      int    `json:"limit"`
}

// envelope is the {data: ...} answer of the routes that return one
// resource, or a list that is not paged.
type envelope[T any] struct {
	Data T `json:"data"`
}

// voiceJSON is the spec's Voice resource.
type voiceJSON struct {
	ID              string         `json:"id"`
	OrgID           string         `json:"org_id"`
	Title           string         `json:"title"`
	Provider        string         `json:"provider"`
	Model           string         `json:"model"`
	VoiceID         string         `json:"voice_id"`
	Tags            []string       `json:"tags"`
	Gender          string         `json:"gender"`
	Description     string         `json:"description"`
	ProviderOptions map[string]any `json:"provider_options"`
	MediaID         string         `json:"media_id,omitempty"`
	Fallbacks       []targetJSON   `json:"fallbacks"`
	CreatedAt       time.Time      `json:"created_at"`
	UpdatedAt       time.Time      `json:"updated_at"`
	// Consent is the attestation of a voice cloned from media.
	Consent *consentJSON `json:"consent,omitempty"`
}

// targetJSON is a voice on another provider a saved voice falls back to.
type targetJSON struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	VoiceID  string `json:"voice_id"`
}

func voiceOut(v *store.Voice) voiceJSON {
	out := voiceJSON{ID: v.ID, OrgID: v.OrgID, Title: v.Title, Provider: v.Provider, Model: v.Model, VoiceID: v.VoiceID,
		Tags: v.Tags, Gender: v.Gender, Description: v.Description, ProviderOptions: v.ProviderOptions, MediaID: v.MediaID,
		Fallbacks: make([]targetJSON, len(v.Fallbacks)), CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt}
	for i, f := range v.Fallbacks {
		out.Fallbacks[i] = targetJSON(f)
	}
	if c := v.Consent; c != nil {
		out.Consent = &consentJSON{AttestedBy: c.AttestedBy, Relation: c.Relation, Statement: c.Statement, Time: c.Time.UTC()}
	}
	if out.Tags == nil {
		out.Tags = []string{}
	}
	if out.ProviderOptions == nil {
		out.ProviderOptions = map[string]any{}
	}
	return out
}

// mediaJSON is the media object of POST and GET /v1/media.
type mediaJSON struct {
	ID         string    `json:"id"`
	OrgID      string    `json:"org_id"`
	Filename   string    `json:"filename"`
	MediaType  string    `json:"media_type"`
	Bytes      int64     `json:"bytes"`
	DurationMS int64     `json:"duration_ms"`
	SHA256     string    `json:"sha256"`
	CreatedAt  time.Time `json:"created_at"`
}

// logRowJSON is the spec's request log row: the stored row without its
// organization, with ts as RFC 3339 UTC with milliseconds.
type logRowJSON struct {
	RequestID              string  `json:"request_id"`
	ParentRequestID        string  `json:"parent_request_id"`
	TS                     string  `json:"ts"`
	Path                   string  `json:"path"`
	Status                 int     `json:"status"`
	Provider               string  `json:"provider"`
	Model                  string  `json:"model"`
	VoiceID                string  `json:"voice_id"`
	VoiceRef               string  `json:"voice_ref"`
	CharCount              int     `json:"char_count"`
	CreditsUsed            int     `json:"credits_used"`
	LatencyMS              int64   `json:"latency_ms"`
	ErrorCode              string  `json:"error_code"`
	ErrorDetail            string  `json:"error_detail"`
	ProviderOptions        string  `json:"provider_options"`
	ModerationDecision     string  `json:"moderation_decision"`
	ModerationReasonType   string  `json:"moderation_reason_type"`
	ModerationReasonDetail string  `json:"moderation_reason_detail"`
	ModerationConfidence   float64 `json:"moderation_confidence"`
	ModerationLatencyMS    int64   `json:"moderation_latency_ms"`
	TimeToFirstAudioMS     int64   `json:"time_to_first_audio_ms"`
	TextWaitMS             int64   `json:"text_wait_ms"`
	KeyID                  string  `json:"key_id"`
	AudioSeconds           float64 `json:"audio_seconds"`
	Cache                  string  `json:"cache"`
	Transcoded             string  `json:"transcoded"`
	Sanitized              bool    `json:"sanitized"`
	// Cost is what the request cost in Currency, as an exact decimal;
	// CostEstimate what it was quoted before its provider calls.
	Cost         json.Number `json:"cost"`
	Currency     string      `json:"currency"`
	CostEstimate json.Number `json:"cost_estimate"`
}

// tsLayout renders log timestamps as RFC 3339 in UTC with milliseconds.
const tsLayout = "2006-01-02T15:04:05.000Z07:00"

func logRowOut(r *store.LogRow) logRowJSON {
	return logRowJSON{
		RequestID: r.RequestID, ParentRequestID: r.ParentRequestID,
		TS:   r.TS.UTC().Format(tsLayout),
		Path: r.Path, Status: r.Status, Provider: r.Provider, Model: r.Model,
		VoiceID: r.VoiceID, VoiceRef: r.VoiceRef, CharCount: r.CharCount,
		CreditsUsed: r.CreditsUsed, LatencyMS: r.LatencyMS,
		ErrorCode: r.ErrorCode, ErrorDetail: r.ErrorDetail,
		ProviderOptions:        r.ProviderOptions,
		ModerationDecision:     r.ModerationDecision,
		ModerationReasonType:   r.ModerationReasonType,
		ModerationReasonDetail: r.ModerationReasonDetail,
		ModerationConfidence:   r.ModerationConfidence,
		ModerationLatencyMS:    r.ModerationLatencyMS,
		TimeToFirstAudioMS:     r.TimeToFirstAudioMS,
		TextWaitMS:             r.TextWaitMS,
		KeyID:                  r.KeyID,
		AudioSeconds:           round3(float64(r.AudioMS) / 1000),
		Cache:                  r.Cache,
		Transcoded:             r.Transcoded,
		Sanitized:              r.Sanitized,
		Cost:                   money(r.Cost),
		Currency:               r.Currency,
		CostEstimate:           money(r.CostEstimate),
	}
}

// money is an amount in nano-units as an exact JSON decimal ("0.00045").
func money(nanos int64) json.Number { return json.Number(pricing.Format(nanos)) }

// Request bodies. Each decodes strictly (unknown fields are a validation
// error naming the field, see decodeStrict) and converts to the speech
// service's own request type, which has no wire encoding.

// speechRequestJSON is the body of the speech endpoints, shaped like the
// public @speech-sdk/core gateway client's.
type speechRequestJSON struct {
	Mode                string              `json:"mode"`
	VoiceID             string              `json:"voiceId"`
	Model               string              `json:"model"`
	Voice               string              `json:"voice"`
	Text                *string             `json:"text"`
	ProviderOptions     json.RawMessage     `json:"providerOptions"`
	Output              outputField         `json:"output"` // "format" or {format, sampleRate, bitrate}: see decodeOutput
	VolumeDbfs          *float64            `json:"volumeDbfs"`
	Loudness            *speechLoudnessJSON `json:"loudness"`
	Speed               *float64            `json:"speed"`
	Pronunciations      *pronunciationsJSON `json:"pronunciations"`
	ModerationRulesetID string              `json:"moderation_ruleset_id"`
	Captions            string              `json:"captions"`
	Instructions        *string             `json:"instructions"`
	Timestamps          string              `json:"timestamps"`
}

func (r *speechRequestJSON) domain() (*speech.Request, error) {
	out, err := decodeOutput(r.Output)
	if err != nil {
		return nil, err
	}
	loud, off, err := r.Loudness.domain()
	if err != nil {
		return nil, err
	}
	return &speech.Request{
		Mode: r.Mode, VoiceID: r.VoiceID, Model: r.Model, Voice: r.Voice, Text: r.Text,
		ProviderOptions: r.ProviderOptions, Output: out, VolumeDbfs: r.VolumeDbfs, Loudness: loud, LoudnessOff: off,
		Speed: r.Speed, Pronunciations: r.Pronunciations.domain(), ModerationRulesetID: r.ModerationRulesetID,
		Captions: r.Captions, Instructions: r.Instructions, Timestamps: r.Timestamps,
	}, nil
}

// loudnessJSON is the request's loudness object (EBU R128 target).
type loudnessJSON struct {
	Integrated *float64 `json:"integrated"`
	TruePeak   *float64 `json:"truePeak"`
}

func (l *loudnessJSON) domain() *audio.LoudnessParams {
	if l == nil {
		return nil
	}
	return &audio.LoudnessParams{Integrated: l.Integrated, TruePeak: l.TruePeak}
}

// speechLoudnessJSON is a speech request's loudness object: a target, or
// {"off": true}, which opts the request out of its organization's
// default target (the only way for a stream, which takes no volumeDbfs).
type speechLoudnessJSON struct {
	Integrated *float64 `json:"integrated"`
	TruePeak   *float64 `json:"truePeak"`
	Off        bool     `json:"off"`
}

func (l *speechLoudnessJSON) domain() (*audio.LoudnessParams, bool, error) {
	switch {
	case l == nil:
		return nil, false, nil
	case l.Off && (l.Integrated != nil || l.TruePeak != nil):
		return nil, false, problem.Validation(problem.Field("off opts out of the organization's default target; give it alone", "loudness", "off"))
	case l.Off:
		return nil, true, nil
	}
	return &audio.LoudnessParams{Integrated: l.Integrated, TruePeak: l.TruePeak}, false, nil
}

// outputJSON is the request's output object.
type outputJSON struct {
	Format     string `json:"format"`
	SampleRate *int   `json:"sampleRate"`
	Bitrate    *int   `json:"bitrate"`
}

func (o *outputJSON) domain() *audio.OutputParams {
	if o == nil {
		return nil
	}
	return &audio.OutputParams{Format: o.Format, SampleRate: o.SampleRate, Bitrate: o.Bitrate}
}

// pronunciationsJSON is the request's pronunciations object.
type pronunciationsJSON struct {
	Rules         []pronunciationRuleJSON `json:"rules"`
	DictionaryIDs []string                `json:"dictionaryIds"`
}

type pronunciationRuleJSON struct {
	Word          string `json:"word"`
	Replacement   string `json:"replacement"`
	CaseSensitive bool   `json:"caseSensitive"`
	// Kind is "alias" (the default) or "phoneme", with Alphabet ("ipa"
	// or "cmu") and Phoneme.
	Kind     string `json:"kind"`
	Alphabet string `json:"alphabet"`
	Phoneme  string `json:"phoneme"`
}

func (p *pronunciationsJSON) domain() *speech.Pronunciations {
	if p == nil {
		return nil
	}
	out := &speech.Pronunciations{Rules: make([]speech.PronunciationRule, len(p.Rules)), DictionaryIDs: p.DictionaryIDs}
	for i, r := range p.Rules {
		out.Rules[i] = speech.PronunciationRule(r)
	}
	return out
}

// conversationRequestJSON is the body of the conversation endpoints.
type conversationRequestJSON struct {
	Mode                string              `json:"mode"`
	Model               string              `json:"model"`
	Turns               []turnJSON          `json:"turns"`
	GapMs               *int                `json:"gapMs"`
	VolumeDbfs          *float64            `json:"volumeDbfs"`
	Loudness            *loudnessJSON       `json:"loudness"`
	Output              outputField         `json:"output"`
	Speed               *float64            `json:"speed"`
	Split               bool                `json:"split"`
	Pronunciations      *pronunciationsJSON `json:"pronunciations"`
	ProviderOptions     json.RawMessage     `json:"providerOptions"`
	ModerationRulesetID string              `json:"moderation_ruleset_id"`
	Captions            string              `json:"captions"`
	Timestamps          string              `json:"timestamps"`
	NormalizeVolume     *bool               `json:"normalizeVolume"`
	Instructions        *string             `json:"instructions"`
}

// turnJSON is one speaker turn.
type turnJSON struct {
	Mode            string          `json:"mode"`
	VoiceID         string          `json:"voiceId"`
	Model           string          `json:"model"`
	Voice           string          `json:"voice"`
	Text            *string         `json:"text"`
	ProviderOptions json.RawMessage `json:"providerOptions"`
	Speed           *float64        `json:"speed"`
	Instructions    *string         `json:"instructions"`
}

func (r *conversationRequestJSON) domain() (*speech.ConversationRequest, error) {
	output, err := decodeOutput(r.Output)
	if err != nil {
		return nil, err
	}
	out := &speech.ConversationRequest{
		Mode: r.Mode, Model: r.Model, GapMs: r.GapMs, VolumeDbfs: r.VolumeDbfs, Loudness: r.Loudness.domain(), Output: output,
		Speed: r.Speed, Split: r.Split, Pronunciations: r.Pronunciations.domain(), ProviderOptions: r.ProviderOptions,
		ModerationRulesetID: r.ModerationRulesetID, Timestamps: r.Timestamps, NormalizeVolume: r.NormalizeVolume,
		Instructions: r.Instructions, Turns: make([]speech.Turn, len(r.Turns)), Captions: r.Captions,
	}
	for i, t := range r.Turns {
		out.Turns[i] = speech.Turn(t)
	}
	return out, nil
}

// Response bodies of the speech endpoints.

// timestamp is a word timing on the wire.
type timestamp struct {
	Text  string  `json:"text"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

// timestampsEnvelope is the with-timestamps response.
type timestampsEnvelope struct {
	Audio            string         `json:"audio"`
	MediaType        string         `json:"mediaType"`
	Timestamps       []timestamp    `json:"timestamps"`
	Warnings         []string       `json:"warnings"`
	ProviderMetadata map[string]any `json:"providerMetadata"`
	Captions         string         `json:"captions,omitempty"`
}

// conversationTimestamp is a word on a conversation's timeline.
type conversationTimestamp struct {
	Text      string  `json:"text"`
	Start     float64 `json:"start"`
	End       float64 `json:"end"`
	TurnIndex int     `json:"turnIndex"`
}

// conversationEnvelope is the with-timestamps conversation response.
type conversationEnvelope struct {
	Audio            string                  `json:"audio"`
	MediaType        string                  `json:"mediaType"`
	Timestamps       []conversationTimestamp `json:"timestamps"`
	Warnings         []string                `json:"warnings"`
	ProviderMetadata map[string]any          `json:"providerMetadata"`
	Captions         string                  `json:"captions,omitempty"`
	AudioSegments    []segmentJSON           `json:"audioSegments,omitempty"`
	FailedTurns      []failedTurn            `json:"failedTurns,omitempty"`
}

type segmentJSON struct {
	TurnIndex  int         `json:"turnIndex"`
	Audio      string      `json:"audio"`
	MediaType  string      `json:"mediaType"`
	DurationMs int64       `json:"durationMs"`
	Timestamps []timestamp `json:"timestamps"`
}

// plainSegmentJSON is a segment of the plain conversation endpoint's
// split answer, which carries no timestamps.
type plainSegmentJSON struct {
	TurnIndex  int    `json:"turnIndex"`
	Audio      string `json:"audio"`
	MediaType  string `json:"mediaType"`
	DurationMs int64  `json:"durationMs"`
}

// splitEnvelope is the plain conversation endpoint's answer with split:
// one segment per rendered turn instead of one clip.
type splitEnvelope struct {
	AudioSegments []plainSegmentJSON `json:"audioSegments"`
	Warnings      []string           `json:"warnings"`
	FailedTurns   []failedTurn       `json:"failedTurns"`
}

// failedTurn names a turn that did not render and why, as a problem object.
type failedTurn struct {
	TurnIndex int             `json:"turnIndex"`
	Error     json.RawMessage `json:"error"`
}

// moderationEnvelope is the spec's moderation error body. Code repeats
// error.code at the top level: the public client reads every error's code
// from there, as it does a problem object's.
type moderationEnvelope struct {
	Error moderationError `json:"error"`
	Code  string          `json:"code"`
}

type moderationError struct {
	Code      string           `json:"code"`
	Message   string           `json:"message"`
	Reason    moderationReason `json:"reason"`
	TurnIndex *int             `json:"turn_index,omitempty"`
}

// moderationReason is the documented reason of a block: its type and
// detail, the confidence behind it (0 to 1), and the custom rule that
// blocked, when one did.
type moderationReason struct {
	Type       string  `json:"type"`
	Detail     string  `json:"detail"`
	Confidence float64 `json:"confidence"`
	RuleName   string  `json:"rule_name,omitempty"`
}

// createVoiceRequest is the body of POST /v1/voices.
type createVoiceRequest struct {
	Title           string         `json:"title"`
	Provider        string         `json:"provider"`
	Model           string         `json:"model"`
	VoiceID         string         `json:"voice_id"`
	MediaID         string         `json:"mediaId"`
	MediaIDs        []string       `json:"mediaIds"`
	Tags            []string       `json:"tags"`
	Gender          string         `json:"gender"`
	Description     string         `json:"description"`
	ProviderOptions map[string]any `json:"provider_options"`
	// Fallbacks are equivalent voices on other providers.
	Fallbacks []targetJSON `json:"fallbacks"`
	// CloneOptions go to the provider's clone call only (e.g. Resemble's
	// transcripts of the samples), merged over provider_options; they
	// are not saved with the voice.
	CloneOptions map[string]any `json:"clone_options"`
	// Consent attests that the speaker of the uploaded media agreed to
	// the clone (docs/provenance.md).
	Consent *consentJSON `json:"consent"`
}

// consentJSON is a cloned voice's consent attestation.
type consentJSON struct {
	AttestedBy string    `json:"attested_by"`
	Relation   string    `json:"relation"`
	Statement  string    `json:"statement"`
	Time       time.Time `json:"time"`
}

// updateVoiceRequest is the body of PUT /v1/voices/{voiceId}: every field
// optional, only the given ones change. Cloning happens at creation only,
// so mediaId is not taken.
type updateVoiceRequest struct {
	Title           *string         `json:"title"`
	Provider        *string         `json:"provider"`
	Model           *string         `json:"model"`
	VoiceID         *string         `json:"voice_id"`
	Tags            *[]string       `json:"tags"`
	Gender          *string         `json:"gender"`
	Description     *string         `json:"description"`
	ProviderOptions *map[string]any `json:"provider_options"`
}

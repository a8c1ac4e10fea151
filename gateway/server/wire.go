package server

import (
	"time"

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
	CreatedAt       time.Time      `json:"created_at"`
	UpdatedAt       time.Time      `json:"updated_at"`
}

func voiceOut(v *store.Voice) voiceJSON {
	out := voiceJSON(*v)
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
	}
}

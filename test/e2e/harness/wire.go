package harness

import (
	"encoding/json"
	"time"
)

// Problem is the problem+json shape.
type Problem struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Status     int    `json:"status"`
	Detail     string `json:"detail"`
	Code       string `json:"code"`
	Validation []struct {
		Path    []string `json:"path"`
		Message string   `json:"message"`
	} `json:"validation"`
	Provider       string `json:"provider"`
	UpstreamCode   string `json:"upstream_code"`
	UpstreamStatus int    `json:"upstream_status"`
	TurnIndex      *int   `json:"turn_index"`
}

// Voice is the Voice resource as the API renders it; tests decode
// responses into it (the store's records have no JSON form).
type Voice struct {
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

// LogRow is a request log row as GET /v1/logs renders it.
type LogRow struct {
	RequestID              string    `json:"request_id"`
	ParentRequestID        string    `json:"parent_request_id"`
	TS                     time.Time `json:"ts"`
	Path                   string    `json:"path"`
	Status                 int       `json:"status"`
	Provider               string    `json:"provider"`
	Model                  string    `json:"model"`
	VoiceID                string    `json:"voice_id"`
	VoiceRef               string    `json:"voice_ref"`
	CharCount              int       `json:"char_count"`
	CreditsUsed            int       `json:"credits_used"`
	LatencyMS              int64     `json:"latency_ms"`
	ErrorCode              string    `json:"error_code"`
	ErrorDetail            string    `json:"error_detail"`
	ProviderOptions        string    `json:"provider_options"`
	ModerationDecision     string    `json:"moderation_decision"`
	ModerationReasonType   string    `json:"moderation_reason_type"`
	ModerationReasonDetail string    `json:"moderation_reason_detail"`
	ModerationConfidence   float64   `json:"moderation_confidence"`
	ModerationLatencyMS    int64     `json:"moderation_latency_ms"`
	Cache                  string    `json:"cache"`
	Transcoded             string    `json:"transcoded"`
	Sanitized              bool      `json:"sanitized"`
	// Cost and CostEstimate are exact decimals of Currency.
	Cost         json.Number `json:"cost"`
	Currency     string      `json:"currency"`
	CostEstimate json.Number `json:"cost_estimate"`
}

// Quote is the answer of a quote route (POST /v1/audio/speech/quote).
type Quote struct {
	Data struct {
		Cost     json.Number `json:"cost"`
		Currency string      `json:"currency"`
		Calls    []struct {
			Provider string           `json:"provider"`
			Model    string           `json:"model"`
			Units    map[string]int64 `json:"units"`
			Cost     json.Number      `json:"cost"`
		} `json:"calls"`
	} `json:"data"`
}

// Media is the media object as the API renders it.
type Media struct {
	ID         string    `json:"id"`
	OrgID      string    `json:"org_id"`
	Filename   string    `json:"filename"`
	MediaType  string    `json:"media_type"`
	Bytes      int64     `json:"bytes"`
	DurationMS int64     `json:"duration_ms"`
	SHA256     string    `json:"sha256"`
	CreatedAt  time.Time `json:"created_at"`
}

// ConversationEnvelope is the JSON answer of /v1/audio/conversation.
type ConversationEnvelope struct {
	Audio      string `json:"audio"`
	MediaType  string `json:"mediaType"`
	Timestamps []struct {
		Text      string  `json:"text"`
		Start     float64 `json:"start"`
		End       float64 `json:"end"`
		TurnIndex int     `json:"turnIndex"`
	} `json:"timestamps"`
	Warnings         []string       `json:"warnings"`
	ProviderMetadata map[string]any `json:"providerMetadata"`
	AudioSegments    []struct {
		TurnIndex  int    `json:"turnIndex"`
		Audio      string `json:"audio"`
		MediaType  string `json:"mediaType"`
		Timestamps []struct {
			Text       string
			Start, End float64
		} `json:"timestamps"`
	} `json:"audioSegments"`
	FailedTurns []struct {
		TurnIndex int     `json:"turnIndex"`
		Error     Problem `json:"error"`
	} `json:"failedTurns"`
}

// VoicePage is a page of GET /v1/voices.
type VoicePage struct {
	Data       []Voice `json:"data"`
	NextCursor string  `json:"next_cursor"`
	HasMore    bool    `json:"has_more"`
	Limit      int     `json:"limit"`
}

// LogPage is a page of GET /v1/logs.
type LogPage struct {
	Data       []LogRow `json:"data"`
	NextCursor string   `json:"next_cursor"`
	HasMore    bool     `json:"has_more"`
}

// TimestampsEnvelope is the JSON answer of a speech request with
// timestamps.
type TimestampsEnvelope struct {
	Audio      string `json:"audio"`
	MediaType  string `json:"mediaType"`
	Timestamps []struct {
		Text  string  `json:"text"`
		Start float64 `json:"start"`
		End   float64 `json:"end"`
	} `json:"timestamps"`
	Warnings         []string `json:"warnings"`
	Captions         string   `json:"captions"`
	ProviderMetadata struct {
		Voxgate struct {
			TimestampsSource string    `json:"timestamps_source"`
			AlignmentMatch   float64   `json:"alignment_match"`
			AlignmentRef     string    `json:"alignment_reference"`
			Pieces           []float64 `json:"pieces"`
		} `json:"voxgate"`
	} `json:"providerMetadata"`
}

package realtime

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/voxgate/voxgate/gateway/admission/moderation"
	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/edge/textrule"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/sdk"
)

// The wire shapes of the protocol (docs/realtime.md, "Messages"). They are
// the one place the socket's JSON is defined.

// Client message types.
const (
	msgStart  = "start"
	msgText   = "text"
	msgFlush  = "flush"
	msgCancel = "cancel"
	msgClose  = "close"
)

// defaultContext is the contextId of messages that name none.
const defaultContext = "default"

// clientMessage is any client message: type says which fields belong.
type clientMessage struct {
	Type      string  `json:"type"`
	ContextID *string `json:"contextId"`
	Text      *string `json:"text"`

	// start only.
	Mode                string          `json:"mode"`
	VoiceID             string          `json:"voiceId"`
	Model               string          `json:"model"`
	Voice               string          `json:"voice"`
	ProviderOptions     json.RawMessage `json:"providerOptions"`
	Output              *outputJSON     `json:"output"`
	Speed               *float64        `json:"speed"`
	VolumeDbfs          *float64        `json:"volumeDbfs"`
	Pronunciations      json.RawMessage `json:"pronunciations"`
	ModerationRulesetID string          `json:"moderation_ruleset_id"`
	Timestamps          *bool           `json:"timestamps"`
	AudioEncoding       string          `json:"audioEncoding"`
	Aggregation         string          `json:"aggregation"`
	FailoverWindowMs    *int            `json:"failoverWindowMs"`
}

type outputJSON struct {
	Format     string `json:"format"`
	SampleRate *int   `json:"sampleRate"`
	Bitrate    *int   `json:"bitrate"`
}

// startFields names the fields only start takes, with whether m sets them.
func (m *clientMessage) startFields() map[string]bool {
	return map[string]bool{
		"mode": m.Mode != "", "voiceId": m.VoiceID != "", "model": m.Model != "", "voice": m.Voice != "",
		"providerOptions": m.ProviderOptions != nil, "output": m.Output != nil, "speed": m.Speed != nil,
		"volumeDbfs": m.VolumeDbfs != nil, "pronunciations": m.Pronunciations != nil,
		"moderation_ruleset_id": m.ModerationRulesetID != "", "timestamps": m.Timestamps != nil,
		"audioEncoding": m.AudioEncoding != "", "aggregation": m.Aggregation != "",
		"failoverWindowMs": m.FailoverWindowMs != nil,
	}
}

// decodeMessage parses and checks one client frame. The error is a
// *problem.Error naming what is wrong.
func decodeMessage(data []byte) (*clientMessage, string, error) {
	var m clientMessage
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, "", problem.New(problem.InvalidJSON, "the message is empty; send a JSON object")
	}
	if !utf8.Valid(data) {
		return nil, "", problem.New(problem.InvalidJSON, "the message is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, "", jsonProblem(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, "", problem.New(problem.InvalidJSON, "unexpected data after the JSON object")
	}
	id := defaultContext
	if m.ContextID != nil {
		id = *m.ContextID
		if !validContextID(id) {
			return nil, "", problem.Validation(problem.Field("must be 1 to 64 characters of A-Z a-z 0-9 _ - . :", "contextId"))
		}
	}
	// The edge's text rule, as for every HTTP body: no NUL in any string
	// (it would reach the store in the context's log row).
	fe := textrule.JSON(data)
	switch m.Type {
	case msgStart:
		if m.Text != nil {
			fe = append(fe, problem.Field("start takes no text; send text messages after it", "text"))
		}
		switch m.AudioEncoding {
		case "", "binary", "base64":
		default:
			fe = append(fe, problem.Field(`must be "binary" or "base64"`, "audioEncoding"))
		}
		if w := m.FailoverWindowMs; w != nil && (*w < 0 || *w > 60000) {
			fe = append(fe, problem.Field("must be between 0 and 60000 (milliseconds)", "failoverWindowMs"))
		}
		switch m.Aggregation {
		case "", aggSentence, aggClause, aggImmediate:
		default:
			fe = append(fe, problem.Field(`must be "sentence", "clause" or "immediate"`, "aggregation"))
		}
	case msgText, msgFlush, msgCancel, msgClose:
		for name, set := range m.startFields() {
			if set {
				fe = append(fe, problem.Field("only a start message takes this field", name))
			}
		}
		if m.Type == msgText && m.Text == nil {
			fe = append(fe, problem.Field("is required in a text message", "text"))
		}
		if m.Type != msgText && m.Text != nil {
			fe = append(fe, problem.Field("only a text message takes text", "text"))
		}
	case "":
		fe = append(fe, problem.Field("is required: start, text, flush, cancel or close", "type"))
	default:
		fe = append(fe, problem.Field(fmt.Sprintf("unknown message type %q: use start, text, flush, cancel or close", m.Type), "type"))
	}
	if len(fe) > 0 {
		return nil, id, problem.Validation(fe...)
	}
	return &m, id, nil
}

// validContextID reports whether id is 1 to 64 characters of the
// allowed set: it is echoed in binary frame headers (one length byte) and
// in logs.
func validContextID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// liveRequest converts a start message into the speech service's request.
func (m *clientMessage) liveRequest() (*speech.LiveRequest, error) {
	r := &speech.LiveRequest{Request: speech.Request{
		Mode: m.Mode, VoiceID: m.VoiceID, Model: m.Model, Voice: m.Voice,
		ProviderOptions: m.ProviderOptions, Speed: m.Speed, VolumeDbfs: m.VolumeDbfs,
		ModerationRulesetID: m.ModerationRulesetID,
	}}
	if m.Output != nil {
		r.Output = &audio.OutputParams{Format: m.Output.Format, SampleRate: m.Output.SampleRate, Bitrate: m.Output.Bitrate}
	}
	if m.Pronunciations != nil {
		r.Pronunciations = &speech.Pronunciations{}
	}
	if m.Timestamps != nil {
		r.Timestamps = *m.Timestamps
	}
	return r, nil
}

// jsonProblem maps encoding/json errors to problems, naming the field.
func jsonProblem(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return problem.New(problem.InvalidJSON, "malformed JSON at byte %d: %s", syn.Offset, syn.Error())
	case errors.As(err, &typ):
		if typ.Field == "" {
			return problem.Validation(problem.Field("the message must be a JSON object"))
		}
		return problem.Validation(problem.Field(fmt.Sprintf("must not be %s", typ.Value), strings.Split(typ.Field, ".")...))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return problem.New(problem.InvalidJSON, "the JSON message ends too early")
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return problem.Validation(problem.Field("unknown field", strings.Trim(f, `"`)))
	}
	return problem.New(problem.InvalidJSON, "malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// Server messages.

type startedMessage struct {
	Type           string `json:"type"`
	ContextID      string `json:"contextId"`
	RequestID      string `json:"requestId"`
	Provider       string `json:"provider"`
	Model          string `json:"model"`
	Voice          string `json:"voice"`
	MediaType      string `json:"mediaType"`
	InputStreaming bool   `json:"inputStreaming"`
}

type audioMessage struct {
	Type      string `json:"type"`
	ContextID string `json:"contextId"`
	Audio     string `json:"audio"`
}

type wordJSON struct {
	Text  string  `json:"text"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

type timestampsMessage struct {
	Type      string     `json:"type"`
	ContextID string     `json:"contextId"`
	Words     []wordJSON `json:"words"`
}

type warningMessage struct {
	Type      string `json:"type"`
	ContextID string `json:"contextId,omitempty"`
	Message   string `json:"message"`
}

// errorMessage carries either a problem object or the moderation
// envelope's error, whichever the HTTP API would have answered.
type errorMessage struct {
	Type      string          `json:"type"`
	ContextID string          `json:"contextId,omitempty"`
	Code      string          `json:"code"`
	Problem   json.RawMessage `json:"problem,omitempty"`
	Error     *moderationJSON `json:"error,omitempty"`
}

type moderationJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Reason  struct {
		Type   string `json:"type"`
		Detail string `json:"detail"`
	} `json:"reason"`
}

// Reasons a context ends, the done message's reason.
const (
	reasonCompleted = "completed"
	reasonCancelled = "cancelled"
	reasonError     = "error"
	reasonBlocked   = "blocked"
)

type doneMessage struct {
	Type               string  `json:"type"`
	ContextID          string  `json:"contextId"`
	Reason             string  `json:"reason"`
	Characters         int     `json:"characters"`
	Credits            int     `json:"credits"`
	AudioSeconds       float64 `json:"audioSeconds"`
	TimeToFirstAudioMs *int64  `json:"timeToFirstAudioMs"`
	heardJSON
}

// heardJSON is what the client was sent of a context when it ended: the
// text whose audio went out, the index of its last word on the context's
// word timeline (-1: none) and the audio's length in milliseconds. An
// agent trims its transcript to spokenText after an interruption.
type heardJSON struct {
	SpokenText    string `json:"spokenText"`
	LastWordIndex int    `json:"lastWordIndex"`
	AudioMs       int64  `json:"audioMs"`
}

// failoverMessage tells the client its context moved to the next target
// of the voice's fallback chain, and which text is spoken again there.
type failoverMessage struct {
	Type         string `json:"type"`
	ContextID    string `json:"contextId"`
	From         string `json:"from"`
	Provider     string `json:"provider"`
	Model        string `json:"model"`
	Voice        string `json:"voice"`
	Reason       string `json:"reason"`
	ReplayedText string `json:"replayedText"`
}

// cancelledMessage acknowledges a cancel, after the context's last audio
// frame and before its done.
type cancelledMessage struct {
	Type      string `json:"type"`
	ContextID string `json:"contextId"`
	heardJSON
}

// metricsMessage is a context's turn timing, sent before its done: the
// time to first audio from the first text, and its parts: the text
// waited for (from the first text until the sentence buffer cut the
// first segment) and the rest (moderation, the provider, the gateway)
// from that cut to the first audio.
type metricsMessage struct {
	Type                  string `json:"type"`
	ContextID             string `json:"contextId"`
	Aggregation           string `json:"aggregation"`
	TimeToFirstAudioMs    *int64 `json:"timeToFirstAudioMs"`
	TextWaitMs            *int64 `json:"textWaitMs"`
	FirstSegmentToAudioMs *int64 `json:"firstSegmentToAudioMs"`
	Segments              int    `json:"segments"`
}

// errorFor renders err as an error message for context id ("" for the
// socket), with the problem it maps to for the log.
func errorFor(id string, err error, provider string) (errorMessage, *problem.Error) {
	var be *moderation.BlockedError
	if errors.As(err, &be) {
		m := &moderationJSON{Code: string(problem.ModerationBlocked), Message: "the text was blocked by content moderation"}
		if be.Verdict.ReasonType == moderation.ReasonErrorFailClosed {
			m.Message = "the content moderation check failed and the ruleset fails closed"
		}
		m.Reason.Type, m.Reason.Detail = be.Verdict.ReasonType, be.Verdict.ReasonDetail
		pe := &problem.Error{Code: problem.ModerationBlocked, Detail: be.Verdict.ReasonType + ": " + be.Verdict.ReasonDetail}
		return errorMessage{Type: "error", ContextID: id, Code: m.Code, Error: m}, pe
	}
	pe := problem.From(err, provider)
	return errorMessage{Type: "error", ContextID: id, Code: string(pe.Code), Problem: pe.AppendJSON(nil)}, pe
}

// binaryFrame builds an audio frame: the context id's length, the id,
// then the audio.
func binaryFrame(id string, audio []byte) []byte {
	b := make([]byte, 0, 1+len(id)+len(audio))
	b = append(b, byte(len(id)))
	b = append(b, id...)
	return append(b, audio...)
}

// base64Frame builds the JSON form of an audio frame.
func base64Frame(id string, audio []byte) []byte {
	b, _ := json.Marshal(audioMessage{Type: "audio", ContextID: id, Audio: base64.StdEncoding.EncodeToString(audio)})
	return b
}

func wordsJSON(ws []sdk.WordTimestamp) []wordJSON {
	out := make([]wordJSON, len(ws))
	for i, w := range ws {
		out[i] = wordJSON{Text: w.Text, Start: round3(w.Start), End: round3(w.End)}
	}
	return out
}

// round3 rounds seconds to milliseconds, as the HTTP API does.
func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

package dialect

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/speech"
)

// OpenAIHome is the provider a bare OpenAI model name ("tts-1") means
// when no alias says otherwise.
const OpenAIHome = "openai"

// OpenAISpeech is the body of OpenAI's POST /v1/audio/speech. The gateway
// tells it from its own body by the `input` member.
type OpenAISpeech struct {
	Model          string      `json:"model"`
	Input          *string     `json:"input"`
	Voice          OpenAIVoice `json:"voice"`
	ResponseFormat string      `json:"response_format"`
	Speed          *float64    `json:"speed"`
	Instructions   string      `json:"instructions"`
	StreamFormat   string      `json:"stream_format"`
}

// OpenAIVoice is the request's voice: a name ("alloy") or, for custom
// voices, an object {"id": "..."}.
type OpenAIVoice struct{ ID string }

// UnmarshalJSON accepts both forms.
func (v *OpenAIVoice) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &v.ID)
	}
	var obj struct {
		ID string `json:"id"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil {
		return problem.Validation(problem.Field(`must be a voice name or an object {"id": "..."}`, "voice"))
	}
	v.ID = obj.ID
	return nil
}

// openAIFormats are OpenAI's response_format values, each the voxgate
// output format of the same name. Whether the gateway can produce one is
// the audio package's to say (Params.Validate), so a format it learns
// works here unchanged.
var openAIFormats = []string{"mp3", "opus", "aac", "flac", "wav", "pcm"}

// openAIPCMRate is the rate of OpenAI's pcm: raw 16-bit little-endian
// mono at 24 kHz, which clients assume since the bytes do not say.
const openAIPCMRate = 24000

// Speech maps the body onto a speech request for org. isProvider reports
// whether a name is a configured provider. The delivery is a whole clip,
// or a stream for stream_format "sse".
func (r *OpenAISpeech) Speech(org string, al *Aliases, isProvider func(string) bool) (*speech.Request, speech.Delivery, error) {
	var fe []problem.FieldError
	if strings.TrimSpace(r.Model) == "" {
		fe = append(fe, problem.Field("is required (e.g. tts-1, or provider/model such as espeak/espeak-ng)", "model"))
	}
	if r.Voice.ID == "" {
		fe = append(fe, problem.Field("is required (e.g. alloy)", "voice"))
	}
	ep := speech.DeliverClip
	switch r.StreamFormat {
	case "", "audio":
	case "sse":
		ep = speech.DeliverStream
	default:
		fe = append(fe, problem.Field(`must be "audio" or "sse"`, "stream_format"))
	}
	format := r.ResponseFormat
	if format == "" {
		format = "mp3"
	}
	if !contains(openAIFormats, format) {
		fe = append(fe, problem.Field("must be one of "+strings.Join(openAIFormats, ", "), "response_format"))
	}
	if len(fe) > 0 {
		return nil, ep, problem.Validation(fe...)
	}
	t := al.Resolve(org, r.Model, r.Voice.ID, OpenAIHome, isProvider)
	req := &speech.Request{
		VoiceID: t.VoiceID, Model: t.Model, Voice: t.Voice, Text: r.Input, Speed: r.Speed,
	}
	if r.Instructions != "" {
		req.Instructions = &r.Instructions
	}
	if ep == speech.DeliverStream {
		req.StreamFormat = &speech.StreamFormat{Format: format}
		if format == audio.FormatPCM {
			req.StreamFormat.SampleRate = openAIPCMRate
		}
	} else {
		out := &audio.OutputParams{Format: format}
		if format == audio.FormatPCM {
			rate := openAIPCMRate
			out.SampleRate = &rate
		}
		req.Output = out
	}
	return req, ep, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// openAIParams names the OpenAI field behind a voxgate field path.
var openAIParams = map[string]string{
	"text": "input", "voiceId": "voice", "voice": "voice", "model": "model", "speed": "speed",
	"output": "response_format", "mode": "voice", "instructions": "instructions",
	"stream_format": "stream_format", "response_format": "response_format", "input": "input",
}

// OpenAIError is OpenAI's error envelope.
type OpenAIError struct {
	Error OpenAIErrorBody `json:"error"`
}

// OpenAIErrorBody is the envelope's error object. Code is voxgate's
// problem code, so a client can tell failures apart as it would in
// voxgate's own dialect.
type OpenAIErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
	// Reason is a moderation block's reason, as in voxgate's own
	// moderation envelope.
	Reason *Reason `json:"reason,omitempty"`
}

// Reason says why moderation blocked a request.
type Reason struct {
	Type   string `json:"type"`
	Detail string `json:"detail"`
}

// openAIType is OpenAI's error type for an HTTP status.
func openAIType(status int) string {
	switch {
	case status == 401:
		return "authentication_error"
	case status == 403:
		return "permission_error"
	case status == 404:
		return "not_found_error"
	case status == 429:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// NewOpenAIError renders a problem in OpenAI's envelope, with the same
// HTTP status. The message is the problem's detail (the field's message
// for a validation failure), so an SDK that shows error.message shows
// the reason; param names the OpenAI field at fault.
func NewOpenAIError(pe *problem.Error) OpenAIError {
	msg := pe.Detail
	if msg == "" {
		msg = pe.Title()
	}
	body := OpenAIErrorBody{Message: msg, Type: openAIType(pe.Status()), Code: string(pe.Code)}
	if len(pe.Validation) > 0 && len(pe.Validation[0].Path) > 0 {
		p := pe.Validation[0].Path[0]
		if q, ok := openAIParams[p]; ok {
			p = q
		}
		body.Param = &p
		if len(pe.Validation) == 1 && !strings.Contains(msg, p) {
			body.Message = p + ": " + msg
		}
	}
	return OpenAIError{Error: body}
}

// OpenAIModel is an entry of GET /v1/models.
type OpenAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// OpenAIModelList is GET /v1/models.
type OpenAIModelList struct {
	Object string        `json:"object"`
	Data   []OpenAIModel `json:"data"`
}

// AppendSSEDelta appends one `speech.audio.delta` event carrying a piece
// of audio in base64, as OpenAI's SSE speech stream sends it.
func AppendSSEDelta(dst, piece []byte) []byte {
	dst = append(dst, `data: {"type":"speech.audio.delta","audio":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, piece)
	return append(dst, "\"}\n\n"...)
}

// AppendSSEDone appends the final `speech.audio.done` event. voxgate has
// no tokens: usage counts the input's characters as input tokens, which
// is what voxgate bills by.
func AppendSSEDone(dst []byte, chars int) []byte {
	n := strconv.Itoa(chars)
	return fmt.Appendf(dst, `data: {"type":"speech.audio.done","usage":{"input_tokens":%s,"output_tokens":0,"total_tokens":%s}}`+"\n\n", n, n)
}

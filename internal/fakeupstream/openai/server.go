// Package openai is a fake of the OpenAI text-to-speech API (POST
// /v1/audio/speech) and of its speech-to-text endpoint (POST
// /v1/audio/transcriptions, see transcribe.go) for tests and benchmarks.
//
// It follows the published API reference: Bearer auth (401 with OpenAI's
// error body on a missing or wrong key), a JSON body of model, input,
// voice, instructions, response_format, speed and stream_format with
// unknown fields rejected ("Unrecognized request argument supplied"), the
// documented limits (input up to 4096 characters, speed 0.25 to 4.0,
// per-model voices), and audio streamed with chunked transfer encoding in
// every documented response_format, all of 24 kHz speech: mp3 (the
// default), opus (Ogg), aac (ADTS), flac, wav, and pcm (16-bit
// little-endian mono), each with the Content-Type OpenAI sends. Errors
// are {"error": {"message", "type", "param", "code"}}. The last audio
// answered is kept (Control.LastAnswer) for tests that compare bytes.
//
// Deliberate gaps: stream_format "sse" answers 400 (the fake streams raw
// audio only); speed is ignored by gpt-4o-mini-tts and instructions by
// tts-1 and tts-1-hd, as documented.
//
//	srv := openai.New(t, fakeupstream.Options{})
//	// plugin settings: base_url = srv.BaseURL(); credential: openai.Key
//	srv.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "0.05"})
//	... srv.CallsTo(openai.SpeechPath) ...
package openai

import (
	_ "embed"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/voxgate/voxgate/internal/fakeupstream"
)

// apiDocument is the part of OpenAI's published OpenAPI document
// (github.com/openai/openai-openapi) the fakes of this package and of
// openaimoderation serve (apispec/openai.yaml, whose header names the
// upstream file): it judges every request and answer
// (fakeupstream.Control.Judge).
//
//go:embed apispec/openai.yaml
var apiDocument []byte

// Document returns OpenAI's API document, parsed once.
var Document = sync.OnceValue(func() *fakeupstream.Document {
	return fakeupstream.MustLoadDocument("OpenAI", apiDocument, fakeupstream.Excuse{
		Operation: "POST /audio/transcriptions",
		Contains:  "'oneOf' failed, subschemas 0, 2 matched",
		Why: "the answer is a oneOf of the json, diarized_json and verbose_json bodies, none closed to other " +
			"properties, so every verbose_json answer (language, duration, text, words) also matches the json one (text)",
	})
})

// Key is the API key the fake accepts unless Options.Keys says otherwise.
const Key = "sk-test-fake-0123456789abcdef"

// SpeechPath is the URL path of the speech endpoint.
const SpeechPath = "/v1/audio/speech"

// SampleRate is the rate of pcm and wav answers, as documented.
const SampleRate = 24000

// MaxInput is the documented input limit in characters.
const MaxInput = 4096

// Models returns the TTS models the fake knows.
func Models() []string {
	return []string{"tts-1", "tts-1-hd", "gpt-4o-mini-tts", "gpt-4o-mini-tts-2025-12-15", "gpt-4o-mini-tts-2025-03-20"}
}

// ResponseFormats returns the documented response_format values.
func ResponseFormats() []string { return []string{"mp3", "opus", "aac", "flac", "wav", "pcm"} }

// Voices returns the built-in voices model accepts: gpt-4o-mini-tts has
// the whole set, tts-1 and tts-1-hd the original subset.
func Voices(model string) []string {
	classic := []string{"alloy", "ash", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer"}
	if strings.HasPrefix(model, "gpt-4o-mini-tts") {
		return append(classic, "ballad", "verse", "marin", "cedar")
	}
	return classic
}

// Server is a running fake. Steer it through the embedded Control.
type Server struct {
	*fakeupstream.Control
	// URL is the server's root, e.g. http://127.0.0.1:41234.
	URL string

	srv    *httptest.Server
	studio *fakeupstream.Studio
	fixed  map[string]fakeupstream.Audio // rendered once when FixedSeconds > 0
	prefix string                        // the API root path, "/v1" by default
	reqID  atomic.Int64
}

// New starts a fake at OpenAI's paths (SpeechPath, BaseURL ending in
// /v1). With tb set it is closed at tb.Cleanup; otherwise call Close.
func New(tb testing.TB, opts fakeupstream.Options) *Server {
	return NewAt(tb, opts, "/v1")
}

// NewAt starts a fake whose API root is prefix instead of /v1 (e.g.
// "/kokoro/api/v1", or "" for the server root), as servers that copy
// OpenAI's API mount it: the speech endpoint is prefix + /audio/speech
// (SpeechURLPath) and BaseURL is the URL plus prefix.
func NewAt(tb testing.TB, opts fakeupstream.Options, prefix string) *Server {
	studio, err := fakeupstream.NewStudio()
	if err != nil {
		panic(err) // the embedded tone is broken: a build problem
	}
	s := &Server{Control: fakeupstream.NewControl(opts), studio: studio, prefix: strings.TrimRight(prefix, "/")}
	if opts.FixedSeconds > 0 {
		u := fakeupstream.Fixed(opts.FixedSeconds)
		s.fixed = map[string]fakeupstream.Audio{}
		for _, f := range ResponseFormats() {
			a, err := s.render(f, u)
			if err != nil {
				panic(err) // the fake's own encoders fail: a build problem
			}
			s.fixed[f] = fakeupstream.Audio{Parts: [][]byte{a.Bytes()}, Len: a.Len}
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc(s.SpeechURLPath(), s.speech)
	mux.HandleFunc(s.TranscriptionURLPath(), s.transcribe)
	mux.HandleFunc("/", s.notFound)
	s.srv = httptest.NewServer(s.JudgeAt(tb, Document(), s.prefix, mux))
	s.URL = s.srv.URL
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// BaseURL is what the plugin's base_url setting should be: the root plus
// /v1, as in https://api.openai.com/v1 (plus the prefix of NewAt).
func (s *Server) BaseURL() string { return s.URL + s.prefix }

// SpeechURLPath is the URL path of the speech endpoint: SpeechPath, or
// the prefix of NewAt plus /audio/speech.
func (s *Server) SpeechURLPath() string { return s.prefix + "/audio/speech" }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// apiError is OpenAI's error body.
type apiError struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// WriteError answers with OpenAI's error body {"error": {"message",
// "type", "param", "code"}}. Other fakes of OpenAI-style APIs (the
// moderation endpoint) use it too.
func WriteError(w http.ResponseWriter, status int, typ, param, code, msg string) {
	fakeupstream.WriteJSON(w, status, apiError{Error: errorDetail{Message: msg, Type: typ, Param: strp(param), Code: strp(code)}})
}

func (s *Server) invalid(w http.ResponseWriter, param, code, msg string) {
	WriteError(w, http.StatusBadRequest, "invalid_request_error", param, code, msg)
}

// WriteFault answers with an injected Fault in OpenAI's format.
func WriteFault(w http.ResponseWriter, f *fakeupstream.Fault) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	typ, code, msg := "server_error", "", "The server had an error while processing your request. Sorry about that!"
	switch f.Status {
	case http.StatusUnauthorized:
		typ, code, msg = "invalid_request_error", "invalid_api_key", "Incorrect API key provided."
	case http.StatusTooManyRequests:
		typ, code, msg = "requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later."
	case http.StatusServiceUnavailable:
		msg = "The engine is currently overloaded, please try again later."
	}
	if f.Code != "" {
		code = f.Code
	}
	if f.Message != "" {
		msg = f.Message
	}
	WriteError(w, f.Status, typ, "", code, msg)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if _, fault, ok := s.Begin(r); !ok {
		return
	} else if fault != nil {
		WriteFault(w, fault)
		return
	}
	// OpenAI answers unknown routes with 404 and this body.
	WriteError(w, http.StatusNotFound, "invalid_request_error", "", "", fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path))
}

// Authorized checks r's Bearer key against keys and answers 401 as OpenAI
// does when it is missing or unknown.
func Authorized(w http.ResponseWriter, r *http.Request, keys []string) bool {
	auth := r.Header.Get("Authorization")
	key, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || strings.TrimSpace(key) == "" {
		WriteError(w, http.StatusUnauthorized, "invalid_request_error", "", "",
			"You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).")
		return false
	}
	if !slices.Contains(keys, key) {
		WriteError(w, http.StatusUnauthorized, "invalid_request_error", "", "invalid_api_key",
			fmt.Sprintf("Incorrect API key provided: %s. You can find your API key in your account settings.", mask(key)))
		return false
	}
	return true
}

// mask shows a key the way OpenAI's 401 message does: its first and last
// characters around asterisks.
func mask(key string) string {
	if len(key) <= 8 {
		return strings.Repeat("*", len(key))
	}
	return key[:4] + strings.Repeat("*", len(key)-8) + key[len(key)-4:]
}

// speechRequest is the documented request body.
type speechRequest struct {
	Model          *string  `json:"model"`
	Input          *string  `json:"input"`
	Voice          any      `json:"voice"`
	Instructions   *string  `json:"instructions"`
	ResponseFormat *string  `json:"response_format"`
	Speed          *float64 `json:"speed"`
	StreamFormat   *string  `json:"stream_format"`
}

func (s *Server) speech(w http.ResponseWriter, r *http.Request) {
	req, fault, ok := s.Begin(r)
	if !ok {
		return
	}
	if r.Method != http.MethodPost {
		WriteError(w, http.StatusMethodNotAllowed, "invalid_request_error", "", "",
			fmt.Sprintf("Invalid method for URL (%s %s)", r.Method, r.URL.Path))
		return
	}
	if !Authorized(w, r, s.Keys(Key)) {
		return
	}
	if fault != nil {
		WriteFault(w, fault)
		return
	}
	var body speechRequest
	if err := fakeupstream.DecodeStrict(req.Body, &body); err != nil {
		if field, ok := fakeupstream.UnknownField(err); ok {
			s.invalid(w, "", "", fmt.Sprintf("Unrecognized request argument supplied: %s", field))
			return
		}
		s.invalid(w, "", "", "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly.)")
		return
	}
	format, speed, msg, param, code := validate(&body, s.NewModel)
	if msg != "" {
		status := http.StatusBadRequest
		if code == "model_not_found" {
			status = http.StatusNotFound
		}
		WriteError(w, status, "invalid_request_error", param, code, msg)
		return
	}
	u, err := s.Speak(*body.Input, speed)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "server_error", "", "", err.Error())
		return
	}
	audio, fixed := s.fixed[format]
	if !fixed {
		if audio, err = s.render(format, u); err != nil {
			WriteError(w, http.StatusInternalServerError, "server_error", "", "", err.Error())
			return
		}
	}
	if len(audio.Parts) == 1 {
		s.RecordAnswer(audio.Parts[0])
	} else {
		s.RecordAnswer(audio.Bytes())
	}
	w.Header().Set("Content-Type", contentType(format))
	w.Header().Set("X-Request-Id", fmt.Sprintf("req_fake%d", s.reqID.Add(1)))
	w.WriteHeader(http.StatusOK)
	s.WriteAudio(r.Context(), w, audio)
}

// validate checks a request against the documented rules and returns the
// format and speed to render with, or an error message, param and code.
// isNew reports the models the provider has beyond Models
// (fakeupstream.Options.NewModels): each is taken like tts-1, with the
// classic voices, every format and speed.
func validate(b *speechRequest, isNew func(string) bool) (format string, speed float64, msg, param, code string) {
	if b.Model == nil || *b.Model == "" {
		return "", 0, "you must provide a model parameter", "model", ""
	}
	model := *b.Model
	if !slices.Contains(Models(), model) && !isNew(model) {
		return "", 0, fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model), "", "model_not_found"
	}
	if b.Input == nil {
		return "", 0, "Missing required parameter: 'input'.", "input", "missing_required_parameter"
	}
	if n := utf8.RuneCountInString(*b.Input); n == 0 || n > MaxInput {
		return "", 0, fmt.Sprintf("Invalid 'input': string must be 1 to %d characters long, got %d.", MaxInput, n), "input", "string_above_max_length"
	}
	voice, ok := b.Voice.(string)
	switch {
	case b.Voice == nil:
		return "", 0, "Missing required parameter: 'voice'.", "voice", "missing_required_parameter"
	case !ok:
		// A custom voice object {"id": "voice_..."}: the fake has none.
		return "", 0, "Invalid 'voice': no custom voice with this id exists.", "voice", "invalid_value"
	case !slices.Contains(Voices(model), voice):
		return "", 0, fmt.Sprintf("Invalid value for 'voice': '%s'. Supported values for %s are: %s.", voice, model, strings.Join(Voices(model), ", ")), "voice", "invalid_value"
	}
	format = "mp3"
	if b.ResponseFormat != nil {
		format = *b.ResponseFormat
	}
	if !slices.Contains(ResponseFormats(), format) {
		return "", 0, fmt.Sprintf("Invalid value for 'response_format': '%s'. Supported values are: 'mp3', 'opus', 'aac', 'flac', 'wav', and 'pcm'.", format), "response_format", "invalid_value"
	}
	speed = 1
	if b.Speed != nil {
		if *b.Speed < 0.25 || *b.Speed > 4 {
			return "", 0, fmt.Sprintf("Invalid 'speed': %g is outside 0.25 to 4.0.", *b.Speed), "speed", "invalid_value"
		}
		// Documented: speed does not work with gpt-4o-mini-tts.
		if !strings.HasPrefix(model, "gpt-4o-mini-tts") {
			speed = *b.Speed
		}
	}
	if b.StreamFormat != nil {
		switch *b.StreamFormat {
		case "audio":
		case "sse":
			return "", 0, "stream_format 'sse' is valid but this fake streams raw audio only.", "stream_format", "invalid_value"
		default:
			return "", 0, fmt.Sprintf("Invalid value for 'stream_format': '%s'. Supported values are: 'sse' and 'audio'.", *b.StreamFormat), "stream_format", "invalid_value"
		}
	}
	return format, speed, "", "", ""
}

// render renders u in format at OpenAI's 24 kHz: Opus is coded at its
// own 48 kHz from the same speech, MP3 at OpenAI's 160 kbit/s.
func (s *Server) render(format string, u fakeupstream.Utterance) (fakeupstream.Audio, error) {
	switch format {
	case "pcm":
		return s.studio.PCM(u, SampleRate), nil
	case "wav":
		return s.studio.WAV(u, SampleRate), nil
	}
	rate, bitrate := SampleRate, 0
	switch format {
	case "opus":
		rate = 0
	case "mp3":
		bitrate = 160
	}
	a, _, err := s.studio.Encoded(u, format, rate, bitrate)
	return a, err
}

// contentType is the Content-Type OpenAI answers each format with.
func contentType(format string) string {
	switch format {
	case "pcm":
		return "audio/pcm"
	case "wav":
		return "audio/wav"
	case "opus":
		return "audio/opus"
	case "aac":
		return "audio/aac"
	case "flac":
		return "audio/flac"
	}
	return "audio/mpeg"
}

// Package google is a fake of the Gemini API's speech generation for
// tests and benchmarks: models.generateContent and
// models.streamGenerateContent (server-sent events) with the TTS models.
//
// It follows the Gemini API reference and speech-generation guide: the key
// comes as the x-goog-api-key header (or the key query parameter); the
// body is a GenerateContentRequest whose field names may be lowerCamelCase
// or snake_case, as protobuf JSON allows, with unknown fields rejected;
// generationConfig.responseModalities must be ["AUDIO"] (in any case) and
// speechConfig holds either voiceConfig.prebuiltVoiceConfig.voiceName (one
// of the 30 documented voices) or multiSpeakerVoiceConfig with exactly two
// speakerVoiceConfigs, plus an optional languageCode. The answer is a
// GenerateContentResponse whose candidates[0].content.parts[].inlineData
// holds base64 16-bit little-endian PCM at 24 kHz, mimeType
// "audio/L16;codec=pcm;rate=24000". Errors are Google's envelope
// {"error": {"code", "message", "status", "details"}}; an invalid key is
// 400 INVALID_ARGUMENT with an ErrorInfo reason API_KEY_INVALID, as the
// real API answers, and a 429 carries a RetryInfo detail.
//
// Endpoints (under the base URL, which ends in /v1beta):
//
//	POST /models/{model}:generateContent              JSON answer
//	POST /models/{model}:streamGenerateContent?alt=sse text/event-stream, one answer per event
//
// The last audio answered (all its parts' PCM, decoded) is kept
// (Control.LastAnswer).
//
// Deliberate gaps: only text parts render (a TTS model takes text only,
// so other parts are refused), safety settings and other generation
// settings are accepted and ignored, and the audio is the fake speech of
// fakeupstream at speed 1 (the real models take no speed setting).
package google

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"

	"github.com/voxgate/voxgate/internal/fakeupstream"
)

// Key is the API key the fake accepts unless Options.Keys says otherwise.
const Key = "AIzaSyFake-voxgate-test-0123456789abcd"

// APIRoot is the path of the API version the fake serves; BaseURL ends
// with it.
const APIRoot = "/v1beta"

// SampleRate is the only rate the TTS models produce.
const SampleRate = 24000

// AudioTokensPerSecond is how many audio tokens the fake reports a
// second of its audio is, as Google documents it on ai.google.dev
// (https://ai.google.dev/gemini-api/docs/audio, "Technical details
// about audio": "Gemini represents each second of audio as 32 tokens").
// The plugin's price table estimates audio at the same rate.
const AudioTokensPerSecond = 32

// MimeType is the inlineData.mimeType of the audio parts.
const MimeType = "audio/L16;codec=pcm;rate=24000"

// Path returns the URL path of a model's method ("generateContent" or
// "streamGenerateContent").
func Path(model, method string) string { return APIRoot + "/models/" + model + ":" + method }

// Models returns the TTS model ids the fake serves: the Gemini API's
// current TTS models and the earlier ones it still serves.
func Models() []string {
	return []string{
		"gemini-3.8-flash-tts", "gemini-3.8-flash-lite-tts", "gemini-3.1-flash-tts-preview",
		"gemini-2.5-flash-preview-tts", "gemini-2.5-pro-preview-tts",
	}
}

// textModels are models that exist but cannot answer audio, to exercise
// the modality check.
func textModels() []string { return []string{"gemini-2.5-flash", "gemini-2.5-pro"} }

// Voices returns the 30 prebuilt voice names of the speech-generation
// guide.
func Voices() []string {
	return []string{
		"Zephyr", "Puck", "Charon", "Kore", "Fenrir", "Leda", "Orus", "Aoede", "Callirrhoe", "Autonoe",
		"Enceladus", "Iapetus", "Umbriel", "Algieba", "Despina", "Erinome", "Algenib", "Rasalgethi", "Laomedeia", "Achernar",
		"Alnilam", "Schedar", "Gacrux", "Pulcherrima", "Achird", "Zubenelgenubi", "Vindemiatrix", "Sadachbia", "Sadaltager", "Sulafat",
	}
}

// Server is a running fake. Steer it through the embedded Control.
type Server struct {
	*fakeupstream.Control
	// URL is the server's root; the plugin's base_url is BaseURL().
	URL string

	srv    *httptest.Server
	studio *fakeupstream.Studio
	respID atomic.Int64
}

// New starts a fake. With tb set it is closed at tb.Cleanup; otherwise
// call Close.
func New(tb testing.TB, opts fakeupstream.Options) *Server {
	studio, err := fakeupstream.NewStudio()
	if err != nil {
		panic(err) // the embedded tone is broken: a build problem
	}
	s := &Server{Control: fakeupstream.NewControl(opts), studio: studio}
	mux := http.NewServeMux()
	// The model and the method share one path segment ("m:generateContent").
	mux.HandleFunc("POST "+APIRoot+"/models/{call}", s.generate)
	mux.HandleFunc("/", s.notFound)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// BaseURL is what the plugin's base_url setting should be: the root with
// the API version, as in https://generativelanguage.googleapis.com/v1beta.
func (s *Server) BaseURL() string { return s.URL + APIRoot }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// rpcStatus is the google.rpc.Code name Google puts in error.status for
// an HTTP status.
func rpcStatus(status int) string {
	switch status {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 409:
		return "ABORTED"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 500:
		return "INTERNAL"
	case 501:
		return "UNIMPLEMENTED"
	case 502, 503:
		return "UNAVAILABLE"
	case 408, 504:
		return "DEADLINE_EXCEEDED"
	}
	return "UNKNOWN"
}

// fail answers Google's error envelope.
func fail(w http.ResponseWriter, status int, msg string, details ...map[string]any) {
	e := map[string]any{"code": status, "message": msg, "status": rpcStatus(status)}
	if len(details) > 0 {
		e["details"] = details
	}
	fakeupstream.WriteJSON(w, status, map[string]any{"error": e})
}

func errorInfo(reason string) map[string]any {
	return map[string]any{
		"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason,
		"domain": "googleapis.com", "metadata": map[string]string{"service": "generativelanguage.googleapis.com"},
	}
}

func invalid(w http.ResponseWriter, format string, args ...any) {
	fail(w, http.StatusBadRequest, fmt.Sprintf(format, args...))
}

func (s *Server) injected(w http.ResponseWriter, f *fakeupstream.Fault) {
	var details []map[string]any
	msg := "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
	switch f.Status {
	case http.StatusUnauthorized:
		msg = "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential."
	case http.StatusForbidden:
		msg = "Permission denied: Consumer has been suspended."
	case http.StatusTooManyRequests:
		msg = "You exceeded your current quota, please check your plan and billing details."
		if secs, err := strconv.ParseFloat(f.RetryAfter, 64); err == nil {
			// Google says how long to wait in the body, as RetryInfo.
			details = append(details, map[string]any{
				"@type":      "type.googleapis.com/google.rpc.RetryInfo",
				"retryDelay": strconv.FormatFloat(secs, 'f', -1, 64) + "s",
			})
		}
	case http.StatusServiceUnavailable:
		msg = "The model is overloaded. Please try again later."
	}
	if f.Message != "" {
		msg = f.Message
	}
	if f.Code != "" {
		details = append(details, errorInfo(f.Code))
	}
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	fail(w, f.Status, msg, details...)
}

// begin runs what every handler does first: record, latency, auth, then
// an injected fault. False when it answered.
func (s *Server) begin(w http.ResponseWriter, r *http.Request) (fakeupstream.Request, bool) {
	req, fault, ok := s.Begin(r)
	if !ok {
		return req, false
	}
	key := r.Header.Get("X-Goog-Api-Key")
	if key == "" {
		key = r.URL.Query().Get("key")
	}
	if key == "" {
		fail(w, http.StatusForbidden, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.")
		return req, false
	}
	if !slices.Contains(s.Keys(Key), key) {
		fail(w, http.StatusBadRequest, "API key not valid. Please pass a valid API key.", errorInfo("API_KEY_INVALID"))
		return req, false
	}
	if fault != nil {
		s.injected(w, fault)
		return req, false
	}
	return req, true
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.begin(w, r); ok {
		fail(w, http.StatusNotFound, "The requested URL "+r.URL.Path+" was not found on this server.")
	}
}

// generateRequest is a GenerateContentRequest, with the fields a caller
// may send; those that do not matter to speech are accepted and ignored.
type generateRequest struct {
	Contents          []content         `json:"contents"`
	GenerationConfig  *generationConfig `json:"generationConfig"`
	SystemInstruction *content          `json:"systemInstruction"`
	SafetySettings    json.RawMessage   `json:"safetySettings"`
	CachedContent     *string           `json:"cachedContent"`
}

type content struct {
	Role  string `json:"role"`
	Parts []part `json:"parts"`
}

type part struct {
	Text       *string         `json:"text"`
	InlineData json.RawMessage `json:"inlineData"`
	FileData   json.RawMessage `json:"fileData"`
}

type generationConfig struct {
	ResponseModalities []string      `json:"responseModalities"`
	SpeechConfig       *speechConfig `json:"speechConfig"`
	Temperature        *float64      `json:"temperature"`
	TopP               *float64      `json:"topP"`
	TopK               *float64      `json:"topK"`
	Seed               *int64        `json:"seed"`
	CandidateCount     *int          `json:"candidateCount"`
	MaxOutputTokens    *int          `json:"maxOutputTokens"`
	StopSequences      []string      `json:"stopSequences"`
	PresencePenalty    *float64      `json:"presencePenalty"`
	FrequencyPenalty   *float64      `json:"frequencyPenalty"`
	ResponseMimeType   *string       `json:"responseMimeType"`
}

type speechConfig struct {
	VoiceConfig             *voiceConfig             `json:"voiceConfig"`
	MultiSpeakerVoiceConfig *multiSpeakerVoiceConfig `json:"multiSpeakerVoiceConfig"`
	LanguageCode            *string                  `json:"languageCode"`
}

type voiceConfig struct {
	PrebuiltVoiceConfig *struct {
		VoiceName string `json:"voiceName"`
	} `json:"prebuiltVoiceConfig"`
}

type multiSpeakerVoiceConfig struct {
	SpeakerVoiceConfigs []struct {
		Speaker     string       `json:"speaker"`
		VoiceConfig *voiceConfig `json:"voiceConfig"`
	} `json:"speakerVoiceConfigs"`
}

// camelKeys rewrites the object keys of a JSON value from snake_case to
// lowerCamelCase: protobuf JSON accepts both spellings of every field.
func camelKeys(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			out[camel(k)] = camelKeys(val)
		}
		return out
	case []any:
		for i := range t {
			t[i] = camelKeys(t[i])
		}
	}
	return v
}

func camel(k string) string {
	if !strings.Contains(k, "_") {
		return k
	}
	var b strings.Builder
	up := false
	for _, r := range k {
		switch {
		case r == '_':
			up = true
		case up:
			b.WriteRune(unicode.ToUpper(r))
			up = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// decode reads the body as protobuf JSON into a generateRequest; false
// when it answered 400.
func decode(w http.ResponseWriter, r *http.Request, body []byte, out *generateRequest) bool {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		invalid(w, "Invalid JSON payload received. Expected Content-Type application/json.")
		return false
	}
	var raw any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&raw); err != nil {
		invalid(w, "Invalid JSON payload received. %v", err)
		return false
	}
	norm, _ := json.Marshal(camelKeys(raw))
	if err := fakeupstream.DecodeStrict(norm, out); err != nil {
		if field, ok := fakeupstream.UnknownField(err); ok {
			invalid(w, "Invalid JSON payload received. Unknown name %q: Cannot find field.", field)
			return false
		}
		invalid(w, "Invalid JSON payload received. %v", err)
		return false
	}
	return true
}

func knownVoice(name string) bool {
	return slices.ContainsFunc(Voices(), func(v string) bool { return strings.EqualFold(v, name) })
}

// check validates a speech request for model; it returns the text to
// speak and whether to go on.
// isNew says model is one of fakeupstream.Options.NewModels, a TTS model
// the API serves beyond Models, taken like the others.
func check(w http.ResponseWriter, model string, isNew bool, b *generateRequest) (string, bool) {
	if !slices.Contains(Models(), model) && !isNew {
		if slices.Contains(textModels(), model) {
			invalid(w, "The requested combination of response modalities (AUDIO) is not supported by the model.")
			return "", false
		}
		fail(w, http.StatusNotFound, fmt.Sprintf("models/%s is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.", model))
		return "", false
	}
	if len(b.Contents) == 0 {
		invalid(w, "* GenerateContentRequest.contents: contents is not specified")
		return "", false
	}
	if b.SystemInstruction != nil {
		invalid(w, "Developer instruction is not enabled for models/%s", model)
		return "", false
	}
	var text strings.Builder
	for _, c := range b.Contents {
		if c.Role != "" && c.Role != "user" && c.Role != "model" {
			invalid(w, "Please use a valid role: user, model.")
			return "", false
		}
		for _, p := range c.Parts {
			if p.InlineData != nil || p.FileData != nil {
				invalid(w, "This model only supports text input.")
				return "", false
			}
			if p.Text != nil {
				text.WriteString(*p.Text)
			}
		}
	}
	if strings.TrimSpace(text.String()) == "" {
		invalid(w, "* GenerateContentRequest.contents[0].parts: contents.parts must not be empty.")
		return "", false
	}
	gc := b.GenerationConfig
	if gc == nil || len(gc.ResponseModalities) != 1 || !strings.EqualFold(gc.ResponseModalities[0], "AUDIO") {
		got := "TEXT"
		if gc != nil && len(gc.ResponseModalities) > 0 {
			got = strings.ToUpper(strings.Join(gc.ResponseModalities, ", "))
		}
		invalid(w, "The requested combination of response modalities (%s) is not supported by the model. Supported: AUDIO.", got)
		return "", false
	}
	if gc.Temperature != nil && (*gc.Temperature < 0 || *gc.Temperature > 2) {
		invalid(w, "* GenerateContentRequest.generation_config.temperature: must be in the range [0.0, 2.0].")
		return "", false
	}
	if gc.CandidateCount != nil && *gc.CandidateCount != 1 {
		invalid(w, "Only one candidate can be specified in the current model.")
		return "", false
	}
	sc := gc.SpeechConfig
	if sc == nil {
		return text.String(), true // the model's default voice
	}
	if sc.LanguageCode != nil && !validLanguage(*sc.LanguageCode) {
		invalid(w, "Unsupported language code %q: use a BCP-47 code such as en-US.", *sc.LanguageCode)
		return "", false
	}
	switch {
	case sc.VoiceConfig != nil && sc.MultiSpeakerVoiceConfig != nil:
		invalid(w, "* GenerateContentRequest.generation_config.speech_config: only one of voice_config or multi_speaker_voice_config may be set.")
		return "", false
	case sc.VoiceConfig != nil:
		return text.String(), checkVoice(w, sc.VoiceConfig, "voice_config")
	case sc.MultiSpeakerVoiceConfig != nil:
		svc := sc.MultiSpeakerVoiceConfig.SpeakerVoiceConfigs
		if len(svc) != 2 {
			invalid(w, "* GenerateContentRequest.generation_config.speech_config.multi_speaker_voice_config: enabled_voices must equal 2, got %d.", len(svc))
			return "", false
		}
		if svc[0].Speaker == "" || svc[1].Speaker == "" || svc[0].Speaker == svc[1].Speaker {
			invalid(w, "* multi_speaker_voice_config.speaker_voice_configs: each speaker needs a distinct, non-empty name.")
			return "", false
		}
		for i, v := range svc {
			if !checkVoice(w, v.VoiceConfig, fmt.Sprintf("multi_speaker_voice_config.speaker_voice_configs[%d].voice_config", i)) {
				return "", false
			}
		}
	}
	return text.String(), true
}

func checkVoice(w http.ResponseWriter, vc *voiceConfig, where string) bool {
	if vc == nil || vc.PrebuiltVoiceConfig == nil || vc.PrebuiltVoiceConfig.VoiceName == "" {
		invalid(w, "* GenerateContentRequest.generation_config.speech_config.%s.prebuilt_voice_config.voice_name: voice name is required.", where)
		return false
	}
	if name := vc.PrebuiltVoiceConfig.VoiceName; !knownVoice(name) {
		invalid(w, "Voice %s is not supported. Please use one of the prebuilt voices.", name)
		return false
	}
	return true
}

// validLanguage accepts the shape of a BCP-47 tag (en, en-US, cmn-Hans-CN).
func validLanguage(tag string) bool {
	parts := strings.Split(tag, "-")
	if len(parts[0]) < 2 || len(parts[0]) > 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 8 || strings.IndexFunc(p, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) >= 0 {
			return false
		}
	}
	return true
}

// answer is a GenerateContentResponse holding pcm as one audio part;
// final adds the finish reason and usage, as the last streamed answer
// carries them.
func (s *Server) answer(model string, pcm []byte, final bool, promptTokens, audioTokens int) map[string]any {
	cand := map[string]any{
		"content": map[string]any{"role": "model", "parts": []any{map[string]any{
			"inlineData": map[string]any{"mimeType": MimeType, "data": base64.StdEncoding.EncodeToString(pcm)},
		}}},
		"index": 0,
	}
	out := map[string]any{"candidates": []any{cand}, "modelVersion": model, "responseId": fmt.Sprintf("fake-%d", s.respID.Load())}
	if final {
		cand["finishReason"] = "STOP"
		out["usageMetadata"] = map[string]any{
			"promptTokenCount": promptTokens, "candidatesTokenCount": audioTokens, "totalTokenCount": promptTokens + audioTokens,
			"promptTokensDetails":     []any{map[string]any{"modality": "TEXT", "tokenCount": promptTokens}},
			"candidatesTokensDetails": []any{map[string]any{"modality": "AUDIO", "tokenCount": audioTokens}},
		}
	}
	return out
}

func (s *Server) generate(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	model, method, found := strings.Cut(r.PathValue("call"), ":")
	if !found || (method != "generateContent" && method != "streamGenerateContent") {
		fail(w, http.StatusNotFound, "The requested URL "+r.URL.Path+" was not found on this server.")
		return
	}
	var body generateRequest
	if !decode(w, r, req.Body, &body) {
		return
	}
	text, ok := check(w, model, s.NewModel(model), &body)
	if !ok {
		return
	}
	s.respID.Add(1)
	u := fakeupstream.Speak(text, 1)
	if fs := s.FixedSeconds(); fs > 0 {
		u = fakeupstream.Fixed(fs)
	}
	pcm := s.studio.PCM(u, SampleRate).Bytes()
	s.RecordAnswer(pcm)
	// About 4 characters a text token; AudioTokensPerSecond of audio.
	promptTokens, audioTokens := max(len(text)/4, 1), int(math.Ceil(u.Seconds*AudioTokensPerSecond))
	if method == "generateContent" {
		if r.URL.Query().Get("alt") == "sse" {
			invalid(w, "alt=sse is only supported by streamGenerateContent.")
			return
		}
		fakeupstream.WriteJSON(w, http.StatusOK, s.answer(model, pcm, true, promptTokens, audioTokens))
		return
	}
	s.stream(w, r, model, pcm, promptTokens, audioTokens)
}

// stream answers streamGenerateContent: with alt=sse, one "data:" event
// per ChunkSize bytes of audio, the last with the finish reason and
// usage; without it, a JSON array of the same answers, as the API does.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, model string, pcm []byte, promptTokens, audioTokens int) {
	size := s.ChunkSize() &^ 1 // whole samples
	var answers []map[string]any
	for off := 0; off < len(pcm); off += size {
		end := min(off+size, len(pcm))
		answers = append(answers, s.answer(model, pcm[off:end], end == len(pcm), promptTokens, audioTokens))
	}
	if r.URL.Query().Get("alt") != "sse" {
		fakeupstream.WriteJSON(w, http.StatusOK, answers)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	for i, a := range answers {
		if i > 0 && !s.Pause(r.Context()) {
			return
		}
		data, _ := json.Marshal(a)
		if _, err := fmt.Fprintf(w, "data: %s\r\n\r\n", data); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

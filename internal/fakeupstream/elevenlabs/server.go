// Package elevenlabs is a fake of the ElevenLabs API for tests and
// benchmarks: text-to-speech (whole, streamed, and with character
// timestamps), the voice list and instant voice cloning.
//
// It follows the published API reference: the xi-api-key header (401 with
// {"detail": {"status", "message"}} when missing or wrong), the
// output_format query parameter (every value of the enum, OutputFormats,
// answered with real audio in that codec, rate and bitrate; wav_<rate>
// on the whole-clip and /with-timestamps endpoints only, as the
// reference's enums have it), a JSON
// body of text, model_id, voice_settings (speed 0.7 to 1.2) and the other
// documented fields with unknown fields rejected the way the API's
// validation does (422 {"detail": [{"loc", "msg", "type"}]}), per-model
// text limits, unknown voices answered 404 voice_not_found, and
// /with-timestamps answering {audio_base64, alignment, normalized_alignment}
// whose character times match the audio exactly.
//
// Endpoints:
//
//	POST /v1/text-to-speech/{voice_id}                  audio
//	POST /v1/text-to-speech/{voice_id}/stream           audio, chunked
//	POST /v1/text-to-speech/{voice_id}/with-timestamps  JSON
//	GET  /v1/voices                                     {"voices": [...]}
//	POST /v1/voices/add                                 multipart: name, files, description, labels, remove_background_noise
//	GET  /v1/text-to-speech/{voice_id}/stream-input     WebSocket (streaminput.go)
//	GET  /v1/text-to-speech/{voice_id}/multi-stream-input  WebSocket, up to 5 contexts (multistream.go)
//
// The reference gives audio/mpeg as the Content-Type of every answer; the
// fake names each codec's own: audio/mpeg, audio/pcm, audio/wav,
// audio/ogg (opus), audio/basic (ulaw) and audio/x-alaw-basic (alaw).
// LastAnswer holds the audio of the latest answer.
package elevenlabs

import (
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/voxgate/voxgate/internal/fakeupstream"
)

// apiDocument is the part of ElevenLabs' published OpenAPI document the
// fake serves (apispec/elevenlabs.yaml, whose header names its source):
// it judges every request and answer (fakeupstream.Control.Judge).
//
//go:embed apispec/elevenlabs.yaml
var apiDocument []byte

// Document returns the fake's API document, parsed once.
var Document = sync.OnceValue(func() *fakeupstream.Document {
	return fakeupstream.MustLoadDocument("ElevenLabs", apiDocument)
})

// Key is the API key the fake accepts unless Options.Keys says otherwise.
const Key = "xi-test-fake-0123456789abcdef"

// Voice ids of the fake's premade voices (real ElevenLabs premade ids).
const (
	VoiceRachel = "21m00Tcm4TlvDq8ikWAM"
	VoiceSarah  = "EXAVITQu4vr4xnSDxMaL"
	VoiceAdam   = "pNInz6obpgDQGcFmaJgB"
)

// Paths of the fake's fixed endpoints; TTS paths are TTSPath(voiceID) plus
// "", "/stream" or "/with-timestamps".
const (
	VoicesPath = "/v1/voices"
	ClonePath  = "/v1/voices/add"
)

// TTSPath returns the text-to-speech path of a voice.
func TTSPath(voiceID string) string { return "/v1/text-to-speech/" + voiceID }

// MaxChars returns the documented text limit of a model, 0 if the model
// is unknown.
func MaxChars(model string) int {
	switch model {
	case "eleven_multilingual_v2", "eleven_multilingual_v1", "eleven_monolingual_v1":
		return 10000
	case "eleven_flash_v2_5", "eleven_turbo_v2_5":
		return 40000
	case "eleven_flash_v2", "eleven_turbo_v2":
		return 30000
	case "eleven_v3":
		return 5000
	}
	return 0
}

// PCMRates are the sample rates of the pcm_<rate> output formats.
func PCMRates() []int { return []int{8000, 16000, 22050, 24000, 32000, 44100, 48000} }

// OutputFormats are the values of output_format the streaming endpoints
// take (/stream and stream-input), as the reference's enum lists them
// (the official Python SDK's text_to_speech_stream_request_output_format.py,
// July 2026). The whole-clip endpoints take these and WAVFormats.
func OutputFormats() []string {
	return []string{
		"mp3_22050_32", "mp3_24000_48", "mp3_44100_32", "mp3_44100_64", "mp3_44100_96", "mp3_44100_128", "mp3_44100_192",
		"pcm_8000", "pcm_16000", "pcm_22050", "pcm_24000", "pcm_32000", "pcm_44100", "pcm_48000",
		"ulaw_8000", "alaw_8000",
		"opus_48000_32", "opus_48000_64", "opus_48000_96", "opus_48000_128", "opus_48000_192",
	}
}

// WAVFormats are the wav_<rate> output formats, which only whole clips
// (and /with-timestamps) come in.
func WAVFormats() []string {
	return []string{"wav_8000", "wav_16000", "wav_22050", "wav_24000", "wav_32000", "wav_44100", "wav_48000"}
}

// voice is a voice as GET /v1/voices lists it.
type voice struct {
	VoiceID           string            `json:"voice_id"`
	Name              string            `json:"name"`
	Category          string            `json:"category"`
	Description       *string           `json:"description"`
	Labels            map[string]string `json:"labels"`
	PreviewURL        *string           `json:"preview_url"`
	VerifiedLanguages []verifiedLang    `json:"verified_languages"`
	// The document requires these two of every voice; the fake's voices
	// are on every tier and have no high-quality base models.
	AvailableForTiers       []string `json:"available_for_tiers"`
	HighQualityBaseModelIDs []string `json:"high_quality_base_model_ids"`
}

type verifiedLang struct {
	Language string `json:"language"`
	ModelID  string `json:"model_id"`
	Accent   string `json:"accent,omitempty"`
	Locale   string `json:"locale,omitempty"`
}

func premade() []voice {
	mk := func(id, name, gender, age, accent, locale string) voice {
		return voice{
			VoiceID: id, Name: name, Category: "premade",
			Labels:            map[string]string{"accent": accent, "age": age, "gender": gender, "use_case": "narration"},
			VerifiedLanguages: []verifiedLang{{Language: "en", ModelID: "eleven_multilingual_v2", Accent: accent, Locale: locale}},
			AvailableForTiers: []string{}, HighQualityBaseModelIDs: []string{},
		}
	}
	return []voice{
		mk(VoiceRachel, "Rachel", "female", "young", "american", "en-US"),
		mk(VoiceSarah, "Sarah", "female", "young", "american", "en-US"),
		mk(VoiceAdam, "Adam", "male", "middle_aged", "american", "en-US"),
	}
}

// Server is a running fake. Steer it through the embedded Control.
type Server struct {
	*fakeupstream.Control
	// URL is the server's root, which is also the plugin's base_url.
	URL string

	srv    *httptest.Server
	studio *fakeupstream.Studio
	mu     sync.Mutex
	voices []voice
	// fixed holds the answers of a FixedSeconds server by output format,
	// encoded once: a benchmark's every request then costs no encoding.
	fixed  map[outputFormat]fakeupstream.Audio
	clones atomic.Int64
	reqID  atomic.Int64
	// ids are the request-id headers of the text-to-speech answers, in
	// the order they were given (RequestIDs).
	idsMu sync.Mutex
	ids   []string
	// streams counts the stream-input sockets (streaminput.go).
	streams StreamStats
	// multi counts the multi-stream-input sockets (multistream.go).
	multi MultiStats
	// lex holds the uploaded pronunciation dictionaries (lexicons.go).
	lex lexiconStore
}

// RequestIDs returns the request-id headers the text-to-speech answers
// carried, as ElevenLabs names each render, in the order they were
// given: what a later request's previous_request_ids should name.
func (s *Server) RequestIDs() []string {
	s.idsMu.Lock()
	defer s.idsMu.Unlock()
	return slices.Clone(s.ids)
}

// New starts a fake. With tb set it is closed at tb.Cleanup; otherwise
// call Close.
func New(tb testing.TB, opts fakeupstream.Options) *Server {
	studio, err := fakeupstream.NewStudio()
	if err != nil {
		panic(err) // the embedded tone is broken: a build problem
	}
	s := &Server{Control: fakeupstream.NewControl(opts), studio: studio, voices: premade(),
		lex: lexiconStore{byID: map[string]storedLexicon{}, uploads: map[string]int{}}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/text-to-speech/{voice_id}", s.tts(modeWhole))
	mux.HandleFunc("POST /v1/text-to-speech/{voice_id}/stream", s.tts(modeStream))
	mux.HandleFunc("POST /v1/text-to-speech/{voice_id}/with-timestamps", s.tts(modeTimestamps))
	mux.HandleFunc("GET /v1/text-to-speech/{voice_id}/stream-input", s.streamInput)            // streaminput.go
	mux.HandleFunc("GET /v1/text-to-speech/{voice_id}/multi-stream-input", s.multiStreamInput) // multistream.go
	mux.HandleFunc("GET "+VoicesPath, s.listVoices)
	mux.HandleFunc("POST "+ClonePath, s.clone)
	mux.HandleFunc("POST "+AddFromFilePath, s.addFromFile) // lexicons.go
	mux.HandleFunc("/", s.notFound)
	s.srv = httptest.NewServer(s.Judge(tb, Document(), mux))
	s.URL = s.srv.URL
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// BaseURL is what the plugin's base_url setting should be (the root, as
// in https://api.elevenlabs.io).
func (s *Server) BaseURL() string { return s.URL }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// VoiceIDs returns the ids of the voices the fake knows, cloned ones
// included.
func (s *Server) VoiceIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, len(s.voices))
	for i, v := range s.voices {
		ids[i] = v.VoiceID
	}
	return ids
}

func (s *Server) knows(id string) bool {
	return slices.Contains(s.VoiceIDs(), id)
}

// detail writes ElevenLabs' {"detail": {"status", "message"}} error.
func detail(w http.ResponseWriter, status int, code, msg string) {
	fakeupstream.WriteJSON(w, status, map[string]any{"detail": map[string]string{"status": code, "message": msg}})
}

// validation writes the 422 body of a failed request validation.
func validation(w http.ResponseWriter, loc []string, msg, typ string) {
	fakeupstream.WriteJSON(w, http.StatusUnprocessableEntity, map[string]any{
		"detail": []map[string]any{{"loc": loc, "msg": msg, "type": typ}},
	})
}

func (s *Server) injected(w http.ResponseWriter, f *fakeupstream.Fault) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	code, msg := "internal_server_error", "An internal server error occurred."
	switch f.Status {
	case http.StatusUnauthorized:
		code, msg = "invalid_api_key", "Invalid API key"
	case http.StatusTooManyRequests:
		code, msg = "too_many_concurrent_requests", "Your current subscription is associated with a maximum of 2 concurrent requests."
	case http.StatusServiceUnavailable:
		code, msg = "system_busy", "We're experiencing high traffic; please try again later."
	}
	if f.Code != "" {
		code = f.Code
	}
	if f.Message != "" {
		msg = f.Message
	}
	if f.Status == http.StatusUnprocessableEntity {
		// A 422 is a validation list, the one shape the document gives it.
		validation(w, []string{"body"}, msg, code)
		return
	}
	detail(w, f.Status, code, msg)
}

// begin runs what every handler does first: record, latency, auth, then
// an injected fault. It returns false when the request was answered.
func (s *Server) begin(w http.ResponseWriter, r *http.Request) (fakeupstream.Request, bool) {
	req, fault, ok := s.Begin(r)
	if !ok {
		return req, false
	}
	key := r.Header.Get("xi-api-key")
	if key == "" {
		detail(w, http.StatusUnauthorized, "needs_authorization", "Neither authorization header nor xi-api-key received, please provide one.")
		return req, false
	}
	if !slices.Contains(s.Keys(Key), key) {
		detail(w, http.StatusUnauthorized, "invalid_api_key", "Invalid API key")
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
		fakeupstream.WriteJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
	}
}

type mode int

const (
	modeWhole mode = iota
	modeStream
	modeTimestamps
)

// ttsRequest is the documented text-to-speech body.
type ttsRequest struct {
	Text                            *string           `json:"text"`
	ModelID                         *string           `json:"model_id"`
	LanguageCode                    *string           `json:"language_code"`
	VoiceSettings                   *voiceSettings    `json:"voice_settings"`
	PronunciationDictionaryLocators []json.RawMessage `json:"pronunciation_dictionary_locators"`
	Seed                            *int64            `json:"seed"`
	PreviousText                    *string           `json:"previous_text"`
	NextText                        *string           `json:"next_text"`
	PreviousRequestIDs              []string          `json:"previous_request_ids"`
	NextRequestIDs                  []string          `json:"next_request_ids"`
	ApplyTextNormalization          *string           `json:"apply_text_normalization"`
	ApplyLanguageTextNormalization  *bool             `json:"apply_language_text_normalization"`
	UsePVCAsIVC                     *bool             `json:"use_pvc_as_ivc"`
}

type voiceSettings struct {
	Stability       *float64 `json:"stability"`
	SimilarityBoost *float64 `json:"similarity_boost"`
	Style           *float64 `json:"style"`
	UseSpeakerBoost *bool    `json:"use_speaker_boost"`
	Speed           *float64 `json:"speed"`
}

// outputFormat is a parsed output_format query value.
type outputFormat struct {
	codec string // "mp3", "pcm", "wav", "opus", "ulaw" or "alaw"
	rate  int
	kbps  int // mp3 and opus
}

// contentType is the Content-Type of an answer in f.
func (f outputFormat) contentType() string {
	switch f.codec {
	case "mp3":
		return "audio/mpeg"
	case "opus":
		return "audio/ogg"
	case "ulaw":
		return "audio/basic"
	case "alaw":
		return "audio/x-alaw-basic"
	}
	return "audio/" + f.codec
}

// parseOutputFormat parses v, one of OutputFormats (or of WAVFormats when
// wav is set); ok is false for any other value.
func parseOutputFormat(v string, wav bool) (f outputFormat, ok bool) {
	if v == "" {
		v = "mp3_44100_128"
	}
	if !slices.Contains(OutputFormats(), v) && (!wav || !slices.Contains(WAVFormats(), v)) {
		return outputFormat{}, false
	}
	parts := strings.Split(v, "_")
	f.codec = parts[0]
	f.rate, _ = strconv.Atoi(parts[1])
	if len(parts) == 3 {
		f.kbps, _ = strconv.Atoi(parts[2])
	}
	return f, true
}

// render renders u in f.
func (s *Server) render(u fakeupstream.Utterance, f outputFormat) (fakeupstream.Audio, error) {
	if s.FixedSeconds() <= 0 {
		a, _, err := s.studio.Encoded(u, f.codec, f.rate, f.kbps)
		return a, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.fixed[f]; ok {
		return a, nil
	}
	a, _, err := s.studio.Encoded(u, f.codec, f.rate, f.kbps)
	if err == nil {
		if s.fixed == nil {
			s.fixed = map[outputFormat]fakeupstream.Audio{}
		}
		s.fixed[f] = a
	}
	return a, err
}

func (s *Server) tts(m mode) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, ok := s.begin(w, r)
		if !ok {
			return
		}
		if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
			validation(w, []string{"body"}, "Expected a JSON body (Content-Type: application/json)", "value_error.jsondecode")
			return
		}
		format, ok := parseOutputFormat(r.URL.Query().Get("output_format"), m != modeStream)
		if !ok {
			validation(w, []string{"query", "output_format"}, "value is not a valid enumeration member", "type_error.enum")
			return
		}
		if v := r.URL.Query().Get("optimize_streaming_latency"); v != "" {
			if n, err := strconv.Atoi(v); err != nil || n < 0 || n > 4 {
				validation(w, []string{"query", "optimize_streaming_latency"}, "ensure this value is between 0 and 4", "value_error.number")
				return
			}
		}
		var body ttsRequest
		if err := fakeupstream.DecodeStrict(req.Body, &body); err != nil {
			if field, ok := fakeupstream.UnknownField(err); ok {
				validation(w, []string{"body", field}, "extra fields not permitted", "value_error.extra")
				return
			}
			validation(w, []string{"body"}, "Expecting value: invalid JSON", "value_error.jsondecode")
			return
		}
		speed, ok := s.check(w, r.PathValue("voice_id"), &body)
		if !ok {
			return
		}
		if !s.checkLocators(w, r.Header.Get("xi-api-key"), body.PronunciationDictionaryLocators) {
			return
		}
		u, err := s.Speak(*body.Text, speed)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if fs := s.FixedSeconds(); fs > 0 {
			u = fakeupstream.Fixed(fs)
		}
		audio, err := s.render(u, format)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		s.RecordAnswer(audio.Bytes())
		rid := fmt.Sprintf("fake-%d", s.reqID.Add(1))
		s.idsMu.Lock()
		s.ids = append(s.ids, rid)
		s.idsMu.Unlock()
		w.Header().Set("request-id", rid)
		// What the call was billed, in credits, as ElevenLabs answers it:
		// a character of Flash and Turbo is half a credit, rounded up.
		w.Header().Set("character-cost", strconv.Itoa(characterCost(*body.Text, body.ModelID)))
		if m == modeTimestamps {
			align := alignment(u)
			fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{
				"audio_base64":         base64.StdEncoding.EncodeToString(audio.Bytes()),
				"alignment":            align,
				"normalized_alignment": align,
			})
			return
		}
		w.Header().Set("Content-Type", format.contentType())
		w.WriteHeader(http.StatusOK)
		s.WriteAudio(r.Context(), w, audio)
	}
}

// check validates a TTS body for voiceID and returns the speaking speed;
// false when it answered with an error.
func (s *Server) check(w http.ResponseWriter, voiceID string, b *ttsRequest) (float64, bool) {
	if b.Text == nil {
		validation(w, []string{"body", "text"}, "field required", "value_error.missing")
		return 0, false
	}
	model := "eleven_multilingual_v2"
	if b.ModelID != nil {
		model = *b.ModelID
	}
	limit := MaxChars(model)
	if limit == 0 && s.NewModel(model) {
		// A model ElevenLabs has beyond those the fake knows
		// (fakeupstream.Options.NewModels): Eleven v3's limit, the
		// smallest.
		limit = MaxChars("eleven_v3")
	}
	if limit == 0 {
		detail(w, http.StatusBadRequest, "model_not_found", fmt.Sprintf("A model with model ID %s does not exist.", model))
		return 0, false
	}
	if n := utf8.RuneCountInString(*b.Text); strings.TrimSpace(*b.Text) == "" || n > limit {
		detail(w, http.StatusBadRequest, "max_character_limit_exceeded",
			fmt.Sprintf("Text must be between 1 and %d characters for %s; got %d.", limit, model, n))
		return 0, false
	}
	if !s.knows(voiceID) {
		detail(w, http.StatusNotFound, "voice_not_found", fmt.Sprintf("A voice for the voice_id %s was not found.", voiceID))
		return 0, false
	}
	// The limits the document states in prose, which the API enforces
	// with a 422 (issue 30 saw each refused): seed's range, at most 3
	// locators and 3 request ids each way, and no language_code on the
	// multilingual v2 model.
	switch {
	case b.Seed != nil && (*b.Seed < 0 || *b.Seed > 4294967295):
		validation(w, []string{"body", "seed"}, "ensure this value is between 0 and 4294967295", "value_error.number")
		return 0, false
	case len(b.PronunciationDictionaryLocators) > 3:
		validation(w, []string{"body", "pronunciation_dictionary_locators"}, "ensure this value has at most 3 items", "value_error.list.max_items")
		return 0, false
	case len(b.PreviousRequestIDs) > 3:
		validation(w, []string{"body", "previous_request_ids"}, "ensure this value has at most 3 items", "value_error.list.max_items")
		return 0, false
	case len(b.NextRequestIDs) > 3:
		validation(w, []string{"body", "next_request_ids"}, "ensure this value has at most 3 items", "value_error.list.max_items")
		return 0, false
	case b.LanguageCode != nil && model == "eleven_multilingual_v2":
		validation(w, []string{"body", "language_code"}, "language_code is not supported for multilingual_v2 models", "value_error")
		return 0, false
	}
	if b.ApplyTextNormalization != nil && !slices.Contains([]string{"auto", "on", "off"}, *b.ApplyTextNormalization) {
		validation(w, []string{"body", "apply_text_normalization"}, "value is not a valid enumeration member; permitted: 'auto', 'on', 'off'", "type_error.enum")
		return 0, false
	}
	speed := 1.0
	if vs := b.VoiceSettings; vs != nil {
		for name, v := range map[string]*float64{"stability": vs.Stability, "similarity_boost": vs.SimilarityBoost, "style": vs.Style} {
			if v != nil && (*v < 0 || *v > 1) {
				validation(w, []string{"body", "voice_settings", name}, "ensure this value is between 0.0 and 1.0", "value_error.number")
				return 0, false
			}
		}
		if vs.Speed != nil {
			if *vs.Speed < 0.7 || *vs.Speed > 1.2 {
				validation(w, []string{"body", "voice_settings", "speed"}, "ensure this value is between 0.7 and 1.2", "value_error.number")
				return 0, false
			}
			speed = *vs.Speed
		}
	}
	return speed, true
}

// alignment is the /with-timestamps alignment of u: one entry per
// character with its exact start and end in the audio.
func alignment(u fakeupstream.Utterance) map[string]any {
	chars := make([]string, len(u.Chars))
	starts := make([]float64, len(u.Chars))
	ends := make([]float64, len(u.Chars))
	for i, c := range u.Chars {
		chars[i] = c.Text
		// Milliseconds, as the API reports them.
		starts[i] = float64(int(c.Start*1000+0.5)) / 1000
		ends[i] = float64(int(c.End*1000+0.5)) / 1000
	}
	return map[string]any{
		"characters":                    chars,
		"character_start_times_seconds": starts,
		"character_end_times_seconds":   ends,
	}
}

func (s *Server) listVoices(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.begin(w, r); !ok {
		return
	}
	s.mu.Lock()
	list := append([]voice(nil), s.voices...)
	s.mu.Unlock()
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{"voices": list})
}

// clone is instant voice cloning: multipart name (required), files
// (required, one or more), description, labels (a JSON object as a
// string) and remove_background_noise.
func (s *Server) clone(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	form, err := fakeupstream.ParseMultipart(req)
	if err != nil {
		validation(w, []string{"body"}, "expected multipart/form-data: "+err.Error(), "value_error")
		return
	}
	for field := range form.Value {
		if !slices.Contains([]string{"name", "description", "labels", "remove_background_noise"}, field) {
			validation(w, []string{"body", field}, "extra fields not permitted", "value_error.extra")
			return
		}
	}
	for field := range form.File {
		if field != "files" {
			validation(w, []string{"body", field}, "extra fields not permitted", "value_error.extra")
			return
		}
	}
	name := first(form.Value["name"])
	if strings.TrimSpace(name) == "" {
		validation(w, []string{"body", "name"}, "field required", "value_error.missing")
		return
	}
	files := form.File["files"]
	if len(files) == 0 {
		validation(w, []string{"body", "files"}, "field required", "value_error.missing")
		return
	}
	for _, f := range files {
		if f.Size == 0 {
			detail(w, http.StatusBadRequest, "invalid_sample", fmt.Sprintf("The sample %q is empty.", f.Filename))
			return
		}
	}
	if l := first(form.Value["labels"]); l != "" {
		var labels map[string]string
		if json.Unmarshal([]byte(l), &labels) != nil {
			validation(w, []string{"body", "labels"}, "labels must be a JSON object of strings", "value_error.json")
			return
		}
	}
	if v := first(form.Value["remove_background_noise"]); v != "" && v != "true" && v != "false" {
		validation(w, []string{"body", "remove_background_noise"}, "value could not be parsed to a boolean", "type_error.bool")
		return
	}
	id := fmt.Sprintf("cloneFake%011d", s.clones.Add(1))
	desc := first(form.Value["description"])
	s.mu.Lock()
	s.voices = append(s.voices, voice{VoiceID: id, Name: name, Category: "cloned", Description: &desc, Labels: map[string]string{},
		AvailableForTiers: []string{}, HighQualityBaseModelIDs: []string{}})
	s.mu.Unlock()
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{"voice_id": id, "requires_verification": false})
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// characterCost is what ElevenLabs bills text on model, in credits: one a
// character, half of one on the Flash and Turbo models.
func characterCost(text string, model *string) int {
	n := utf8.RuneCountInString(text)
	if model != nil && (strings.Contains(*model, "flash") || strings.Contains(*model, "turbo")) {
		return (n + 1) / 2
	}
	return n
}

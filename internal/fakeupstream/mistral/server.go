// Package mistral is a fake of Mistral's speech API (Voxtral TTS) for
// tests and benchmarks: speech as a JSON answer or as server-sent events,
// the voice list and voice creation (cloning).
//
// It follows the published API reference and Mistral's own client:
// "Authorization: Bearer" on every request (401 when missing or wrong); a
// JSON SpeechRequest body of model, input, voice_id or ref_audio (base64
// audio), response_format (pcm, wav, mp3, flac, opus), stream and
// metadata, unknown fields answered 422 "Extra inputs are not permitted";
// the whole answer {audio_data: base64}; with stream true, events
// speech.audio.delta {audio_data} then speech.audio.done {usage}. pcm is
// raw float32 little-endian samples at 24 kHz mono, as documented; wav is
// 16-bit PCM at 24 kHz. Errors are {"object": "error", "message", "type",
// "param", "code", "raw_status_code"}, but a 422 is {"detail": [{type,
// loc, msg, input}]}, the shape the published document gives it; an
// unknown voice is 404 invalid_voice (code 1902); content moderation
// answers 403.
//
// Endpoints:
//
//	POST /v1/audio/speech   JSON, or text/event-stream with stream: true
//	GET  /v1/audio/voices   {items, total, page, page_size, total_pages}; limit, offset, type
//	POST /v1/audio/voices   JSON VoiceCreateRequest (sample_audio base64) → the voice
//
// Every format answers real audio of that format at 24 kHz (Opus coded at
// its 48 kHz); mp3 is MP3 at 24 kHz. The last audio answered (decoded
// from its base64, the whole of a stream) is kept (Control.LastAnswer).
//
// Deliberate gaps: emotion and pace tags in input are spoken as text; a
// ref_audio clip is checked to be base64 but not listened to.
package mistral

import (
	_ "embed"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
)

// apiDocument is the part of Mistral AI's published OpenAPI document the
// fake serves (apispec/mistral.yaml, whose header names its source, github.com/mistralai/platform-docs-public):
// it judges every request and answer (fakeupstream.Control.Judge).
//
//go:embed apispec/mistral.yaml
var apiDocument []byte

// Document returns the fake's API document, parsed once.
var Document = sync.OnceValue(func() *fakeupstream.Document {
	return fakeupstream.MustLoadDocument("Mistral AI", apiDocument)
})

// Key is the API key the fake accepts unless Options.Keys says otherwise.
const Key = "ms-test-fake-0123456789abcdef0123"

// Paths of the fake's endpoints.
const (
	SpeechPath = "/v1/audio/speech"
	VoicesPath = "/v1/audio/voices"
)

// SampleRate is the only rate Voxtral produces.
const SampleRate = 24000

// Slugs of stock preset voices (a Voxtral 3 and a Voxtral 2 style one).
const (
	VoiceSheila = "voice_478"
	VoiceJane   = "gb_jane_neutral"
)

// Models returns the speech models the fake accepts.
func Models() []string { return []string{"voxtral-mini-tts-3-0", "voxtral-mini-tts-2603"} }

// voice is a voice as the voices endpoints answer it (VoiceResponse).
type voice struct {
	ID              string   `json:"id"`
	Name            string   `json:"name"`
	Slug            *string  `json:"slug"`
	Languages       []string `json:"languages"`
	Gender          *string  `json:"gender"`
	Age             *int     `json:"age"`
	Tags            []string `json:"tags"`
	Color           *string  `json:"color"`
	Description     *string  `json:"description"`
	RetentionNotice int      `json:"retention_notice"`
	CreatedAt       string   `json:"created_at"`
	UserID          *string  `json:"user_id"`
	TrimmedSeconds  *float64 `json:"trimmed_seconds"`
}

func strp(s string) *string { return &s }

func stock() []voice {
	mk := func(id, slug, name, lang, gender string) voice {
		return voice{ID: id, Name: name, Slug: strp(slug), Languages: []string{lang}, Gender: strp(gender), Tags: []string{"preset"}, CreatedAt: "2026-03-23"}
	}
	return []voice{
		mk("0a1b2c3d-0000-4000-8000-000000000478", VoiceSheila, "Sheila", "en_us", "female"),
		mk("0a1b2c3d-0000-4000-8000-000000000592", "voice_592", "Marie", "fr_fr", "female"),
		mk("0a1b2c3d-0000-4000-8000-0000000000a1", VoiceJane, "Jane", "en_gb", "female"),
	}
}

// Server is a running fake. Steer it through the embedded Control.
type Server struct {
	*fakeupstream.Control
	// URL is the server's root; the plugin's base_url is BaseURL().
	URL string

	srv    *httptest.Server
	studio *fakeupstream.Studio
	mu     sync.Mutex
	voices []voice
	clones atomic.Int64
}

// New starts a fake. With tb set it is closed at tb.Cleanup; otherwise
// call Close.
func New(tb testing.TB, opts fakeupstream.Options) *Server {
	studio, err := fakeupstream.NewStudio()
	if err != nil {
		panic(err) // the embedded tone is broken: a build problem
	}
	s := &Server{Control: fakeupstream.NewControl(opts), studio: studio, voices: stock()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+SpeechPath, s.speech)
	mux.HandleFunc("GET "+VoicesPath, s.listVoices)
	mux.HandleFunc("POST "+VoicesPath, s.createVoice)
	mux.HandleFunc("/", s.notFound)
	s.srv = httptest.NewServer(s.Judge(tb, Document(), mux))
	s.URL = s.srv.URL
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// BaseURL is what the plugin's base_url setting should be: the root plus
// /v1, as in https://api.mistral.ai/v1.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// VoiceIDs returns the slugs of the preset voices and the ids of the
// created ones: what voice_id takes.
func (s *Server) VoiceIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for _, v := range s.voices {
		if v.Slug != nil {
			ids = append(ids, *v.Slug)
		} else {
			ids = append(ids, v.ID)
		}
	}
	return ids
}

// knows reports whether voice_id names a voice, by slug or id.
func (s *Server) knows(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(s.voices, func(v voice) bool { return v.ID == id || (v.Slug != nil && *v.Slug == id) })
}

// fail writes Mistral's error envelope.
func fail(w http.ResponseWriter, status int, typ, code string, msg any) {
	var c any
	if code != "" {
		c = code
	}
	fakeupstream.WriteJSON(w, status, map[string]any{
		"object": "error", "message": msg, "type": typ, "param": nil, "code": c, "raw_status_code": status,
	})
}

// invalid writes a 422 validation error for one field, in the shape the
// published document gives every 422: {"detail": [{loc, msg, type}]}.
func invalid(w http.ResponseWriter, typ, field, msg string, input any) {
	fakeupstream.WriteJSON(w, http.StatusUnprocessableEntity, map[string]any{
		"detail": []map[string]any{{"type": typ, "loc": []any{"body", field}, "msg": msg, "input": input}},
	})
}

func injected(w http.ResponseWriter, f *fakeupstream.Fault) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	typ, code, msg := "internal_server_error", f.Code, "Internal server error"
	switch f.Status {
	case http.StatusUnauthorized:
		typ, msg = "unauthorized", "Unauthorized"
	case http.StatusForbidden:
		typ, msg = "content_moderation", "The input was rejected by content moderation."
	case http.StatusTooManyRequests:
		typ, msg = "rate_limited", "Requests rate limit exceeded"
	case http.StatusServiceUnavailable:
		typ, msg = "service_unavailable", "Service unavailable, please retry"
	}
	if f.Message != "" {
		msg = f.Message
	}
	fail(w, f.Status, typ, code, msg)
}

// begin runs what every handler does first: record, latency, auth, then
// an injected fault. False when it answered.
func (s *Server) begin(w http.ResponseWriter, r *http.Request) (fakeupstream.Request, bool) {
	req, fault, ok := s.Begin(r)
	if !ok {
		return req, false
	}
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || !slices.Contains(s.Keys(Key), key) {
		fakeupstream.WriteJSON(w, http.StatusUnauthorized, map[string]any{"message": "Unauthorized", "request_id": fmt.Sprintf("req-%d", time.Now().UnixNano())})
		return req, false
	}
	if fault != nil {
		injected(w, fault)
		return req, false
	}
	return req, true
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.begin(w, r); ok {
		fail(w, http.StatusNotFound, "not_found", "", "Not Found")
	}
}

// decode reads a JSON body into v, answering 422 (false) for fields the
// schema lacks or JSON that does not parse.
func decode(w http.ResponseWriter, r *http.Request, body []byte, v any) bool {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		invalid(w, "model_attributes_type", "", "Input should be a valid dictionary or object to extract fields from", nil)
		return false
	}
	if err := fakeupstream.DecodeStrict(body, v); err != nil {
		if field, ok := fakeupstream.UnknownField(err); ok {
			invalid(w, "extra_forbidden", field, "Extra inputs are not permitted", nil)
			return false
		}
		invalid(w, "json_invalid", "", "JSON decode error: "+err.Error(), nil)
		return false
	}
	return true
}

// speechRequest is the documented SpeechRequest.
type speechRequest struct {
	Model          *string        `json:"model"`
	Input          *string        `json:"input"`
	VoiceID        *string        `json:"voice_id"`
	RefAudio       *string        `json:"ref_audio"`
	ResponseFormat *string        `json:"response_format"`
	Stream         *bool          `json:"stream"`
	Metadata       map[string]any `json:"metadata"`
}

// float32LE turns 16-bit PCM into the float32 samples Voxtral's pcm holds.
func float32LE(pcm []byte) []byte {
	out := make([]byte, 2*len(pcm))
	for i := 0; i+1 < len(pcm); i += 2 {
		v := float32(int16(binary.LittleEndian.Uint16(pcm[i:]))) / 32768
		binary.LittleEndian.PutUint32(out[2*i:], math.Float32bits(v))
	}
	return out
}

func (s *Server) speech(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	var b speechRequest
	if !decode(w, r, req.Body, &b) {
		return
	}
	format := "mp3"
	if b.ResponseFormat != nil {
		format = *b.ResponseFormat
	}
	switch {
	case b.Input == nil:
		invalid(w, "missing", "input", "Field required", nil)
		return
	case strings.TrimSpace(*b.Input) == "":
		invalid(w, "string_too_short", "input", "String should have at least 1 character", *b.Input)
		return
	case b.Model != nil && !slices.Contains(Models(), *b.Model) && !s.NewModel(*b.Model):
		// A model of fakeupstream.Options.NewModels is taken like the
		// others: they all take the same request.
		fail(w, http.StatusBadRequest, "invalid_model", "1500", fmt.Sprintf("Invalid model: %s", *b.Model))
		return
	case !slices.Contains([]string{"pcm", "wav", "mp3", "flac", "opus"}, format):
		invalid(w, "enum", "response_format", "Input should be 'pcm', 'wav', 'mp3', 'flac' or 'opus'", format)
		return
	case (b.VoiceID == nil || *b.VoiceID == "") && (b.RefAudio == nil || *b.RefAudio == ""):
		fail(w, http.StatusBadRequest, "invalid_request_error", "", "Either ref_audio or voice must be provided.")
		return
	}
	if b.RefAudio != nil && *b.RefAudio != "" {
		if clip, err := base64.StdEncoding.DecodeString(*b.RefAudio); err != nil || len(clip) == 0 {
			fail(w, http.StatusBadRequest, "invalid_request_error", "", "ref_audio must be base64-encoded audio.")
			return
		}
	} else if !s.knows(*b.VoiceID) {
		fail(w, http.StatusNotFound, "invalid_voice", "1902", fmt.Sprintf("Voice '%s' not found.", *b.VoiceID))
		return
	}
	u := fakeupstream.Speak(*b.Input, 1)
	if fs := s.FixedSeconds(); fs > 0 {
		u = fakeupstream.Fixed(fs)
	}
	var audio []byte
	switch format {
	case "pcm":
		audio = float32LE(s.studio.PCM(u, SampleRate).Bytes())
	case "wav":
		audio = s.studio.WAV(u, SampleRate).Bytes()
	default:
		rate := SampleRate
		if format == "opus" {
			rate = 0 // Opus codes at 48 kHz
		}
		a, _, err := s.studio.Encoded(u, format, rate, 0)
		if err != nil {
			fail(w, http.StatusInternalServerError, "internal_error", "", err.Error())
			return
		}
		audio = a.Bytes()
	}
	s.RecordAnswer(audio)
	// The document's UsageInfo (the done event's usage); the whole
	// answer is audio_data alone, which the document closes to other
	// properties.
	usage := map[string]any{"prompt_tokens": len(*b.Input), "total_tokens": len(*b.Input), "completion_tokens": 0}
	if b.Stream == nil || !*b.Stream {
		fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{"audio_data": base64.StdEncoding.EncodeToString(audio)})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	emit := func(typ string, ev map[string]any) bool {
		ev["type"] = typ
		data, _ := json.Marshal(ev)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	// Chunks end on sample boundaries of the format, as a streaming
	// encoder sends them.
	size := s.ChunkSize()
	if format == "pcm" {
		size &^= 3
	}
	for off := 0; off < len(audio); off += size {
		if off > 0 && !s.Pause(r.Context()) {
			return
		}
		if !emit("speech.audio.delta", map[string]any{"audio_data": base64.StdEncoding.EncodeToString(audio[off:min(off+size, len(audio))])}) {
			return
		}
	}
	emit("speech.audio.done", map[string]any{"usage": usage})
}

// listVoices answers the voices, presets and the account's own, paged
// by limit and offset and filtered by type (all, custom, preset).
func (s *Server) listVoices(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.begin(w, r); !ok {
		return
	}
	q := r.URL.Query()
	number := func(key string, def, lo, hi int) (int, bool) {
		v := q.Get(key)
		if v == "" {
			return def, true
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			fakeupstream.WriteJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": []map[string]any{{"type": "int_parsing", "loc": []string{"query", key}, "msg": fmt.Sprintf("Input should be between %d and %d", lo, hi)}}})
			return 0, false
		}
		return n, true
	}
	limit, ok := number("limit", 10, 1, 100)
	if !ok {
		return
	}
	offset, ok := number("offset", 0, 0, 1<<30)
	if !ok {
		return
	}
	typ := q.Get("type")
	if typ == "" {
		typ = "all"
	}
	if !slices.Contains([]string{"all", "custom", "preset"}, typ) {
		fakeupstream.WriteJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": []map[string]any{{"type": "enum", "loc": []string{"query", "type"}, "msg": "Input should be 'all', 'custom' or 'preset'"}}})
		return
	}
	s.mu.Lock()
	var list []voice
	for _, v := range s.voices {
		if typ == "all" || (typ == "custom") == (v.UserID != nil) {
			list = append(list, v)
		}
	}
	s.mu.Unlock()
	from := min(offset, len(list))
	items := list[from:min(from+limit, len(list))]
	if items == nil {
		items = []voice{}
	}
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{
		"items": items, "total": len(list), "page": offset/limit + 1, "page_size": limit,
		"total_pages": (len(list) + limit - 1) / limit,
	})
}

// voiceCreate is the documented VoiceCreateRequest.
type voiceCreate struct {
	Name            *string  `json:"name"`
	Slug            *string  `json:"slug"`
	Languages       []string `json:"languages"`
	Gender          *string  `json:"gender"`
	Age             *int     `json:"age"`
	Tags            []string `json:"tags"`
	Color           *string  `json:"color"`
	Description     *string  `json:"description"`
	RetentionNotice *int     `json:"retention_notice"`
	SampleAudio     *string  `json:"sample_audio"`
	SampleFilename  *string  `json:"sample_filename"`
}

// createVoice saves a voice from a base64 sample.
func (s *Server) createVoice(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	var b voiceCreate
	if !decode(w, r, req.Body, &b) {
		return
	}
	switch {
	case b.Name == nil || strings.TrimSpace(*b.Name) == "":
		invalid(w, "missing", "name", "Field required", nil)
		return
	case b.SampleAudio == nil:
		invalid(w, "missing", "sample_audio", "Field required", nil)
		return
	}
	clip, err := base64.StdEncoding.DecodeString(*b.SampleAudio)
	if err != nil || len(clip) == 0 {
		fail(w, http.StatusBadRequest, "invalid_request_error", "", "sample_audio must be a base64-encoded audio file.")
		return
	}
	if b.Slug != nil && s.knows(*b.Slug) {
		fail(w, http.StatusConflict, "invalid_request_error", "", fmt.Sprintf("A voice with slug '%s' already exists.", *b.Slug))
		return
	}
	retention := 30
	if b.RetentionNotice != nil {
		retention = *b.RetentionNotice
	}
	v := voice{
		ID: fmt.Sprintf("c0ffee00-0000-4000-8000-%012d", s.clones.Add(1)), Name: *b.Name, Slug: b.Slug,
		Languages: b.Languages, Gender: b.Gender, Age: b.Age, Tags: b.Tags, Color: b.Color, Description: b.Description,
		RetentionNotice: retention, CreatedAt: time.Now().UTC().Format("2006-01-02"), UserID: strp("user-fake"),
	}
	if v.Languages == nil {
		v.Languages = []string{}
	}
	if v.Tags == nil {
		v.Tags = []string{}
	}
	s.mu.Lock()
	s.voices = append(s.voices, v)
	s.mu.Unlock()
	fakeupstream.WriteJSON(w, http.StatusOK, v)
}

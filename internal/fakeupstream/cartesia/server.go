// Package cartesia is a fake of the Cartesia API for tests and
// benchmarks: text-to-speech as bytes and as server-sent events (with word
// timestamps), the voice list and voice cloning.
//
// It follows the published API reference: every request must carry a
// Cartesia-Version header (one of the documented versions) and the key as
// X-API-Key or "Authorization: Bearer"; the TTS body is model_id,
// transcript, voice {mode: "id", id}, output_format {container, encoding,
// sample_rate, bit_rate}, language, duration, speed, generation_config
// {speed 0.6 to 1.5, volume 0.5 to 2.0, emotion} with unknown fields
// rejected; /tts/sse takes add_timestamps, add_phoneme_timestamps,
// use_normalized_timestamps and context_id besides, accepts only the raw
// container, and answers events {"type": "chunk"|"timestamps"|"done", ...}
// whose word_timestamps {words, start, end} match the audio exactly.
// Errors are JSON {error_code, title, message, request_id} for
// Cartesia-Version 2026-03-01 and later and plain "Title: Message" text
// before, as the API errors page documents.
//
// Endpoints:
//
//	POST /tts/bytes     audio (raw, wav or mp3), chunked
//	POST /tts/sse       text/event-stream
//	GET  /voices        {"data": [...], "has_more", "next_page"}; limit, starting_after
//	POST /voices/clone  multipart: clip, name, language, description, mode, enhance, transcript, base_voice_id
//	GET  /tts/websocket WebSocket with contexts (websocket.go)
//
// Audio is real in every format the fake renders: 16-bit PCM raw or in
// WAV at every rate, MP3 at every documented rate and bit rate MPEG
// audio has (192 kbit/s only at 44.1 and 48 kHz), and pcm_mulaw and
// pcm_alaw in the raw container at 8 kHz. LastAnswer holds the audio of
// the latest answer.
//
// Deliberate gaps: pcm_f32le, G.711 at other rates or in WAV, and MP3 at
// 192 kbit/s below 32 kHz are valid but answer 400; voice embeddings are
// not supported; generation_config.speed is honoured by sonic-3 only (the
// reference: no effect before sonic-3; disabled on sonic-3.5) and the
// legacy top-level speed is accepted but ignored.
package cartesia

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
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
)

// apiDocument is the part of Cartesia's published OpenAPI document the
// fake serves (apispec/cartesia.yaml, whose header names its source, Cartesia's Stainless-hosted document):
// it judges every request and answer (fakeupstream.Control.Judge).
//
//go:embed apispec/cartesia.yaml
var apiDocument []byte

// Document returns the fake's API document, parsed once.
var Document = sync.OnceValue(func() *fakeupstream.Document {
	return fakeupstream.MustLoadDocument("Cartesia", apiDocument, fakeupstream.Excuse{
		Operation: "POST /tts/bytes",
		Contains:  "The value '2026-03-01' is not one of those values",
		Why: "each vintage of the document lists the versions of its day: the one kept (March 2026) does " +
			"not list 2026-03-01 yet, which the document of May 2026 does",
	}, fakeupstream.Excuse{
		Operation: "POST /tts/sse",
		Contains:  "The value '2026-03-01' is not one of those values",
		Why:       "as for POST /tts/bytes",
	})
})

// Key is the API key the fake accepts unless Options.Keys says otherwise.
const Key = "sk_car_test_fake_0123456789abcdef"

// Paths of the fake's endpoints.
const (
	BytesPath  = "/tts/bytes"
	SSEPath    = "/tts/sse"
	VoicesPath = "/voices"
	ClonePath  = "/voices/clone"
)

// Ids of the fake's stock voices.
const (
	VoiceKatie   = "694f9389-aac1-45b6-b726-9d9369183238"
	VoiceBarber  = "a0e99841-438c-4a64-b679-ae501e7d6091"
	VoiceSophie  = "6ccbfb76-1fc6-48f7-b71d-91ac6298247b"
	VoiceMarcel  = "e07c00bc-4134-4eae-9ea4-1a55fb45746b"
	structuredAt = "2026-03-01" // first version with JSON error objects
)

// Versions returns the Cartesia-Version values the fake accepts.
func Versions() []string { return []string{"2024-06-10", "2024-11-13", "2025-04-16", "2026-03-01"} }

// Models returns the model ids the fake accepts.
func Models() []string {
	return []string{"sonic", "sonic-2", "sonic-turbo", "sonic-3", "sonic-3.5"}
}

// SampleRates returns the documented output sample rates.
func SampleRates() []int { return []int{8000, 16000, 22050, 24000, 44100, 48000} }

// voice is a voice as GET /voices lists it.
type voice struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Language    string `json:"language"`
	Gender      string `json:"gender,omitempty"`
	IsOwner     bool   `json:"is_owner"`
	IsPublic    bool   `json:"is_public"`
	CreatedAt   string `json:"created_at"`
}

func stock() []voice {
	mk := func(id, name, lang, gender string) voice {
		return voice{ID: id, Name: name, Description: "stock voice of the fake", Language: lang, Gender: gender, IsPublic: true, CreatedAt: "2025-01-01T00:00:00Z"}
	}
	return []voice{
		mk(VoiceKatie, "Katie", "en", "feminine"),
		mk(VoiceBarber, "Barbershop Man", "en", "masculine"),
		mk(VoiceSophie, "Sophie", "en", "feminine"),
		mk(VoiceMarcel, "Marcel", "fr", "masculine"),
	}
}

// Server is a running fake. Steer it through the embedded Control.
type Server struct {
	*fakeupstream.Control
	// URL is the server's root, which is also the plugin's base_url.
	URL string

	srv      *httptest.Server
	studio   *fakeupstream.Studio
	mu       sync.Mutex
	voices   []voice
	pageSize int
	clones   atomic.Int64
	reqID    atomic.Int64
	ws       wsStats // the TTS WebSocket (websocket.go)
}

// New starts a fake. With tb set it is closed at tb.Cleanup; otherwise
// call Close.
func New(tb testing.TB, opts fakeupstream.Options) *Server {
	studio, err := fakeupstream.NewStudio()
	if err != nil {
		panic(err) // the embedded tone is broken: a build problem
	}
	s := &Server{Control: fakeupstream.NewControl(opts), studio: studio, voices: stock(), pageSize: 100}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+BytesPath, s.bytes)
	mux.HandleFunc("POST "+SSEPath, s.sse)
	mux.HandleFunc("GET "+WebSocketPath, s.websocket) // websocket.go
	mux.HandleFunc("GET "+VoicesPath, s.listVoices)
	mux.HandleFunc("GET "+VoicesPath+"/", s.listVoices)
	mux.HandleFunc("POST "+ClonePath, s.clone)
	mux.HandleFunc("/", s.notFound)
	s.srv = httptest.NewServer(s.Judge(tb, Document(), mux))
	s.URL = s.srv.URL
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// BaseURL is what the plugin's base_url setting should be (the root, as in
// https://api.cartesia.ai).
func (s *Server) BaseURL() string { return s.URL }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// SetPageSize caps how many voices one GET /voices page holds, whatever
// limit the client asks for, to exercise pagination.
func (s *Server) SetPageSize(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pageSize = max(n, 1)
}

func (s *Server) knows(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(s.voices, func(v voice) bool { return v.ID == id })
}

// fail answers an error in the format of the request's API version.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, code, title, msg string) {
	reqID := fmt.Sprintf("00000000-0000-4000-8000-%012d", s.reqID.Add(1))
	if r.Header.Get("Cartesia-Version") >= structuredAt {
		var codeField any
		if code != "" {
			codeField = code
		}
		fakeupstream.WriteJSON(w, status, map[string]any{"error_code": codeField, "title": title, "message": msg, "request_id": reqID})
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "%s: %s", title, msg)
}

func (s *Server) injected(w http.ResponseWriter, r *http.Request, f *fakeupstream.Fault) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	code, title, msg := "internal_error", "Internal Server Error", "An unexpected error occurred."
	switch f.Status {
	case http.StatusUnauthorized:
		code, title, msg = "invalid_api_key", "Unauthorized", "Invalid API key."
	case http.StatusTooManyRequests:
		code, title, msg = "concurrency_limited", "Too many concurrent requests", "You have exceeded your plan's concurrency limit."
	case http.StatusServiceUnavailable:
		code, title, msg = "service_unavailable", "Service Unavailable", "The service is temporarily overloaded."
	}
	if f.Code != "" {
		code = f.Code
	}
	if f.Message != "" {
		msg = f.Message
	}
	s.fail(w, r, f.Status, code, title, msg)
}

// begin runs what every handler does first: record, latency, version and
// auth checks, then an injected fault. False when it answered.
func (s *Server) begin(w http.ResponseWriter, r *http.Request) (fakeupstream.Request, bool) {
	req, fault, ok := s.Begin(r)
	if !ok {
		return req, false
	}
	version := r.Header.Get("Cartesia-Version")
	if version == "" {
		s.fail(w, r, http.StatusBadRequest, "missing_version", "Bad Request", "The Cartesia-Version header is required.")
		return req, false
	}
	if !slices.Contains(Versions(), version) {
		s.fail(w, r, http.StatusBadRequest, "invalid_version", "Bad Request", fmt.Sprintf("Unknown Cartesia-Version %q.", version))
		return req, false
	}
	key := r.Header.Get("X-API-Key")
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && key == "" {
		key = bearer
	}
	if key == "" {
		s.fail(w, r, http.StatusUnauthorized, "missing_api_key", "Unauthorized", "No API key: send X-API-Key or Authorization: Bearer.")
		return req, false
	}
	if !slices.Contains(s.Keys(Key), key) {
		s.fail(w, r, http.StatusUnauthorized, "invalid_api_key", "Unauthorized", "Invalid API key.")
		return req, false
	}
	if fault != nil {
		s.injected(w, r, fault)
		return req, false
	}
	return req, true
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.begin(w, r); ok {
		s.fail(w, r, http.StatusNotFound, "not_found", "Not Found", fmt.Sprintf("No route for %s %s.", r.Method, r.URL.Path))
	}
}

// ttsFields are the fields /tts/bytes and /tts/sse share.
type ttsFields struct {
	ModelID             *string           `json:"model_id"`
	Transcript          *string           `json:"transcript"`
	Voice               *voiceSpec        `json:"voice"`
	OutputFormat        *outputFormat     `json:"output_format"`
	Language            *string           `json:"language"`
	Duration            *float64          `json:"duration"`
	Speed               json.RawMessage   `json:"speed"`
	GenerationConfig    *generationConfig `json:"generation_config"`
	PronunciationDictID *string           `json:"pronunciation_dict_id"`
}

type bytesRequest struct {
	ttsFields
}

type sseRequest struct {
	ttsFields
	AddTimestamps           *bool   `json:"add_timestamps"`
	AddPhonemeTimestamps    *bool   `json:"add_phoneme_timestamps"`
	UseNormalizedTimestamps *bool   `json:"use_normalized_timestamps"`
	ContextID               *string `json:"context_id"`
}

type voiceSpec struct {
	Mode      string    `json:"mode"`
	ID        string    `json:"id"`
	Embedding []float64 `json:"embedding"`
}

type outputFormat struct {
	Container  string  `json:"container"`
	Encoding   *string `json:"encoding"`
	SampleRate *int    `json:"sample_rate"`
	BitRate    *int    `json:"bit_rate"`
}

type generationConfig struct {
	Speed        *float64        `json:"speed"`
	Volume       *float64        `json:"volume"`
	Emotion      *string         `json:"emotion"`
	Experimental json.RawMessage `json:"experimental"`
}

// decode reads a TTS body into v, answering 400 (false) on unknown fields
// or bad JSON.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, body []byte, v any) bool {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		s.fail(w, r, http.StatusBadRequest, "invalid_request", "Bad Request", "Expected Content-Type: application/json.")
		return false
	}
	if err := fakeupstream.DecodeStrict(body, v); err != nil {
		if field, ok := fakeupstream.UnknownField(err); ok {
			s.fail(w, r, http.StatusBadRequest, "invalid_request", "Bad Request", fmt.Sprintf("Unknown field %q.", field))
			return false
		}
		s.fail(w, r, http.StatusBadRequest, "invalid_request", "Bad Request", "Invalid JSON body: "+err.Error())
		return false
	}
	return true
}

// check validates the shared fields; it returns the speaking speed and
// whether to go on.
func (s *Server) check(w http.ResponseWriter, r *http.Request, f *ttsFields, rawOnly bool) (float64, bool) {
	bad := func(format string, args ...any) (float64, bool) {
		s.fail(w, r, http.StatusBadRequest, "invalid_request", "Bad Request", fmt.Sprintf(format, args...))
		return 0, false
	}
	switch {
	case f.ModelID == nil:
		return bad("model_id is required.")
	case !slices.Contains(Models(), *f.ModelID) && !s.NewModel(*f.ModelID):
		// A model of fakeupstream.Options.NewModels is taken like
		// Sonic 2: every format, no speed.
		return bad("Unknown model_id %q.", *f.ModelID)
	case f.Transcript == nil || strings.TrimSpace(*f.Transcript) == "":
		return bad("transcript is required and must not be empty.")
	case checkPhonemes(*f.Transcript) != "":
		return bad("%s", checkPhonemes(*f.Transcript))
	case f.Voice == nil:
		return bad("voice is required.")
	case f.Voice.Mode == "embedding":
		return bad("voice mode %q is valid but this fake supports mode \"id\" only.", f.Voice.Mode)
	case f.Voice.Mode != "id" || f.Voice.ID == "":
		return bad("voice must be {\"mode\": \"id\", \"id\": ...}.")
	case f.OutputFormat == nil:
		return bad("output_format is required.")
	}
	of := f.OutputFormat
	switch of.Container {
	case "raw", "wav":
		if rawOnly && of.Container != "raw" {
			return bad("This endpoint supports only the raw container.")
		}
		if of.Encoding == nil {
			return bad("output_format.encoding is required for container %q.", of.Container)
		}
		switch e := *of.Encoding; {
		case e == "pcm_s16le":
		case (e == "pcm_mulaw" || e == "pcm_alaw") && of.Container == "raw":
			if of.SampleRate != nil && *of.SampleRate != 8000 {
				return bad("encoding %q at %d Hz is valid but this fake renders G.711 at 8000 Hz only.", e, *of.SampleRate)
			}
		case e == "pcm_f32le" || e == "pcm_mulaw" || e == "pcm_alaw":
			return bad("encoding %q in container %q is valid but this fake does not render it.", e, of.Container)
		default:
			return bad("Unknown encoding %q.", e)
		}
	case "mp3":
		if rawOnly {
			return bad("This endpoint supports only the raw container.")
		}
		if of.BitRate == nil || !slices.Contains([]int{32000, 64000, 96000, 128000, 192000}, *of.BitRate) {
			return bad("output_format.bit_rate must be one of 32000, 64000, 96000, 128000, 192000 for mp3.")
		}
		if *of.BitRate > 160000 && of.SampleRate != nil && *of.SampleRate < 32000 {
			return bad("mp3 at %d bit/s and %d Hz is valid but this fake's encoder has no such MPEG-2 bit rate.", *of.BitRate, *of.SampleRate)
		}
	default:
		return bad("Unknown container %q: use raw, wav or mp3.", of.Container)
	}
	if of.SampleRate == nil || !slices.Contains(SampleRates(), *of.SampleRate) {
		return bad("output_format.sample_rate must be one of %v.", SampleRates())
	}
	if f.Language != nil && len(*f.Language) != 2 {
		return bad("Unsupported language %q.", *f.Language)
	}
	if len(f.Speed) > 0 {
		var word string
		var num float64
		if json.Unmarshal(f.Speed, &word) == nil {
			if !slices.Contains([]string{"slow", "normal", "fast"}, word) {
				return bad("speed must be slow, normal or fast.")
			}
		} else if json.Unmarshal(f.Speed, &num) != nil || num < -1 || num > 1 {
			return bad("speed must be slow, normal, fast or a number from -1 to 1.")
		}
	}
	speed := 1.0
	if gc := f.GenerationConfig; gc != nil {
		if gc.Speed != nil && (*gc.Speed < 0.6 || *gc.Speed > 1.5) {
			return bad("generation_config.speed must be between 0.6 and 1.5.")
		}
		if gc.Volume != nil && (*gc.Volume < 0.5 || *gc.Volume > 2) {
			return bad("generation_config.volume must be between 0.5 and 2.0.")
		}
		// Documented: these controls have no effect before sonic-3, and
		// are disabled on sonic-3.5.
		if m := *f.ModelID; gc.Speed != nil && (m == "sonic-3" || strings.HasPrefix(m, "sonic-3-")) {
			speed = *gc.Speed
		}
	}
	if !s.knows(f.Voice.ID) {
		s.fail(w, r, http.StatusNotFound, "voice_not_found", "Not Found", fmt.Sprintf("Voice %s not found.", f.Voice.ID))
		return 0, false
	}
	return speed, true
}

// utterance lays out the request's speech; a Voice that fails answers
// 500 (the tone never fails).
func (s *Server) utterance(w http.ResponseWriter, r *http.Request, f *ttsFields, speed float64) (fakeupstream.Utterance, bool) {
	if fs := s.FixedSeconds(); fs > 0 {
		return fakeupstream.Fixed(fs), true
	}
	u, err := s.Speak(*f.Transcript, speed)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "internal_error", "Internal Server Error", err.Error())
		return u, false
	}
	return u, true
}

func (s *Server) bytes(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	var body bytesRequest
	if !s.decode(w, r, req.Body, &body) {
		return
	}
	speed, ok := s.check(w, r, &body.ttsFields, false)
	if !ok {
		return
	}
	u, ok := s.utterance(w, r, &body.ttsFields, speed)
	if !ok {
		return
	}
	of := body.OutputFormat
	audio, err := s.render(u, of)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "internal_error", "Internal Server Error", err.Error())
		return
	}
	switch of.Container {
	case "raw":
		w.Header().Set("Content-Type", "application/octet-stream")
	case "wav":
		w.Header().Set("Content-Type", "audio/wav")
	default:
		w.Header().Set("Content-Type", "audio/mpeg")
	}
	w.WriteHeader(http.StatusOK)
	s.RecordAnswer(audio.Bytes())
	s.WriteAudio(r.Context(), w, audio)
}

// codecs are the sdk format names of the raw encodings the fake renders.
var codecs = map[string]string{"pcm_s16le": "pcm", "pcm_mulaw": "ulaw", "pcm_alaw": "alaw"}

// render renders u in of, a format check accepted.
func (s *Server) render(u fakeupstream.Utterance, of *outputFormat) (fakeupstream.Audio, error) {
	rate := *of.SampleRate
	switch of.Container {
	case "raw":
		a, _, err := s.studio.Encoded(u, codecs[*of.Encoding], rate, 0)
		return a, err
	case "wav":
		return s.studio.WAV(u, rate), nil
	}
	a, _, err := s.studio.Encoded(u, "mp3", rate, *of.BitRate/1000)
	return a, err
}

// sse streams the audio as "chunk" events of ChunkSize bytes, and with
// add_timestamps a "timestamps" event for the words each chunk completes,
// then a "done" event.
func (s *Server) sse(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	var body sseRequest
	if !s.decode(w, r, req.Body, &body) {
		return
	}
	speed, ok := s.check(w, r, &body.ttsFields, true)
	if !ok {
		return
	}
	u, ok := s.utterance(w, r, &body.ttsFields, speed)
	if !ok {
		return
	}
	rate := *body.OutputFormat.SampleRate
	audio, err := s.render(u, body.OutputFormat)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "internal_error", "Internal Server Error", err.Error())
		return
	}
	pcm := audio.Bytes()
	s.RecordAnswer(pcm)
	frame := 2 // bytes a sample: 16-bit PCM, or G.711's 1
	if *body.OutputFormat.Encoding != "pcm_s16le" {
		frame = 1
	}
	withWords := body.AddTimestamps != nil && *body.AddTimestamps
	var contextID any
	if body.ContextID != nil {
		contextID = *body.ContextID
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	emit := func(typ string, ev map[string]any) bool {
		ev["type"], ev["context_id"] = typ, contextID
		data, _ := json.Marshal(ev)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	size := s.ChunkSize() - s.ChunkSize()%frame // whole samples
	nextWord := 0
	for off := 0; off < len(pcm); off += size {
		if off > 0 && !s.Pause(r.Context()) {
			return
		}
		end := min(off+size, len(pcm))
		if !emit("chunk", map[string]any{
			"data": base64.StdEncoding.EncodeToString(pcm[off:end]), "done": false, "status_code": 206,
			"step_time": 12.5, // milliseconds of generation, a plausible constant
		}) {
			return
		}
		if !withWords {
			continue
		}
		// The words whose audio has now been sent, in one event.
		upTo := float64(end/frame) / float64(rate)
		var words []string
		var starts, ends []float64
		for ; nextWord < len(u.Words) && (u.Words[nextWord].End <= upTo || end == len(pcm)); nextWord++ {
			wd := u.Words[nextWord]
			words, starts, ends = append(words, wd.Text), append(starts, wd.Start), append(ends, wd.End)
		}
		if len(words) > 0 && !emit("timestamps", map[string]any{
			"word_timestamps": map[string]any{"words": words, "start": starts, "end": ends},
			"done":            false, "status_code": 206,
		}) {
			return
		}
	}
	emit("done", map[string]any{"done": true, "status_code": 200})
}

func (s *Server) listVoices(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.begin(w, r); !ok {
		return
	}
	q := r.URL.Query()
	limit := 10
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			s.fail(w, r, http.StatusBadRequest, "invalid_request", "Bad Request", "limit must be between 1 and 100.")
			return
		}
		limit = n
	}
	s.mu.Lock()
	limit = min(limit, s.pageSize)
	all := append([]voice(nil), s.voices...)
	s.mu.Unlock()
	from := 0
	if after := q.Get("starting_after"); after != "" {
		i := slices.IndexFunc(all, func(v voice) bool { return v.ID == after })
		if i < 0 {
			s.fail(w, r, http.StatusBadRequest, "invalid_request", "Bad Request", "starting_after is not a voice id.")
			return
		}
		from = i + 1
	}
	page := all[from:min(from+limit, len(all))]
	hasMore := from+len(page) < len(all)
	answer := map[string]any{"data": page, "has_more": hasMore}
	if hasMore {
		// The document types next_page as a voice id, so the fake leaves
		// it out rather than sending null on the last page.
		answer["next_page"] = page[len(page)-1].ID
	}
	fakeupstream.WriteJSON(w, http.StatusOK, answer)
}

// clone makes a voice from one clip: multipart clip (file), name and
// language required; description, mode (similarity or stability), enhance,
// transcript and base_voice_id optional.
func (s *Server) clone(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	bad := func(format string, args ...any) {
		s.fail(w, r, http.StatusBadRequest, "invalid_request", "Bad Request", fmt.Sprintf(format, args...))
	}
	form, err := fakeupstream.ParseMultipart(req)
	if err != nil {
		bad("Expected multipart/form-data: %v.", err)
		return
	}
	for field := range form.Value {
		// The fields of the published document; the older mode,
		// enhance and transcript are gone from it.
		if !slices.Contains([]string{"name", "language", "description", "base_voice_id"}, field) {
			bad("Unknown field %q.", field)
			return
		}
	}
	for field := range form.File {
		if field != "clip" {
			bad("Unknown file field %q.", field)
			return
		}
	}
	value := func(k string) string {
		if v := form.Value[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	clips := form.File["clip"]
	switch {
	case len(clips) != 1:
		bad("Exactly one clip file is required.")
		return
	case clips[0].Size == 0:
		bad("The clip is empty.")
		return
	case strings.TrimSpace(value("name")) == "":
		bad("name is required.")
		return
	case len(value("language")) != 2:
		bad("language is required (e.g. en).")
		return
	}
	v := voice{
		ID:          fmt.Sprintf("c10e0000-0000-4000-8000-%012d", s.clones.Add(1)),
		Name:        value("name"),
		Description: value("description"),
		Language:    value("language"),
		IsOwner:     true,
		CreatedAt:   time.Now().UTC().Format(time.RFC3339),
	}
	s.mu.Lock()
	s.voices = append(s.voices, v)
	s.mu.Unlock()
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{
		"id": v.ID, "user_id": "user_fake", "is_public": false, "name": v.Name,
		"description": v.Description, "created_at": v.CreatedAt, "language": v.Language,
	})
}

// checkPhonemes holds a transcript's custom pronunciations to the form
// Cartesia's guide documents: each word's IPA phonemes between "<<" and
// ">>", separated by "|", no whitespace inside (a trailing "|" appears in
// the guide's own example). It returns what is wrong, or "". Cartesia
// would speak a malformed group as text; the fake refuses it, so a test
// sees the gateway send a wrong form.
func checkPhonemes(t string) string {
	for {
		i := strings.Index(t, "<<")
		if i < 0 {
			return "" // a ">>" of its own is text
		}
		t = t[i+2:]
		j := strings.Index(t, ">>")
		if j < 0 {
			return "custom pronunciation: \"<<\" without \">>\"."
		}
		group := t[:j]
		t = t[j+2:]
		if strings.ContainsAny(group, " \t\n<>") {
			return fmt.Sprintf("custom pronunciation <<%s>>: no whitespace or angle brackets inside.", group)
		}
		parts := strings.Split(strings.TrimSuffix(group, "|"), "|")
		for _, p := range parts {
			if p == "" {
				return fmt.Sprintf("custom pronunciation <<%s>>: an empty phoneme between bars.", group)
			}
		}
	}
}

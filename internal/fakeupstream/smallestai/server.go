// Package smallestai is a fake of Smallest AI's Waves text-to-speech API
// (Lightning v3.1) for tests.
//
// It follows the published OpenAPI reference of the unified routes:
//
//	POST /waves/v1/tts                       audio body (pcm, wav or mp3)
//	POST /waves/v1/tts/live                  text/event-stream
//	GET  /waves/v1/lightning-v3.1/get_voices {"voices": [...]}
//	POST /waves/v1/voice-cloning             multipart; {"message", "data"}
//	GET  /waves/v1/voice-cloning             {"data": [...]}
//
// Every request needs `Authorization: Bearer <key>` (401 with
// {"error": "Unauthorized", "message"} otherwise). Speech bodies are
// decoded strictly (unknown fields are a 400) and validated as documented:
// text and voice_id required, model lightning_v3.1 or lightning_v3.1_pro,
// sample_rate 8000/16000/24000/44100 (default 44100), speed 0.5 to 2,
// output_format pcm/mp3/wav/ulaw/alaw (default pcm), language from the
// documented list. Errors are {"error": "<Type>", "message"}.
//
// The events of /tts/live are `event: audio` with data {"audio":
// "<base64>", "done": false, "status": "206"}, then a last data-only
// event {"status": "200", "done": true}.
//
// POST /tts without `Accept: audio/wav` answers 200 with an empty body:
// the reference marks the header required and warns that without it "an
// empty or unplayable response" comes back.
//
// pcm, wav and mp3 are real audio at the sample_rate asked (mp3 at its
// own bitrate); LastAnswer holds the audio of the latest answer (of a
// stream, its events' audio joined).
//
// Deliberate gaps: ulaw and alaw answer 400 (the fake renders pcm, wav
// and mp3 only); the WebSocket endpoint and word timestamps are not
// faked.
package smallestai

import (
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
)

// apiDocument is the part of Smallest AI's published OpenAPI document the
// fake serves (apispec/smallestai.yaml, whose header names its source, docs.smallest.ai):
// it judges every request and answer (fakeupstream.Control.Judge).
//
//go:embed apispec/smallestai.yaml
var apiDocument []byte

// Document returns the fake's API document, parsed once.
var Document = sync.OnceValue(func() *fakeupstream.Document {
	return fakeupstream.MustLoadDocument("Smallest AI", apiDocument, fakeupstream.Excuse{
		Operation: "POST /waves/v1/tts",
		Contains:  "$.sample_rate: got number, want string",
		Why: "the document's generator wrote the numeric rates as a string enum (\"8000\", ...), while its " +
			"default (44100) and every example the same document gives send a number",
	}, fakeupstream.Excuse{
		Operation: "POST /waves/v1/tts/live",
		Contains:  "$.sample_rate: got number, want string",
		Why:       "as for POST /waves/v1/tts",
	})
})

// Key is the API key the fake accepts unless Options.Keys says otherwise.
const Key = "sk_fake_smallest_0123456789abcdef"

// Paths of the API, under the root URL.
const (
	TTSPath    = "/waves/v1/tts"
	LivePath   = "/waves/v1/tts/live"
	VoicesPath = "/waves/v1/lightning-v3.1/get_voices"
	ClonePath  = "/waves/v1/voice-cloning"
)

// Voices of the fake's catalog.
const (
	VoiceMagnus = "magnus"
	VoiceEmily  = "emily"
	VoiceMeher  = "meher"
)

// Models returns the models the fake accepts.
func Models() []string { return []string{"lightning_v3.1", "lightning_v3.1_pro"} }

// SampleRates returns the documented sample rates.
func SampleRates() []int { return []int{8000, 16000, 24000, 44100} }

// Languages returns the documented language codes.
func Languages() []string {
	return strings.Fields("auto en hi mr kn ta bn gu te ml pa or es de fr it nl sv pt ru el fi no pl ar zh id ja ko ms tr vi")
}

type tags struct {
	Language []string `json:"language"`
	Accent   string   `json:"accent"`
	Gender   string   `json:"gender"`
	Age      string   `json:"age"`
	Emotions []string `json:"emotions"`
	Usecases []string `json:"usecases"`
}

// catalogVoice is a voice as get_voices lists it.
type catalogVoice struct {
	VoiceID     string `json:"voiceId"`
	DisplayName string `json:"displayName"`
	Tags        tags   `json:"tags"`
}

// clone is a cloned voice as GET /voice-cloning lists it.
type clone struct {
	ID          string   `json:"_id"`
	VoiceID     string   `json:"voiceId"`
	DisplayName string   `json:"displayName"`
	Description string   `json:"description"`
	Accent      string   `json:"accent"`
	Tags        []string `json:"tags"`
	Language    string   `json:"language"`
	Status      string   `json:"status"`
	CloningType string   `json:"cloningType"`
	ModelIDs    []string `json:"modelIds"`
	CreatedAt   string   `json:"createdAt"`
}

func catalog() []catalogVoice {
	mk := func(id, name, accent, gender string, langs ...string) catalogVoice {
		return catalogVoice{VoiceID: id, DisplayName: name, Tags: tags{Language: langs, Accent: accent, Gender: gender, Age: "young", Emotions: []string{}, Usecases: []string{"conversational"}}}
	}
	return []catalogVoice{
		mk(VoiceMagnus, "Magnus", "american", "male", "english"),
		mk(VoiceEmily, "Emily", "american", "female", "english"),
		mk(VoiceMeher, "Meher", "indian", "female", "hindi", "english"),
	}
}

// Server is a running fake. Steer it through the embedded Control.
type Server struct {
	*fakeupstream.Control
	// URL is the server's root, e.g. http://127.0.0.1:41234.
	URL string

	srv    *httptest.Server
	studio *fakeupstream.Studio
	mu     sync.Mutex
	clones []clone
	nextID atomic.Int64
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
	mux.HandleFunc("POST "+TTSPath, s.tts)
	mux.HandleFunc("POST "+LivePath, s.live)
	mux.HandleFunc("GET "+VoicesPath, s.voices)
	mux.HandleFunc("POST "+ClonePath, s.clone)
	mux.HandleFunc("GET "+ClonePath, s.listClones)
	mux.HandleFunc("/", s.notFound)
	s.srv = httptest.NewServer(s.Judge(tb, Document(), mux))
	s.URL = s.srv.URL
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// BaseURL is what the plugin's base_url setting should be: the root plus
// /waves/v1, as in https://api.smallest.ai/waves/v1.
func (s *Server) BaseURL() string { return s.URL + "/waves/v1" }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// fail answers with the text-to-speech error body {"error", "message"}.
func fail(w http.ResponseWriter, status int, typ, msg string) {
	fakeupstream.WriteJSON(w, status, map[string]string{"error": typ, "message": msg})
}

func injected(w http.ResponseWriter, f *fakeupstream.Fault) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	typ, msg := "InternalServerError", "An unexpected error occurred."
	switch f.Status {
	case http.StatusUnauthorized:
		typ, msg = "Unauthorized", "Bearer token is missing or invalid."
	case http.StatusTooManyRequests:
		typ, msg = "TooManyRequests", "Concurrency limit reached"
	case http.StatusServiceUnavailable:
		typ, msg = "ServiceUnavailable", "The service is temporarily unavailable."
	}
	if f.Code != "" {
		typ = f.Code
	}
	if f.Message != "" {
		msg = f.Message
	}
	fail(w, f.Status, typ, msg)
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
		fail(w, http.StatusUnauthorized, "Unauthorized", "Bearer token is missing or invalid.")
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
		fail(w, http.StatusNotFound, "NotFound", fmt.Sprintf("Cannot %s %s", r.Method, r.URL.Path))
	}
}

// ttsRequest is the documented TtsRequest schema.
type ttsRequest struct {
	Text                        *string  `json:"text"`
	VoiceID                     *string  `json:"voice_id"`
	Model                       *string  `json:"model"`
	SampleRate                  *int     `json:"sample_rate"`
	Speed                       *float64 `json:"speed"`
	Language                    *string  `json:"language"`
	NumberPronunciationLanguage *string  `json:"number_pronunciation_language"`
	MathNotation                *bool    `json:"math_notation"`
	OutputFormat                *string  `json:"output_format"`
	PronunciationDicts          []string `json:"pronunciation_dicts"`
	WordTimestamps              *bool    `json:"word_timestamps"`
	SessionID                   *string  `json:"session_id"`
	RequestID                   *string  `json:"request_id"`
}

// spec is a validated speech request.
type spec struct {
	format string
	rate   int
	u      fakeupstream.Utterance
}

func (s *Server) knows(voice string) bool {
	if slices.ContainsFunc(catalog(), func(v catalogVoice) bool { return v.VoiceID == voice }) {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(s.clones, func(c clone) bool { return c.VoiceID == voice })
}

// check decodes and validates a speech body; false when it answered.
func (s *Server) check(w http.ResponseWriter, body []byte) (spec, bool) {
	var b ttsRequest
	if err := fakeupstream.DecodeStrict(body, &b); err != nil {
		if field, ok := fakeupstream.UnknownField(err); ok {
			fail(w, http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("Unknown field '%s'.", field))
		} else {
			fail(w, http.StatusBadRequest, "InvalidRequest", "The request body is not valid JSON.")
		}
		return spec{}, false
	}
	bad := func(format string, args ...any) (spec, bool) {
		fail(w, http.StatusBadRequest, "InvalidRequest", fmt.Sprintf(format, args...))
		return spec{}, false
	}
	sp := spec{format: "pcm", rate: 44100}
	speed := 1.0
	switch {
	case b.Text == nil || strings.TrimSpace(*b.Text) == "":
		return bad("The 'text' field is required.")
	case b.VoiceID == nil || *b.VoiceID == "":
		return bad("The 'voice_id' field is required.")
	case !s.knows(*b.VoiceID):
		return bad("Voice '%s' was not found.", *b.VoiceID)
	case b.Model != nil && !slices.Contains(Models(), *b.Model):
		return bad("Invalid model '%s'. Supported: %s.", *b.Model, strings.Join(Models(), ", "))
	case b.Language != nil && !slices.Contains(Languages(), *b.Language):
		return bad("Invalid language '%s'.", *b.Language)
	case b.NumberPronunciationLanguage != nil && !slices.Contains(Languages(), *b.NumberPronunciationLanguage):
		return bad("Invalid number_pronunciation_language '%s'.", *b.NumberPronunciationLanguage)
	}
	if b.SampleRate != nil {
		if !slices.Contains(SampleRates(), *b.SampleRate) {
			return bad("Invalid sample_rate %d. Supported: 8000, 16000, 24000, 44100.", *b.SampleRate)
		}
		sp.rate = *b.SampleRate
	}
	if b.Speed != nil {
		if *b.Speed < 0.5 || *b.Speed > 2 {
			return bad("speed must be between 0.5 and 2.0.")
		}
		speed = *b.Speed
	}
	if b.OutputFormat != nil {
		switch *b.OutputFormat {
		case "pcm", "wav", "mp3":
			sp.format = *b.OutputFormat
		case "ulaw", "alaw":
			return bad("output_format '%s' is valid but this fake renders only pcm, wav and mp3.", *b.OutputFormat)
		default:
			return bad("Invalid output_format '%s'. Supported: mp3, pcm, wav, ulaw, alaw.", *b.OutputFormat)
		}
	}
	for _, id := range []*string{b.SessionID, b.RequestID} {
		if id != nil && (len(*id) > 128 || strings.Trim(*id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != "") {
			return bad("session_id and request_id take at most 128 of [a-zA-Z0-9_-.].")
		}
	}
	sp.u = fakeupstream.Speak(*b.Text, speed)
	return sp, true
}

// render renders sp's audio and records it as the latest answer.
func (s *Server) render(sp spec) (fakeupstream.Audio, error) {
	a, _, err := s.studio.Encoded(sp.u, sp.format, sp.rate, 0)
	if err == nil {
		s.RecordAnswer(a.Bytes())
	}
	return a, err
}

func contentType(sp spec) string {
	switch sp.format {
	case "wav":
		return "audio/wav"
	case "mp3":
		return "audio/mpeg"
	}
	return fmt.Sprintf("audio/pcm;rate=%d", sp.rate)
}

func (s *Server) tts(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	sp, ok := s.check(w, req.Body)
	if !ok {
		return
	}
	w.Header().Set("X-Request-Id", fmt.Sprintf("00000000-0000-4000-8000-%012d", s.nextID.Add(1)))
	if r.Header.Get("Accept") != "audio/wav" {
		// The documented gotcha: no Accept header, no audio.
		w.Header().Set("Content-Type", contentType(sp))
		w.WriteHeader(http.StatusOK)
		return
	}
	audio, err := s.render(sp)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType(sp))
	w.WriteHeader(http.StatusOK)
	s.WriteAudio(r.Context(), w, audio)
}

// live streams the audio as "audio" events of ChunkSize bytes each (whole
// MP3 frames for mp3), then the closing event.
func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	sp, ok := s.check(w, req.Body)
	if !ok {
		return
	}
	audio, err := s.render(sp)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	emit := func(event string, v any) bool {
		data, _ := json.Marshal(v)
		prefix := ""
		if event != "" {
			prefix = "event: " + event + "\n"
		}
		if _, err := fmt.Fprintf(w, "%sdata: %s\n\n", prefix, data); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	var pieces [][]byte
	if sp.format == "mp3" && len(audio.Parts) > 1 {
		pieces = audio.Parts // one frame each: every event decodes on its own
	} else {
		all := audio.Bytes()
		size := s.ChunkSize() &^ 1 // whole samples
		for off := 0; off < len(all); off += size {
			pieces = append(pieces, all[off:min(off+size, len(all))])
		}
	}
	for i, p := range pieces {
		if i > 0 && !s.Pause(r.Context()) {
			return
		}
		if !emit("audio", map[string]any{"audio": base64.StdEncoding.EncodeToString(p), "done": false, "status": "206"}) {
			return
		}
	}
	emit("", map[string]any{"status": "200", "done": true})
}

func (s *Server) voices(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.begin(w, r); !ok {
		return
	}
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{"voices": catalog()})
}

func (s *Server) listClones(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.begin(w, r); !ok {
		return
	}
	s.mu.Lock()
	data := append([]clone{}, s.clones...)
	s.mu.Unlock()
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{"data": data})
}

// cloneTypes are the documented MIME types of the cloning file.
var cloneTypes = []string{"audio/mpeg", "audio/mpeg-3", "audio/wav", "audio/wave", "audio/webm", "video/webm", "audio/mp4", "video/mp4"}

// clone makes a voice from one file: multipart displayName and file
// required; description, accent, tags, language and model optional.
// Validation errors are {"error": "<message>"}, as documented.
func (s *Server) clone(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	bad := func(format string, args ...any) {
		fakeupstream.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf(format, args...)})
	}
	form, err := fakeupstream.ParseMultipart(req)
	if err != nil {
		bad("Expected multipart/form-data: %v", err)
		return
	}
	for field := range form.Value {
		if !slices.Contains([]string{"displayName", "description", "accent", "tags", "language", "model"}, field) {
			bad("Unknown field '%s'", field)
			return
		}
	}
	for field := range form.File {
		if field != "file" {
			bad("Unknown file field '%s'", field)
			return
		}
	}
	value := func(k string) string {
		if v := form.Value[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	files := form.File["file"]
	name := value("displayName")
	model := value("model")
	switch {
	case len(files) != 1:
		bad("No file provided")
		return
	case !slices.Contains(cloneTypes, files[0].Header.Get("Content-Type")):
		bad("Invalid file type '%s'", files[0].Header.Get("Content-Type"))
		return
	case files[0].Size == 0 || files[0].Size > 5<<20:
		bad("File must be between 1 byte and 5 MB")
		return
	case name == "" || len(name) > 500:
		bad("displayName is required (1 to 500 characters)")
		return
	case model == "lightning-v2":
		bad("Voice cloning for lightning-v2 is deprecated. Please use lightning-v3.1")
		return
	case model != "" && model != "lightning-v3.1" && model != "lightning-v3.1-pro":
		bad("Invalid model '%s'", model)
		return
	case value("language") != "" && !slices.Contains(Languages(), value("language")):
		bad("Unsupported language '%s'", value("language"))
		return
	}
	if model == "" {
		model = "lightning-v3.1"
	}
	n := s.nextID.Add(1)
	c := clone{
		ID: fmt.Sprintf("6a0b3c06e6e0b1a48dee%04d", n), VoiceID: fmt.Sprintf("voice_fake%05d", n),
		DisplayName: name, Description: value("description"), Accent: value("accent"), Tags: []string{},
		Language: value("language"), Status: "completed", CloningType: "instant", ModelIDs: []string{model},
		CreatedAt: time.Now().UTC().Format(time.RFC3339),
	}
	for _, t := range strings.Split(value("tags"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			c.Tags = append(c.Tags, t)
		}
	}
	s.mu.Lock()
	s.clones = append(s.clones, c)
	s.mu.Unlock()
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{
		"message": "Voice clone created successfully",
		"data": map[string]any{
			"voiceId": c.VoiceID, "displayName": c.DisplayName, "model": c.ID, "status": c.Status,
			"language": c.Language, "audioFileNames": []string{files[0].Filename}, "createdAt": c.CreatedAt,
			"organizationId": "org_fake", "samples": []any{},
		},
	})
}

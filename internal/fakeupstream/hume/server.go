// Package hume is a fake of Hume's Octave text-to-speech API for tests and
// benchmarks: synthesis as JSON (base64 audio, word timestamps), as a file,
// as a streamed file and as streamed JSON lines, and the voice list.
//
// It follows the API reference and Hume's generated SDKs: the key comes as
// the X-Hume-Api-Key header; the body is OctaveBodyArgs {utterances: [{text,
// description, voice: {id | name, provider}, speed, trailing_silence}],
// context, format: {type: mp3 | wav | pcm}, include_timestamp_types,
// num_generations, split_utterances, strip_headers, version: "1" | "2",
// instant_mode} with unknown fields refused; a voice's provider defaults to
// CUSTOM_VOICE, as documented, so a Voice Library voice needs HUME_AI;
// version "2" needs a voice; timestamps are for version "2" only; speed
// is taken from 0.25 to 3.0 and trailing_silence from 0 to 5 seconds (the
// ranges integrations document; Hume's own reference names none). Audio is
// 48 kHz: mp3 (the default), WAV, or raw 16-bit PCM; the last audio
// answered is kept (Control.LastAnswer). Errors: the API
// gateway's {"fault": {"faultstring", "detail": {"errorcode"}}} for a bad
// key and for rate limits, {"code", "error", "message"} for a request the
// service refuses, and {"detail": [{loc, msg, type}]} (422) for a body
// that does not validate.
//
// Endpoints (under the base URL, which ends in /v0):
//
//	POST /tts              {"generations": [{audio, duration, encoding, file_size, generation_id, snippets}], "request_id"}
//	POST /tts/file         the audio file
//	POST /tts/stream/file  the audio file, streamed as it is rendered
//	POST /tts/stream/json  one JSON object a line: audio chunks, then word timestamps
//	GET  /tts/voices       ?provider=HUME_AI|CUSTOM_VOICE&page_number&page_size
//
// Deliberate gaps: num_generations above 1 is refused (the fake renders
// one generation), split_utterances changes nothing (each utterance is
// one snippet), context is checked for shape and otherwise ignored, and
// phoneme timestamps are not produced.
package hume

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/voxgate/voxgate/internal/fakeupstream"
)

// Key is the API key the fake accepts unless Options.Keys says otherwise.
const Key = "hume_test_fake_key_0123456789abcdefghijkl"

// Paths of the fake's endpoints.
const (
	JSONPath       = "/v0/tts"
	FilePath       = "/v0/tts/file"
	StreamFilePath = "/v0/tts/stream/file"
	StreamJSONPath = "/v0/tts/stream/json"
	VoicesPath     = "/v0/tts/voices"
)

// SampleRate is the rate of every answer.
const SampleRate = 48000

// MaxChars is the longest text of one utterance.
const MaxChars = 5000

// Voice is a voice as GET /tts/voices lists it.
type Voice struct {
	ID                     string   `json:"id"`
	Name                   string   `json:"name"`
	Provider               string   `json:"provider"`
	CompatibleOctaveModels []string `json:"compatible_octave_models"`
}

// Ids of the fake's voices.
const (
	VoiceAva     = "5bb7de05-c8fe-426a-8fcc-ba4fc4ce9f9c" // Voice Library, Octave 1 and 2
	VoiceActor   = "b201d214-914c-4d0a-b8e4-54adfc14a0dd" // Voice Library, Octave 1 and 2
	VoiceNarr    = "9e068547-5ba4-4c8e-8e03-69282a008f04" // Voice Library, Octave 1 only
	VoiceDavid   = "c42352c0-4566-455d-b180-0f654b65b525" // the account's own
	VoiceGoliath = "d87352b0-26a3-4b11-081b-d157a5674d19" // the account's own
)

// Voices returns the fake's voices: three of the Voice Library (HUME_AI)
// and two of the account (CUSTOM_VOICE).
func Voices() []Voice {
	both := []string{"1", "2"}
	return []Voice{
		{ID: VoiceAva, Name: "Ava Song", Provider: "HUME_AI", CompatibleOctaveModels: both},
		{ID: VoiceActor, Name: "Male English Actor", Provider: "HUME_AI", CompatibleOctaveModels: both},
		{ID: VoiceNarr, Name: "Vince Douglas", Provider: "HUME_AI", CompatibleOctaveModels: []string{"1"}},
		{ID: VoiceDavid, Name: "David Hume", Provider: "CUSTOM_VOICE", CompatibleOctaveModels: both},
		{ID: VoiceGoliath, Name: "Goliath Hume", Provider: "CUSTOM_VOICE", CompatibleOctaveModels: both},
	}
}

// Server is a running fake. Steer it through the embedded Control.
type Server struct {
	*fakeupstream.Control
	// URL is the server's root; the plugin's base_url is BaseURL().
	URL string

	srv    *httptest.Server
	studio *fakeupstream.Studio
	seq    atomic.Int64
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
	mux.HandleFunc("POST "+JSONPath, s.synthesize(modeJSON))
	mux.HandleFunc("POST "+FilePath, s.synthesize(modeFile))
	mux.HandleFunc("POST "+StreamFilePath, s.synthesize(modeFile))
	mux.HandleFunc("POST "+StreamJSONPath, s.synthesize(modeStreamJSON))
	mux.HandleFunc("GET "+VoicesPath, s.listVoices)
	mux.HandleFunc("/", s.notFound)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// BaseURL is what the plugin's base_url setting should be: the root with
// /v0, as in https://api.hume.ai/v0.
func (s *Server) BaseURL() string { return s.URL + "/v0" }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

func (s *Server) id(prefix string) string {
	return fmt.Sprintf("%s0000-0000-4000-8000-%012d", prefix, s.seq.Add(1))
}

// fault answers the API gateway's error shape (bad key, rate limits).
func fault(w http.ResponseWriter, status int, errorcode, msg string) {
	fakeupstream.WriteJSON(w, status, map[string]any{"fault": map[string]any{"faultstring": msg, "detail": map[string]string{"errorcode": errorcode}}})
}

// refuse answers the service's own error shape.
func refuse(w http.ResponseWriter, status int, code, msg string) {
	fakeupstream.WriteJSON(w, status, map[string]string{"code": code, "error": http.StatusText(status), "message": msg})
}

// invalid answers a 422 validation error for the body field at loc.
func invalid(w http.ResponseWriter, msg, typ string, loc ...any) {
	fakeupstream.WriteJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": []any{map[string]any{"loc": append([]any{"body"}, loc...), "msg": msg, "type": typ}}})
}

func (s *Server) injected(w http.ResponseWriter, f *fakeupstream.Fault) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	switch f.Status {
	case http.StatusUnauthorized:
		fault(w, f.Status, firstOf(f.Code, "oauth.v2.InvalidApiKey"), firstOf(f.Message, "Invalid ApiKey"))
	case http.StatusTooManyRequests:
		fault(w, f.Status, firstOf(f.Code, "policies.ratelimit.QuotaViolation"), firstOf(f.Message, "Rate limit quota violation. Quota limit exceeded."))
	case http.StatusServiceUnavailable:
		refuse(w, f.Status, firstOf(f.Code, "service_unavailable"), firstOf(f.Message, "The service is temporarily overloaded."))
	default:
		refuse(w, f.Status, firstOf(f.Code, "internal_error"), firstOf(f.Message, "An internal error occurred."))
	}
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// begin runs what every handler does first: record, latency, auth, then
// an injected fault. False when it answered.
func (s *Server) begin(w http.ResponseWriter, r *http.Request) (fakeupstream.Request, bool) {
	req, f, ok := s.Begin(r)
	if !ok {
		return req, false
	}
	key := r.Header.Get("X-Hume-Api-Key")
	if key == "" {
		fault(w, http.StatusUnauthorized, "oauth.v2.FailedToResolveAPIKey", "Failed to resolve API Key variable request.header.X-Hume-Api-Key")
		return req, false
	}
	if !slices.Contains(s.Keys(Key), key) {
		fault(w, http.StatusUnauthorized, "oauth.v2.InvalidApiKey", "Invalid ApiKey")
		return req, false
	}
	if f != nil {
		s.injected(w, f)
		return req, false
	}
	return req, true
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.begin(w, r); ok {
		refuse(w, http.StatusNotFound, "not_found", "No route for "+r.Method+" "+r.URL.Path+".")
	}
}

// body is OctaveBodyArgs.
type body struct {
	Utterances []utterance     `json:"utterances"`
	Context    json.RawMessage `json:"context"`
	Format     *struct {
		Type string `json:"type"`
	} `json:"format"`
	IncludeTimestampTypes []string `json:"include_timestamp_types"`
	NumGenerations        *int     `json:"num_generations"`
	SplitUtterances       *bool    `json:"split_utterances"`
	StripHeaders          *bool    `json:"strip_headers"`
	Version               *string  `json:"version"`
	InstantMode           *bool    `json:"instant_mode"`
}

type utterance struct {
	Text            *string  `json:"text"`
	Description     *string  `json:"description"`
	Voice           *voice   `json:"voice"`
	Speed           *float64 `json:"speed"`
	TrailingSilence *float64 `json:"trailing_silence"`
}

type voice struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Provider string `json:"provider"`
}

type mode int

const (
	modeJSON mode = iota
	modeFile
	modeStreamJSON
)

// rendered is one utterance laid out on the clip's timeline.
type rendered struct {
	u      fakeupstream.Utterance
	offset float64 // seconds from the clip's start
	text   string
	index  int
}

func (s *Server) synthesize(m mode) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, ok := s.begin(w, r)
		if !ok {
			return
		}
		if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
			invalid(w, "Input should be a valid JSON object", "model_attributes_type")
			return
		}
		var b body
		if err := fakeupstream.DecodeStrict(req.Body, &b); err != nil {
			if field, ok := fakeupstream.UnknownField(err); ok {
				invalid(w, "Extra inputs are not permitted", "extra_forbidden", field)
				return
			}
			invalid(w, "JSON decode error: "+err.Error(), "json_invalid")
			return
		}
		rs, format, withWords, ok := s.check(w, &b)
		if !ok {
			return
		}
		var pcm []byte
		var total float64
		for _, x := range rs {
			pcm = append(pcm, s.studio.PCM(x.u, SampleRate).Bytes()...)
			total = x.offset + x.u.Seconds
		}
		whole := fakeupstream.Utterance{Chars: []fakeupstream.Span{{Text: "a", Start: 0, End: total}}, Seconds: total}
		var audio fakeupstream.Audio
		switch format {
		case "pcm":
			audio = fakeupstream.Audio{Parts: [][]byte{pcm}, Len: len(pcm)}
		case "wav":
			audio = fakeupstream.Audio{Parts: [][]byte{fakeupstream.WAVHeader(SampleRate, len(pcm)), pcm}, Len: 44 + len(pcm)}
		default:
			var err error
			if audio, err = s.mp3(whole); err != nil {
				fakeupstream.WriteJSON(w, http.StatusInternalServerError, map[string]string{"code": "internal", "error": "internal", "message": err.Error()})
				return
			}
		}
		s.RecordAnswer(audio.Bytes())
		genID := s.id("9e000000")
		switch m {
		case modeFile:
			w.Header().Set("Content-Type", map[string]string{"mp3": "audio/mpeg", "wav": "audio/wav", "pcm": "audio/pcm"}[format])
			w.WriteHeader(http.StatusOK)
			s.WriteAudio(r.Context(), w, audio)
		case modeJSON:
			s.answerJSON(w, rs, format, withWords, audio, total, genID)
		case modeStreamJSON:
			s.answerLines(w, r, rs, format, withWords, audio, genID)
		}
	}
}

// check validates the body and lays the utterances out; it returns them,
// the format, whether word timestamps were asked for, and whether to go
// on.
func (s *Server) check(w http.ResponseWriter, b *body) ([]rendered, string, bool, bool) {
	fail := func(msg, typ string, loc ...any) ([]rendered, string, bool, bool) {
		invalid(w, msg, typ, loc...)
		return nil, "", false, false
	}
	if len(b.Utterances) == 0 {
		return fail("List should have at least 1 item after validation", "too_short", "utterances")
	}
	version := ""
	// voices is the version whose voices the request may use.
	voices := ""
	if b.Version != nil {
		version, voices = *b.Version, *b.Version
		switch {
		case version == "1" || version == "2":
		case s.NewModel("octave-" + version):
			// A version of fakeupstream.Options.NewModels ("octave-3"),
			// one Hume added after the fake was written: it takes the
			// voices of Octave 2 and nothing only Octave 2 does
			// (timestamps).
			voices = "2"
		default:
			return fail("Input should be '1' or '2'", "enum", "version")
		}
	}
	format := "mp3"
	if b.Format != nil {
		format = b.Format.Type
		if format != "mp3" && format != "wav" && format != "pcm" {
			return fail("Input tag '"+format+"' found using 'type' does not match any of the expected tags: 'mp3', 'pcm', 'wav'", "union_tag_invalid", "format")
		}
	}
	if b.NumGenerations != nil && (*b.NumGenerations < 1 || *b.NumGenerations > 5) {
		return fail("Input should be between 1 and 5", "less_than_equal", "num_generations")
	}
	if b.NumGenerations != nil && *b.NumGenerations != 1 {
		refuse(w, http.StatusBadRequest, "unsupported", "num_generations above 1 is valid but this fake renders one generation.")
		return nil, "", false, false
	}
	withWords := false
	for _, t := range b.IncludeTimestampTypes {
		if t != "word" && t != "phoneme" {
			return fail("Input should be 'word' or 'phoneme'", "enum", "include_timestamp_types")
		}
		withWords = withWords || t == "word"
	}
	if len(b.IncludeTimestampTypes) > 0 && version != "2" {
		refuse(w, http.StatusBadRequest, "timestamps_unsupported", "Timestamps are only supported for Octave 2 requests: set version to \"2\".")
		return nil, "", false, false
	}
	if len(b.Context) > 0 && string(b.Context) != "null" {
		var c struct {
			GenerationID *string          `json:"generation_id"`
			Utterances   []map[string]any `json:"utterances"`
		}
		if json.Unmarshal(b.Context, &c) != nil || (c.GenerationID == nil && c.Utterances == nil) {
			return fail("context must be {generation_id} or {utterances}", "union_tag_invalid", "context")
		}
	}
	var out []rendered
	var current *Voice
	t := 0.0
	for i, u := range b.Utterances {
		switch {
		case u.Text == nil:
			return fail("Field required", "missing", "utterances", i, "text")
		case utf8.RuneCountInString(*u.Text) > MaxChars:
			return fail(fmt.Sprintf("String should have at most %d characters", MaxChars), "string_too_long", "utterances", i, "text")
		case u.Description != nil && utf8.RuneCountInString(*u.Description) > 1000:
			return fail("String should have at most 1000 characters", "string_too_long", "utterances", i, "description")
		case u.Speed != nil && (*u.Speed < 0.25 || *u.Speed > 3):
			return fail("Input should be between 0.25 and 3.0", "less_than_equal", "utterances", i, "speed")
		case u.TrailingSilence != nil && (*u.TrailingSilence < 0 || *u.TrailingSilence > 5):
			return fail("Input should be between 0 and 5", "less_than_equal", "utterances", i, "trailing_silence")
		}
		if u.Voice != nil {
			v, msg := findVoice(u.Voice, voices)
			if msg != "" {
				refuse(w, http.StatusBadRequest, "voice_not_found", msg)
				return nil, "", false, false
			}
			current = v // this and every later utterance
		}
		speed := 1.0
		if u.Speed != nil {
			speed = *u.Speed
		}
		x := rendered{u: fakeupstream.Speak(*u.Text, speed), offset: t, text: *u.Text, index: i}
		if u.TrailingSilence != nil {
			x.u.Seconds += *u.TrailingSilence
		}
		if fs := s.FixedSeconds(); fs > 0 {
			x.u = fakeupstream.Fixed(fs)
		}
		t += x.u.Seconds
		out = append(out, x)
	}
	if current == nil && version == "2" {
		refuse(w, http.StatusBadRequest, "voice_required", "Octave 2 requests must specify a voice.")
		return nil, "", false, false
	}
	if current == nil && (b.InstantMode == nil || *b.InstantMode) && slices.ContainsFunc(b.Utterances, func(u utterance) bool { return u.Description == nil }) {
		refuse(w, http.StatusBadRequest, "voice_required", "A voice or a description is required.")
		return nil, "", false, false
	}
	return out, format, withWords, true
}

// findVoice looks a voice up by id or name under its provider
// (CUSTOM_VOICE when none is given, as documented); the message says why
// not.
func findVoice(v *voice, version string) (*Voice, string) {
	provider := firstOf(v.Provider, "CUSTOM_VOICE")
	if provider != "HUME_AI" && provider != "CUSTOM_VOICE" {
		return nil, fmt.Sprintf("Unknown voice provider %q: use HUME_AI or CUSTOM_VOICE.", v.Provider)
	}
	if (v.ID == "") == (v.Name == "") {
		return nil, "A voice needs exactly one of id or name."
	}
	for _, known := range Voices() {
		if known.Provider == provider && ((v.ID != "" && known.ID == v.ID) || (v.Name != "" && known.Name == v.Name)) {
			if version != "" && !slices.Contains(known.CompatibleOctaveModels, version) {
				return nil, fmt.Sprintf("Voice %q is not compatible with Octave %s.", known.Name, version)
			}
			return &known, ""
		}
	}
	return nil, fmt.Sprintf("No voice found with %s for provider %s.", firstOf(v.ID, v.Name), provider)
}

type timestamp struct {
	Text string `json:"text"`
	Time struct {
		Begin int `json:"begin"`
		End   int `json:"end"`
	} `json:"time"`
	Type string `json:"type"`
}

// words returns the word timestamps of x on the clip's timeline, in
// whole milliseconds as the API gives them.
func words(x rendered) []timestamp {
	var out []timestamp
	for _, wd := range x.u.Words {
		ts := timestamp{Text: wd.Text, Type: "word"}
		ts.Time.Begin = int(math.Round((x.offset + wd.Start) * 1000))
		ts.Time.End = int(math.Round((x.offset + wd.End) * 1000))
		out = append(out, ts)
	}
	return out
}

// mp3 renders u as MP3 at Octave's 48 kHz.
func (s *Server) mp3(u fakeupstream.Utterance) (fakeupstream.Audio, error) {
	a, _, err := s.studio.Encoded(u, "mp3", SampleRate, 0)
	return a, err
}

func (s *Server) answerJSON(w http.ResponseWriter, rs []rendered, format string, withWords bool, audio fakeupstream.Audio, total float64, genID string) {
	data := audio.Bytes()
	var snippets [][]map[string]any
	for _, x := range rs {
		ts := []timestamp{}
		if withWords {
			ts = words(x)
		}
		// One snippet an utterance; its audio is the utterance's alone.
		var part []byte
		if format == "mp3" {
			a, _ := s.mp3(x.u) // rendered once already: no error now
			part = a.Bytes()
		} else {
			part = s.studio.PCM(x.u, SampleRate).Bytes()
			if format == "wav" {
				part = append(fakeupstream.WAVHeader(SampleRate, len(part)), part...)
			}
		}
		snippets = append(snippets, []map[string]any{{
			"audio": base64.StdEncoding.EncodeToString(part), "generation_id": genID, "id": s.id("5e000000"),
			"text": x.text, "timestamps": ts, "utterance_index": x.index,
		}})
	}
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{
		"generations": []any{map[string]any{
			"audio": base64.StdEncoding.EncodeToString(data), "duration": total,
			"encoding":  map[string]any{"format": format, "sample_rate": SampleRate},
			"file_size": len(data), "generation_id": genID, "snippets": snippets,
		}},
		"request_id": s.id("4e000000"),
	})
}

// answerLines streams JSON lines: the audio in chunks of ChunkSize bytes,
// then the word timestamps, one a line, when asked for.
func (s *Server) answerLines(w http.ResponseWriter, r *http.Request, rs []rendered, format string, withWords bool, audio fakeupstream.Audio, genID string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	reqID, snippetID := s.id("4e000000"), s.id("5e000000")
	emit := func(v any) bool {
		line, _ := json.Marshal(v)
		if _, err := w.Write(append(line, '\n')); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	data := audio.Bytes()
	size := s.ChunkSize() &^ 1
	for i, off := 0, 0; off < len(data); i, off = i+1, off+size {
		if off > 0 && !s.Pause(r.Context()) {
			return
		}
		end := min(off+size, len(data))
		if !emit(map[string]any{
			"type": "audio", "audio": base64.StdEncoding.EncodeToString(data[off:end]), "audio_format": format,
			"chunk_index": i, "generation_id": genID, "is_last_chunk": end == len(data), "request_id": reqID,
			"snippet_id": snippetID, "text": rs[0].text, "utterance_index": 0,
		}) {
			return
		}
	}
	if !withWords {
		return
	}
	for _, x := range rs {
		for _, ts := range words(x) {
			if !emit(map[string]any{"type": "timestamp", "generation_id": genID, "request_id": reqID, "snippet_id": snippetID, "timestamp": ts}) {
				return
			}
		}
	}
}

func (s *Server) listVoices(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.begin(w, r); !ok {
		return
	}
	q := r.URL.Query()
	provider := q.Get("provider")
	if provider != "HUME_AI" && provider != "CUSTOM_VOICE" {
		fakeupstream.WriteJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": []any{map[string]any{"loc": []string{"query", "provider"}, "msg": "Input should be 'HUME_AI' or 'CUSTOM_VOICE'", "type": "enum"}}})
		return
	}
	page, size := 0, 10
	if v := q.Get("page_number"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			refuse(w, http.StatusBadRequest, "invalid_page", "page_number must be 0 or more.")
			return
		}
		page = n
	}
	if v := q.Get("page_size"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			refuse(w, http.StatusBadRequest, "invalid_page", "page_size must be between 1 and 100.")
			return
		}
		size = n
	}
	var all []Voice
	for _, v := range Voices() {
		if v.Provider == provider {
			all = append(all, v)
		}
	}
	from := min(page*size, len(all))
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{
		"page_number": page, "page_size": size, "total_pages": (len(all) + size - 1) / size,
		"voices_page": all[from:min(from+size, len(all))],
	})
}

// Package fishaudio is a fake of the Fish Audio API for tests and
// benchmarks: text-to-speech as a streamed body and as server-sent events
// with timestamp alignment, the voice model list and voice model creation
// (cloning).
//
// It follows the published API reference: "Authorization: Bearer" on every
// request (401 {"status", "message"} when missing or wrong); the TTS model
// chosen by the optional model header (s1, s2-pro, s2.1-pro,
// s2.1-pro-free; absent or unknown falls back to s2.1-pro, as documented);
// a JSON TTSRequest body (text, reference_id, temperature, top_p, prosody
// {speed 0.5 to 2, volume, normalize_loudness}, chunk_length 100 to 300,
// min_chunk_length, normalize, format wav|pcm|mp3|opus, sample_rate per
// format, mp3_bitrate 64|128|192, latency, and the other documented
// fields) answered with the audio streamed by chunked transfer encoding;
// validation failures as 422 with an array of {loc, type, msg, ctx, in};
// an unknown reference_id as 400; other errors as {"status", "message"}.
//
// /v1/tts/stream/with-timestamp answers events whose data is
// {audio_base64, content, alignment, chunk_seq, chunk_audio_offset_sec}:
// the text is cut into chunks of at most chunk_length characters, and each
// event repeats the latest cumulative alignment snapshot of its chunk,
// segments {text, start, end} of the words whose audio has been sent, in
// seconds from the chunk's start, word text stripped of surrounding
// punctuation as the API does. The times match the audio exactly.
//
// Endpoints:
//
//	POST /v1/tts                         audio (pcm, wav or mp3), chunked
//	POST /v1/tts/stream/with-timestamp   text/event-stream
//	GET  /model                          {"total", "items", "has_more"}; page_size, page_number, self, title, tag, language, sort_by
//	POST /model                          multipart: type, title, train_mode, voices, visibility, texts, tags, description, cover_image, enhance_audio_quality, generate_sample
//
// Every format answers real audio in its documented rates and bit rates:
// wav and pcm at PCMRates, mp3 at MP3Rates and 64, 128 (default) or 192
// kbit/s, opus (Ogg Opus) at 48 kHz and opus_bitrate 24000, 32000
// (default), 48000 or 64000 bit/s (in bit/s, unlike mp3_bitrate, as the
// published document has it), or -1000 (automatic, rendered at 32 kbit/s).
// LastAnswer holds the audio of the latest answer.
//
// Deliberate gaps: MessagePack bodies (and so inline references) answer
// 400; fields the schema lacks answer 422 (the real API may ignore them);
// sampling fields are validated but do not change the audio.
package fishaudio

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
	"unicode"

	"github.com/voxgate/voxgate/internal/fakeupstream"
)

// apiDocument is the part of Fish Audio's published OpenAPI document the
// fake serves (apispec/fishaudio.yaml, whose header names its source, github.com/fishaudio/docs):
// it judges every request and answer (fakeupstream.Control.Judge).
//
//go:embed apispec/fishaudio.yaml
var apiDocument []byte

// Document returns the fake's API document, parsed once.
var Document = sync.OnceValue(func() *fakeupstream.Document {
	return fakeupstream.MustLoadDocument("Fish Audio", apiDocument)
})

// Key is the API key the fake accepts unless Options.Keys says otherwise.
const Key = "fa-test-fake-0123456789abcdef0123"

// Paths of the fake's endpoints.
const (
	TTSPath        = "/v1/tts"
	TimestampsPath = "/v1/tts/stream/with-timestamp"
	ModelPath      = "/model"
)

// Ids of the fake's stock public voice models.
const (
	VoiceNarrator = "802e3bc2b27e49c2995d23ef70e6ac89"
	VoiceAnchor   = "7f92f8afb8ec43bf81429cc1c9199cb1"
	VoiceMandarin = "d7900c21663f485ab63ebdb7e5905036"
)

// DefaultModel is the model used when the model header is absent or not
// one of Models.
const DefaultModel = "s2.1-pro"

// Models returns the values of the model header the API documents.
func Models() []string { return []string{"s1", "s2-pro", "s2.1-pro", "s2.1-pro-free"} }

// PCMRates are the documented sample rates of wav and pcm.
func PCMRates() []int { return []int{8000, 16000, 24000, 32000, 44100} }

// MP3Rates are the documented sample rates of mp3.
func MP3Rates() []int { return []int{32000, 44100} }

// selfID is the fake account's author id.
const selfID = "a0000000000000000000000000000001"

// model is a voice model as GET /model lists it (ModelEntity).
type model struct {
	ID          string   `json:"_id"`
	Type        string   `json:"type"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	CoverImage  string   `json:"cover_image"`
	TrainMode   string   `json:"train_mode"`
	State       string   `json:"state"`
	Tags        []string `json:"tags"`
	Samples     []any    `json:"samples"`
	CreatedAt   string   `json:"created_at"`
	UpdatedAt   string   `json:"updated_at"`
	Languages   []string `json:"languages"`
	Visibility  string   `json:"visibility"`
	LikeCount   int      `json:"like_count"`
	MarkCount   int      `json:"mark_count"`
	SharedCount int      `json:"shared_count"`
	TaskCount   int      `json:"task_count"`
	Author      author   `json:"author"`
}

type author struct {
	ID       string `json:"_id"`
	Nickname string `json:"nickname"`
	Avatar   string `json:"avatar"`
}

func stock() []model {
	mk := func(id, title, lang string, tags []string, tasks int) model {
		return model{
			ID: id, Type: "tts", Title: title, TrainMode: "full", State: "trained",
			Tags: tags, Samples: []any{}, CreatedAt: "2025-01-01T00:00:00Z", UpdatedAt: "2025-01-01T00:00:00Z",
			Languages: []string{lang}, Visibility: "public", TaskCount: tasks,
			Author: author{ID: "b0000000000000000000000000000002", Nickname: "fake author"},
		}
	}
	return []model{
		mk(VoiceNarrator, "Calm Narrator", "en", []string{"male", "narration"}, 900),
		mk(VoiceAnchor, "News Anchor", "en", []string{"female", "news"}, 700),
		mk(VoiceMandarin, "Mandarin Host", "zh", []string{"female"}, 500),
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
	models []model
	owned  map[string]bool
	clones atomic.Int64
}

// New starts a fake. With tb set it is closed at tb.Cleanup; otherwise
// call Close.
func New(tb testing.TB, opts fakeupstream.Options) *Server {
	studio, err := fakeupstream.NewStudio()
	if err != nil {
		panic(err) // the embedded tone is broken: a build problem
	}
	s := &Server{Control: fakeupstream.NewControl(opts), studio: studio, models: stock(), owned: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+TTSPath, s.tts)
	mux.HandleFunc("POST "+TimestampsPath, s.ttsTimestamps)
	mux.HandleFunc("GET "+ModelPath, s.listModels)
	mux.HandleFunc("POST "+ModelPath, s.createModel)
	mux.HandleFunc("/", s.notFound)
	s.srv = httptest.NewServer(s.Judge(tb, Document(), mux))
	s.URL = s.srv.URL
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// BaseURL is what the plugin's base_url setting should be (the root, as in
// https://api.fish.audio).
func (s *Server) BaseURL() string { return s.URL }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// VoiceIDs returns the ids of every voice model the fake knows, created
// ones included.
func (s *Server) VoiceIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, len(s.models))
	for i, m := range s.models {
		ids[i] = m.ID
	}
	return ids
}

func (s *Server) knows(id string) bool { return slices.Contains(s.VoiceIDs(), id) }

// fail writes Fish Audio's error body {"status", "message"}.
func fail(w http.ResponseWriter, status int, msg string) {
	fakeupstream.WriteJSON(w, status, map[string]any{"status": status, "message": msg})
}

// invalid writes the 422 validation body: an array of {loc, type, msg,
// ctx, in}.
func invalid(w http.ResponseWriter, loc []any, typ, msg string) {
	fakeupstream.WriteJSON(w, http.StatusUnprocessableEntity, []map[string]any{
		{"loc": loc, "type": typ, "msg": msg, "ctx": map[string]any{}, "in": "body"},
	})
}

func injected(w http.ResponseWriter, f *fakeupstream.Fault) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	msg := "Internal Server Error"
	switch f.Status {
	case http.StatusUnauthorized:
		msg = "Invalid Token"
	case http.StatusPaymentRequired:
		msg = "Insufficient Balance"
	case http.StatusTooManyRequests:
		msg = "Too many concurrent requests"
	case http.StatusServiceUnavailable:
		msg = "The server cannot process the request due to a high load"
	}
	if f.Message != "" {
		msg = f.Message
	}
	fail(w, f.Status, msg)
}

// begin runs what every handler does first: record, latency, auth, then
// an injected fault. False when it answered.
func (s *Server) begin(w http.ResponseWriter, r *http.Request) (fakeupstream.Request, bool) {
	req, fault, ok := s.Begin(r)
	if !ok {
		return req, false
	}
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(key) == "" || !slices.Contains(s.Keys(Key), key) {
		fail(w, http.StatusUnauthorized, "Invalid Token")
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
		fail(w, http.StatusNotFound, "Nothing matches the given URI")
	}
}

// ttsRequest is the documented TTSRequest body.
type ttsRequest struct {
	Text                      *string         `json:"text"`
	Temperature               *float64        `json:"temperature"`
	TopP                      *float64        `json:"top_p"`
	References                json.RawMessage `json:"references"`
	ReferenceID               json.RawMessage `json:"reference_id"`
	Prosody                   *prosody        `json:"prosody"`
	ChunkLength               *int            `json:"chunk_length"`
	Normalize                 *bool           `json:"normalize"`
	Format                    *string         `json:"format"`
	SampleRate                *int            `json:"sample_rate"`
	MP3Bitrate                *int            `json:"mp3_bitrate"`
	OpusBitrate               *int            `json:"opus_bitrate"`
	Latency                   *string         `json:"latency"`
	MaxNewTokens              *int            `json:"max_new_tokens"`
	RepetitionPenalty         *float64        `json:"repetition_penalty"`
	MinChunkLength            *int            `json:"min_chunk_length"`
	ConditionOnPreviousChunks *bool           `json:"condition_on_previous_chunks"`
	EarlyStopThreshold        *float64        `json:"early_stop_threshold"`
	Features                  []string        `json:"features"`
}

type prosody struct {
	Speed             *float64 `json:"speed"`
	Volume            *float64 `json:"volume"`
	NormalizeLoudness *bool    `json:"normalize_loudness"`
}

// spec is a validated TTS request.
type spec struct {
	text        string
	format      string
	rate        int
	kbps        int // mp3 and opus
	speed       float64
	chunkLength int
}

// parse validates a TTS request; false when it answered with an error.
func (s *Server) parse(w http.ResponseWriter, r *http.Request, body []byte) (spec, bool) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
	case "application/msgpack":
		fail(w, http.StatusBadRequest, "this fake reads JSON bodies only")
		return spec{}, false
	default:
		fail(w, http.StatusUnsupportedMediaType, "This endpoint only accepts application/json and application/msgpack")
		return spec{}, false
	}
	var b ttsRequest
	if err := fakeupstream.DecodeStrict(body, &b); err != nil {
		if field, ok := fakeupstream.UnknownField(err); ok {
			invalid(w, []any{field}, "extra_forbidden", "Extra inputs are not permitted")
			return spec{}, false
		}
		invalid(w, []any{}, "json_invalid", "Invalid JSON: "+err.Error())
		return spec{}, false
	}
	model := r.Header.Get("model")
	if !slices.Contains(Models(), model) {
		model = DefaultModel // documented fallback
	}
	bad := func(loc []any, msg string) (spec, bool) {
		invalid(w, loc, "value_error", msg)
		return spec{}, false
	}
	between := func(v *float64, lo, hi float64) bool { return v == nil || (*v >= lo && *v <= hi) }
	sp := spec{format: "mp3", speed: 1, chunkLength: 300}
	switch {
	case b.Text == nil:
		return bad([]any{"text"}, "Field required")
	case !between(b.Temperature, 0, 1):
		return bad([]any{"temperature"}, "Input should be between 0 and 1")
	case !between(b.TopP, 0, 1):
		return bad([]any{"top_p"}, "Input should be between 0 and 1")
	case !between(b.EarlyStopThreshold, 0, 1):
		return bad([]any{"early_stop_threshold"}, "Input should be between 0 and 1")
	case len(b.References) > 0 && string(b.References) != "null":
		return bad([]any{"references"}, "references carry raw audio bytes: send the body as application/msgpack")
	case b.ChunkLength != nil && (*b.ChunkLength < 100 || *b.ChunkLength > 300):
		return bad([]any{"chunk_length"}, "Input should be between 100 and 300")
	case b.MinChunkLength != nil && (*b.MinChunkLength < 0 || *b.MinChunkLength > 100):
		return bad([]any{"min_chunk_length"}, "Input should be between 0 and 100")
	case b.Latency != nil && !slices.Contains([]string{"low", "normal", "balanced"}, *b.Latency):
		return bad([]any{"latency"}, "Input should be 'low', 'normal' or 'balanced'")
	case b.MP3Bitrate != nil && !slices.Contains([]int{64, 128, 192}, *b.MP3Bitrate):
		return bad([]any{"mp3_bitrate"}, "Input should be 64, 128 or 192")
	case b.OpusBitrate != nil && !slices.Contains([]int{-1000, 24000, 32000, 48000, 64000}, *b.OpusBitrate):
		return bad([]any{"opus_bitrate"}, "Input should be -1000, 24000, 32000, 48000 or 64000")
	}
	sp.text = *b.Text
	if strings.TrimSpace(sp.text) == "" {
		fail(w, http.StatusBadRequest, "Text is empty")
		return spec{}, false
	}
	if b.ChunkLength != nil {
		sp.chunkLength = *b.ChunkLength
	}
	if p := b.Prosody; p != nil && p.Speed != nil {
		if *p.Speed < 0.5 || *p.Speed > 2 {
			return bad([]any{"prosody", "speed"}, "Input should be between 0.5 and 2")
		}
		sp.speed = *p.Speed
	}
	if b.Format != nil {
		sp.format = *b.Format
	}
	rates := PCMRates()
	sp.rate = 44100
	switch sp.format {
	case "wav", "pcm":
	case "mp3":
		rates, sp.kbps = MP3Rates(), 128
		if b.MP3Bitrate != nil {
			sp.kbps = *b.MP3Bitrate
		}
	case "opus":
		rates, sp.rate, sp.kbps = []int{48000}, 48000, 32
		if b.OpusBitrate != nil && *b.OpusBitrate > 0 {
			sp.kbps = *b.OpusBitrate / 1000
		}
	default:
		return bad([]any{"format"}, "Input should be 'wav', 'pcm', 'mp3' or 'opus'")
	}
	if b.MP3Bitrate != nil && sp.format != "mp3" {
		return bad([]any{"mp3_bitrate"}, "mp3_bitrate applies only when format is mp3")
	}
	if b.OpusBitrate != nil && sp.format != "opus" {
		return bad([]any{"opus_bitrate"}, "opus_bitrate applies only when format is opus")
	}
	if b.SampleRate != nil {
		if !slices.Contains(rates, *b.SampleRate) {
			return bad([]any{"sample_rate"}, fmt.Sprintf("sample rate %d is not supported for %s; use one of %v", *b.SampleRate, sp.format, rates))
		}
		sp.rate = *b.SampleRate
	}
	raw := b.ReferenceID
	if len(raw) > 0 && string(raw) != "null" {
		var one string
		var many []string
		switch {
		case json.Unmarshal(raw, &one) == nil:
			many = []string{one}
		case json.Unmarshal(raw, &many) == nil:
			if model == "s1" {
				return bad([]any{"reference_id"}, "multi-speaker synthesis needs the S2 family, not s1")
			}
		default:
			return bad([]any{"reference_id"}, "Input should be a string or a list of strings")
		}
		for _, id := range many {
			if !s.knows(id) {
				fail(w, http.StatusBadRequest, fmt.Sprintf("Reference model %s not found", id))
				return spec{}, false
			}
		}
	}
	return sp, true
}

func (s *Server) utterance(sp spec) fakeupstream.Utterance {
	if fs := s.FixedSeconds(); fs > 0 {
		return fakeupstream.Fixed(fs)
	}
	return fakeupstream.Speak(sp.text, sp.speed)
}

// contentTypes are the Content-Types of the answers by format. The
// reference names none; these are the formats' own.
var contentTypes = map[string]string{"pcm": "audio/pcm", "wav": "audio/wav", "mp3": "audio/mpeg", "opus": "audio/ogg"}

// render returns the audio of u in sp's encoding and its Content-Type,
// and records it as the latest answer.
func (s *Server) render(sp spec, u fakeupstream.Utterance) (fakeupstream.Audio, string, error) {
	audio, _, err := s.studio.Encoded(u, sp.format, sp.rate, sp.kbps)
	if err != nil {
		return audio, "", err
	}
	s.RecordAnswer(audio.Bytes())
	return audio, contentTypes[sp.format], nil
}

func (s *Server) tts(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	sp, ok := s.parse(w, r, req.Body)
	if !ok {
		return
	}
	audio, ct, err := s.render(sp, s.utterance(sp))
	if err != nil {
		fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	s.WriteAudio(r.Context(), w, audio)
}

// segment is one timed word of an alignment snapshot.
type segment struct {
	Text  string  `json:"text"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

type alignment struct {
	AudioDuration float64   `json:"audio_duration"`
	Segments      []segment `json:"segments"`
}

// textChunk is one of the pieces the API cuts a long text into.
type textChunk struct {
	content  string
	offset   float64 // start of the chunk's audio in the whole clip
	duration float64
	words    []fakeupstream.Span // times relative to the whole clip
}

// chunks cuts u's text at word boundaries into pieces of at most n
// characters (a longer word is a piece of its own).
func chunks(text string, u fakeupstream.Utterance, n int) []textChunk {
	var out []textChunk
	runes := []rune(text)
	wi := 0 // next word of u.Words
	start := 0
	for start < len(runes) {
		end := min(start+n, len(runes))
		if end < len(runes) {
			// Back up to the last space inside the window.
			cut := end
			for cut > start && !unicode.IsSpace(runes[cut]) {
				cut--
			}
			if cut > start {
				end = cut
			}
		}
		c := textChunk{content: strings.TrimSpace(string(runes[start:end]))}
		if start > 0 {
			c.offset = u.Chars[start].Start
		}
		last := u.Seconds
		if end < len(runes) {
			last = u.Chars[end].Start
		}
		c.duration = last - c.offset
		for wi < len(u.Words) && u.Words[wi].Start < last {
			c.words = append(c.words, u.Words[wi])
			wi++
		}
		if c.content != "" {
			out = append(out, c)
		}
		start = end
	}
	return out
}

// stripPunct trims the punctuation around a word, as the API's segments do.
func stripPunct(w string) string {
	return strings.TrimFunc(w, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSymbol(r) })
}

// ttsTimestamps streams the audio as events of ChunkSize bytes of audio,
// each with its text chunk's latest cumulative alignment snapshot: the
// words whose audio has been sent so far (null before the first).
func (s *Server) ttsTimestamps(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	sp, ok := s.parse(w, r, req.Body)
	if !ok {
		return
	}
	u := s.utterance(sp)
	audio, _, err := s.render(sp, u)
	if err != nil {
		fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	data := audio.Bytes()
	var pieces []textChunk
	if s.FixedSeconds() > 0 {
		pieces = []textChunk{{content: sp.text, duration: u.Seconds}}
	} else {
		pieces = chunks(sp.text, u, sp.chunkLength)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	size := s.ChunkSize()
	frame := 1
	if sp.format == "pcm" || sp.format == "wav" {
		frame = 2 // whole samples
		size &^= 1
	}
	// boundary is the byte where chunk i+1's audio starts: an event never
	// spans two text chunks, so each chunk's last event carries its final
	// snapshot.
	boundary := func(i int) int {
		if i+1 >= len(pieces) {
			return len(data)
		}
		b := int(float64(len(data)) * pieces[i+1].offset / u.Seconds)
		return b - b%frame
	}
	ci := 0
	for off := 0; off < len(data); {
		if off > 0 && !s.Pause(r.Context()) {
			return
		}
		for ci < len(pieces)-1 && boundary(ci) <= off {
			ci++
		}
		end := min(off+size, boundary(ci))
		final := end == boundary(ci)
		// How far the audio sent so far reaches, in seconds.
		reached := u.Seconds * float64(end) / float64(len(data))
		c := pieces[ci]
		ev := map[string]any{
			"audio_base64":           base64.StdEncoding.EncodeToString(data[off:end]),
			"content":                c.content,
			"alignment":              nil,
			"chunk_seq":              ci,
			"chunk_audio_offset_sec": c.offset,
		}
		var segs []segment
		for _, wd := range c.words {
			if wd.End <= reached || final {
				if t := stripPunct(wd.Text); t != "" {
					segs = append(segs, segment{Text: t, Start: wd.Start - c.offset, End: wd.End - c.offset})
				}
			}
		}
		if len(segs) > 0 {
			ev["alignment"] = alignment{AudioDuration: c.duration, Segments: segs}
		}
		b, _ := json.Marshal(ev)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
		off = end
	}
}

// listModels answers GET /model: the account's own models with self=true,
// the public library otherwise, filtered and paginated.
func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.begin(w, r); !ok {
		return
	}
	q := r.URL.Query()
	integer := func(key string, def, lo, hi int) (int, bool) {
		v := q.Get(key)
		if v == "" {
			return def, true
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			invalid(w, []any{key}, "value_error", fmt.Sprintf("Input should be between %d and %d", lo, hi))
			return 0, false
		}
		return n, true
	}
	size, ok := integer("page_size", 10, 1, 100)
	if !ok {
		return
	}
	page, ok := integer("page_number", 1, 1, 1<<30)
	if !ok {
		return
	}
	if v := q.Get("sort_by"); v != "" && !slices.Contains([]string{"score", "task_count", "created_at"}, v) {
		invalid(w, []any{"sort_by"}, "enum", "Input should be 'score', 'task_count' or 'created_at'")
		return
	}
	self := q.Get("self") == "true"
	s.mu.Lock()
	var list []model
	for _, m := range s.models {
		if self != s.owned[m.ID] || (!self && m.Visibility != "public") {
			continue
		}
		if t := q.Get("title"); t != "" && !strings.Contains(strings.ToLower(m.Title), strings.ToLower(t)) {
			continue
		}
		if tags := q["tag"]; len(tags) > 0 && !slices.ContainsFunc(tags, func(t string) bool { return slices.Contains(m.Tags, t) }) {
			continue
		}
		if langs := q["language"]; len(langs) > 0 && !slices.ContainsFunc(langs, func(l string) bool { return slices.Contains(m.Languages, l) }) {
			continue
		}
		list = append(list, m)
	}
	s.mu.Unlock()
	if q.Get("sort_by") != "created_at" {
		slices.SortStableFunc(list, func(a, b model) int { return b.TaskCount - a.TaskCount })
	}
	from := min((page-1)*size, len(list))
	items := list[from:min(from+size, len(list))]
	if items == nil {
		items = []model{}
	}
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{"total": len(list), "items": items, "has_more": from+len(items) < len(list)})
}

// createModel answers POST /model: a voice model from uploaded samples,
// usable at once (train_mode fast).
func (s *Server) createModel(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	form, err := fakeupstream.ParseMultipart(req)
	if err != nil {
		fail(w, http.StatusBadRequest, "Expected multipart/form-data: "+err.Error())
		return
	}
	known := []string{"type", "title", "train_mode", "visibility", "description", "texts", "tags", "enhance_audio_quality", "generate_sample"}
	for field := range form.Value {
		if !slices.Contains(known, field) {
			invalid(w, []any{field}, "extra_forbidden", "Extra inputs are not permitted")
			return
		}
	}
	for field := range form.File {
		if field != "voices" && field != "cover_image" {
			invalid(w, []any{field}, "extra_forbidden", "Extra inputs are not permitted")
			return
		}
	}
	value := func(k string) string {
		if v := form.Value[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	visibility := value("visibility")
	if visibility == "" {
		visibility = "public" // the documented default
	}
	voices := form.File["voices"]
	isBool := func(k string) bool { v := value(k); return v == "" || v == "true" || v == "false" }
	bad := func(loc, msg string) { invalid(w, []any{loc}, "value_error", msg) }
	switch {
	case value("type") != "tts":
		bad("type", "Input should be 'tts'")
		return
	case strings.TrimSpace(value("title")) == "":
		bad("title", "Field required")
		return
	case value("train_mode") != "fast":
		bad("train_mode", "Input should be 'fast'")
		return
	case !slices.Contains([]string{"public", "unlist", "private"}, visibility):
		bad("visibility", "Input should be 'public', 'unlist' or 'private'")
		return
	case visibility == "public" && len(form.File["cover_image"]) == 0:
		fail(w, http.StatusBadRequest, "cover_image is required for a public model")
		return
	case len(voices) == 0 || len(voices) > 20:
		bad("voices", "between 1 and 20 voice files are required")
		return
	case len(form.Value["texts"]) > len(voices):
		bad("texts", "more texts than voices")
		return
	case !isBool("enhance_audio_quality") || !isBool("generate_sample"):
		bad("enhance_audio_quality", "Input should be a valid boolean")
		return
	}
	for _, f := range voices {
		if f.Size == 0 {
			fail(w, http.StatusBadRequest, fmt.Sprintf("The voice file %q is empty", f.Filename))
			return
		}
	}
	now := time.Now().UTC().Format(time.RFC3339)
	tags := form.Value["tags"]
	if tags == nil {
		tags = []string{}
	}
	m := model{
		ID: fmt.Sprintf("c1000000000000000000%012d", s.clones.Add(1)), Type: "tts",
		Title: value("title"), Description: value("description"), TrainMode: "fast", State: "trained",
		Tags: tags, Samples: []any{}, CreatedAt: now, UpdatedAt: now, Languages: []string{},
		Visibility: visibility, Author: author{ID: selfID, Nickname: "you"},
	}
	s.mu.Lock()
	s.models = append(s.models, m)
	s.owned[m.ID] = true
	s.mu.Unlock()
	fakeupstream.WriteJSON(w, http.StatusCreated, m)
}

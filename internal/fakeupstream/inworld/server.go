// Package inworld is a fake of the Inworld TTS API for tests and
// benchmarks: speech synthesis (whole, with word or character timestamps,
// and streamed as newline-delimited JSON), the voice list and instant
// voice cloning.
//
// It follows the published API reference. Every request carries
// "Authorization: Basic <key>", the key as Inworld issues it (already
// base64). Bodies are JSON read the way Inworld's gRPC gateway reads them:
// field names in lowerCamelCase or in the proto's snake_case, enums by
// name, unknown fields rejected. The synthesis body is text (at most 2,000
// characters), voiceId, modelId, audioConfig {audioEncoding,
// sampleRateHertz 8000 to 48000 (default 48000), bitRate, speakingRate 0.5
// to 1.5}, temperature (0 to 2), timestampType (WORD, CHARACTER),
// applyTextNormalization (ON, OFF), deliveryMode and language. The answer
// of POST /tts/v1/voice is {audioContent (base64), usage, timestampInfo};
// POST /tts/v1/voice:stream answers one JSON object a line,
// {"result": {"audioContent", ...}}, an error inside the stream as
// {"error": {...}}. Errors are the gRPC status envelope {code, message,
// details} with the HTTP status the gateway maps the code to.
//
// Audio encodings, as the reference documents them: PCM is headerless
// 16-bit little-endian samples; WAV carries a RIFF header (in a stream, on
// the first chunk only, so the chunks join into one file); LINEAR16 is
// WAV whose every streamed chunk carries its own header; MP3 is MPEG
// audio. Word timestamps are the whitespace-separated words of the text
// ("Hello," with its comma) with exact times for the audio.
//
// Endpoints:
//
//	POST /tts/v1/voice              JSON {audioContent, usage, timestampInfo}
//	POST /tts/v1/voice:stream       newline-delimited {"result": {...}}
//	GET  /voices/v1/voices          {"voices": [...], "nextPageToken"}; pageSize, pageToken, filter, orderBy
//	POST /voices/v1/voices:clone    JSON {displayName, langCode, voiceSamples: [{audioData, transcription}], ...}
//
// MP3 (at the rate and bitRate asked, default 128000), FLAC and OGG_OPUS
// are real audio of that codec; a streamed one is its file cut into
// chunks. LastAnswer holds the audio of the latest answer (of a stream,
// its chunks joined).
//
// Deliberate gaps: ALAW and MULAW are valid encodings the fake does not
// render (400), nor OGG_OPUS at a rate other than 48 kHz, nor an MP3
// bitRate that is not one of MP3's own at the rate asked; the voice
// list's filter and orderBy are accepted but not applied; deliveryMode,
// language, temperature and text normalization are checked but change
// nothing.
package inworld

import (
	"bytes"
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
	"unicode"
	"unicode/utf8"

	"github.com/voxgate/voxgate/internal/fakeupstream"
)

// Key is the API key the fake accepts unless Options.Keys says otherwise:
// Inworld issues keys as the base64 of "id:secret".
const Key = "ZmFrZS1pbndvcmxkLWlkOmZha2Utc2VjcmV0LTAxMjM0NTY3ODk="

// Paths of the fake's endpoints.
const (
	SynthesizePath = "/tts/v1/voice"
	StreamPath     = "/tts/v1/voice:stream"
	VoicesPath     = "/voices/v1/voices"
	ClonePath      = "/voices/v1/voices:clone"
)

// Ids of the fake's system voices (Inworld's own voice names).
const (
	VoiceDennis  = "Dennis"
	VoiceAshley  = "Ashley"
	VoiceAlex    = "Alex"
	VoiceMathieu = "Mathieu"
)

// MaxText is the documented input limit in characters.
const MaxText = 2000

// DefaultRate is the sample rate of an answer that asks for none.
const DefaultRate = 48000

// Models returns the model ids the fake accepts.
func Models() []string {
	return []string{"inworld-tts-1.5-max", "inworld-tts-1.5-mini", "inworld-tts-2", "inworld-tts-1", "inworld-tts-1-max"}
}

// LangCodes returns the documented voice language codes.
func LangCodes() []string {
	return []string{"EN_US", "ZH_CN", "KO_KR", "JA_JP", "RU_RU", "AUTO", "IT_IT", "ES_ES", "PT_BR", "DE_DE", "FR_FR", "AR_SA", "PL_PL", "NL_NL", "HI_IN", "HE_IL"}
}

// gRPC status codes the fake answers with, and the HTTP status Inworld's
// gateway gives each.
const (
	codeInvalidArgument   = 3
	codeNotFound          = 5
	codeResourceExhausted = 8
	codeInternal          = 13
	codeUnavailable       = 14
	codeUnauthenticated   = 16
)

// codeOf is the gRPC code behind an HTTP status, for injected faults.
func codeOf(status int) int {
	switch status {
	case http.StatusBadRequest:
		return codeInvalidArgument
	case http.StatusUnauthorized:
		return codeUnauthenticated
	case http.StatusForbidden:
		return 7 // PERMISSION_DENIED
	case http.StatusNotFound:
		return codeNotFound
	case http.StatusTooManyRequests:
		return codeResourceExhausted
	case http.StatusServiceUnavailable:
		return codeUnavailable
	case http.StatusGatewayTimeout:
		return 4 // DEADLINE_EXCEEDED
	}
	return codeInternal
}

// voice is a voice as GET /voices/v1/voices lists it.
type voice struct {
	Name            string   `json:"name"`
	VoiceID         string   `json:"voiceId"`
	LangCode        string   `json:"langCode"`
	DisplayName     string   `json:"displayName"`
	Description     string   `json:"description"`
	Tags            []string `json:"tags"`
	Categories      []string `json:"categories"`
	Source          string   `json:"source"`
	Gender          string   `json:"gender"`
	AgeGroup        string   `json:"ageGroup"`
	PromptLanguages []string `json:"promptLanguages"`
}

func system() []voice {
	mk := func(id, lang, gender, desc, locale string) voice {
		return voice{
			Name: "workspaces/inworld/voices/" + id, VoiceID: id, LangCode: lang, DisplayName: id,
			Description: desc, Tags: []string{}, Categories: []string{}, Source: "SYSTEM",
			Gender: gender, AgeGroup: "middle_aged", PromptLanguages: []string{locale},
		}
	}
	return []voice{
		mk(VoiceDennis, "EN_US", "male", "Middle-aged man with a smooth, calm and friendly voice", "en-US"),
		mk(VoiceAshley, "EN_US", "female", "A warm, natural female voice", "en-US"),
		mk(VoiceAlex, "EN_US", "male", "Energetic and expressive mid-range male voice", "en-US"),
		mk(VoiceMathieu, "FR_FR", "male", "Voix masculine posée", "fr-FR"),
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
}

// New starts a fake. With tb set it is closed at tb.Cleanup; otherwise
// call Close.
func New(tb testing.TB, opts fakeupstream.Options) *Server {
	studio, err := fakeupstream.NewStudio()
	if err != nil {
		panic(err) // the embedded tone is broken: a build problem
	}
	s := &Server{Control: fakeupstream.NewControl(opts), studio: studio, voices: system(), pageSize: 1000}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+SynthesizePath, s.synthesize)
	mux.HandleFunc("POST "+StreamPath, s.stream)
	mux.HandleFunc("GET "+VoicesPath, s.listVoices)
	mux.HandleFunc("POST "+ClonePath, s.clone)
	mux.HandleFunc("/", s.notFound)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// BaseURL is what the plugin's base_url setting should be (the root, as in
// https://api.inworld.ai).
func (s *Server) BaseURL() string { return s.URL }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// SetPageSize caps how many voices one page of GET /voices/v1/voices holds
// when the client asks for pages, to exercise pagination.
func (s *Server) SetPageSize(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pageSize = max(n, 1)
}

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

func (s *Server) knows(id string) bool { return slices.Contains(s.VoiceIDs(), id) }

// status is the gRPC status envelope Inworld's errors come in.
type status struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Details []any  `json:"details"`
}

// fail answers an error in Inworld's envelope.
func fail(w http.ResponseWriter, httpStatus, code int, msg string) {
	fakeupstream.WriteJSON(w, httpStatus, status{Code: code, Message: msg, Details: []any{}})
}

func invalid(w http.ResponseWriter, format string, args ...any) {
	fail(w, http.StatusBadRequest, codeInvalidArgument, fmt.Sprintf(format, args...))
}

func injected(w http.ResponseWriter, f *fakeupstream.Fault) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	msg := "Internal error."
	switch f.Status {
	case http.StatusUnauthorized:
		msg = "Unauthenticated: invalid authorization credentials."
	case http.StatusTooManyRequests:
		msg = "Resource exhausted: too many requests, retry later."
	case http.StatusServiceUnavailable:
		msg = "The service is currently unavailable."
	}
	if f.Message != "" {
		msg = f.Message
	}
	code := codeOf(f.Status)
	if f.Code != "" {
		if n, err := strconv.Atoi(f.Code); err == nil {
			code = n
		}
	}
	fail(w, f.Status, code, msg)
}

// begin runs what every handler does first: record, latency, auth, then
// an injected fault. It returns false when it answered.
func (s *Server) begin(w http.ResponseWriter, r *http.Request) (fakeupstream.Request, bool) {
	req, fault, ok := s.Begin(r)
	if !ok {
		return req, false
	}
	auth := r.Header.Get("Authorization")
	key, basic := strings.CutPrefix(auth, "Basic ")
	switch {
	case auth == "":
		fail(w, http.StatusUnauthorized, codeUnauthenticated, "Unauthenticated: missing Authorization header.")
		return req, false
	case !basic:
		fail(w, http.StatusUnauthorized, codeUnauthenticated, "Unauthenticated: the Authorization scheme must be Basic.")
		return req, false
	case !slices.Contains(s.Keys(Key), key):
		fail(w, http.StatusUnauthorized, codeUnauthenticated, "Unauthenticated: invalid authorization credentials.")
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
		fail(w, http.StatusNotFound, codeNotFound, "Not Found")
	}
}

// decode reads a JSON body into v the way a gRPC gateway does: names in
// lowerCamelCase or snake_case, unknown fields rejected. False when it
// answered.
func decode(w http.ResponseWriter, r *http.Request, body []byte, v any) bool {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		invalid(w, "Content-Type must be application/json.")
		return false
	}
	var raw any
	if err := json.Unmarshal(body, &raw); err != nil {
		invalid(w, "invalid JSON body: %v", err)
		return false
	}
	camel, _ := json.Marshal(camelKeys(raw))
	if err := fakeupstream.DecodeStrict(camel, v); err != nil {
		if field, ok := fakeupstream.UnknownField(err); ok {
			invalid(w, "invalid JSON body: unknown field %q", field)
			return false
		}
		invalid(w, "invalid JSON body: %v", err)
		return false
	}
	return true
}

// camelKeys rewrites the object keys of v from snake_case to
// lowerCamelCase, recursively, as protobuf's JSON mapping accepts both.
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

// synthesisRequest is the documented body of both synthesis endpoints.
type synthesisRequest struct {
	Text                       *string      `json:"text"`
	VoiceID                    *string      `json:"voiceId"`
	ModelID                    *string      `json:"modelId"`
	AudioConfig                *audioConfig `json:"audioConfig"`
	Temperature                *float64     `json:"temperature"`
	TimestampType              *string      `json:"timestampType"`
	ApplyTextNormalization     *string      `json:"applyTextNormalization"`
	DeliveryMode               *string      `json:"deliveryMode"`
	Language                   *string      `json:"language"`
	TimestampTransportStrategy *string      `json:"timestampTransportStrategy"`
}

type audioConfig struct {
	AudioEncoding   *string  `json:"audioEncoding"`
	SampleRateHertz *int     `json:"sampleRateHertz"`
	BitRate         *int     `json:"bitRate"`
	SpeakingRate    *float64 `json:"speakingRate"`
}

// job is a validated synthesis request.
type job struct {
	text, model, encoding, timestamps string
	rate                              int
	kbps                              int // bitRate of a compressed encoding
	speed                             float64
}

// check validates a synthesis body; false when it answered.
func (s *Server) check(w http.ResponseWriter, b *synthesisRequest) (job, bool) {
	j := job{encoding: "MP3", rate: DefaultRate, kbps: 128, speed: 1}
	switch {
	case b.Text == nil || strings.TrimSpace(*b.Text) == "":
		invalid(w, "text is required.")
		return j, false
	case utf8.RuneCountInString(*b.Text) > MaxText:
		invalid(w, "text must be at most %d characters; got %d.", MaxText, utf8.RuneCountInString(*b.Text))
		return j, false
	case b.ModelID == nil || *b.ModelID == "":
		invalid(w, "modelId is required.")
		return j, false
	case !slices.Contains(Models(), *b.ModelID) && !s.NewModel(*b.ModelID):
		// A model of fakeupstream.Options.NewModels is taken like the
		// others: they all take the same request.
		invalid(w, "Unknown model %q.", *b.ModelID)
		return j, false
	case b.VoiceID == nil || *b.VoiceID == "":
		invalid(w, "voiceId is required.")
		return j, false
	}
	j.text, j.model = *b.Text, *b.ModelID
	if ac := b.AudioConfig; ac != nil {
		if ac.AudioEncoding != nil && *ac.AudioEncoding != "AUDIO_ENCODING_UNSPECIFIED" {
			j.encoding = *ac.AudioEncoding
		}
		switch j.encoding {
		case "MP3", "PCM", "WAV", "LINEAR16", "OGG_OPUS", "FLAC":
		case "ALAW", "MULAW":
			invalid(w, "audioEncoding %s is valid but this fake does not render it.", j.encoding)
			return j, false
		default:
			invalid(w, "invalid value for enum field audioEncoding: %q", j.encoding)
			return j, false
		}
		if ac.SampleRateHertz != nil && *ac.SampleRateHertz != 0 {
			j.rate = *ac.SampleRateHertz
			lo := 8000
			if j.encoding == "MP3" {
				lo = 16000
			}
			if j.rate < lo || j.rate > 48000 {
				invalid(w, "sampleRateHertz must be between %d and 48000 for %s.", lo, j.encoding)
				return j, false
			}
		}
		if ac.BitRate != nil && *ac.BitRate != 0 {
			if *ac.BitRate < 32000 || *ac.BitRate > 320000 {
				invalid(w, "bitRate must be between 32000 and 320000.")
				return j, false
			}
			j.kbps = *ac.BitRate / 1000
		}
		if j.encoding == "OGG_OPUS" && j.rate != 48000 {
			invalid(w, "sampleRateHertz %d is valid for OGG_OPUS but this fake renders it at 48000 only.", j.rate)
			return j, false
		}
		if ac.SpeakingRate != nil && *ac.SpeakingRate != 0 {
			if *ac.SpeakingRate < 0.5 || *ac.SpeakingRate > 1.5 {
				invalid(w, "speakingRate must be between 0.5 and 1.5.")
				return j, false
			}
			j.speed = *ac.SpeakingRate
		}
	}
	if b.Temperature != nil && (*b.Temperature < 0 || *b.Temperature > 2) {
		invalid(w, "temperature must be between 0 and 2.")
		return j, false
	}
	if b.TimestampType != nil {
		switch *b.TimestampType {
		case "TIMESTAMP_TYPE_UNSPECIFIED":
		case "WORD", "CHARACTER":
			j.timestamps = *b.TimestampType
		default:
			invalid(w, "invalid value for enum field timestampType: %q", *b.TimestampType)
			return j, false
		}
	}
	enums := []struct {
		name  string
		value *string
		ok    []string
	}{
		{"applyTextNormalization", b.ApplyTextNormalization, []string{"APPLY_TEXT_NORMALIZATION_UNSPECIFIED", "ON", "OFF"}},
		{"deliveryMode", b.DeliveryMode, []string{"DELIVERY_MODE_UNSPECIFIED", "STABLE", "BALANCED", "CREATIVE"}},
		{"timestampTransportStrategy", b.TimestampTransportStrategy, []string{"TIMESTAMP_TRANSPORT_STRATEGY_UNSPECIFIED", "SYNC", "ASYNC"}},
	}
	for _, e := range enums {
		if e.value != nil && !slices.Contains(e.ok, *e.value) {
			invalid(w, "invalid value for enum field %s: %q", e.name, *e.value)
			return j, false
		}
	}
	if !s.knows(*b.VoiceID) {
		fail(w, http.StatusNotFound, codeNotFound, fmt.Sprintf("Voice %s not found.", *b.VoiceID))
		return j, false
	}
	return j, true
}

func (s *Server) utterance(j job) fakeupstream.Utterance {
	if fs := s.FixedSeconds(); fs > 0 {
		return fakeupstream.Fixed(fs)
	}
	return fakeupstream.Speak(j.text, j.speed)
}

// codecs are the sdk format names of the encodings the fake renders
// (LINEAR16 is WAV).
var codecs = map[string]string{"PCM": "pcm", "WAV": "wav", "LINEAR16": "wav", "MP3": "mp3", "FLAC": "flac", "OGG_OPUS": "opus"}

// render is the whole answer's audio in j's encoding. An MP3 whose rate
// and bit rate MP3 has no frame for fails.
func (s *Server) render(j job, u fakeupstream.Utterance) ([]byte, error) {
	kbps := 0
	if j.encoding == "MP3" || j.encoding == "OGG_OPUS" {
		kbps = j.kbps
	}
	a, _, err := s.studio.Encoded(u, codecs[j.encoding], j.rate, kbps)
	return a.Bytes(), err
}

// wordAlignment and characterAlignment are the timestampInfo of spans.
func wordAlignment(spans []fakeupstream.Span) map[string]any {
	words, starts, ends := split(spans)
	return map[string]any{"words": words, "wordStartTimeSeconds": starts, "wordEndTimeSeconds": ends, "phoneticDetails": []any{}}
}

func characterAlignment(spans []fakeupstream.Span) map[string]any {
	chars, starts, ends := split(spans)
	return map[string]any{"characters": chars, "characterStartTimeSeconds": starts, "characterEndTimeSeconds": ends}
}

func split(spans []fakeupstream.Span) (texts []string, starts, ends []float64) {
	texts, starts, ends = []string{}, []float64{}, []float64{}
	for _, sp := range spans {
		texts, starts, ends = append(texts, sp.Text), append(starts, sp.Start), append(ends, sp.End)
	}
	return texts, starts, ends
}

// timestampInfo is the timestampInfo of spans for the asked type, nil
// when none was asked.
func timestampInfo(kind string, words, chars []fakeupstream.Span) map[string]any {
	switch kind {
	case "WORD":
		return map[string]any{"wordAlignment": wordAlignment(words)}
	case "CHARACTER":
		return map[string]any{"characterAlignment": characterAlignment(chars)}
	}
	return nil
}

func (s *Server) synthesize(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	var b synthesisRequest
	if !decode(w, r, req.Body, &b) {
		return
	}
	j, ok := s.check(w, &b)
	if !ok {
		return
	}
	u := s.utterance(j)
	audio, err := s.render(j, u)
	if err != nil {
		invalid(w, "%s at %d Hz and bitRate %d is valid but this fake cannot encode it: %v", j.encoding, j.rate, j.kbps*1000, err)
		return
	}
	s.RecordAnswer(audio)
	answer := map[string]any{
		"audioContent": base64.StdEncoding.EncodeToString(audio),
		"usage":        map[string]any{"processedCharactersCount": utf8.RuneCountInString(j.text), "modelId": j.model},
	}
	if ti := timestampInfo(j.timestamps, u.Words, u.Chars); ti != nil {
		answer["timestampInfo"] = ti
	}
	fakeupstream.WriteJSON(w, http.StatusOK, answer)
}

// stream answers one JSON line per chunk of ChunkSize bytes of audio,
// each with the timestamps of the words (or characters) the chunk
// completes when asked, pausing between chunks as Control says.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	var b synthesisRequest
	if !decode(w, r, req.Body, &b) {
		return
	}
	j, ok := s.check(w, &b)
	if !ok {
		return
	}
	u := s.utterance(j)
	var (
		samples []byte // what is cut into chunks
		header  []byte // a WAV header to put before chunks
		rate    = j.rate
	)
	switch j.encoding {
	case "PCM", "WAV", "LINEAR16":
		samples = s.studio.PCM(u, rate).Bytes()
		if j.encoding == "WAV" {
			header = fakeupstream.WAVHeader(rate, len(samples))
		}
	default:
		var err error
		if samples, err = s.render(j, u); err != nil {
			invalid(w, "%s at %d Hz and bitRate %d is valid but this fake cannot encode it: %v", j.encoding, j.rate, j.kbps*1000, err)
			return
		}
	}
	size := max(s.ChunkSize()&^1, 2) // whole samples
	var chunks [][]byte
	for off := 0; off < len(samples); off += size {
		chunk := samples[off:min(off+size, len(samples))]
		switch {
		case j.encoding == "LINEAR16":
			chunk = append(fakeupstream.WAVHeader(rate, len(chunk)), chunk...)
		case off == 0 && header != nil:
			chunk = append(append([]byte(nil), header...), chunk...)
		}
		chunks = append(chunks, chunk)
	}
	s.RecordAnswer(bytes.Join(chunks, nil))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	nextWord, nextChar := 0, 0
	for i, chunk := range chunks {
		off := i * size
		if off > 0 && !s.Pause(r.Context()) {
			return
		}
		end := min(off+size, len(samples))
		result := map[string]any{
			"audioContent": base64.StdEncoding.EncodeToString(chunk),
			"usage":        map[string]any{"processedCharactersCount": utf8.RuneCountInString(j.text), "modelId": j.model},
		}
		if j.timestamps != "" {
			// The spans the audio sent so far completes (MP3 by its share
			// of the bytes).
			upTo := float64(end) / float64(len(samples)) * u.Seconds
			last := end == len(samples)
			var words, chars []fakeupstream.Span
			for ; nextWord < len(u.Words) && (u.Words[nextWord].End <= upTo || last); nextWord++ {
				words = append(words, u.Words[nextWord])
			}
			for ; nextChar < len(u.Chars) && (u.Chars[nextChar].End <= upTo || last); nextChar++ {
				chars = append(chars, u.Chars[nextChar])
			}
			result["timestampInfo"] = timestampInfo(j.timestamps, words, chars)
		}
		line, _ := json.Marshal(map[string]any{"result": result})
		if _, err := w.Write(append(line, '\n')); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

func (s *Server) listVoices(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.begin(w, r); !ok {
		return
	}
	q := r.URL.Query()
	s.mu.Lock()
	all := append([]voice(nil), s.voices...)
	pageSize := s.pageSize
	s.mu.Unlock()
	// Without pagination parameters the list comes whole, as the
	// reference's legacy path does.
	if q.Get("pageSize") == "" && q.Get("pageToken") == "" {
		fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{"voices": all})
		return
	}
	size := 20
	if v := q.Get("pageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			invalid(w, "pageSize must be a positive integer.")
			return
		}
		size = n
	}
	size = min(size, pageSize)
	from := 0
	if tok := q.Get("pageToken"); tok != "" {
		n, err := strconv.Atoi(tok)
		if err != nil || n < 0 || n > len(all) {
			invalid(w, "invalid pageToken %q.", tok)
			return
		}
		from = n
	}
	to := min(from+size, len(all))
	next := ""
	if to < len(all) {
		next = strconv.Itoa(to)
	}
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{"voices": all[from:to], "totalSize": len(all), "nextPageToken": next})
}

// cloneRequest is the documented body of voices:clone.
type cloneRequest struct {
	DisplayName           *string  `json:"displayName"`
	LangCode              *string  `json:"langCode"`
	VoiceSamples          []sample `json:"voiceSamples"`
	Description           *string  `json:"description"`
	Tags                  []string `json:"tags"`
	AudioProcessingConfig *struct {
		RemoveBackgroundNoise *bool `json:"removeBackgroundNoise"`
	} `json:"audioProcessingConfig"`
}

type sample struct {
	AudioData     *string `json:"audioData"`
	Transcription *string `json:"transcription"`
}

// audioFile reports whether data looks like a WAV or MP3 file, the
// formats the reference accepts.
func audioFile(data []byte) bool {
	switch {
	case len(data) >= 12 && bytes.Equal(data[:4], []byte("RIFF")) && bytes.Equal(data[8:12], []byte("WAVE")):
		return true
	case len(data) >= 3 && bytes.Equal(data[:3], []byte("ID3")):
		return true
	case len(data) >= 2 && data[0] == 0xFF && data[1]&0xE0 == 0xE0:
		return true
	}
	return false
}

func (s *Server) clone(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	var b cloneRequest
	if !decode(w, r, req.Body, &b) {
		return
	}
	switch {
	case b.DisplayName == nil || strings.TrimSpace(*b.DisplayName) == "":
		invalid(w, "displayName is required.")
		return
	case b.LangCode == nil || !slices.Contains(LangCodes(), *b.LangCode):
		invalid(w, "langCode is required and must be one of %v.", LangCodes())
		return
	case len(b.VoiceSamples) == 0:
		invalid(w, "at least one voice sample is required.")
		return
	}
	validated := make([]map[string]any, 0, len(b.VoiceSamples))
	for i, smp := range b.VoiceSamples {
		if smp.AudioData == nil || *smp.AudioData == "" {
			invalid(w, "voiceSamples[%d].audioData is required.", i)
			return
		}
		data, err := base64.StdEncoding.DecodeString(*smp.AudioData)
		if err != nil {
			invalid(w, "voiceSamples[%d].audioData is not valid base64.", i)
			return
		}
		if !audioFile(data) {
			invalid(w, "voiceSamples[%d]: unsupported audio format; use WAV or MP3.", i)
			return
		}
		transcription := "transcribed by the fake"
		if smp.Transcription != nil {
			transcription = *smp.Transcription
		}
		validated = append(validated, map[string]any{"langCode": *b.LangCode, "warnings": []any{}, "errors": []any{}, "transcription": transcription})
	}
	slug := strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return '_'
	}, *b.DisplayName)
	id := fmt.Sprintf("fake_workspace__%s_%d", slug, s.clones.Add(1))
	v := voice{
		Name: "workspaces/fake_workspace/voices/" + strings.TrimPrefix(id, "fake_workspace__"), VoiceID: id,
		LangCode: *b.LangCode, DisplayName: *b.DisplayName, Tags: b.Tags, Categories: []string{}, Source: "IVC",
	}
	if v.Tags == nil {
		v.Tags = []string{}
	}
	if b.Description != nil {
		v.Description = *b.Description
	}
	s.mu.Lock()
	s.voices = append(s.voices, v)
	s.mu.Unlock()
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{"voice": v, "audioSamplesValidated": validated})
}

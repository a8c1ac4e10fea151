// Package deepgram is a fake of Deepgram's Aura text-to-speech REST API
// for tests and benchmarks: POST /v1/speak, whose answer body is the
// audio, streamed as it is rendered, GET /v1/speak, the speak WebSocket
// (websocket.go), and GET /v1/models, the model (voice) list.
//
// It follows the API reference: the key comes as "Authorization: Token
// <key>"; the body is exactly {"text": ...} (any other field is a 400
// PAYLOAD_ERROR); everything else is a query parameter: model (the voice,
// "aura-2-thalia-en"; absent means aura-asteria-en, as documented),
// encoding, container, sample_rate and bit_rate checked against the
// documented audio format combinations, speed (Aura-2 only, 0.7 to 1.5),
// and callback, callback_method, mip_opt_out and tag. Texts over 2,000
// characters are refused. Errors are Deepgram's {"err_code", "err_msg",
// "request_id"}.
//
// Every combination answers real audio of that encoding at that rate (the
// bit rate is checked, not heard): linear16 raw or in WAV, mp3, Ogg Opus,
// FLAC, ADTS AAC, and mu-law or A-law raw or in WAV. The last audio
// answered is kept (Control.LastAnswer).
//
// Deliberate gaps: mu-law and A-law render at 8000 Hz only (16000 is
// valid but answers 400 naming the fake); Content-Types are the audio's
// usual media types, since the reference does not document them; a
// callback URL is refused (the fake never calls out); and unknown query
// parameters are refused, where Deepgram may ignore them, to hold clients
// to the documented ones.
package deepgram

import (
	_ "embed"
	"encoding/binary"
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

// apiDocument is the part of Deepgram's published OpenAPI document the
// fake serves (apispec/deepgram.yaml, whose header names its source, github.com/deepgram/deepgram-api-specs):
// it judges every request and answer (fakeupstream.Control.Judge).
//
//go:embed apispec/deepgram.yaml
var apiDocument []byte

// Document returns the fake's API document, parsed once.
var Document = sync.OnceValue(func() *fakeupstream.Document {
	return fakeupstream.MustLoadDocument("Deepgram", apiDocument,
		fakeupstream.Excuse{
			Operation: "POST /v1/speak",
			Contains:  "response content type 'audio/",
			Why: "the document gives the 200 answer as an empty JSON object (application/json), " +
				"though the endpoint answers with the audio itself, as the reference's own examples show",
		},
		fakeupstream.Excuse{
			Operation: "POST /v1/speak",
			Contains:  "'oneOf' failed, subschemas 1, 2 matched",
			Why: "two oneOf lists have overlapping branches: the error body's legacy {err_code, err_msg} and " +
				"modern {category, message} objects are both open, so any object matches both; bit_rate's " +
				"second and third branches are the same {type: number}",
		})
})

// Key is the API key the fake accepts unless Options.Keys says otherwise.
const Key = "dg_test_fake_0123456789abcdef0123456789"

// Paths of the fake's endpoints, under BaseURL's /v1.
const (
	SpeakPath  = "/v1/speak"
	ModelsPath = "/v1/models"
)

// MaxChars is the documented text limit of one request.
const MaxChars = 2000

// DefaultModel is what a request without a model gets, as documented.
const DefaultModel = "aura-asteria-en"

// Voice is one TTS model (voice) as GET /v1/models lists it.
type Voice struct {
	Name          string   `json:"name"`
	CanonicalName string   `json:"canonical_name"`
	Architecture  string   `json:"architecture"`
	Languages     []string `json:"languages"`
	Version       string   `json:"version"`
	UUID          string   `json:"uuid"`
	Metadata      struct {
		Accent   string   `json:"accent"`
		Age      string   `json:"age"`
		Tags     []string `json:"tags"`
		UseCases []string `json:"use_cases"`
	} `json:"metadata"`
}

// Voices returns the fake's voice models: a few Aura-2 voices in English
// and Spanish and a few first-generation Aura ones.
func Voices() []Voice {
	mk := func(canonical, arch, lang, accent, gender string) Voice {
		name := strings.TrimPrefix(strings.TrimPrefix(canonical, arch+"-"), "aura-")
		name, _, _ = strings.Cut(name, "-")
		v := Voice{
			Name: name, CanonicalName: canonical, Architecture: arch,
			Languages: []string{lang[:2], lang}, Version: "2025-04-07.0",
			UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", len(canonical)*7919%1000000),
		}
		v.Metadata.Accent, v.Metadata.Age = accent, "Adult"
		v.Metadata.Tags = []string{gender, "clear"}
		v.Metadata.UseCases = []string{"IVR"}
		return v
	}
	return []Voice{
		mk("aura-2-thalia-en", "aura-2", "en-US", "American", "feminine"),
		mk("aura-2-andromeda-en", "aura-2", "en-US", "American", "feminine"),
		mk("aura-2-apollo-en", "aura-2", "en-US", "American", "masculine"),
		mk("aura-2-zeus-en", "aura-2", "en-US", "American", "masculine"),
		mk("aura-2-celeste-es", "aura-2", "es-CO", "Colombian", "feminine"),
		mk("aura-2-nestor-es", "aura-2", "es-ES", "Peninsular", "masculine"),
		mk("aura-asteria-en", "aura", "en-US", "American", "feminine"),
		mk("aura-orion-en", "aura", "en-US", "American", "masculine"),
		mk("aura-angus-en", "aura", "en-IE", "Irish", "masculine"),
	}
}

// format is one row of the documented audio format combinations.
type format struct {
	containers []string // first is the default; nil: no container parameter
	rates      []int    // first is the default; one entry: fixed
	bitRates   []int    // allowed bit rates, first the default; nil: none
	minBit     int      // a range instead of a list, when bitRates is nil
	maxBit     int
}

func formats() map[string]format {
	return map[string]format{
		"linear16": {containers: []string{"wav", "none"}, rates: []int{24000, 8000, 16000, 32000, 48000}},
		"mulaw":    {containers: []string{"wav", "none"}, rates: []int{8000, 16000}},
		"alaw":     {containers: []string{"wav", "none"}, rates: []int{8000, 16000}},
		"mp3":      {rates: []int{22050}, bitRates: []int{48000, 32000}},
		"opus":     {containers: []string{"ogg"}, rates: []int{48000}, minBit: 4000, maxBit: 650000},
		"flac":     {rates: []int{48000, 8000, 16000, 22050, 32000}},
		"aac":      {rates: []int{22050}, minBit: 4000, maxBit: 192000},
	}
}

// Server is a running fake. Steer it through the embedded Control.
type Server struct {
	*fakeupstream.Control
	// URL is the server's root; the plugin's base_url is BaseURL().
	URL string

	srv    *httptest.Server
	studio *fakeupstream.Studio
	reqID  atomic.Int64
	ws     wsStats // the speak WebSocket (websocket.go)
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
	mux.HandleFunc("POST "+SpeakPath, s.speak)
	mux.HandleFunc("GET "+SpeakPath, s.speakSocket) // websocket.go
	mux.HandleFunc("GET "+ModelsPath, s.models)
	mux.HandleFunc("/", s.notFound)
	s.srv = httptest.NewServer(s.Judge(tb, Document(), mux))
	s.URL = s.srv.URL
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// BaseURL is what the plugin's base_url setting should be: the root with
// /v1, as in https://api.deepgram.com/v1.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

func (s *Server) requestID() string {
	return fmt.Sprintf("d0000000-0000-4000-8000-%012d", s.reqID.Add(1))
}

// fail answers Deepgram's error body.
func (s *Server) fail(w http.ResponseWriter, status int, code, msg string) {
	id := s.requestID()
	w.Header().Set("dg-request-id", id)
	fakeupstream.WriteJSON(w, status, map[string]string{"err_code": code, "err_msg": msg, "request_id": id})
}

func (s *Server) injected(w http.ResponseWriter, f *fakeupstream.Fault) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	code, msg := "INTERNAL_SERVER_ERROR", "An internal server error occurred."
	switch f.Status {
	case http.StatusUnauthorized:
		code, msg = "INVALID_AUTH", "Invalid credentials."
	case http.StatusForbidden:
		code, msg = "INSUFFICIENT_PERMISSIONS", "Project does not have access to the requested model."
	case http.StatusPaymentRequired:
		code, msg = "ASR_PAYMENT_REQUIRED", "Project does not have enough credits for an API request."
	case http.StatusTooManyRequests:
		code, msg = "TOO_MANY_REQUESTS", "Too many requests. Please try again later."
	case http.StatusServiceUnavailable:
		code, msg = "SERVICE_UNAVAILABLE", "The service is temporarily unavailable."
	}
	if f.Code != "" {
		code = f.Code
	}
	if f.Message != "" {
		msg = f.Message
	}
	s.fail(w, f.Status, code, msg)
}

// begin runs what every handler does first: record, latency, auth, then
// an injected fault. False when it answered.
func (s *Server) begin(w http.ResponseWriter, r *http.Request) (fakeupstream.Request, bool) {
	req, fault, ok := s.Begin(r)
	if !ok {
		return req, false
	}
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Token ")
	if !ok || key == "" || !slices.Contains(s.Keys(Key), key) {
		// A raw key sent as Bearer is as wrong as a bad key: Bearer is
		// for the short-lived tokens of the auth API.
		s.fail(w, http.StatusUnauthorized, "INVALID_AUTH", "Invalid credentials.")
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
		s.fail(w, http.StatusNotFound, "NOT_FOUND", "No route for "+r.Method+" "+r.URL.Path+".")
	}
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.begin(w, r); !ok {
		return
	}
	stt := []map[string]any{{
		"name": "nova-3", "canonical_name": "nova-3", "architecture": "base", "languages": []string{"en", "en-us"},
		"version": "2021-11-10.1", "uuid": "6b28e919-8427-4f32-9847-492e2efd7daf", "batch": true, "streaming": true, "formatted_output": true,
	}}
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{"stt": stt, "tts": Voices()})
}

// speakParams are the documented query parameters of /v1/speak.
func speakParams() []string {
	return []string{"model", "encoding", "container", "sample_rate", "bit_rate", "speed", "callback", "callback_method", "mip_opt_out", "tag"}
}

func (s *Server) speak(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	bad := func(code, format string, args ...any) {
		s.fail(w, http.StatusBadRequest, code, fmt.Sprintf(format, args...))
	}
	q := r.URL.Query()
	for k := range q {
		if !slices.Contains(speakParams(), k) {
			bad("INVALID_QUERY_PARAMETER", "Unknown query parameter %q.", k)
			return
		}
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		bad("PAYLOAD_ERROR", "Content-Type must be application/json.")
		return
	}
	var body struct {
		Text *string `json:"text"`
	}
	if err := fakeupstream.DecodeStrict(req.Body, &body); err != nil {
		bad("PAYLOAD_ERROR", "Failed to deserialize the JSON payload: %v. The body takes only text.", err)
		return
	}
	if body.Text == nil || strings.TrimSpace(*body.Text) == "" {
		bad("PAYLOAD_ERROR", "Input text is required and must not be empty.")
		return
	}
	if n := utf8.RuneCountInString(*body.Text); n > MaxChars {
		bad("PAYLOAD_ERROR", "Input text has %d characters; the limit is %d.", n, MaxChars)
		return
	}
	model := q.Get("model")
	if model == "" {
		model = DefaultModel
	}
	var voice Voice
	if i := slices.IndexFunc(Voices(), func(v Voice) bool { return v.CanonicalName == model }); i >= 0 {
		voice = Voices()[i]
	} else if s.NewModel(model) {
		// A voice model Deepgram has beyond those the fake lists
		// (fakeupstream.Options.NewModels), of a generation the fake
		// does not know: taken like an Aura one, without speed.
		voice = Voice{Name: model, CanonicalName: model, Architecture: "new", UUID: "00000000-0000-0000-0000-00000000000a"}
	} else {
		bad("INVALID_QUERY_PARAMETER", "No such model: %q. See /v1/models for the available voices.", model)
		return
	}
	if q.Get("callback") != "" || q.Get("callback_method") != "" {
		bad("INVALID_QUERY_PARAMETER", "callback is valid but this fake does not call back.")
		return
	}
	if v := q.Get("mip_opt_out"); v != "" && v != "true" && v != "false" {
		bad("INVALID_QUERY_PARAMETER", "mip_opt_out must be true or false.")
		return
	}
	speed := 1.0
	if v := q.Get("speed"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		switch {
		case err != nil || f < 0.7 || f > 1.5:
			bad("INVALID_QUERY_PARAMETER", "speed must be a number from 0.7 to 1.5.")
			return
		case voice.Architecture != "aura-2":
			bad("INVALID_QUERY_PARAMETER", "speed is supported by Aura-2 voices only.")
			return
		}
		speed = f
	}
	encoding := q.Get("encoding")
	if encoding == "" {
		encoding = "mp3" // the documented default
	}
	f, ok := formats()[encoding]
	if !ok {
		bad("INVALID_QUERY_PARAMETER", "Unsupported encoding %q: use linear16, mulaw, alaw, mp3, opus, flac or aac.", encoding)
		return
	}
	container := q.Get("container")
	switch {
	case container != "" && f.containers == nil:
		bad("INVALID_QUERY_PARAMETER", "container is not supported for encoding %s.", encoding)
		return
	case container != "" && !slices.Contains(f.containers, container):
		bad("INVALID_QUERY_PARAMETER", "container %q is not supported for encoding %s; use one of %v.", container, encoding, f.containers)
		return
	case container == "" && f.containers != nil:
		container = f.containers[0]
	}
	rate := f.rates[0]
	if v := q.Get("sample_rate"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || !slices.Contains(f.rates, n) {
			if len(f.rates) == 1 {
				bad("INVALID_QUERY_PARAMETER", "sample_rate is fixed at %d for encoding %s.", f.rates[0], encoding)
			} else {
				bad("INVALID_QUERY_PARAMETER", "sample_rate %s is not supported for encoding %s; use one of %v.", v, encoding, f.rates)
			}
			return
		}
		rate = n
	}
	bitRate := 0
	if len(f.bitRates) > 0 {
		bitRate = f.bitRates[0]
	}
	if v := q.Get("bit_rate"); v != "" {
		n, err := strconv.Atoi(v)
		valid := err == nil && ((f.bitRates != nil && slices.Contains(f.bitRates, n)) || (f.bitRates == nil && f.maxBit > 0 && n >= f.minBit && n <= f.maxBit))
		if !valid {
			bad("INVALID_QUERY_PARAMETER", "bit_rate %s is not supported for encoding %s.", v, encoding)
			return
		}
		bitRate = n
	}
	if (encoding == "mulaw" || encoding == "alaw") && rate != 8000 {
		bad("INVALID_QUERY_PARAMETER", "encoding %s at %d Hz is valid but this fake renders it at 8000 Hz only.", encoding, rate)
		return
	}
	u := fakeupstream.Speak(*body.Text, speed)
	if fs := s.FixedSeconds(); fs > 0 {
		u = fakeupstream.Fixed(fs)
	}
	audio, contentType, err := s.render(u, encoding, container, rate, bitRate)
	if err != nil {
		bad("INVALID_QUERY_PARAMETER", "the fake cannot render %s at %d Hz: %v", encoding, rate, err)
		return
	}
	s.RecordAnswer(audio.Bytes())
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("dg-model-name", model)
	w.Header().Set("dg-model-uuid", voice.UUID)
	w.Header().Set("dg-char-count", strconv.Itoa(utf8.RuneCountInString(*body.Text)))
	w.Header().Set("dg-request-id", s.requestID())
	w.WriteHeader(http.StatusOK)
	s.WriteAudio(r.Context(), w, audio)
}

// render renders u as encoding in container at rate: the fake's speech
// in real audio of that encoding, with the media type it is sent as.
// mp3 uses the bit rate (bit/s); Opus and AAC are coded at the fake's own.
func (s *Server) render(u fakeupstream.Utterance, encoding, container string, rate, bitRate int) (fakeupstream.Audio, string, error) {
	switch encoding {
	case "linear16":
		if container == "wav" {
			return s.studio.WAV(u, rate), "audio/wav", nil
		}
		return s.studio.PCM(u, rate), "audio/l16;rate=" + strconv.Itoa(rate), nil
	case "mulaw", "alaw":
		format := map[string]string{"mulaw": "ulaw", "alaw": "alaw"}[encoding]
		a, _, err := s.studio.Encoded(u, format, rate, 0)
		if err != nil || container != "wav" {
			return a, "audio/" + encoding, err
		}
		return g711WAV(a.Bytes(), encoding, rate), "audio/wav", nil
	case "aac":
		// The fake's AAC is coded at 24 kHz; Deepgram's is 22,050 Hz:
		// its frames say so (the tone plays a little lower, which no
		// test hears).
		return adtsAt(s.studio.AAC(u), 22050), "audio/aac", nil
	case "opus":
		a, _, err := s.studio.Encoded(u, "opus", 0, 0)
		return a, "audio/ogg", err
	}
	a, mediaType, err := s.studio.Encoded(u, encoding, rate, bitRate/1000)
	return a, mediaType, err
}

// adtsSampleRates are the ADTS sampling frequency indexes (ISO/IEC
// 14496-3, 1.6.3.4), by index.
var adtsSampleRates = []int{96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350}

// adtsAt rewrites the sampling frequency index of every ADTS frame of a
// to rate's.
func adtsAt(a fakeupstream.Audio, rate int) fakeupstream.Audio {
	idx := byte(slices.Index(adtsSampleRates, rate))
	data := a.Bytes()
	for i := 0; i+7 <= len(data); {
		data[i+2] = data[i+2]&^0x3c | idx<<2
		n := int(data[i+3]&3)<<11 | int(data[i+4])<<3 | int(data[i+5]>>5)
		if n < 7 {
			break
		}
		i += n
	}
	return fakeupstream.Audio{Parts: [][]byte{data}, Len: a.Len}
}

// g711WAV wraps G.711 samples in a WAV file of format tag 7 (mu-law) or
// 6 (A-law), as Deepgram's container=wav sends them.
func g711WAV(samples []byte, encoding string, rate int) fakeupstream.Audio {
	tag := uint16(6)
	if encoding == "mulaw" {
		tag = 7
	}
	h := make([]byte, 44, 44+len(samples))
	copy(h[0:], "RIFF")
	binary.LittleEndian.PutUint32(h[4:], uint32(36+len(samples)))
	copy(h[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(h[16:], 16)
	binary.LittleEndian.PutUint16(h[20:], tag)
	binary.LittleEndian.PutUint16(h[22:], 1)
	binary.LittleEndian.PutUint32(h[24:], uint32(rate))
	binary.LittleEndian.PutUint32(h[28:], uint32(rate))
	binary.LittleEndian.PutUint16(h[32:], 1)
	binary.LittleEndian.PutUint16(h[34:], 8)
	copy(h[36:], "data")
	binary.LittleEndian.PutUint32(h[40:], uint32(len(samples)))
	return fakeupstream.Audio{Parts: [][]byte{append(h, samples...)}, Len: len(h) + len(samples)}
}

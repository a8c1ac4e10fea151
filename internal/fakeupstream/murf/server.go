// Package murf is a fake of the Murf API for tests and benchmarks: speech
// synthesis as JSON (base64 audio or an audio file URL, with word
// durations), streamed speech, and the voice list.
//
// It follows the published API reference and Murf's official SDK. Every
// request carries the key in an "api-key" header: without one Murf
// answers 400 and with a wrong one 403. Errors are Murf's envelope
// {"error_message", "error_code"} (the code is the HTTP status). Bodies
// are JSON with unknown fields rejected. POST /v1/speech/generate takes
// voiceId, text (at most 3,000 characters), format (MP3, WAV, FLAC, ALAW,
// ULAW, PCM, OGG), sampleRate (8000, 24000, 44100, 48000; default 44100),
// channelType (MONO, STEREO), encodeAsBase64, modelVersion (GEN2), rate
// and pitch (-50 to 50), style, variation (0 to 5), locale,
// multiNativeLocale, pronunciationDictionary, audioDuration and
// wordDurationsAsOriginalText; it answers {audioFile, encodedAudio,
// audioLengthInSeconds, wordDurations: [{word, startMs, endMs}],
// consumedCharacterCount, remainingCharacterCount}. POST /v1/speech/stream
// takes the same voice fields plus model (FALCON, the default, or GEN2)
// and sampleRate 8000, 16000, 24000, 44100 or 48000 (default 24000 for
// FALCON, 44100 for GEN2), and answers the audio itself, chunked. rate
// sets the speaking speed to 1 + rate/100 of normal.
//
// Endpoints:
//
//	POST /v1/speech/generate   JSON
//	POST /v1/speech/stream     audio, chunked
//	GET  /v1/speech/voices     [{voiceId, displayName, gender, locale, ...}]; model
//	GET  /files/{name}         an audioFile URL's audio (no key, as a presigned URL)
//
// MP3, WAV, PCM and FLAC are real audio at the rate asked; LastAnswer
// holds the audio of the latest answer.
//
// Deliberate gaps: ALAW, ULAW and OGG are valid formats the fake does not
// render, nor STEREO (400); style, locale, pronunciations, pitch and
// variation are checked but change nothing, and audioDuration does not
// stretch the clip.
package murf

import (
	_ "embed"
	"encoding/base64"
	"fmt"
	"math"
	"mime"
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

// apiDocument is the part of Murf's published OpenAPI document the
// fake serves (apispec/murf.yaml, whose header names its source, murf.ai/api/docs):
// it judges every request and answer (fakeupstream.Control.Judge).
//
//go:embed apispec/murf.yaml
var apiDocument []byte

// Document returns the fake's API document, parsed once.
var Document = sync.OnceValue(func() *fakeupstream.Document {
	return fakeupstream.MustLoadDocument("Murf", apiDocument, fakeupstream.Excuse{
		Operation: "POST /v1/speech/stream",
		Contains:  "operation response content type '",
		Why: "the document gives the 200 answer as application/json, though the endpoint streams the audio " +
			"itself, as the document's own description of the endpoint says",
	})
})

// Key is the API key the fake accepts unless Options.Keys says otherwise.
const Key = "ap2_fake0000-1111-2222-3333-444455556666"

// Paths of the fake's endpoints.
const (
	GeneratePath = "/v1/speech/generate"
	StreamPath   = "/v1/speech/stream"
	VoicesPath   = "/v1/speech/voices"
	FilesPath    = "/files/"
)

// Ids of the fake's voices (Murf's own voice ids).
const (
	VoiceNatalie = "en-US-natalie"
	VoiceKen     = "en-US-ken"
	VoiceHazel   = "en-UK-hazel"
	VoiceAxel    = "fr-FR-axel"
)

// MaxText is the longest text one request takes.
const MaxText = 3000

// GenerateRates and StreamRates are the documented sample rates of the two
// synthesis endpoints.
func GenerateRates() []int { return []int{8000, 24000, 44100, 48000} }

// StreamRates: see GenerateRates.
func StreamRates() []int { return []int{8000, 16000, 24000, 44100, 48000} }

// voice is a voice as GET /v1/speech/voices lists it.
type voice struct {
	VoiceID          string                 `json:"voiceId"`
	DisplayName      string                 `json:"displayName"`
	Gender           string                 `json:"gender"`
	Locale           string                 `json:"locale"`
	DisplayLanguage  string                 `json:"displayLanguage"`
	Accent           string                 `json:"accent"`
	Description      string                 `json:"description"`
	AvailableStyles  []string               `json:"availableStyles"`
	SupportedLocales map[string]styleDetail `json:"supportedLocales"`
}

type styleDetail struct {
	Detail          string   `json:"detail"`
	AvailableStyles []string `json:"availableStyles"`
}

func stock() []voice {
	mk := func(id, name, gender, locale, lang, accent string) voice {
		styles := []string{"Conversational", "Promo", "Narration"}
		return voice{
			VoiceID: id, DisplayName: name, Gender: gender, Locale: locale, DisplayLanguage: lang,
			Accent: accent, Description: "fake voice", AvailableStyles: styles,
			SupportedLocales: map[string]styleDetail{locale: {Detail: lang + " (" + accent + ")", AvailableStyles: styles}},
		}
	}
	return []voice{
		mk(VoiceNatalie, "Natalie (F)", "Female", "en-US", "English", "US & Canada"),
		mk(VoiceKen, "Ken (M)", "Male", "en-US", "English", "US & Canada"),
		mk(VoiceHazel, "Hazel (F)", "Female", "en-UK", "English", "UK"),
		mk(VoiceAxel, "Axel (M)", "Male", "fr-FR", "French", "France"),
	}
}

// Server is a running fake. Steer it through the embedded Control.
type Server struct {
	*fakeupstream.Control
	// URL is the server's root, which is also the plugin's base_url.
	URL string

	srv       *httptest.Server
	studio    *fakeupstream.Studio
	mu        sync.Mutex
	files     map[string]fileAudio
	fileOnly  bool
	fileCount atomic.Int64
}

type fileAudio struct {
	data        []byte
	contentType string
}

// New starts a fake. With tb set it is closed at tb.Cleanup; otherwise
// call Close.
func New(tb testing.TB, opts fakeupstream.Options) *Server {
	studio, err := fakeupstream.NewStudio()
	if err != nil {
		panic(err) // the embedded tone is broken: a build problem
	}
	s := &Server{Control: fakeupstream.NewControl(opts), studio: studio, files: map[string]fileAudio{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+GeneratePath, s.generate)
	mux.HandleFunc("POST "+StreamPath, s.stream)
	mux.HandleFunc("GET "+VoicesPath, s.listVoices)
	mux.HandleFunc("GET "+FilesPath+"{name}", s.file)
	mux.HandleFunc("/", s.notFound)
	s.srv = httptest.NewServer(s.Judge(tb, Document(), mux, FilesPath))
	s.URL = s.srv.URL
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// BaseURL is what the plugin's base_url setting should be (the root, as in
// https://api.murf.ai).
func (s *Server) BaseURL() string { return s.URL }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// SetAudioFileOnly makes /v1/speech/generate answer an audioFile URL and
// no encodedAudio even when encodeAsBase64 is set, so a client's fallback
// to the URL can be tested.
func (s *Server) SetAudioFileOnly(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fileOnly = on
}

func knows(id string) bool {
	return slices.ContainsFunc(stock(), func(v voice) bool { return strings.EqualFold(v.VoiceID, id) })
}

// fail answers Murf's error envelope.
func fail(w http.ResponseWriter, status int, msg string) {
	fakeupstream.WriteJSON(w, status, map[string]any{"error_message": msg, "error_code": status})
}

func invalid(w http.ResponseWriter, format string, args ...any) {
	fail(w, http.StatusBadRequest, fmt.Sprintf(format, args...))
}

func injected(w http.ResponseWriter, f *fakeupstream.Fault) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	msg := "Internal server error"
	switch f.Status {
	case http.StatusUnauthorized, http.StatusForbidden:
		msg = "Invalid 'api-key' header passed"
	case http.StatusPaymentRequired:
		msg = "Character limit exhausted"
	case http.StatusTooManyRequests:
		msg = "Concurrency limit reached, please retry later"
	case http.StatusServiceUnavailable:
		msg = "Service unavailable"
	}
	if f.Message != "" {
		msg = f.Message
	}
	fail(w, f.Status, msg)
}

// begin runs what every API handler does first: record, latency, auth,
// then an injected fault. It returns false when it answered.
func (s *Server) begin(w http.ResponseWriter, r *http.Request) (fakeupstream.Request, bool) {
	req, fault, ok := s.Begin(r)
	if !ok {
		return req, false
	}
	key := r.Header.Get("api-key")
	switch {
	case key == "" && r.Header.Get("token") == "":
		invalid(w, "Missing 'api-key' or 'token' header")
		return req, false
	case key == "" || !slices.Contains(s.Keys(Key), key):
		fail(w, http.StatusForbidden, "Invalid 'api-key' header passed")
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
		fail(w, http.StatusNotFound, "Resource not found")
	}
}

// voiceFields are the fields both synthesis endpoints share.
type voiceFields struct {
	VoiceID                 *string         `json:"voiceId"`
	Text                    *string         `json:"text"`
	Format                  *string         `json:"format"`
	SampleRate              *float64        `json:"sampleRate"`
	ChannelType             *string         `json:"channelType"`
	Rate                    *int            `json:"rate"`
	Pitch                   *int            `json:"pitch"`
	Style                   *string         `json:"style"`
	Variation               *int            `json:"variation"`
	Locale                  *string         `json:"locale"`
	MultiNativeLocale       *string         `json:"multiNativeLocale"`
	PronunciationDictionary map[string]pron `json:"pronunciationDictionary"`
}

type pron struct {
	Type          string `json:"type"`
	Pronunciation string `json:"pronunciation"`
}

type generateRequest struct {
	voiceFields
	EncodeAsBase64              *bool    `json:"encodeAsBase64"`
	ModelVersion                *string  `json:"modelVersion"`
	AudioDuration               *float64 `json:"audioDuration"`
	WordDurationsAsOriginalText *bool    `json:"wordDurationsAsOriginalText"`
}

type streamRequest struct {
	voiceFields
	Model *string `json:"model"`
}

// job is a validated synthesis request.
type job struct {
	text, format string
	rate         int
	speed        float64
}

// decode reads a JSON body into v, answering 400 (false) on bad JSON or
// unknown fields.
func decode(w http.ResponseWriter, r *http.Request, body []byte, v any) bool {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		invalid(w, "Content-Type must be application/json")
		return false
	}
	if err := fakeupstream.DecodeStrict(body, v); err != nil {
		if field, ok := fakeupstream.UnknownField(err); ok {
			invalid(w, "Unrecognized field %q", field)
			return false
		}
		invalid(w, "Invalid request body: %v", err)
		return false
	}
	return true
}

// check validates the shared fields against rates (the endpoint's) and
// returns the job; false when it answered.
func check(w http.ResponseWriter, f *voiceFields, rates []int, defaultRate int, gen2 bool) (job, bool) {
	j := job{format: "WAV", rate: defaultRate, speed: 1}
	switch {
	case f.VoiceID == nil || *f.VoiceID == "":
		invalid(w, "voiceId is required")
		return j, false
	case f.Text == nil || strings.TrimSpace(*f.Text) == "":
		invalid(w, "text is required")
		return j, false
	case utf8.RuneCountInString(*f.Text) > MaxText:
		invalid(w, "text exceeds the maximum of %d characters", MaxText)
		return j, false
	case !knows(*f.VoiceID):
		invalid(w, "Invalid voice_id: %s", *f.VoiceID)
		return j, false
	}
	j.text = *f.Text
	if f.Format != nil {
		j.format = strings.ToUpper(*f.Format)
	}
	switch j.format {
	case "MP3", "WAV", "PCM", "FLAC":
	case "ALAW", "ULAW", "OGG":
		invalid(w, "format %s is valid but this fake renders MP3, WAV, PCM and FLAC only", j.format)
		return j, false
	default:
		invalid(w, "Invalid format %q. Valid values: MP3, WAV, FLAC, ALAW, ULAW, PCM, OGG", *f.Format)
		return j, false
	}
	if f.SampleRate != nil {
		r := int(*f.SampleRate)
		if float64(r) != *f.SampleRate || !slices.Contains(rates, r) {
			invalid(w, "Invalid sampleRate %g. Valid values are %v", *f.SampleRate, rates)
			return j, false
		}
		j.rate = r
	}
	if f.ChannelType != nil {
		switch strings.ToUpper(*f.ChannelType) {
		case "MONO":
		case "STEREO":
			invalid(w, "channelType STEREO is valid but this fake renders MONO only")
			return j, false
		default:
			invalid(w, "Invalid channelType %q. Valid values: STEREO, MONO", *f.ChannelType)
			return j, false
		}
	}
	for name, v := range map[string]*int{"rate": f.Rate, "pitch": f.Pitch} {
		if v != nil && (*v < -50 || *v > 50) {
			invalid(w, "%s must be between -50 and 50", name)
			return j, false
		}
	}
	if f.Rate != nil {
		j.speed = 1 + float64(*f.Rate)/100
	}
	if f.Variation != nil {
		if !gen2 {
			invalid(w, "variation is only available for the Gen2 model")
			return j, false
		}
		if *f.Variation < 0 || *f.Variation > 5 {
			invalid(w, "variation must be between 0 and 5")
			return j, false
		}
	}
	for word, p := range f.PronunciationDictionary {
		if (p.Type != "IPA" && p.Type != "SAY_AS") || p.Pronunciation == "" {
			invalid(w, "pronunciationDictionary[%q]: type must be IPA or SAY_AS with a pronunciation", word)
			return j, false
		}
	}
	return j, true
}

func (s *Server) utterance(j job) fakeupstream.Utterance {
	if fs := s.FixedSeconds(); fs > 0 {
		return fakeupstream.Fixed(fs)
	}
	return fakeupstream.Speak(j.text, j.speed)
}

// contentTypes are the Content-Types of the answers by format.
var contentTypes = map[string]string{"PCM": "application/octet-stream", "WAV": "audio/wav", "MP3": "audio/mpeg", "FLAC": "audio/flac"}

// render renders u in j's format at j's rate (an MP3 at Murf's own
// bitrate, which the API does not let the caller choose), records it as
// the latest answer and returns it with its Content-Type.
func (s *Server) render(j job, u fakeupstream.Utterance) (fakeupstream.Audio, string, error) {
	a, _, err := s.studio.Encoded(u, strings.ToLower(j.format), j.rate, 0)
	if err != nil {
		return a, "", err
	}
	s.RecordAnswer(a.Bytes())
	return a, contentTypes[j.format], nil
}

func (s *Server) generate(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	var b generateRequest
	if !decode(w, r, req.Body, &b) {
		return
	}
	if b.ModelVersion != nil && *b.ModelVersion != "GEN2" {
		invalid(w, "Invalid modelVersion %q. Valid values: GEN2", *b.ModelVersion)
		return
	}
	if b.AudioDuration != nil && *b.AudioDuration < 0 {
		invalid(w, "audioDuration must not be negative")
		return
	}
	j, ok := check(w, &b.voiceFields, GenerateRates(), 44100, true)
	if !ok {
		return
	}
	u := s.utterance(j)
	audio, contentType, err := s.render(j, u)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	words := make([]map[string]any, 0, len(u.Words))
	for i, wd := range u.Words {
		words = append(words, map[string]any{
			"word": wd.Text, "startMs": int(math.Round(wd.Start * 1000)), "endMs": int(math.Round(wd.End * 1000)),
			"sourceWordIndex": i, "pitchScaleMinimum": 0, "pitchScaleMaximum": 0,
		})
	}
	chars := utf8.RuneCountInString(j.text)
	// encodedAudio is there only with the audio in it: the document types
	// it as a string, not a null.
	answer := map[string]any{
		"audioFile":               "",
		"audioLengthInSeconds":    u.Seconds,
		"wordDurations":           words,
		"consumedCharacterCount":  chars,
		"remainingCharacterCount": 100000 - chars,
	}
	s.mu.Lock()
	fileOnly := s.fileOnly
	s.mu.Unlock()
	if b.EncodeAsBase64 != nil && *b.EncodeAsBase64 && !fileOnly {
		answer["encodedAudio"] = base64.StdEncoding.EncodeToString(audio.Bytes())
	} else {
		name := fmt.Sprintf("speech-%d.%s", s.fileCount.Add(1), strings.ToLower(j.format))
		s.mu.Lock()
		s.files[name] = fileAudio{data: audio.Bytes(), contentType: contentType}
		s.mu.Unlock()
		answer["audioFile"] = s.URL + FilesPath + name
	}
	fakeupstream.WriteJSON(w, http.StatusOK, answer)
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	var b streamRequest
	if !decode(w, r, req.Body, &b) {
		return
	}
	model := "FALCON"
	if b.Model != nil {
		model = strings.ToUpper(*b.Model)
	}
	defaultRate := 24000
	switch model {
	case "FALCON":
	case "GEN2":
		defaultRate = 44100
	default:
		// A model of fakeupstream.Options.NewModels is taken like FALCON.
		if s.NewModel(*b.Model) {
			break
		}
		invalid(w, "Invalid model %q. Valid values: FALCON, GEN2", *b.Model)
		return
	}
	j, ok := check(w, &b.voiceFields, StreamRates(), defaultRate, model == "GEN2")
	if !ok {
		return
	}
	audio, contentType, err := s.render(j, s.utterance(j))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	s.WriteAudio(r.Context(), w, audio)
}

// file serves an audioFile URL: no key, as Murf's presigned links need
// none.
func (s *Server) file(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := s.Begin(r); !ok {
		return
	}
	s.mu.Lock()
	f, ok := s.files[r.PathValue("name")]
	s.mu.Unlock()
	if !ok {
		http.Error(w, "NoSuchKey", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", f.contentType)
	_, _ = w.Write(f.data)
}

func (s *Server) listVoices(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.begin(w, r); !ok {
		return
	}
	if m := r.URL.Query().Get("model"); m != "" && m != "FALCON" && m != "GEN2" {
		invalid(w, "Invalid model %q. Valid values: FALCON, GEN2", m)
		return
	}
	fakeupstream.WriteJSON(w, http.StatusOK, stock())
}

// Package resemble is a fake of the Resemble AI API for tests and
// benchmarks. Resemble serves synthesis from one host
// (https://f.cluster.resemble.ai: /synthesize, /stream) and everything
// else from another (https://app.resemble.ai/api/v2: voices, recordings);
// the fake serves both from one server, the synthesis paths at its root
// (SynthesisURL) and the API under /api/v2 (BaseURL).
//
// It follows the published API reference. Every request carries
// "Authorization: Bearer <token>" (the older "Token token=<token>" and a
// bare token are accepted too); a missing or wrong token is 401. Errors
// are {"success": false, "message", "errors"}. POST /synthesize takes
// voice_uuid, data (text or SSML, at most 3,000 characters), model,
// project_uuid, title, precision (MULAW, PCM_16, PCM_24, PCM_32; default
// PCM_32), output_format (wav, mp3), sample_rate (a string: "8000",
// "16000", "22050", "32000", "44100", "48000"), use_hd and
// apply_custom_pronunciations, unknown fields rejected, and answers
// {success, audio_content (base64), audio_timestamps {graph_chars,
// graph_times, phon_chars, phon_times}, duration, synth_duration,
// output_format, sample_rate, title, issues}; graph_times hold each
// character's exact [start, end] in the audio. POST /stream takes the same
// but no output_format or title, at most 2,000 characters, and streams a
// WAV whose header (44 bytes) says "unknown length".
//
// Voices: GET /api/v2/voices?page=N&page_size=M pages {success, page,
// num_pages, page_size, items}; POST /api/v2/voices {name, voice_type
// (rapid, professional), language, dataset_url, callback_uri} creates a
// voice ("initializing"); POST /api/v2/voices/{uuid}/recordings
// (multipart: file, name, text, emotion, is_active, fill) adds a
// recording; POST /api/v2/voices/{uuid}/build trains it, which needs at
// least 3 active recordings for a rapid voice, as documented (the fake's
// training finishes at once); GET and DELETE /api/v2/voices/{uuid}.
// Synthesis with a voice that is not finished answers 400.
//
// Every answer is real audio at the sample_rate asked (an mp3 at its own
// bitrate); LastAnswer holds the audio of the latest answer.
//
// Deliberate gaps: only PCM_16 renders (the other precisions, PCM_32 the
// default among them, answer 400);
// SSML is spoken as text; dataset_url voices never train.
package resemble

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
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
	"unicode/utf8"

	"github.com/voxgate/voxgate/internal/fakeupstream"
)

// Key is the API token the fake accepts unless Options.Keys says
// otherwise.
const Key = "rsmbl-fake-token-0123456789abcdef"

// Paths of the fake's endpoints: synthesis at the root, the API under
// APIPrefix.
const (
	SynthesizePath = "/synthesize"
	StreamPath     = "/stream"
	APIPrefix      = "/api/v2"
	VoicesPath     = APIPrefix + "/voices"
)

// VoicePath returns the path of one voice ("" suffix), or of its
// "/recordings" or "/build".
func VoicePath(uuid, suffix string) string { return VoicesPath + "/" + uuid + suffix }

// Ids of the fake's stock voices.
const (
	VoiceLucy  = "fb2d2858"
	VoiceAaron = "5bb13f03"
	VoiceMarie = "a7c3e091"
)

// Text limits of the two synthesis endpoints.
const (
	MaxSynthesizeText = 3000
	MaxStreamText     = 2000
)

// SampleRates returns the documented sample_rate values.
func SampleRates() []string {
	return []string{"8000", "16000", "22050", "32000", "44100", "48000"}
}

// DefaultRate is the rate of an answer that names none (undocumented;
// the fake's choice).
const DefaultRate = 22050

// MinRapidRecordings is how many recordings a rapid voice needs before it
// can be built.
const MinRapidRecordings = 3

// voice is a voice as the API lists it.
type voice struct {
	UUID               string          `json:"uuid"`
	Name               string          `json:"name"`
	Status             string          `json:"status"`
	DefaultLanguage    string          `json:"default_language"`
	SupportedLanguages []string        `json:"supported_languages"`
	VoiceType          string          `json:"voice_type"`
	ComponentStatus    map[string]any  `json:"component_status"`
	APISupport         map[string]bool `json:"api_support"`
	Source             string          `json:"source"`
	CreatedAt          string          `json:"created_at"`
	UpdatedAt          string          `json:"updated_at"`

	recordings int // active recordings
}

func newVoice(uuid, name, lang, typ, status string) voice {
	now := time.Now().UTC().Format(time.RFC3339)
	return voice{
		UUID: uuid, Name: name, Status: status, DefaultLanguage: lang, SupportedLanguages: []string{lang},
		VoiceType: typ, Source: "Custom Voice", CreatedAt: now, UpdatedAt: now,
		ComponentStatus: map[string]any{"text_to_speech": map[string]string{"status": status}},
		APISupport:      map[string]bool{"sync": true, "async": true, "direct_synthesis": true, "streaming": true},
	}
}

func stock() []voice {
	return []voice{
		newVoice(VoiceLucy, "Lucy", "en-US", "professional", "finished"),
		newVoice(VoiceAaron, "Aaron", "en-US", "rapid", "finished"),
		newVoice(VoiceMarie, "Marie", "fr-FR", "rapid", "finished"),
	}
}

// Server is a running fake. Steer it through the embedded Control.
type Server struct {
	*fakeupstream.Control
	// URL is the server's root.
	URL string

	srv      *httptest.Server
	studio   *fakeupstream.Studio
	mu       sync.Mutex
	voices   []voice
	pageSize int
	ids      atomic.Int64
}

// New starts a fake. With tb set it is closed at tb.Cleanup; otherwise
// call Close.
func New(tb testing.TB, opts fakeupstream.Options) *Server {
	studio, err := fakeupstream.NewStudio()
	if err != nil {
		panic(err) // the embedded tone is broken: a build problem
	}
	s := &Server{Control: fakeupstream.NewControl(opts), studio: studio, voices: stock(), pageSize: 1000}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+SynthesizePath, s.synthesize)
	mux.HandleFunc("POST "+StreamPath, s.stream)
	mux.HandleFunc("GET "+VoicesPath, s.listVoices)
	mux.HandleFunc("POST "+VoicesPath, s.createVoice)
	mux.HandleFunc("GET "+VoicesPath+"/{uuid}", s.getVoice)
	mux.HandleFunc("DELETE "+VoicesPath+"/{uuid}", s.deleteVoice)
	mux.HandleFunc("POST "+VoicesPath+"/{uuid}/recordings", s.createRecording)
	mux.HandleFunc("POST "+VoicesPath+"/{uuid}/build", s.build)
	mux.HandleFunc("/", s.notFound)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// BaseURL is what the plugin's base_url setting should be: the API root,
// as in https://app.resemble.ai/api/v2.
func (s *Server) BaseURL() string { return s.URL + APIPrefix }

// SynthesisURL is what the plugin's synthesis_url setting should be: the
// synthesis host, as in https://f.cluster.resemble.ai.
func (s *Server) SynthesisURL() string { return s.URL }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// SetPageSize caps how many voices one page of the list holds, whatever
// the client asks for, to exercise pagination.
func (s *Server) SetPageSize(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pageSize = max(n, 1)
}

// VoiceIDs returns the uuids of the voices the fake knows, cloned ones
// included.
func (s *Server) VoiceIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, len(s.voices))
	for i, v := range s.voices {
		ids[i] = v.UUID
	}
	return ids
}

// find returns the index of voice uuid, -1 if unknown; s.mu held.
func (s *Server) find(uuid string) int {
	return slices.IndexFunc(s.voices, func(v voice) bool { return v.UUID == uuid })
}

// fail answers Resemble's error envelope.
func fail(w http.ResponseWriter, status int, msg string, fieldErrs map[string][]string) {
	body := map[string]any{"success": false, "message": msg}
	if fieldErrs != nil {
		body["errors"] = fieldErrs
	}
	fakeupstream.WriteJSON(w, status, body)
}

func invalid(w http.ResponseWriter, format string, args ...any) {
	fail(w, http.StatusBadRequest, fmt.Sprintf(format, args...), nil)
}

func injected(w http.ResponseWriter, f *fakeupstream.Fault) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	msg := "Internal server error"
	switch f.Status {
	case http.StatusUnauthorized:
		msg = "Invalid API token"
	case http.StatusTooManyRequests:
		msg = "Rate limit exceeded, please slow down"
	case http.StatusServiceUnavailable:
		msg = "Service temporarily unavailable"
	}
	if f.Message != "" {
		msg = f.Message
	}
	fail(w, f.Status, msg, nil)
}

// token reads the token of an Authorization header in any of the forms
// Resemble accepts.
func token(h string) string {
	if t, ok := strings.CutPrefix(h, "Bearer "); ok {
		return t
	}
	if t, ok := strings.CutPrefix(h, "Token token="); ok {
		return strings.Trim(t, `"`)
	}
	return h
}

// begin runs what every handler does first: record, latency, auth, then
// an injected fault. It returns false when it answered.
func (s *Server) begin(w http.ResponseWriter, r *http.Request) (fakeupstream.Request, bool) {
	req, fault, ok := s.Begin(r)
	if !ok {
		return req, false
	}
	h := r.Header.Get("Authorization")
	switch {
	case h == "":
		fail(w, http.StatusUnauthorized, "Missing API token: send Authorization: Bearer <token>", nil)
		return req, false
	case !slices.Contains(s.Keys(Key), token(h)):
		fail(w, http.StatusUnauthorized, "Invalid API token", nil)
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
		fail(w, http.StatusNotFound, "Not found", nil)
	}
}

// decode reads a JSON body strictly into v; false when it answered.
func decode(w http.ResponseWriter, r *http.Request, body []byte, v any) bool {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		invalid(w, "Content-Type must be application/json")
		return false
	}
	if err := fakeupstream.DecodeStrict(body, v); err != nil {
		if field, ok := fakeupstream.UnknownField(err); ok {
			fail(w, http.StatusBadRequest, "Invalid parameters", map[string][]string{field: {"is not a permitted parameter"}})
			return false
		}
		invalid(w, "Invalid JSON body: %v", err)
		return false
	}
	return true
}

// synthesisFields are the fields /synthesize and /stream share.
type synthesisFields struct {
	VoiceUUID                 *string `json:"voice_uuid"`
	Data                      *string `json:"data"`
	ProjectUUID               *string `json:"project_uuid"`
	Model                     *string `json:"model"`
	Precision                 *string `json:"precision"`
	SampleRate                *string `json:"sample_rate"`
	UseHD                     *bool   `json:"use_hd"`
	ApplyCustomPronunciations *bool   `json:"apply_custom_pronunciations"`
}

type synthesizeRequest struct {
	synthesisFields
	Title        *string `json:"title"`
	OutputFormat *string `json:"output_format"`
}

// job is a validated synthesis request.
type job struct {
	text, format string
	rate         int
}

// check validates the shared fields with the endpoint's text limit;
// false when it answered.
func (s *Server) check(w http.ResponseWriter, f *synthesisFields, maxText int, format string) (job, bool) {
	j := job{format: format, rate: DefaultRate}
	switch {
	case f.VoiceUUID == nil || *f.VoiceUUID == "":
		fail(w, http.StatusBadRequest, "Invalid parameters", map[string][]string{"voice_uuid": {"can't be blank"}})
		return j, false
	case f.Data == nil || strings.TrimSpace(*f.Data) == "":
		fail(w, http.StatusBadRequest, "Invalid parameters", map[string][]string{"data": {"can't be blank"}})
		return j, false
	case utf8.RuneCountInString(*f.Data) > maxText:
		invalid(w, "data exceeds the maximum of %d characters", maxText)
		return j, false
	}
	j.text = *f.Data
	// A model of fakeupstream.Options.NewModels is taken like the others:
	// they all take the same request.
	if f.Model != nil && !slices.Contains([]string{"chatterbox", "chatterbox-turbo", "chatterbox-multilingual"}, *f.Model) && !s.NewModel(*f.Model) {
		invalid(w, "Unknown model %q", *f.Model)
		return j, false
	}
	if f.SampleRate != nil {
		if !slices.Contains(SampleRates(), *f.SampleRate) {
			invalid(w, "sample_rate must be one of %s", strings.Join(SampleRates(), ", "))
			return j, false
		}
		j.rate, _ = strconv.Atoi(*f.SampleRate)
	}
	if j.format == "wav" {
		precision := "PCM_32"
		if f.Precision != nil {
			precision = *f.Precision
		}
		switch precision {
		case "PCM_16":
		case "PCM_24", "PCM_32", "MULAW":
			invalid(w, "precision %s is valid but this fake renders PCM_16 only", precision)
			return j, false
		default:
			invalid(w, "precision must be one of MULAW, PCM_16, PCM_24, PCM_32")
			return j, false
		}
	}
	s.mu.Lock()
	i := s.find(*f.VoiceUUID)
	var status string
	if i >= 0 {
		status = s.voices[i].Status
	}
	s.mu.Unlock()
	switch {
	case i < 0:
		fail(w, http.StatusNotFound, fmt.Sprintf("Voice %s not found", *f.VoiceUUID), nil)
		return j, false
	case status != "finished":
		invalid(w, "Voice %s is not ready (status %s)", *f.VoiceUUID, status)
		return j, false
	}
	return j, true
}

func (s *Server) utterance(j job) fakeupstream.Utterance {
	if fs := s.FixedSeconds(); fs > 0 {
		return fakeupstream.Fixed(fs)
	}
	return fakeupstream.Speak(j.text, 1)
}

func (s *Server) synthesize(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	var b synthesizeRequest
	if !decode(w, r, req.Body, &b) {
		return
	}
	format := "wav"
	if b.OutputFormat != nil {
		format = *b.OutputFormat
	}
	if format != "wav" && format != "mp3" {
		invalid(w, "output_format must be wav or mp3")
		return
	}
	j, ok := s.check(w, &b.synthesisFields, MaxSynthesizeText, format)
	if !ok {
		return
	}
	u := s.utterance(j)
	a, _, err := s.studio.Encoded(u, format, j.rate, 0)
	if err != nil {
		fail(w, http.StatusInternalServerError, err.Error(), nil)
		return
	}
	audio := a.Bytes()
	s.RecordAnswer(audio)
	chars := make([]string, len(u.Chars))
	times := make([][]float64, len(u.Chars))
	for i, c := range u.Chars {
		chars[i], times[i] = c.Text, []float64{c.Start, c.End}
	}
	title := ""
	if b.Title != nil {
		title = *b.Title
	}
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{
		"success":          true,
		"audio_content":    base64.StdEncoding.EncodeToString(audio),
		"audio_timestamps": map[string]any{"graph_chars": chars, "graph_times": times, "phon_chars": []string{}, "phon_times": [][]float64{}},
		"duration":         u.Seconds,
		"synth_duration":   0.05,
		"output_format":    format,
		"sample_rate":      j.rate,
		"title":            title,
		"issues":           []string{},
	})
}

// streamingHeader is the 44-byte header of a streamed WAV, whose sizes
// say "unknown length".
func streamingHeader(rate int) []byte {
	h := fakeupstream.WAVHeader(rate, 0)
	binary.LittleEndian.PutUint32(h[4:], 0xFFFFFFFF)
	binary.LittleEndian.PutUint32(h[40:], 0xFFFFFFFF)
	return h
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	var b synthesisFields
	if !decode(w, r, req.Body, &b) {
		return
	}
	j, ok := s.check(w, &b, MaxStreamText, "wav")
	if !ok {
		return
	}
	pcm := s.studio.PCM(s.utterance(j), j.rate)
	audio := fakeupstream.Audio{Parts: append([][]byte{streamingHeader(j.rate)}, pcm.Parts...), Len: 44 + pcm.Len}
	s.RecordAnswer(audio.Bytes())
	w.Header().Set("Content-Type", "audio/wav")
	w.WriteHeader(http.StatusOK)
	s.WriteAudio(r.Context(), w, audio)
}

func (s *Server) listVoices(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.begin(w, r); !ok {
		return
	}
	q := r.URL.Query()
	page, err := strconv.Atoi(q.Get("page"))
	if err != nil || page < 1 {
		fail(w, http.StatusBadRequest, "Invalid parameters", map[string][]string{"page": {"is required and must be a positive integer"}})
		return
	}
	size := 10
	if v := q.Get("page_size"); v != "" {
		if size, err = strconv.Atoi(v); err != nil || size < 1 || size > 1000 {
			fail(w, http.StatusBadRequest, "Invalid parameters", map[string][]string{"page_size": {"must be between 1 and 1000"}})
			return
		}
	}
	s.mu.Lock()
	size = min(size, s.pageSize)
	all := append([]voice(nil), s.voices...)
	s.mu.Unlock()
	pages := max((len(all)+size-1)/size, 1)
	from := min((page-1)*size, len(all))
	items := all[from:min(from+size, len(all))]
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{"success": true, "page": page, "num_pages": pages, "page_size": size, "items": items})
}

func (s *Server) getVoice(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.begin(w, r); !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.find(r.PathValue("uuid"))
	if i < 0 {
		fail(w, http.StatusNotFound, "Voice not found", nil)
		return
	}
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{"success": true, "item": s.voices[i]})
}

func (s *Server) deleteVoice(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.begin(w, r); !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.find(r.PathValue("uuid"))
	if i < 0 {
		fail(w, http.StatusNotFound, "Voice not found", nil)
		return
	}
	s.voices = slices.Delete(s.voices, i, i+1)
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{"success": true})
}

type createVoiceRequest struct {
	Name        *string `json:"name"`
	VoiceType   *string `json:"voice_type"`
	DatasetURL  *string `json:"dataset_url"`
	CallbackURI *string `json:"callback_uri"`
	Language    *string `json:"language"`
	Consent     *string `json:"consent"`
}

func (s *Server) createVoice(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	var b createVoiceRequest
	if !decode(w, r, req.Body, &b) {
		return
	}
	if b.Name == nil || strings.TrimSpace(*b.Name) == "" {
		fail(w, http.StatusBadRequest, "Invalid parameters", map[string][]string{"name": {"can't be blank"}})
		return
	}
	typ := "professional"
	if b.VoiceType != nil {
		typ = *b.VoiceType
	}
	if typ != "rapid" && typ != "professional" {
		fail(w, http.StatusBadRequest, "Invalid parameters", map[string][]string{"voice_type": {"must be rapid or professional"}})
		return
	}
	lang := "en-US"
	if b.Language != nil {
		lang = *b.Language
	}
	if len(lang) < 2 {
		fail(w, http.StatusBadRequest, "Invalid parameters", map[string][]string{"language": {"is not a supported language"}})
		return
	}
	v := newVoice(fmt.Sprintf("c%07x", s.ids.Add(1)), *b.Name, lang, typ, "initializing")
	if b.DatasetURL != nil {
		v.Status = "running" // trains from the dataset; the fake never finishes
	}
	s.mu.Lock()
	s.voices = append(s.voices, v)
	s.mu.Unlock()
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{"success": true, "item": v})
}

// audioSeconds reports a recording's length when it is a WAV file (MP3 is
// accepted unmeasured), and whether it is an audio file at all.
func audioSeconds(data []byte) (float64, bool) {
	switch {
	case len(data) >= 44 && bytes.Equal(data[:4], []byte("RIFF")) && bytes.Equal(data[8:12], []byte("WAVE")):
		rate := binary.LittleEndian.Uint32(data[24:28])
		block := binary.LittleEndian.Uint16(data[32:34])
		if rate == 0 || block == 0 {
			return 0, false
		}
		return float64(len(data)-44) / float64(block) / float64(rate), true
	case len(data) >= 3 && bytes.Equal(data[:3], []byte("ID3")), len(data) >= 2 && data[0] == 0xFF && data[1]&0xE0 == 0xE0:
		return -1, true
	}
	return 0, false
}

func (s *Server) createRecording(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	uuid := r.PathValue("uuid")
	s.mu.Lock()
	known := s.find(uuid) >= 0
	s.mu.Unlock()
	if !known {
		fail(w, http.StatusNotFound, "Voice not found", nil)
		return
	}
	form, err := fakeupstream.ParseMultipart(req)
	if err != nil {
		invalid(w, "Expected multipart/form-data: %v", err)
		return
	}
	missing := map[string][]string{}
	for _, field := range []string{"name", "text", "emotion", "is_active"} {
		if len(form.Value[field]) == 0 || strings.TrimSpace(form.Value[field][0]) == "" {
			missing[field] = []string{"can't be blank"}
		}
	}
	for field := range form.Value {
		if !slices.Contains([]string{"name", "text", "emotion", "is_active", "fill"}, field) {
			missing[field] = []string{"is not a permitted parameter"}
		}
	}
	files := form.File["file"]
	if len(files) != 1 {
		missing["file"] = []string{"must be one audio file"}
	}
	if len(missing) > 0 {
		fail(w, http.StatusBadRequest, "Invalid parameters", missing)
		return
	}
	active := form.Value["is_active"][0]
	if active != "true" && active != "false" {
		fail(w, http.StatusBadRequest, "Invalid parameters", map[string][]string{"is_active": {"must be true or false"}})
		return
	}
	f, err := files[0].Open()
	if err != nil {
		invalid(w, "unreadable file")
		return
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		invalid(w, "unreadable file")
		return
	}
	secs, isAudio := audioSeconds(data)
	switch {
	case !isAudio:
		invalid(w, "The file is not a WAV or MP3 recording")
		return
	case secs >= 0 && secs < 1:
		invalid(w, "The recording must last between 1 and 12 seconds")
		return
	}
	s.mu.Lock()
	if i := s.find(uuid); i >= 0 && active == "true" {
		s.voices[i].recordings++
	}
	s.mu.Unlock()
	now := time.Now().UTC().Format(time.RFC3339)
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{"success": true, "item": map[string]any{
		"uuid": fmt.Sprintf("r%07x", s.ids.Add(1)), "name": form.Value["name"][0], "text": form.Value["text"][0],
		"emotion": form.Value["emotion"][0], "is_active": active == "true", "audio_src": nil, "created_at": now, "updated_at": now,
	}})
}

func (s *Server) build(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	if len(bytes.TrimSpace(req.Body)) > 0 {
		var b struct {
			Fill *bool `json:"fill"`
		}
		if !decode(w, r, req.Body, &b) {
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.find(r.PathValue("uuid"))
	switch {
	case i < 0:
		fail(w, http.StatusNotFound, "Voice not found", nil)
		return
	case s.voices[i].VoiceType == "rapid" && s.voices[i].recordings < MinRapidRecordings:
		invalid(w, "A rapid voice needs at least %d recordings to build; it has %d", MinRapidRecordings, s.voices[i].recordings)
		return
	case s.voices[i].Status == "finished":
		invalid(w, "Voice is already built")
		return
	}
	s.voices[i].Status = "finished"
	s.voices[i].ComponentStatus = map[string]any{"text_to_speech": map[string]string{"status": "finished"}}
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{"success": true, "message": "Voice build started"})
}

// Package minimax is a fake of the MiniMax speech API for tests and
// benchmarks: T2A v2 text-to-speech (whole answers and server-sent
// events), the voice list, file upload and voice cloning.
//
// It follows the published API reference and MiniMax's own clients:
// "Authorization: Bearer" on every request and an optional GroupId query
// parameter; every answer carries base_resp {status_code, status_msg},
// and MiniMax reports failures of the request itself with HTTP 200 and a
// nonzero status_code (1004 not authorized, 1002 rate limit, 1008
// insufficient balance, 2013 invalid parameters, ...), which the fake
// does too. The T2A body is model, text (at most 10,000 characters),
// stream, stream_options, voice_setting {voice_id, speed 0.5 to 2, vol,
// pitch, emotion, ...}, audio_setting {sample_rate, bitrate, format,
// channel, force_cbr}, pronunciation_dict, timber_weights,
// language_boost, voice_modify, subtitle_enable, output_format,
// aigc_watermark, with unknown fields rejected. A whole answer is JSON
// with the audio hex-encoded in data.audio and extra_info; a stream
// (stream: true) is events "data: {...}" whose data.audio holds hex
// chunks (status 1), the last event (status 2) carrying extra_info and,
// unless stream_options.exclude_aggregated_audio, the whole audio again.
//
// Endpoints:
//
//	POST /v1/t2a_v2        JSON, or text/event-stream with stream: true
//	POST /v1/get_voice     {voice_type}: {system_voice, voice_cloning, voice_generation}
//	POST /v1/files/upload  multipart: purpose, file → {file: {file_id, ...}}
//	POST /v1/voice_clone   {file_id, voice_id, ...}
//
// Faults injected through Control answer as MiniMax does: 401 and 403 as
// HTTP 200 with status_code 1004, 402 as 1008, 429 as 1002 (with the
// fault's Retry-After header), 400 and 422 as 2013, and 5xx as that HTTP
// status (a failure in front of the API) with status_code 1000. A
// numeric Fault.Code is sent as the status_code with HTTP 200 instead.
//
// Every format renders real audio at the rate asked (mp3 at the bitrate
// asked too); LastAnswer holds the audio of the latest answer (of a
// stream, its chunks joined).
//
// Deliberate gaps: output_format "url" answers 2013 (the fake answers
// hex), as does an mp3 at a rate and bitrate MP3 has no frame for (256
// kbit/s below 32 kHz); subtitle_enable is accepted
// but no subtitle file is produced; stereo renders mono; the emotion,
// pitch and voice_modify settings do not change the audio.
package minimax

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
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

// Key is the API key the fake accepts unless Options.Keys says otherwise.
const Key = "mm-test-fake-0123456789abcdef0123"

// GroupID is the only GroupId the fake accepts when a request names one.
const GroupID = "1900000000000000001"

// Paths of the fake's endpoints.
const (
	T2APath    = "/v1/t2a_v2"
	VoicesPath = "/v1/get_voice"
	UploadPath = "/v1/files/upload"
	ClonePath  = "/v1/voice_clone"
)

// Ids of stock system voices.
const (
	VoiceNarrator = "English_expressive_narrator"
	VoiceWise     = "Wise_Woman"
	VoiceQingse   = "male-qn-qingse"
)

// MaxText is the documented limit of text, in characters.
const MaxText = 10000

// Status codes of base_resp the fake answers with.
const (
	CodeOK             = 0
	CodeUnknown        = 1000
	CodeRateLimit      = 1002
	CodeUnauthorized   = 1004
	CodeNoBalance      = 1008
	CodeInvalidParams  = 2013
	CodeVoiceDuplicate = 2039
)

// Models returns the model ids the fake accepts.
func Models() []string {
	return []string{"speech-2.8-hd", "speech-2.8-turbo", "speech-2.6-hd", "speech-2.6-turbo",
		"speech-2.5-hd-preview", "speech-2.5-turbo-preview", "speech-02-hd", "speech-02-turbo",
		"speech-01-hd", "speech-01-turbo"}
}

// SampleRates are the documented values of audio_setting.sample_rate.
func SampleRates() []int { return []int{8000, 16000, 22050, 24000, 32000, 44100} }

// Bitrates are the documented values of audio_setting.bitrate.
func Bitrates() []int { return []int{32000, 64000, 128000, 256000} }

// voice is an entry of get_voice.
type voice struct {
	VoiceID     string   `json:"voice_id"`
	VoiceName   string   `json:"voice_name,omitempty"`
	Description []string `json:"description"`
	CreatedTime string   `json:"created_time"`
}

func stock() []voice {
	mk := func(id, name, desc string) voice {
		return voice{VoiceID: id, VoiceName: name, Description: []string{desc}, CreatedTime: "1970-01-01"}
	}
	return []voice{
		mk(VoiceNarrator, "Expressive Narrator", "A warm English narrator."),
		mk(VoiceWise, "Wise Woman", "A calm, mature female voice."),
		mk(VoiceQingse, "青涩青年音色", "A young male Mandarin voice."),
	}
}

// file is an uploaded file.
type file struct {
	ID       int64  `json:"file_id"`
	Bytes    int64  `json:"bytes"`
	Created  int64  `json:"created_at"`
	Filename string `json:"filename"`
	Purpose  string `json:"purpose"`
}

// Server is a running fake. Steer it through the embedded Control.
type Server struct {
	*fakeupstream.Control
	// URL is the server's root; the plugin's base_url is BaseURL().
	URL string

	srv     *httptest.Server
	studio  *fakeupstream.Studio
	mu      sync.Mutex
	cloned  []voice
	files   map[int64]file
	fileID  atomic.Int64
	traceID atomic.Int64
}

// New starts a fake. With tb set it is closed at tb.Cleanup; otherwise
// call Close.
func New(tb testing.TB, opts fakeupstream.Options) *Server {
	studio, err := fakeupstream.NewStudio()
	if err != nil {
		panic(err) // the embedded tone is broken: a build problem
	}
	s := &Server{Control: fakeupstream.NewControl(opts), studio: studio, files: map[int64]file{}}
	s.fileID.Store(300000000000000000)
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+T2APath, s.t2a)
	mux.HandleFunc("POST "+VoicesPath, s.getVoice)
	mux.HandleFunc("POST "+UploadPath, s.upload)
	mux.HandleFunc("POST "+ClonePath, s.clone)
	mux.HandleFunc("/", s.notFound)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// BaseURL is what the plugin's base_url setting should be: the root plus
// /v1, as in https://api.minimax.io/v1.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// VoiceIDs returns the ids of every voice the fake knows, cloned ones
// included.
func (s *Server) VoiceIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for _, v := range append(stock(), s.cloned...) {
		ids = append(ids, v.VoiceID)
	}
	return ids
}

func (s *Server) knows(id string) bool { return slices.Contains(s.VoiceIDs(), id) }

func (s *Server) trace() string { return fmt.Sprintf("%032x", s.traceID.Add(1)) }

// baseResp is the status every answer carries.
type baseResp struct {
	StatusCode int    `json:"status_code"`
	StatusMsg  string `json:"status_msg"`
}

// fail answers a MiniMax error: HTTP status (200 for the API's own
// errors) and base_resp.
func (s *Server) fail(w http.ResponseWriter, status, code int, msg string) {
	fakeupstream.WriteJSON(w, status, map[string]any{"trace_id": s.trace(), "base_resp": baseResp{StatusCode: code, StatusMsg: msg}})
}

// faultAnswer is how MiniMax reports f: HTTP status, status_code and
// message.
func faultAnswer(f *fakeupstream.Fault) (status, code int, msg string) {
	status, code, msg = http.StatusOK, CodeUnknown, "unknown error"
	switch {
	case f.Status == http.StatusUnauthorized || f.Status == http.StatusForbidden:
		code, msg = CodeUnauthorized, "invalid api key"
	case f.Status == http.StatusPaymentRequired:
		code, msg = CodeNoBalance, "insufficient balance"
	case f.Status == http.StatusTooManyRequests:
		code, msg = CodeRateLimit, "rate limit exceeded(RPM)"
	case f.Status == http.StatusBadRequest || f.Status == http.StatusUnprocessableEntity:
		code, msg = CodeInvalidParams, "invalid params"
	case f.Status >= 500:
		status, msg = f.Status, http.StatusText(f.Status)
	}
	if n, err := strconv.Atoi(f.Code); err == nil {
		status, code = http.StatusOK, n
	}
	if f.Message != "" {
		msg = f.Message
	}
	return status, code, msg
}

// begin runs what every handler does first: record, latency, auth, group
// and an injected fault. It returns false when it answered; stream
// requests get their error as an event (see failStream).
func (s *Server) begin(w http.ResponseWriter, r *http.Request) (fakeupstream.Request, *fakeupstream.Fault, bool) {
	req, fault, ok := s.Begin(r)
	if !ok {
		return req, nil, false
	}
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || !slices.Contains(s.Keys(Key), key) {
		s.fail(w, http.StatusOK, CodeUnauthorized, "login fail: Please carry the API secret key in the 'Authorization' field of the request header")
		return req, nil, false
	}
	if g := r.URL.Query().Get("GroupId"); g != "" && g != GroupID {
		s.fail(w, http.StatusOK, CodeUnauthorized, "token not match group")
		return req, nil, false
	}
	return req, fault, true
}

// injected answers fault f on a plain (non-stream) request.
func (s *Server) injected(w http.ResponseWriter, f *fakeupstream.Fault) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	status, code, msg := faultAnswer(f)
	s.fail(w, status, code, msg)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	_, fault, ok := s.begin(w, r)
	switch {
	case !ok:
	case fault != nil:
		s.injected(w, fault)
	default:
		s.fail(w, http.StatusNotFound, 404, "404 page not found")
	}
}

// t2aRequest is the documented T2A v2 body.
type t2aRequest struct {
	Model             *string        `json:"model"`
	Text              *string        `json:"text"`
	Stream            bool           `json:"stream"`
	StreamOptions     *streamOptions `json:"stream_options"`
	VoiceSetting      *voiceSetting  `json:"voice_setting"`
	AudioSetting      *audioSetting  `json:"audio_setting"`
	PronunciationDict *pronunciation `json:"pronunciation_dict"`
	TimberWeights     []timberWeight `json:"timber_weights"`
	LanguageBoost     *string        `json:"language_boost"`
	VoiceModify       *voiceModify   `json:"voice_modify"`
	SubtitleEnable    *bool          `json:"subtitle_enable"`
	OutputFormat      *string        `json:"output_format"`
	AIGCWatermark     *bool          `json:"aigc_watermark"`
}

type streamOptions struct {
	ExcludeAggregatedAudio *bool `json:"exclude_aggregated_audio"`
}

type voiceSetting struct {
	VoiceID           *string  `json:"voice_id"`
	Speed             *float64 `json:"speed"`
	Vol               *float64 `json:"vol"`
	Pitch             *float64 `json:"pitch"`
	Emotion           *string  `json:"emotion"`
	TextNormalization *bool    `json:"text_normalization"`
	LatexRead         *bool    `json:"latex_read"`
}

type audioSetting struct {
	SampleRate *int    `json:"sample_rate"`
	Bitrate    *int    `json:"bitrate"`
	Format     *string `json:"format"`
	Channel    *int    `json:"channel"`
	ForceCBR   *bool   `json:"force_cbr"`
}

type pronunciation struct {
	Tone []string `json:"tone"`
}

type timberWeight struct {
	VoiceID string `json:"voice_id"`
	Weight  int    `json:"weight"`
}

type voiceModify struct {
	Pitch        *int    `json:"pitch"`
	Intensity    *int    `json:"intensity"`
	Timbre       *int    `json:"timbre"`
	SoundEffects *string `json:"sound_effects"`
}

// spec is a validated T2A request.
type spec struct {
	text      string
	stream    bool
	aggregate bool // the last stream event repeats the whole audio
	format    string
	rate      int
	bitrate   int
	speed     float64
	voice     string
}

// invalid is a request's mistake: the message of a 2013 answer.
type invalid string

// parse validates a T2A body.
func (s *Server) parse(r *http.Request, body []byte) (spec, invalid) {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		return spec{}, "invalid params, Content-Type must be application/json"
	}
	var b t2aRequest
	if err := fakeupstream.DecodeStrict(body, &b); err != nil {
		if field, ok := fakeupstream.UnknownField(err); ok {
			return spec{}, invalid(fmt.Sprintf("invalid params, unknown field %s", field))
		}
		return spec{}, invalid("invalid params, " + err.Error())
	}
	sp := spec{stream: b.Stream, aggregate: true, format: "mp3", rate: 32000, bitrate: 128000, speed: 1}
	switch {
	case b.Model == nil || !slices.Contains(Models(), *b.Model) && !s.NewModel(*b.Model):
		// A model of fakeupstream.Options.NewModels is taken like the
		// others: they all take the same request.
		return spec{}, "invalid params, model is required and must be one of the speech models"
	case b.Text == nil || strings.TrimSpace(*b.Text) == "":
		return spec{}, "invalid params, text is required"
	case utf8.RuneCountInString(*b.Text) > MaxText:
		return spec{}, invalid(fmt.Sprintf("invalid params, text length must be less than %d characters", MaxText))
	case b.OutputFormat != nil && *b.OutputFormat != "hex" && *b.OutputFormat != "url":
		return spec{}, "invalid params, output_format must be hex or url"
	case b.OutputFormat != nil && *b.OutputFormat == "url":
		return spec{}, "invalid params, output_format url is valid but this fake answers hex only"
	case b.OutputFormat != nil && b.Stream:
		return spec{}, "invalid params, output_format applies to non-streaming requests only"
	case b.StreamOptions != nil && !b.Stream:
		return spec{}, "invalid params, stream_options needs stream: true"
	}
	sp.text = *b.Text
	if b.StreamOptions != nil && b.StreamOptions.ExcludeAggregatedAudio != nil {
		sp.aggregate = !*b.StreamOptions.ExcludeAggregatedAudio
	}
	vs := b.VoiceSetting
	if vs == nil || vs.VoiceID == nil || *vs.VoiceID == "" {
		if len(b.TimberWeights) == 0 {
			return spec{}, "invalid params, voice_setting.voice_id or timber_weights is required"
		}
	} else {
		sp.voice = *vs.VoiceID
	}
	if vs != nil {
		switch {
		case vs.Speed != nil && (*vs.Speed < 0.5 || *vs.Speed > 2):
			return spec{}, "invalid params, voice_setting.speed must be in [0.5, 2]"
		case vs.Vol != nil && (*vs.Vol <= 0 || *vs.Vol > 10):
			return spec{}, "invalid params, voice_setting.vol must be in (0, 10]"
		case vs.Pitch != nil && (*vs.Pitch < -12 || *vs.Pitch > 12 || *vs.Pitch != float64(int(*vs.Pitch))):
			return spec{}, "invalid params, voice_setting.pitch must be an integer in [-12, 12]"
		case vs.Emotion != nil && !slices.Contains([]string{"happy", "sad", "angry", "fearful", "disgusted", "surprised", "calm", "fluent", "whisper", "neutral"}, *vs.Emotion):
			return spec{}, "invalid params, voice_setting.emotion is not a supported emotion"
		}
		if vs.Speed != nil {
			sp.speed = *vs.Speed
		}
	}
	for _, tw := range b.TimberWeights {
		if tw.Weight < 1 || tw.Weight > 100 || !s.knows(tw.VoiceID) {
			return spec{}, "invalid params, timber_weights entries need a known voice_id and a weight in [1, 100]"
		}
	}
	if vm := b.VoiceModify; vm != nil {
		for _, v := range []*int{vm.Pitch, vm.Intensity, vm.Timbre} {
			if v != nil && (*v < -100 || *v > 100) {
				return spec{}, "invalid params, voice_modify values must be in [-100, 100]"
			}
		}
	}
	if as := b.AudioSetting; as != nil {
		if as.Format != nil {
			sp.format = *as.Format
		}
		switch {
		case as.SampleRate != nil && !slices.Contains(SampleRates(), *as.SampleRate):
			return spec{}, invalid(fmt.Sprintf("invalid params, audio_setting.sample_rate must be one of %v", SampleRates()))
		case as.Bitrate != nil && !slices.Contains(Bitrates(), *as.Bitrate):
			return spec{}, invalid(fmt.Sprintf("invalid params, audio_setting.bitrate must be one of %v", Bitrates()))
		case as.Channel != nil && *as.Channel != 1 && *as.Channel != 2:
			return spec{}, "invalid params, audio_setting.channel must be 1 or 2"
		}
		if as.SampleRate != nil {
			sp.rate = *as.SampleRate
		}
		if as.Bitrate != nil {
			sp.bitrate = *as.Bitrate
		}
	}
	switch sp.format {
	case "mp3", "pcm":
	case "wav":
		if sp.stream {
			return spec{}, "invalid params, wav is supported in non-streaming mode only"
		}
	case "flac":
	default:
		return spec{}, "invalid params, audio_setting.format must be mp3, pcm, flac or wav"
	}
	if sp.voice != "" && !s.knows(sp.voice) {
		return spec{}, invalid(fmt.Sprintf("invalid params, voice id %s not exist", sp.voice))
	}
	return sp, ""
}

// render returns u in sp's format, and records it as the latest answer.
// An mp3 at a rate and bitrate MP3 has no frame for fails.
func (s *Server) render(sp spec) ([]byte, fakeupstream.Utterance, error) {
	u := fakeupstream.Speak(sp.text, sp.speed)
	if fs := s.FixedSeconds(); fs > 0 {
		u = fakeupstream.Fixed(fs)
	}
	kbps := 0
	if sp.format == "mp3" {
		kbps = sp.bitrate / 1000
	}
	a, _, err := s.studio.Encoded(u, sp.format, sp.rate, kbps)
	if err != nil {
		return nil, u, err
	}
	audio := a.Bytes()
	s.RecordAnswer(audio)
	return audio, u, nil
}

func (s *Server) extraInfo(sp spec, audio []byte, u fakeupstream.Utterance) map[string]any {
	return map[string]any{
		"audio_length":              int(u.Seconds * 1000),
		"audio_sample_rate":         sp.rate,
		"audio_size":                len(audio),
		"bitrate":                   sp.bitrate,
		"word_count":                len(u.Words),
		"invisible_character_ratio": 0,
		"usage_characters":          utf8.RuneCountInString(sp.text),
		"audio_format":              sp.format,
		"audio_channel":             1,
	}
}

// streamRequested reports whether a T2A body asks for a stream, for
// answering an error in the stream's framing before the body is checked.
func streamRequested(body []byte) bool {
	var b struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &b)
	return b.Stream
}

// failStream answers an error to a stream request: one event carrying
// base_resp.
func (s *Server) failStream(w http.ResponseWriter, status, code int, msg string) {
	if status != http.StatusOK {
		s.fail(w, status, code, msg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	data, _ := json.Marshal(map[string]any{"trace_id": s.trace(), "base_resp": baseResp{StatusCode: code, StatusMsg: msg}})
	fmt.Fprintf(w, "data: %s\n\n", data)
}

func (s *Server) t2a(w http.ResponseWriter, r *http.Request) {
	req, fault, ok := s.begin(w, r)
	if !ok {
		return
	}
	stream := streamRequested(req.Body)
	if fault != nil {
		if !stream {
			s.injected(w, fault)
			return
		}
		if fault.RetryAfter != "" {
			w.Header().Set("Retry-After", fault.RetryAfter)
		}
		status, code, msg := faultAnswer(fault)
		s.failStream(w, status, code, msg)
		return
	}
	sp, bad := s.parse(r, req.Body)
	if bad != "" {
		if stream {
			s.failStream(w, http.StatusOK, CodeInvalidParams, string(bad))
		} else {
			s.fail(w, http.StatusOK, CodeInvalidParams, string(bad))
		}
		return
	}
	audio, u, err := s.render(sp)
	if err != nil {
		msg := "invalid params, " + sp.format + " at this sample_rate and bitrate is valid but this fake cannot encode it: " + err.Error()
		if stream {
			s.failStream(w, http.StatusOK, CodeInvalidParams, msg)
		} else {
			s.fail(w, http.StatusOK, CodeInvalidParams, msg)
		}
		return
	}
	trace := s.trace()
	w.Header().Set("Trace-Id", trace)
	if !sp.stream {
		fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{
			"data":       map[string]any{"audio": hex.EncodeToString(audio), "status": 2},
			"extra_info": s.extraInfo(sp, audio, u),
			"trace_id":   trace,
			"base_resp":  baseResp{StatusCode: CodeOK, StatusMsg: "success"},
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	emit := func(ev map[string]any) bool {
		ev["trace_id"] = trace
		data, _ := json.Marshal(ev)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	size := s.ChunkSize()
	if sp.format == "pcm" {
		size &^= 1
	}
	for off := 0; off < len(audio); off += size {
		if off > 0 && !s.Pause(r.Context()) {
			return
		}
		chunk := audio[off:min(off+size, len(audio))]
		if !emit(map[string]any{"data": map[string]any{"audio": hex.EncodeToString(chunk), "status": 1}, "base_resp": baseResp{StatusCode: CodeOK, StatusMsg: ""}}) {
			return
		}
	}
	last := map[string]any{"audio": "", "status": 2}
	if sp.aggregate {
		last["audio"] = hex.EncodeToString(audio)
	}
	emit(map[string]any{"data": last, "extra_info": s.extraInfo(sp, audio, u), "base_resp": baseResp{StatusCode: CodeOK, StatusMsg: "success"}})
}

// getVoice lists voices by voice_type: system, voice_cloning,
// voice_generation or all.
func (s *Server) getVoice(w http.ResponseWriter, r *http.Request) {
	req, fault, ok := s.begin(w, r)
	if !ok {
		return
	}
	if fault != nil {
		s.injected(w, fault)
		return
	}
	var b struct {
		VoiceType *string `json:"voice_type"`
	}
	if err := fakeupstream.DecodeStrict(req.Body, &b); err != nil || b.VoiceType == nil {
		s.fail(w, http.StatusOK, CodeInvalidParams, "invalid params, voice_type is required")
		return
	}
	out := map[string]any{"trace_id": s.trace(), "base_resp": baseResp{StatusCode: CodeOK, StatusMsg: "success"}}
	s.mu.Lock()
	cloned := append([]voice{}, s.cloned...)
	s.mu.Unlock()
	switch *b.VoiceType {
	case "system":
		out["system_voice"] = stock()
	case "voice_cloning":
		out["voice_cloning"] = cloned
	case "voice_generation":
		out["voice_generation"] = []voice{}
	case "all":
		out["system_voice"], out["voice_cloning"], out["voice_generation"] = stock(), cloned, []voice{}
	default:
		s.fail(w, http.StatusOK, CodeInvalidParams, "invalid params, voice_type must be system, voice_cloning, voice_generation or all")
		return
	}
	fakeupstream.WriteJSON(w, http.StatusOK, out)
}

// upload stores a file: multipart purpose and file.
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	req, fault, ok := s.begin(w, r)
	if !ok {
		return
	}
	if fault != nil {
		s.injected(w, fault)
		return
	}
	form, err := fakeupstream.ParseMultipart(req)
	if err != nil {
		s.fail(w, http.StatusOK, CodeInvalidParams, "invalid params, "+err.Error())
		return
	}
	purpose := ""
	if v := form.Value["purpose"]; len(v) == 1 {
		purpose = v[0]
	}
	files := form.File["file"]
	switch {
	case !slices.Contains([]string{"voice_clone", "prompt_audio", "t2a_async_input"}, purpose):
		s.fail(w, http.StatusOK, CodeInvalidParams, "invalid params, purpose must be voice_clone, prompt_audio or t2a_async_input")
		return
	case len(files) != 1 || files[0].Size == 0:
		s.fail(w, http.StatusOK, CodeInvalidParams, "invalid params, exactly one non-empty file is required")
		return
	case len(form.Value) != 1 || len(form.File) != 1:
		s.fail(w, http.StatusOK, CodeInvalidParams, "invalid params, the form holds purpose and file only")
		return
	}
	f := file{ID: s.fileID.Add(1), Bytes: files[0].Size, Created: time.Now().Unix(), Filename: files[0].Filename, Purpose: purpose}
	s.mu.Lock()
	s.files[f.ID] = f
	s.mu.Unlock()
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{"file": f, "base_resp": baseResp{StatusCode: CodeOK, StatusMsg: "success"}})
}

// voiceIDRule is the documented rule for a custom voice_id: 8 to 256
// characters, a letter first, letters, digits, '-' and '_', not ending
// in '-' or '_'.
var voiceIDRule = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{6,254}[A-Za-z0-9]$`)

// cloneRequest is the documented voice_clone body.
type cloneRequest struct {
	FileID                  *int64          `json:"file_id"`
	VoiceID                 *string         `json:"voice_id"`
	ClonePrompt             json.RawMessage `json:"clone_prompt"`
	Text                    *string         `json:"text"`
	Model                   *string         `json:"model"`
	Accuracy                *float64        `json:"accuracy"`
	NeedNoiseReduction      *bool           `json:"need_noise_reduction"`
	NeedVolumeNormalization *bool           `json:"need_volume_normalization"`
	AIGCWatermark           *bool           `json:"aigc_watermark"`
	LanguageBoost           *string         `json:"language_boost"`
}

// clone makes a voice from an uploaded voice_clone file.
func (s *Server) clone(w http.ResponseWriter, r *http.Request) {
	req, fault, ok := s.begin(w, r)
	if !ok {
		return
	}
	if fault != nil {
		s.injected(w, fault)
		return
	}
	var b cloneRequest
	bad := func(msg string) { s.fail(w, http.StatusOK, CodeInvalidParams, "invalid params, "+msg) }
	if err := fakeupstream.DecodeStrict(req.Body, &b); err != nil {
		bad(err.Error())
		return
	}
	s.mu.Lock()
	var f file
	found := false
	if b.FileID != nil {
		f, found = s.files[*b.FileID]
	}
	s.mu.Unlock()
	switch {
	case b.FileID == nil || !found || f.Purpose != "voice_clone":
		bad("file_id must name an uploaded voice_clone file")
		return
	case b.VoiceID == nil || !voiceIDRule.MatchString(*b.VoiceID):
		bad("voice_id must be 8 to 256 letters, digits, '-' or '_', start with a letter and not end with '-' or '_'")
		return
	case b.Accuracy != nil && (*b.Accuracy < 0 || *b.Accuracy > 1):
		bad("accuracy must be in [0, 1]")
		return
	case b.Text != nil && (b.Model == nil || !slices.Contains(Models(), *b.Model)):
		bad("a preview text needs a model")
		return
	}
	if s.knows(*b.VoiceID) {
		s.fail(w, http.StatusOK, CodeVoiceDuplicate, "voice clone voice id duplicate")
		return
	}
	s.mu.Lock()
	s.cloned = append(s.cloned, voice{VoiceID: *b.VoiceID, Description: []string{}, CreatedTime: time.Now().UTC().Format("2006-01-02")})
	s.mu.Unlock()
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{
		"input_sensitive": false, "input_sensitive_type": 0, "demo_audio": "",
		"base_resp": baseResp{StatusCode: CodeOK, StatusMsg: "success"},
	})
}

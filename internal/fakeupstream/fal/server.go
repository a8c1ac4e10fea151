// Package fal is a fake of fal's synchronous model API for its
// text-to-speech endpoints, for tests.
//
// It follows fal's documented wire format: `POST /{model_id}` with
// `Authorization: Key <key>` and the model's input as JSON, answered with
// the model's output as JSON, whose `audio` (F5-TTS: `audio_url`) is a
// File object `{url, content_type, file_name, file_size}`. A model id is
// the app's whole path, `<owner>/<app>[/<path>]`; an app the fake does not
// serve is a 404. The file itself is served by the fake too, under
// /files/, as a storage host would: without credentials, not counted in
// Calls and not subject to injected faults or latency (so that a test's
// call counts are those of the API).
//
// Models and their documented input schemas (unknown fields are a 422):
//
//	fal-ai/kokoro/american-english   prompt, voice (af_*/am_*), speed (0.1 to 5), enable_safety_checker
//	fal-ai/kokoro/british-english    prompt, voice (bf_*/bm_*), speed, enable_safety_checker
//	fal-ai/orpheus-tts               text (required), voice (tara, leah, ...), temperature, repetition_penalty
//	fal-ai/f5-tts                    gen_text, ref_audio_url, model_type (F5-TTS or E2-TTS) (all required), ref_text, remove_silence
//	fal-ai/elevenlabs/tts/eleven-v3  text (required), voice (ElevenLabs' premade voice names), stability, language_code, apply_text_normalization
//
// Each answers a 24 kHz WAV file, except ElevenLabs, which answers MP3.
// Errors are {"detail": "message"}, and validation errors (422)
// {"detail": [{"loc", "msg", "type"}]}.
//
// The last file made is kept (Control.LastAnswer).
//
// Deliberate gaps: the queue API (queue.fal.run) and streaming endpoints
// are not faked; safety checks never trigger; F5-TTS's reference audio is
// checked to be an http(s) URL but never fetched; ElevenLabs takes voice
// ids too, the fake only the premade names.
package fal

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
)

// Key is the API key the fake accepts unless Options.Keys says otherwise.
const Key = "fal-fake-key-id:0123456789abcdef0123456789abcdef"

// Model ids the fake serves.
const (
	KokoroUS = "fal-ai/kokoro/american-english"
	KokoroGB = "fal-ai/kokoro/british-english"
	Orpheus  = "fal-ai/orpheus-tts"
	F5       = "fal-ai/f5-tts"
	// ElevenV3 is served by the fake but not built into the plugin: a
	// model the plugin passes through, answering MP3.
	ElevenV3 = "fal-ai/elevenlabs/tts/eleven-v3"
)

// FilesPath is where the fake serves the audio files it makes.
const FilesPath = "/files/"

// SampleRate is the rate of every WAV answer.
const SampleRate = 24000

// modelSpec is one model's input schema and answer.
type modelSpec struct {
	textField string
	required  bool // the text field is required (Kokoro's defaults to "")
	// voiceField is the voice's field, "" if the model takes none; voices
	// are the values it accepts.
	voiceField string
	voices     []string
	// fields lists the other accepted fields with their JSON kind
	// (number, boolean, string, url, enum); enums the values of the enum
	// ones; requiredFields those that must be present.
	fields         map[string]string
	enums          map[string][]string
	requiredFields []string
	// audioKey is the output field holding the File; mp3 makes the answer
	// MP3 instead of WAV.
	audioKey string
	mp3      bool
}

func specs() map[string]modelSpec {
	us := strings.Fields("af_heart af_alloy af_aoede af_bella af_jessica af_kore af_nicole af_nova af_river af_sarah af_sky am_adam am_echo am_eric am_fenrir am_liam am_michael am_onyx am_puck am_santa")
	gb := strings.Fields("bf_alice bf_emma bf_isabella bf_lily bm_daniel bm_fable bm_george bm_lewis")
	kokoro := map[string]string{"speed": "number", "enable_safety_checker": "boolean"}
	return map[string]modelSpec{
		KokoroUS: {textField: "prompt", voiceField: "voice", voices: us, fields: kokoro, audioKey: "audio"},
		KokoroGB: {textField: "prompt", voiceField: "voice", voices: gb, fields: kokoro, audioKey: "audio"},
		Orpheus: {textField: "text", required: true, voiceField: "voice", voices: strings.Fields("tara leah jess leo dan mia zac zoe"),
			fields: map[string]string{"temperature": "number", "repetition_penalty": "number"}, audioKey: "audio"},
		F5: {textField: "gen_text", required: true,
			fields:         map[string]string{"ref_audio_url": "url", "ref_text": "string", "model_type": "enum", "remove_silence": "boolean"},
			enums:          map[string][]string{"model_type": {"F5-TTS", "E2-TTS"}},
			requiredFields: []string{"ref_audio_url", "model_type"}, audioKey: "audio_url"},
		ElevenV3: {textField: "text", required: true, voiceField: "voice",
			voices: strings.Fields("Rachel Aria Roger Sarah Laura Charlie George Callum River Liam Charlotte Alice Matilda Will Jessica Eric Chris Brian Daniel Lily Bill"),
			fields: map[string]string{"stability": "number", "language_code": "string", "apply_text_normalization": "enum"},
			enums:  map[string][]string{"apply_text_normalization": {"auto", "on", "off"}}, audioKey: "audio", mp3: true},
	}
}

// Voices returns the voices a model accepts.
func Voices(model string) []string { return specs()[model].voices }

// Server is a running fake. Steer it through the embedded Control.
type Server struct {
	*fakeupstream.Control
	// URL is the server's root, which is also the plugin's base_url (as
	// https://fal.run is).
	URL string

	srv    *httptest.Server
	studio *fakeupstream.Studio
	mu     sync.Mutex
	files  map[string]stored
	nextID atomic.Int64
}

// stored is a made audio file.
type stored struct {
	audio       fakeupstream.Audio
	contentType string
}

// New starts a fake. With tb set it is closed at tb.Cleanup; otherwise
// call Close.
func New(tb testing.TB, opts fakeupstream.Options) *Server {
	studio, err := fakeupstream.NewStudio()
	if err != nil {
		panic(err) // the embedded tone is broken: a build problem
	}
	s := &Server{Control: fakeupstream.NewControl(opts), studio: studio, files: map[string]stored{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+FilesPath+"{name}", s.file)
	mux.HandleFunc("/", s.run)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// BaseURL is what the plugin's base_url setting should be.
func (s *Server) BaseURL() string { return s.URL }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

func detail(w http.ResponseWriter, status int, msg string) {
	fakeupstream.WriteJSON(w, status, map[string]string{"detail": msg})
}

// invalid answers a 422 validation error in fal's (FastAPI's) shape.
func invalid(w http.ResponseWriter, field, typ, msg string) {
	fakeupstream.WriteJSON(w, http.StatusUnprocessableEntity, map[string]any{
		"detail": []map[string]any{{"loc": []string{"body", field}, "msg": msg, "type": typ}},
	})
}

func injected(w http.ResponseWriter, f *fakeupstream.Fault) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	msg := "Internal server error"
	switch f.Status {
	case http.StatusUnauthorized:
		msg = "Unauthorized"
	case http.StatusTooManyRequests:
		msg = "Too many requests: concurrency limit reached"
	case http.StatusServiceUnavailable:
		msg = "Service temporarily unavailable"
	}
	detail(w, f.Status, orDefault(f.Message, msg))
}

func orDefault(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// run is POST /{model_id}.
func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	req, fault, ok := s.Begin(r)
	if !ok {
		return
	}
	key, hasKey := strings.CutPrefix(r.Header.Get("Authorization"), "Key ")
	if !hasKey || !slices.Contains(s.Keys(Key), key) {
		detail(w, http.StatusUnauthorized, "No user found for Key ID and Secret")
		return
	}
	if fault != nil {
		injected(w, fault)
		return
	}
	id := strings.Trim(r.URL.Path, "/")
	spec, known := specs()[id]
	if !known {
		detail(w, http.StatusNotFound, fmt.Sprintf("Application '%s' not found", id))
		return
	}
	if r.Method != http.MethodPost {
		detail(w, http.StatusMethodNotAllowed, "Method Not Allowed")
		return
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(req.Body, &body); err != nil {
		invalid(w, "", "json_invalid", "Input should be a valid JSON object")
		return
	}
	text := ""
	speed := 1.0
	for field, raw := range body {
		switch {
		case field == spec.textField:
			if json.Unmarshal(raw, &text) != nil {
				invalid(w, field, "string_type", "Input should be a valid string")
				return
			}
		case spec.voiceField != "" && field == spec.voiceField:
			var v string
			if json.Unmarshal(raw, &v) != nil || !slices.Contains(spec.voices, v) {
				invalid(w, field, "enum", "Input should be "+strings.Join(spec.voices, ", "))
				return
			}
		case spec.fields[field] == "number":
			var n float64
			if json.Unmarshal(raw, &n) != nil {
				invalid(w, field, "float_type", "Input should be a valid number")
				return
			}
			if field == "speed" {
				if n < 0.1 || n > 5 {
					invalid(w, field, "less_than_equal", "Input should be between 0.1 and 5")
					return
				}
				speed = n
			}
		case spec.fields[field] == "boolean":
			var b bool
			if json.Unmarshal(raw, &b) != nil {
				invalid(w, field, "bool_type", "Input should be a valid boolean")
				return
			}
		case spec.fields[field] == "string", spec.fields[field] == "url", spec.fields[field] == "enum":
			var v string
			if json.Unmarshal(raw, &v) != nil {
				invalid(w, field, "string_type", "Input should be a valid string")
				return
			}
			if spec.fields[field] == "url" && !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "http://") {
				invalid(w, field, "url_parsing", "Input should be a valid URL")
				return
			}
			if spec.fields[field] == "enum" && !slices.Contains(spec.enums[field], v) {
				invalid(w, field, "enum", "Input should be "+strings.Join(spec.enums[field], ", "))
				return
			}
		default:
			invalid(w, field, "extra_forbidden", "Extra inputs are not permitted")
			return
		}
	}
	for _, f := range spec.requiredFields {
		if _, ok := body[f]; !ok {
			invalid(w, f, "missing", "Field required")
			return
		}
	}
	if strings.TrimSpace(text) == "" {
		if spec.required {
			invalid(w, spec.textField, "missing", "Field required")
		} else {
			invalid(w, spec.textField, "value_error", "The text is empty")
		}
		return
	}
	u := fakeupstream.Speak(text, speed)
	f := stored{audio: s.studio.WAV(u, SampleRate), contentType: "audio/wav"}
	ext := "wav"
	if spec.mp3 {
		f, ext = stored{audio: s.studio.MP3(u), contentType: "audio/mpeg"}, "mp3"
	}
	s.RecordAnswer(f.audio.Bytes())
	name := fmt.Sprintf("%08x.%s", s.nextID.Add(1), ext)
	s.mu.Lock()
	s.files[name] = f
	s.mu.Unlock()
	fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{
		spec.audioKey: map[string]any{"url": s.URL + FilesPath + name, "content_type": f.contentType, "file_name": name, "file_size": f.audio.Len},
	})
}

// file serves a made audio file, chunked as a storage host streams it.
func (s *Server) file(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	f, ok := s.files[r.PathValue("name")]
	s.mu.Unlock()
	if !ok {
		http.Error(w, "NoSuchKey", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", f.contentType)
	w.WriteHeader(http.StatusOK)
	s.WriteAudio(r.Context(), w, f.audio)
}

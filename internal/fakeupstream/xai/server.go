// Package xai is a fake of xAI's text-to-speech REST API for tests.
//
// It follows the published reference:
//
//	POST /v1/tts                    the audio as the body, chunked
//	GET  /v1/tts/voices             {"voices": [{voice_id, name, ...}]}
//	GET  /v1/tts/voices/{voice_id}  one voice
//
// Requests need `Authorization: Bearer <key>`. The speech body is decoded
// strictly (unknown fields are a 400) and validated as documented: text
// required, at most 15,000 characters; voice_id one of the voices
// (case-insensitive, default eve); language required (auto or a BCP-47
// code of the documented list); output_format {codec, sample_rate,
// bit_rate} with codec mp3 (default), wav, pcm, mulaw/ulaw or alaw,
// sample_rate 8000/16000/22050/24000/44100/48000 (default 24000) and
// bit_rate 32000 to 192000 for mp3 only; optimize_streaming_latency 0 or
// 1; text_normalization a boolean.
//
// Errors are {"code": "...", "error": "..."}. A missing key is a 401; a
// wrong key a 400 whose message names the API key, the way xAI answers
// it.
//
// Every codec answers real audio of that codec at the sample_rate asked
// (mp3 at its bit_rate, default 128000), with the documented Content-Type:
// audio/mpeg, audio/wav, audio/pcm, audio/basic (μ-law), audio/alaw. The
// last audio answered is kept (Control.LastAnswer).
//
// Deliberate gaps: mulaw, ulaw and alaw render at 8000 Hz only (other
// rates answer 400 naming the fake), and mp3 only at the rate and
// bit_rate pairs MP3 can carry (a 192 kbit/s MP3 at 24 kHz does not
// exist; what xAI answers then is not documented); speech tags in the
// text are spoken as characters.
package xai

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/voxgate/voxgate/internal/fakeupstream"
)

// Key is the API key the fake accepts unless Options.Keys says otherwise.
const Key = "xai-fake-0123456789abcdefghij"

// Paths of the API, under the root URL.
const (
	TTSPath    = "/v1/tts"
	VoicesPath = "/v1/tts/voices"
)

// MaxText is the documented limit of text in characters.
const MaxText = 15000

// Voice ids of the fake: the five documented voices.
const (
	VoiceEve = "eve"
	VoiceAra = "ara"
	VoiceRex = "rex"
	VoiceSal = "sal"
	VoiceLeo = "leo"
)

type voice struct {
	VoiceID     string `json:"voice_id"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

func voices() []voice {
	return []voice{
		{VoiceEve, "Eve", "Energetic, upbeat"},
		{VoiceAra, "Ara", "Warm, friendly"},
		{VoiceRex, "Rex", "Confident, clear"},
		{VoiceSal, "Sal", "Smooth, balanced"},
		{VoiceLeo, "Leo", "Authoritative, strong"},
	}
}

// SampleRates returns the documented sample rates.
func SampleRates() []int { return []int{8000, 16000, 22050, 24000, 44100, 48000} }

// Languages returns the documented language values.
func Languages() []string {
	return strings.Fields("auto en ar-EG ar-SA ar-AE bn zh fr de hi id it ja ko pt-BR pt-PT ru es-MX es-ES tr vi")
}

// Server is a running fake. Steer it through the embedded Control.
type Server struct {
	*fakeupstream.Control
	// URL is the server's root, e.g. http://127.0.0.1:41234.
	URL string

	srv    *httptest.Server
	studio *fakeupstream.Studio
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
	mux.HandleFunc("GET "+VoicesPath, s.list)
	mux.HandleFunc("GET "+VoicesPath+"/{id}", s.one)
	mux.HandleFunc("/", s.notFound)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// BaseURL is what the plugin's base_url setting should be: the root plus
// /v1, as in https://api.x.ai/v1.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

func fail(w http.ResponseWriter, status int, code, msg string) {
	fakeupstream.WriteJSON(w, status, map[string]string{"code": code, "error": msg})
}

func bad(w http.ResponseWriter, format string, args ...any) {
	fail(w, http.StatusBadRequest, "Client specified an invalid argument", fmt.Sprintf(format, args...))
}

func injected(w http.ResponseWriter, f *fakeupstream.Fault) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	code, msg := "Internal error", "The service encountered an internal error."
	switch f.Status {
	case http.StatusUnauthorized:
		code, msg = "Unauthenticated", "The API key is not valid."
	case http.StatusTooManyRequests:
		code, msg = "Too many requests", "Your team has exceeded its rate limit."
	case http.StatusServiceUnavailable:
		code, msg = "Service unavailable", "The service is currently unavailable."
	}
	if f.Code != "" {
		code = f.Code
	}
	if f.Message != "" {
		msg = f.Message
	}
	fail(w, f.Status, code, msg)
}

// begin records the request, waits out the latency, checks the key and
// answers an injected fault; false when it answered.
func (s *Server) begin(w http.ResponseWriter, r *http.Request) (fakeupstream.Request, bool) {
	req, fault, ok := s.Begin(r)
	if !ok {
		return req, false
	}
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case !ok || key == "":
		fail(w, http.StatusUnauthorized, "Unauthenticated", "Missing bearer authentication in header")
		return req, false
	case !slices.Contains(s.Keys(Key), key):
		shown := key
		if len(shown) > 4 {
			shown = shown[:2] + "***" + shown[len(shown)-2:]
		}
		bad(w, "Incorrect API key provided: %s. You can obtain an API key from the xAI console.", shown)
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
		fail(w, http.StatusNotFound, "Some requested entity was not found", fmt.Sprintf("No route for %s %s", r.Method, r.URL.Path))
	}
}

type ttsRequest struct {
	Text                     *string       `json:"text"`
	VoiceID                  *string       `json:"voice_id"`
	Language                 *string       `json:"language"`
	OutputFormat             *outputFormat `json:"output_format"`
	OptimizeStreamingLatency *int          `json:"optimize_streaming_latency"`
	TextNormalization        *bool         `json:"text_normalization"`
}

type outputFormat struct {
	Codec      *string `json:"codec"`
	SampleRate *int    `json:"sample_rate"`
	BitRate    *int    `json:"bit_rate"`
}

func knownVoice(id string) bool {
	return slices.ContainsFunc(voices(), func(v voice) bool { return strings.EqualFold(v.VoiceID, id) })
}

func (s *Server) tts(w http.ResponseWriter, r *http.Request) {
	req, ok := s.begin(w, r)
	if !ok {
		return
	}
	var b ttsRequest
	if err := fakeupstream.DecodeStrict(req.Body, &b); err != nil {
		if field, ok := fakeupstream.UnknownField(err); ok {
			bad(w, "Unknown field `%s` in the request body", field)
		} else {
			bad(w, "Failed to parse the request body: %v", err)
		}
		return
	}
	codec, rate, bitRate := "mp3", 24000, 128000
	switch {
	case b.Text == nil || *b.Text == "":
		bad(w, "text is required")
		return
	case utf8.RuneCountInString(*b.Text) > MaxText:
		bad(w, "text must be at most %d characters", MaxText)
		return
	case b.VoiceID != nil && !knownVoice(*b.VoiceID):
		bad(w, "Unknown voice_id `%s`", *b.VoiceID)
		return
	case b.Language == nil:
		bad(w, "language is required")
		return
	case !slices.ContainsFunc(Languages(), func(l string) bool { return strings.EqualFold(l, *b.Language) }):
		bad(w, "Unsupported language `%s`", *b.Language)
		return
	case b.OptimizeStreamingLatency != nil && *b.OptimizeStreamingLatency != 0 && *b.OptimizeStreamingLatency != 1:
		bad(w, "optimize_streaming_latency must be 0 or 1")
		return
	}
	if f := b.OutputFormat; f != nil {
		if f.Codec != nil {
			codec = *f.Codec
		}
		switch codec {
		case "mp3", "wav", "pcm", "mulaw", "ulaw", "alaw":
		default:
			bad(w, "Unsupported codec `%s`", codec)
			return
		}
		if f.SampleRate != nil {
			if !slices.Contains(SampleRates(), *f.SampleRate) {
				bad(w, "Unsupported sample_rate %d", *f.SampleRate)
				return
			}
			rate = *f.SampleRate
		}
		if f.BitRate != nil && (codec != "mp3" || !slices.Contains([]int{32000, 64000, 96000, 128000, 192000}, *f.BitRate)) {
			bad(w, "bit_rate must be one of 32000, 64000, 96000, 128000, 192000, for mp3 only")
			return
		}
		if f.BitRate != nil {
			bitRate = *f.BitRate
		}
	}
	u := fakeupstream.Speak(*b.Text, 1)
	var (
		audio       fakeupstream.Audio
		contentType string
	)
	switch codec {
	case "pcm":
		audio, contentType = s.studio.PCM(u, rate), "audio/pcm"
	case "wav":
		audio, contentType = s.studio.WAV(u, rate), "audio/wav"
	default:
		format, kbps := codec, 0
		switch codec {
		case "mulaw", "ulaw":
			format, contentType = "ulaw", "audio/basic"
		case "alaw":
			contentType = "audio/alaw"
		default:
			kbps, contentType = bitRate/1000, "audio/mpeg"
		}
		if format != "mp3" && rate != 8000 {
			bad(w, "codec `%s` at %d Hz is valid but this fake renders G.711 at 8000 Hz only", codec, rate)
			return
		}
		var err error
		if audio, _, err = s.studio.Encoded(u, format, rate, kbps); err != nil {
			bad(w, "the fake cannot render %s at %d Hz and %d bit/s: %v", codec, rate, bitRate, err)
			return
		}
	}
	s.RecordAnswer(audio.Bytes())
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	s.WriteAudio(r.Context(), w, audio)
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.begin(w, r); ok {
		fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{"voices": voices()})
	}
}

func (s *Server) one(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.begin(w, r); !ok {
		return
	}
	id := r.PathValue("id")
	i := slices.IndexFunc(voices(), func(v voice) bool { return strings.EqualFold(v.VoiceID, id) })
	if i < 0 {
		fail(w, http.StatusNotFound, "Some requested entity was not found", fmt.Sprintf("Voice `%s` not found", id))
		return
	}
	fakeupstream.WriteJSON(w, http.StatusOK, voices()[i])
}

package openai

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"path"
	"slices"
	"strings"
	"unicode"

	"github.com/voxgate/voxgate/internal/fakeupstream"
)

// TranscriptionPath is the URL path of the speech-to-text endpoint.
const TranscriptionPath = "/v1/audio/transcriptions"

// MaxUpload is the documented size limit of a file to transcribe.
const MaxUpload = 25 << 20

// TranscribeModels returns the speech-to-text models the fake knows.
func TranscribeModels() []string {
	return []string{"whisper-1", "gpt-4o-transcribe", "gpt-4o-mini-transcribe"}
}

// TranscriptionURLPath is the URL path of the transcription endpoint:
// TranscriptionPath, or the prefix of NewAt plus /audio/transcriptions.
func (s *Server) TranscriptionURLPath() string { return s.prefix + "/audio/transcriptions" }

// transcribe serves POST /v1/audio/transcriptions as the API reference
// describes it: a multipart form with file (flac, mp3, mp4, mpeg, mpga,
// m4a, ogg, wav or webm, at most 25 MB) and model, and optionally
// language, prompt, response_format (json, the default; text, srt,
// verbose_json, vtt; only json and text for the gpt-4o models),
// temperature and timestamp_granularities[] (word, segment; only with
// verbose_json). verbose_json answers {task, language, duration, text,
// words?, segments?}.
//
// Deliberate gap: the fake cannot recognize speech. It decodes WAV only
// (other formats answer 400), finds the bursts of sound in it (its own
// speech endpoint renders one per word, so on the fake's own audio the
// word times are exact), and names them in order with the words of the
// prompt, as whisper follows a prompt's spelling; bursts beyond the
// prompt's words are named "…". Without a prompt the text is empty.
func (s *Server) transcribe(w http.ResponseWriter, r *http.Request) {
	req, fault, ok := s.Begin(r)
	if !ok {
		return
	}
	if r.Method != http.MethodPost {
		WriteError(w, http.StatusMethodNotAllowed, "invalid_request_error", "", "",
			fmt.Sprintf("Invalid method for URL (%s %s)", r.Method, r.URL.Path))
		return
	}
	if !Authorized(w, r, s.Keys(Key)) {
		return
	}
	if fault != nil {
		WriteFault(w, fault)
		return
	}
	if len(req.Body) > MaxUpload+1<<20 {
		WriteError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "", "",
			fmt.Sprintf("Maximum content size limit (%d) exceeded (%d bytes read)", MaxUpload, len(req.Body)))
		return
	}
	form, err := fakeupstream.ParseMultipart(req)
	if err != nil {
		s.invalid(w, "", "", "Invalid Content-Type header: the transcription endpoint takes multipart/form-data.")
		return
	}
	defer func() { _ = form.RemoveAll() }()
	field := func(name string) string {
		if v := form.Value[name]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	files := form.File["file"]
	if len(files) == 0 {
		s.invalid(w, "file", "missing_required_parameter", "Missing required parameter: 'file'.")
		return
	}
	model := field("model")
	switch {
	case model == "":
		s.invalid(w, "model", "missing_required_parameter", "Missing required parameter: 'model'.")
		return
	case !slices.Contains(TranscribeModels(), model):
		WriteError(w, http.StatusNotFound, "invalid_request_error", "", "model_not_found",
			fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model))
		return
	}
	format := field("response_format")
	if format == "" {
		format = "json"
	}
	switch {
	case !slices.Contains([]string{"json", "text", "srt", "verbose_json", "vtt"}, format):
		s.invalid(w, "response_format", "invalid_value", fmt.Sprintf("Invalid value for 'response_format': '%s'. Supported values are: 'json', 'text', 'srt', 'verbose_json', and 'vtt'.", format))
		return
	case strings.HasPrefix(model, "gpt-4o") && format != "json" && format != "text":
		s.invalid(w, "response_format", "unsupported_value", fmt.Sprintf("response_format '%s' is not compatible with model '%s'. Use 'json' or 'text'.", format, model))
		return
	}
	granularities := form.Value["timestamp_granularities[]"]
	for _, g := range granularities {
		if g != "word" && g != "segment" {
			s.invalid(w, "timestamp_granularities", "invalid_value", fmt.Sprintf("Invalid value for 'timestamp_granularities': '%s'. Supported values are: 'word' and 'segment'.", g))
			return
		}
	}
	if len(granularities) > 0 && format != "verbose_json" {
		s.invalid(w, "timestamp_granularities", "invalid_value", "timestamp_granularities requires response_format=verbose_json.")
		return
	}
	samples, rate, err := readWAV(files[0])
	if err != nil {
		s.invalid(w, "file", "invalid_value", err.Error())
		return
	}
	words := bursts(samples, rate)
	names := promptWords(field("prompt"))
	var text []string
	type word struct {
		Word  string  `json:"word"`
		Start float64 `json:"start"`
		End   float64 `json:"end"`
	}
	out := make([]word, 0, len(words))
	for i, b := range words {
		name := "…"
		if i < len(names) {
			name = names[i]
		}
		text = append(text, name)
		out = append(out, word{Word: name, Start: round2(b[0]), End: round2(b[1])})
	}
	full := strings.Join(text, " ")
	duration := float64(len(samples)) / float64(rate)
	w.Header().Set("X-Request-Id", fmt.Sprintf("req_fake%d", s.reqID.Add(1)))
	switch format {
	case "text":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, full+"\n")
	case "srt", "vtt":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		sep := ","
		head := ""
		if format == "vtt" {
			sep, head = ".", "WEBVTT\n\n"
		}
		_, _ = fmt.Fprintf(w, "%s1\n%s --> %s\n%s\n\n", head, clock(0, sep), clock(duration, sep), full)
	case "verbose_json":
		body := map[string]any{"task": "transcribe", "language": languageName(field("language")), "duration": round2(duration), "text": full}
		if slices.Contains(granularities, "word") {
			body["words"] = out
		}
		if len(granularities) == 0 || slices.Contains(granularities, "segment") {
			end := 0.0
			if len(out) > 0 {
				end = out[len(out)-1].End
			}
			body["segments"] = []map[string]any{{"id": 0, "seek": 0, "start": 0.0, "end": end, "text": " " + full,
				"tokens": []int{}, "temperature": 0.0, "avg_logprob": -0.2, "compression_ratio": 1.0, "no_speech_prob": 0.01}}
		}
		fakeupstream.WriteJSON(w, http.StatusOK, body)
	default:
		fakeupstream.WriteJSON(w, http.StatusOK, map[string]any{"text": full})
	}
}

// readWAV reads a 16-bit PCM WAV upload, mixed down to mono.
func readWAV(fh *multipart.FileHeader) ([]float64, int, error) {
	ext := strings.TrimPrefix(strings.ToLower(path.Ext(fh.Filename)), ".")
	supported := []string{"flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm"}
	if !slices.Contains(supported, ext) {
		return nil, 0, fmt.Errorf("Invalid file format. Supported formats: %s", strings.Join(supported, ", "))
	}
	if ext != "wav" {
		return nil, 0, fmt.Errorf("file format %s is valid but this fake decodes wav only", ext)
	}
	f, err := fh.Open()
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, 0, err
	}
	bad := errors.New("Audio file might be corrupted or unsupported")
	if len(data) < 12 || string(data[0:4]) != "RIFF" || string(data[8:12]) != "WAVE" {
		return nil, 0, bad
	}
	channels, rate := 0, 0
	for p := 12; p+8 <= len(data); {
		id, size := string(data[p:p+4]), int(binary.LittleEndian.Uint32(data[p+4:]))
		body := data[p+8 : min(p+8+size, len(data))]
		switch id {
		case "fmt ":
			if len(body) < 16 || binary.LittleEndian.Uint16(body[0:]) != 1 || binary.LittleEndian.Uint16(body[14:]) != 16 {
				return nil, 0, fmt.Errorf("this fake reads 16-bit PCM WAV only")
			}
			channels, rate = int(binary.LittleEndian.Uint16(body[2:])), int(binary.LittleEndian.Uint32(body[4:]))
		case "data":
			if channels == 0 || rate == 0 {
				return nil, 0, bad
			}
			n := len(body) / (2 * channels)
			out := make([]float64, n)
			for i := range n {
				sum := 0.0
				for c := range channels {
					sum += float64(int16(binary.LittleEndian.Uint16(body[2*(i*channels+c):])))
				}
				out[i] = sum / float64(channels) / 32768
			}
			return out, rate, nil
		}
		p += 8 + size + size%2
	}
	return nil, 0, bad
}

// bursts finds the stretches of sound in samples: 10 ms frames louder
// than -40 dBFS, gaps shorter than 40 ms bridged, bursts shorter than
// 30 ms dropped. It returns their [start, end) in seconds.
func bursts(samples []float64, rate int) [][2]float64 {
	frame := rate / 100
	if frame == 0 {
		return nil
	}
	var out [][2]float64
	start, lastLoud := -1, -1
	for f := 0; f*frame < len(samples); f++ {
		seg := samples[f*frame : min((f+1)*frame, len(samples))]
		e := 0.0
		for _, v := range seg {
			e += v * v
		}
		loud := 10*math.Log10(e/float64(len(seg))+1e-12) > -40
		if loud {
			if start < 0 || f-lastLoud > 4 {
				if start >= 0 && lastLoud-start >= 2 {
					out = append(out, [2]float64{float64(start) / 100, float64(lastLoud+1) / 100})
				}
				start = f
			}
			lastLoud = f
		}
	}
	if start >= 0 && lastLoud-start >= 2 {
		out = append(out, [2]float64{float64(start) / 100, float64(lastLoud+1) / 100})
	}
	return out
}

// promptWords splits a prompt into the words whisper would write: split
// at spaces, punctuation around them dropped.
func promptWords(prompt string) []string {
	var out []string
	for _, f := range strings.Fields(prompt) {
		if w := strings.TrimFunc(f, func(r rune) bool { return unicode.IsPunct(r) && r != '\'' }); w != "" {
			out = append(out, w)
		}
	}
	return out
}

func languageName(code string) string {
	names := map[string]string{"en": "english", "de": "german", "fr": "french", "es": "spanish", "it": "italian", "pt": "portuguese", "nl": "dutch", "ja": "japanese"}
	if n, ok := names[strings.ToLower(code)]; ok {
		return n
	}
	return "english"
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }

func clock(sec float64, sep string) string {
	ms := int(math.Round(sec * 1000))
	return fmt.Sprintf("%02d:%02d:%02d%s%03d", ms/3600000, ms/60000%60, ms/1000%60, sep, ms%1000)
}

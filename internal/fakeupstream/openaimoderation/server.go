// Package openaimoderation is a fake of the OpenAI moderation API (POST
// /v1/moderations) and of the chat completion API (POST
// /v1/chat/completions, see chat.go) for tests of plugins/openai-moderation
// and of the gateway's moderation path.
//
// It follows the published API reference: Bearer auth (401 with OpenAI's
// error body on a missing or wrong key), a JSON body of model and input
// (a string or an array of strings; unknown fields rejected), and a
// response of {id, model, results: [{flagged, categories,
// category_scores, category_applied_input_types}]} with one result per
// input and every category of the omni-moderation models present. Errors
// are {"error": {"message", "type", "param", "code"}}.
//
// What gets flagged is up to the test: Flag registers a word with a
// category and a score; an input containing the word (case-insensitive)
// gets that score, and a category is flagged when its score reaches 0.5,
// the fake's stand-in for the real models' internal thresholds.
//
//	srv := openaimoderation.New(t, fakeupstream.Options{})
//	srv.Flag("zorblax", "harassment", 0.91)
//	// plugin settings: base_url = srv.BaseURL(); credential: openaimoderation.Key
//	srv.FailNext(1, fakeupstream.Fault{Status: 500})
//	srv.SetLatency(time.Hour) // hangs until the client gives up
package openaimoderation

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
)

// Key is the API key the fake accepts unless Options.Keys says otherwise.
const Key = "sk-test-fake-moderation-0123456789"

// Path is the URL path of the moderation endpoint.
const Path = "/v1/moderations"

// FlagAt is the score from which the fake flags a category.
const FlagAt = 0.5

// Categories are the categories of the omni-moderation models, in the
// order the API reference lists them.
func Categories() []string {
	return []string{
		"harassment", "harassment/threatening", "hate", "hate/threatening",
		"illicit", "illicit/violent", "self-harm", "self-harm/intent",
		"self-harm/instructions", "sexual", "sexual/minors", "violence", "violence/graphic",
	}
}

// Models returns the moderation models the fake knows; the "-latest"
// aliases answer with the snapshot they point at, as the API does.
func Models() map[string]string {
	return map[string]string{
		"omni-moderation-latest":     "omni-moderation-2024-09-26",
		"omni-moderation-2024-09-26": "omni-moderation-2024-09-26",
		"text-moderation-latest":     "text-moderation-007",
		"text-moderation-stable":     "text-moderation-007",
	}
}

// Server is a running fake. Steer it through the embedded Control (faults,
// latency, recorded requests) and Flag.
type Server struct {
	*fakeupstream.Control
	// URL is the server's root, e.g. http://127.0.0.1:41234.
	URL string

	srv   *httptest.Server
	reqID atomic.Int64

	mu    sync.Mutex
	flags map[string]flag // lower-case word -> what it scores
	// violations and chatContent steer the chat completion endpoint
	// (chat.go).
	violations  []violation
	chatContent *string
}

type flag struct {
	category string
	score    float64
}

// New starts a fake. With tb set it is closed at tb.Cleanup; otherwise
// call Close.
func New(tb testing.TB, opts fakeupstream.Options) *Server {
	s := &Server{Control: fakeupstream.NewControl(opts), flags: map[string]flag{}}
	mux := http.NewServeMux()
	mux.HandleFunc(Path, s.moderate)
	mux.HandleFunc(ChatPath, s.chat)
	mux.HandleFunc("/", s.notFound)
	s.srv = httptest.NewServer(s.Judge(tb, openai.Document(), mux))
	s.URL = s.srv.URL
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// BaseURL is what the plugin's base_url setting should be: the root plus
// /v1, as in https://api.openai.com/v1.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Flag makes inputs containing word score score in category. It panics on
// a category the API does not have, which would be a broken test.
func (s *Server) Flag(word, category string, score float64) {
	if !slices.Contains(Categories(), category) {
		panic(fmt.Sprintf("openaimoderation: unknown category %q", category))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flags[strings.ToLower(word)] = flag{category: category, score: score}
}

// apiError is OpenAI's error body.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if _, fault, ok := s.Begin(r); !ok {
		return
	} else if fault != nil {
		openai.WriteFault(w, fault)
		return
	}
	openai.WriteError(w, http.StatusNotFound, "invalid_request_error", "", "", fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path))
}

// moderationRequest is the documented request body. Input is a string or
// an array of strings (the multi-modal array of objects is not faked).
type moderationRequest struct {
	Model *string `json:"model"`
	Input any     `json:"input"`
}

// Response is the documented response body; tests may decode into it.
type Response struct {
	ID      string   `json:"id"`
	Model   string   `json:"model"`
	Results []Result `json:"results"`
}

// Result is one input's verdict.
type Result struct {
	Flagged                   bool                `json:"flagged"`
	Categories                map[string]bool     `json:"categories"`
	CategoryScores            map[string]float64  `json:"category_scores"`
	CategoryAppliedInputTypes map[string][]string `json:"category_applied_input_types"`
}

func (s *Server) moderate(w http.ResponseWriter, r *http.Request) {
	req, fault, ok := s.Begin(r)
	if !ok {
		return
	}
	if r.Method != http.MethodPost {
		openai.WriteError(w, http.StatusMethodNotAllowed, "invalid_request_error", "", "",
			fmt.Sprintf("Invalid method for URL (%s %s)", r.Method, r.URL.Path))
		return
	}
	if !openai.Authorized(w, r, s.Keys(Key)) {
		return
	}
	if fault != nil {
		openai.WriteFault(w, fault)
		return
	}
	var body moderationRequest
	if err := fakeupstream.DecodeStrict(req.Body, &body); err != nil {
		if field, ok := fakeupstream.UnknownField(err); ok {
			openai.WriteError(w, http.StatusBadRequest, "invalid_request_error", "", "", fmt.Sprintf("Unrecognized request argument supplied: %s", field))
			return
		}
		openai.WriteError(w, http.StatusBadRequest, "invalid_request_error", "", "", "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly.)")
		return
	}
	model := "omni-moderation-latest"
	if body.Model != nil {
		model = *body.Model
	}
	snapshot, known := Models()[model]
	if !known {
		openai.WriteError(w, http.StatusNotFound, "invalid_request_error", "model", "model_not_found",
			fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model))
		return
	}
	inputs, ok := inputsOf(body.Input)
	if !ok {
		openai.WriteError(w, http.StatusBadRequest, "invalid_request_error", "input", "invalid_type",
			"Invalid type for 'input': expected a string or an array of strings.")
		return
	}
	resp := Response{ID: fmt.Sprintf("modr-fake%d", s.reqID.Add(1)), Model: snapshot}
	for _, in := range inputs {
		resp.Results = append(resp.Results, s.score(in))
	}
	fakeupstream.WriteJSON(w, http.StatusOK, resp)
}

func inputsOf(v any) ([]string, bool) {
	switch in := v.(type) {
	case string:
		return []string{in}, true
	case []any:
		out := make([]string, 0, len(in))
		for _, e := range in {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, len(out) > 0
	}
	return nil, false
}

// score rates one input: every category gets a small baseline score, and
// each flagged word present raises its category to the word's score.
func (s *Server) score(input string) Result {
	r := Result{Categories: map[string]bool{}, CategoryScores: map[string]float64{}, CategoryAppliedInputTypes: map[string][]string{}}
	for i, c := range Categories() {
		r.CategoryScores[c] = float64(i+1) * 1e-6
		r.CategoryAppliedInputTypes[c] = []string{"text"}
	}
	lower := strings.ToLower(input)
	s.mu.Lock()
	for word, f := range s.flags {
		if strings.Contains(lower, word) && f.score > r.CategoryScores[f.category] {
			r.CategoryScores[f.category] = f.score
		}
	}
	s.mu.Unlock()
	for c, score := range r.CategoryScores {
		r.Categories[c] = score >= FlagAt
		r.Flagged = r.Flagged || r.Categories[c]
	}
	return r
}

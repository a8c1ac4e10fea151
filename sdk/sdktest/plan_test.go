package sdktest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

// planKey is the API key of the planner modes of
// TestRunCatchesBrokenProviders; their upstream demands it.
const planKey = "sk-sdktest-plan-0123456789abcdef"

// planNativeRate is the test plugin's native sample rate, the rate of its
// PCM when a request names none.
const planNativeRate = 16000

// planning makes a broken provider an sdk.Planner, for the modes of
// TestRunCatchesBrokenProviders whose name starts with "plan". Its plans
// go to a small HTTP upstream that renders with the test plugin's own
// Synthesize, so a planned answer is exactly what Synthesize returns;
// each "plan-*" mode breaks one rule of Planner, "planner" none.
type planning struct {
	*broken
	endpoint *upstream.Endpoint
}

var _ sdk.Planner = (*planning)(nil)

// planBody is the body of a planned request.
type planBody struct {
	Model      string          `json:"model"`
	Voice      string          `json:"voice"`
	Input      string          `json:"input"`
	Format     string          `json:"format,omitempty"`
	SampleRate int             `json:"sample_rate,omitempty"`
	Speed      float64         `json:"speed,omitempty"`
	Options    json.RawMessage `json:"options,omitempty"`
}

// planError is the upstream's error body, OpenAI's shape.
type planError struct {
	Error struct {
		Message string `json:"message"`
		Code    string `json:"code"`
	} `json:"error"`
}

// newPlanning starts b's upstream (closed at t's end) and returns the
// planner in front of it.
func newPlanning(t *testing.T, b *broken) *planning {
	t.Helper()
	p := &planning{broken: b}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	api := &upstream.API{
		Provider:  "sdktest",
		Authorize: func(h http.Header, key string) { h.Set("Authorization", "Bearer "+key) },
		ParseError: func(body []byte) (code, message string) {
			var e planError
			if json.Unmarshal(body, &e) != nil {
				return "", ""
			}
			return e.Error.Code, e.Error.Message
		},
	}
	e, err := upstream.NewEndpoint(api, map[string]string{"base_url": srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	p.endpoint = e
	return p
}

// Plan implements sdk.Planner for the test plugin's models and formats.
func (p *planning) Plan(_ context.Context, req *sdk.PlanRequest) (*sdk.Plan, error) {
	r := req.Request
	switch r.Model {
	case "", "test", "basic":
	default:
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "sdktest: unknown model %q", r.Model)
	}
	if p.mode == "plan-unsupported" {
		return nil, sdk.Errorf(sdk.KindUnsupported, "sdktest: planning is off")
	}
	rate := r.SampleRate
	if rate == 0 {
		rate = planNativeRate
	}
	var mediaType string
	frame := 1
	switch r.Format {
	case "", sdk.FormatPCM:
		mediaType, frame = fmt.Sprintf("audio/pcm;rate=%d", rate), 2
		if p.mode == "plan-wrong-mediatype" {
			mediaType = fmt.Sprintf("audio/L16;rate=%d", rate)
		}
	case sdk.FormatWAV:
		mediaType = "audio/wav"
		if p.mode == "plan-wrong-mediatype" {
			mediaType = "audio/x-wav"
		}
	default:
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "sdktest: format %q", r.Format)
	}
	key := r.Credentials.APIKey
	if p.mode == "plan-keyless" && key == "" {
		key = "anything"
	}
	body := planBody{Model: r.Model, Voice: r.Voice, Input: r.Text, Format: r.Format, SampleRate: r.SampleRate, Speed: r.Speed, Options: r.Options}
	plan, err := p.endpoint.Plan(http.MethodPost, p.endpoint.BaseURL+"/speech", body, key, nil)
	if err != nil {
		return nil, err
	}
	plan.MediaType, plan.FrameSize = mediaType, frame
	if p.mode == "plan-no-placeholder" {
		plan.Body = []byte(strings.Replace(string(plan.Body), sdk.PlanText, "Hello there.", 1))
	}
	return plan, nil
}

// Explain implements sdk.Planner.
func (p *planning) Explain(_ context.Context, f *sdk.Failure) error {
	switch p.mode {
	case "plan-explain-internal":
		return &sdk.Error{Kind: sdk.KindInternal, Message: "sdktest: the upstream failed", UpstreamStatus: f.Status}
	case "plan-explain-leaks":
		var e *sdk.Error
		if err := p.endpoint.Explain(f); errors.As(err, &e) {
			e.Message += ": " + string(f.Body)
			return e
		}
	}
	return p.endpoint.Explain(f)
}

// serve is the planner's upstream: it renders a planned request with the
// test plugin's Synthesize.
func (p *planning) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+planKey {
		writePlanError(w, http.StatusUnauthorized, "invalid_api_key", "bad key")
		return
	}
	var b planBody
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
		writePlanError(w, http.StatusBadRequest, "invalid_json", err.Error())
		return
	}
	resp, err := p.broken.Provider.Synthesize(r.Context(), &sdk.SynthesizeRequest{
		Model: b.Model, Voice: b.Voice, Text: b.Input, Format: b.Format,
		SampleRate: b.SampleRate, Speed: b.Speed, Options: b.Options,
		Credentials: sdk.Credentials{APIKey: planKey},
	})
	if err != nil {
		status := http.StatusInternalServerError
		if kindOf(err) == sdk.KindInvalidRequest {
			status = http.StatusBadRequest
		}
		writePlanError(w, status, "synthesis_failed", err.Error())
		return
	}
	w.Header().Set("Content-Type", resp.MediaType)
	w.Write(resp.Audio)
}

func writePlanError(w http.ResponseWriter, status int, code, message string) {
	var e planError
	e.Error.Code, e.Error.Message = code, message
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(e)
}

func TestFillPlan(t *testing.T) {
	tests := []struct {
		name, body, text, want string
	}{
		{"plain", `{"input":"` + sdk.PlanText + `"}`, "Hello.", `{"input":"Hello."}`},
		{"escaped", `{"input":"` + sdk.PlanText + `"}`, "Say \"hi\"\n\\ <now>", `{"input":"Say \"hi\"\n\\ \u003cnow\u003e"}`},
		{"inside a string", `{"input":"<speak>` + sdk.PlanText + `</speak>","v":1}`, "ö", `{"input":"<speak>ö</speak>","v":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &sdk.Plan{Method: "POST", URL: "http://upstream.test/x", MediaType: "audio/wav", Body: []byte(tt.body)}
			at, err := validatePlan(p)
			if err != nil {
				t.Fatal(err)
			}
			got, err := fillPlan(p, at, tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			var v map[string]any
			if err := json.Unmarshal(got, &v); err != nil {
				t.Errorf("filled body is not JSON: %v", err)
			}
		})
	}
}

func TestValidatePlan(t *testing.T) {
	good := func() *sdk.Plan {
		return &sdk.Plan{Method: "POST", URL: "https://upstream.test/speech", MediaType: "audio/mpeg", Body: []byte(`{"t":"` + sdk.PlanText + `"}`)}
	}
	tests := []struct {
		name   string
		modify func(*sdk.Plan)
		ok     bool
	}{
		{"good", func(*sdk.Plan) {}, true},
		{"no placeholder", func(p *sdk.Plan) { p.Body = []byte(`{}`) }, false},
		{"relative URL", func(p *sdk.Plan) { p.URL = "/speech" }, false},
		{"negative frame size", func(p *sdk.Plan) { p.FrameSize = -2 }, false},
		{"negative attempts", func(p *sdk.Plan) { p.MaxAttempts = -1 }, false},
		{"negative reuse", func(p *sdk.Plan) { p.ReuseFor = -1 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := good()
			tt.modify(p)
			if _, err := validatePlan(p); (err == nil) != tt.ok {
				t.Errorf("validatePlan: %v, want ok %v", err, tt.ok)
			}
		})
	}
}

func TestSameMediaType(t *testing.T) {
	tests := []struct {
		a, b string
		same bool
	}{
		{"audio/pcm;rate=24000", "audio/pcm; rate=24000", true},
		{"audio/PCM;rate=24000", "audio/pcm;rate=24000", true},
		{"audio/pcm;rate=24000", "audio/pcm;rate=16000", false},
		{"audio/pcm;rate=24000", "audio/L16;rate=24000", false},
		{"audio/wav", "audio/x-wav", false},
		{"audio/mpeg", "audio/mpeg", true},
		{"not a type", "not a type", true},
		{"", "audio/mpeg", false},
	}
	for _, tt := range tests {
		if got := sameMediaType(tt.a, tt.b); got != tt.same {
			t.Errorf("sameMediaType(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.same)
		}
	}
}

func TestRedactKey(t *testing.T) {
	const key = "sk-abcdefgh0123456789"
	tests := []struct{ in, want string }{
		{"bad key " + key + " given", "bad key <key> given"},
		{"masked sk-abcdefgh***6789", "masked <key prefix>fgh***6789"},
		{"nothing here", "nothing here"},
	}
	for _, tt := range tests {
		if got := redactKey(tt.in, key); got != tt.want {
			t.Errorf("redactKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := redactKey("x", ""); got != "x" {
		t.Errorf("empty key changed the text to %q", got)
	}
}

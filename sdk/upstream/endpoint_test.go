package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voxgate/voxgate/sdk"
)

func TestEndpoint(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get("X-Key") != "secret-key-123" {
			w.WriteHeader(401)
			// Like OpenAI, echo the key that was sent.
			w.Write([]byte(`{"code":"bad_key","message":"key ` + r.Header.Get("X-Key") + ` rejected"}`))
			return
		}
		if r.URL.Path == "/quota" {
			w.WriteHeader(429)
			w.Write([]byte(`{"code":"quota","message":"spent"}`))
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	api := &API{
		Provider:       "demo",
		DefaultBaseURL: "https://unused.invalid",
		Authorize:      func(h http.Header, key string) { h.Set("X-Key", key) },
		ParseError: func(b []byte) (string, string) {
			code, msg, _ := strings.Cut(strings.Trim(string(b), "{}"), ",")
			return strings.TrimPrefix(strings.Trim(code, `"`), `code":"`), msg
		},
		Classify: func(e *sdk.Error) {
			if e.UpstreamCode == "quota" {
				e.Retryable = false
			}
		},
	}
	e, err := NewEndpoint(api, map[string]string{"base_url": srv.URL, "max_attempts": "1"})
	if err != nil {
		t.Fatal(err)
	}
	do := func(path, key string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(context.Background(), "GET", e.BaseURL+path, nil)
		return e.Do(context.Background(), req, key, true)
	}
	tests := []struct {
		name, path, key string
		kind            sdk.ErrorKind
		ok              bool
		calls           int32
		retryable       bool
	}{
		{"no key, no request", "/", "", sdk.KindUnauthorized, false, 0, false},
		{"authorized", "/", "secret-key-123", 0, true, 1, false},
		{"rejected key is redacted", "/", "secret-key-999", sdk.KindUnauthorized, false, 1, false},
		{"classified", "/quota", "secret-key-123", sdk.KindRateLimited, false, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := calls.Load()
			resp, err := do(tt.path, tt.key)
			if got := calls.Load() - before; got != tt.calls {
				t.Errorf("%d upstream calls, want %d", got, tt.calls)
			}
			if tt.ok {
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return
			}
			se := sdk.AsError(err)
			if se == nil || se.Kind != tt.kind || se.Retryable != tt.retryable {
				t.Fatalf("err = %#v, want kind %v", err, tt.kind)
			}
			if tt.key != "" && strings.Contains(se.Error(), tt.key) {
				t.Errorf("the key leaked into %q", se.Error())
			}
		})
	}
	if _, err := NewEndpoint(api, map[string]string{"base_url": "ftp://x"}); err == nil || sdk.AsError(err).Kind != sdk.KindInvalidRequest {
		t.Errorf("bad base_url: %v", err)
	}
}

// TestEndpointPlanExplain checks the Planner half: a plan carries the
// key, the placeholder and the endpoint's attempts, and Explain maps an
// error answer like Do does, with the key out of message and code.
func TestEndpointPlanExplain(t *testing.T) {
	const key = "secret-key-123"
	api := &API{
		Provider:       "demo",
		DefaultBaseURL: "https://api.demo.invalid/v1",
		Authorize:      func(h http.Header, key string) { h.Set("X-Key", key) },
		ParseError: func(b []byte) (string, string) {
			var v struct{ Code, Message string }
			_ = json.Unmarshal(b, &v)
			return v.Code, v.Message
		},
	}
	e, err := NewEndpoint(api, map[string]string{"max_attempts": "2", "timeout": "7s"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Plan("POST", e.BaseURL+"/speak", map[string]string{"text": sdk.PlanText}, "", nil); sdk.AsError(err).Kind != sdk.KindUnauthorized {
		t.Errorf("plan without a key: %v", err)
	}
	e.Header = map[string]string{"X-Api-Version": "2", "Accept": "*/*"}
	p, err := e.Plan("POST", e.BaseURL+"/speak", map[string]string{"text": sdk.PlanText}, key, map[string]string{"Accept": "audio/mpeg"})
	if err != nil {
		t.Fatal(err)
	}
	p.MediaType = "audio/mpeg"
	if _, err := p.TextSlot(); err != nil {
		t.Fatal(err)
	}
	if p.Header["X-Key"] != key || p.Header["Accept"] != "audio/mpeg" || p.Header["X-Api-Version"] != "2" || p.Header["Content-Type"] != "application/json" ||
		p.MaxAttempts != 2 || p.Timeout != 7*time.Second || p.ReuseFor != PlanReuse {
		t.Errorf("plan %+v", p)
	}

	tests := []struct {
		status int
		body   string
		kind   sdk.ErrorKind
	}{
		{401, `{"code":"bad_key ` + key + `","message":"key ` + key + ` rejected"}`, sdk.KindUnauthorized},
		{429, `{"code":"slow_down","message":"later"}`, sdk.KindRateLimited},
		{400, `not json`, sdk.KindInvalidRequest},
	}
	for _, tt := range tests {
		err := e.Explain(&sdk.Failure{Status: tt.status, Header: map[string]string{"Retry-After": "2"}, Body: []byte(tt.body), Credentials: sdk.Credentials{APIKey: key}})
		se := sdk.AsError(err)
		if se.Kind != tt.kind || se.UpstreamStatus != tt.status {
			t.Errorf("%d: %+v", tt.status, se)
		}
		if strings.Contains(se.Error(), key) || strings.Contains(se.UpstreamCode, key) {
			t.Errorf("%d: the key leaked: %q / %q", tt.status, se.Error(), se.UpstreamCode)
		}
		if tt.status == 429 && se.RetryAfter != 2*time.Second {
			t.Errorf("429 retry after %v", se.RetryAfter)
		}
	}
}

// TestEndpointDoJSON checks a JSON answer is decoded, a malformed one is
// the provider's fault, and an error status keeps its mapping.
func TestEndpointDoJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("X-Api-Version") != "2":
			w.WriteHeader(400)
		case r.URL.Path == "/ok":
			w.Write([]byte(`{"id":"v1"}`))
		case r.URL.Path == "/bad":
			w.Write([]byte(`{"id": nope}`))
		default:
			w.WriteHeader(401)
		}
	}))
	defer srv.Close()
	api := &API{Provider: "demo", DefaultBaseURL: srv.URL, Authorize: Bearer, ParseError: ParseOpenAIError}
	e, err := NewEndpoint(api, map[string]string{"max_attempts": "1"})
	if err != nil {
		t.Fatal(err)
	}
	e.Header = map[string]string{"X-Api-Version": "2"}
	call := func(path string) (string, error) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		var out struct{ ID string }
		err := e.DoJSON(context.Background(), req, "k-123456789", true, "answer", &out)
		return out.ID, err
	}
	if id, err := call("/ok"); err != nil || id != "v1" {
		t.Errorf("ok: %q, %v", id, err)
	}
	if _, err := call("/bad"); sdk.AsError(err).Kind != sdk.KindUpstream {
		t.Errorf("malformed answer: %v", err)
	}
	if _, err := call("/denied"); sdk.AsError(err).Kind != sdk.KindUnauthorized {
		t.Errorf("401: %v", err)
	}
}

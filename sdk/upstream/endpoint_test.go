package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

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

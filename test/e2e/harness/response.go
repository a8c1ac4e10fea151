package harness

import (
	"encoding/json"
	"net/http"
	"testing"
)

// AssertPaths fails unless the problem's validation errors name every
// path in want (dotted: "turns.0.text").
func AssertPaths(t *testing.T, p Problem, want ...string) {
	t.Helper()
	got := map[string]bool{}
	for _, v := range p.Validation {
		s := ""
		for i, e := range v.Path {
			if i > 0 {
				s += "."
			}
			s += e
		}
		got[s] = true
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("validation %+v lacks path %q", p.Validation, w)
		}
	}
}

// Response is a finished HTTP exchange.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test if it cannot.
func (r *Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Problem asserts r is a problem+json with status and code.
func (r *Response) Problem(t testing.TB, status int, code string) Problem {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status = %d, want %d; body %s", r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q, want application/problem+json; body %s", ct, r.Body)
	}
	var p Problem
	r.JSON(t, &p)
	if p.Code != code || p.Status != status || p.Title == "" || p.Type == "" {
		t.Fatalf("problem = %+v, want code %s status %d", p, code, status)
	}
	return p
}

// Voice decodes the {data: voice} answer of the single-voice endpoints.
func (r *Response) Voice(t testing.TB) Voice {
	t.Helper()
	var env struct {
		Data *Voice `json:"data"`
	}
	r.JSON(t, &env)
	if env.Data == nil {
		t.Fatalf("no {data: voice} in %s", r.Body)
	}
	return *env.Data
}

package api

import (
	"strings"
	"testing"

	"github.com/voxgate/voxgate/test/e2e/harness"
)

// corsConfig allows one browser origin.
const corsConfig = harness.ESpeakConfig + `
cors:
  allowed_origins: ["http://app.example.test:3000"]
  max_age: 5m
`

// TestCORS checks what a browser needs: preflights answered without an
// API key for an allowed origin and refused for another, and the
// response headers (allowed origin, exposed headers) on real answers,
// errors included.
func TestCORS(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, corsConfig)
	const allowed, other = "http://app.example.test:3000", "http://evil.example.test"

	tests := []struct {
		name, method, path, origin string
		hdr                        []string
		status                     int
		allowOrigin                string
	}{
		{"preflight allowed", "OPTIONS", "/v1/audio/speech", allowed,
			[]string{"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type, x-stainless-os"}, 204, allowed},
		{"preflight elevenlabs", "OPTIONS", "/elevenlabs/v1/voices", allowed,
			[]string{"Access-Control-Request-Method", "GET", "Access-Control-Request-Headers", "xi-api-key"}, 204, allowed},
		{"preflight other origin", "OPTIONS", "/v1/audio/speech", other,
			[]string{"Access-Control-Request-Method", "POST"}, 403, ""},
		{"preflight unknown path", "OPTIONS", "/v1/nope", allowed,
			[]string{"Access-Control-Request-Method", "POST"}, 404, allowed},
		{"plain OPTIONS", "OPTIONS", "/v1/voices", "", nil, 204, ""},
		{"answer allowed", "GET", "/v1/voices", allowed, nil, 200, allowed},
		{"error allowed", "GET", "/v1/voices", allowed, []string{"Authorization", ""}, 401, allowed},
		{"answer other origin", "GET", "/v1/voices", other, nil, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			org := "acme"
			if tt.method == "OPTIONS" {
				org = "" // a browser sends no credentials with a preflight
			}
			hdr := append([]string{"Origin", tt.origin}, tt.hdr...)
			r := tg.Do(tt.method, tt.path, org, nil, hdr...)
			if r.Status != tt.status {
				t.Fatalf("status %d, want %d; %s", r.Status, tt.status, r.Body)
			}
			if got := r.Header.Get("Access-Control-Allow-Origin"); got != tt.allowOrigin {
				t.Errorf("Access-Control-Allow-Origin = %q, want %q", got, tt.allowOrigin)
			}
			if tt.allowOrigin != "" && !strings.Contains(r.Header.Get("Vary"), "Origin") {
				t.Errorf("Vary = %q, want Origin", r.Header.Get("Vary"))
			}
		})
	}

	pre := tg.Do("OPTIONS", "/v1/audio/speech", "", nil, "Origin", allowed,
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type, x-stainless-os")
	if m := pre.Header.Get("Access-Control-Allow-Methods"); !strings.Contains(m, "POST") {
		t.Errorf("Allow-Methods %q", m)
	}
	if h := strings.ToLower(pre.Header.Get("Access-Control-Allow-Headers")); !strings.Contains(h, "authorization") || !strings.Contains(h, "x-stainless-os") {
		t.Errorf("Allow-Headers %q", h)
	}
	if pre.Header.Get("Access-Control-Max-Age") != "300" {
		t.Errorf("Max-Age %q", pre.Header.Get("Access-Control-Max-Age"))
	}
	tg.Do("OPTIONS", "/v1/audio/speech", "", nil, "Origin", other, "Access-Control-Request-Method", "POST").Problem(t, 403, "origin_not_allowed")

	got := tg.Do("GET", "/v1/voices", "acme", nil, "Origin", allowed)
	exposed := strings.ToLower(got.Header.Get("Access-Control-Expose-Headers"))
	for _, h := range []string{"x-request-id", "retry-after", "x-voxgate-warning", "x-voxgate-provider", "x-voxgate-cache", "x-voxgate-transcoded", "x-voxgate-mark", "ratelimit-policy", "ratelimit"} {
		if !strings.Contains(exposed, h) {
			t.Errorf("Expose-Headers %q lacks %s", exposed, h)
		}
	}

	// OPTIONS outside a preflight describes the resource; it is no
	// longer a 405 that contradicts its own Allow header.
	opt := tg.Do("OPTIONS", "/v1/voices", "", nil)
	if allow := opt.Header.Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
		t.Errorf("Allow %q", allow)
	}
}

// TestCORSOffByDefault checks that without configured origins no
// browser origin is allowed.
func TestCORSOffByDefault(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.ESpeakConfig)
	r := tg.Do("OPTIONS", "/v1/audio/speech", "", nil, "Origin", "http://app.example.test:3000", "Access-Control-Request-Method", "POST")
	r.Problem(t, 403, "origin_not_allowed")
	if r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("allowed an origin by default")
	}
	if g := tg.Do("GET", "/v1/voices", "acme", nil, "Origin", "http://app.example.test:3000"); g.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("allowed an origin by default")
	}
}

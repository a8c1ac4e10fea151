package gateway_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	vErrors "github.com/pb33f/libopenapi-validator/errors"

	"github.com/voxgate/voxgate/gateway/edge/openapi"
)

// The OpenAPI document is the contract: every response a test of this
// package receives through the harness's client (testGateway.do and
// testGateway.hc), and every response the JS SDK tests receive (through
// validatingProxy), is checked against it with libopenapi-validator.

var (
	specOnce sync.Once
	spec     validator.Validator
	specErr  error
	// specMu serialises validations: the validator caches compiled
	// schemas and is not documented as safe for concurrent use.
	specMu sync.Mutex
)

func loadSpec(t testing.TB) validator.Validator {
	t.Helper()
	specOnce.Do(func() {
		var b []byte
		if b, specErr = openapi.JSON(); specErr != nil {
			return
		}
		var doc libopenapi.Document
		if doc, specErr = libopenapi.NewDocument(b); specErr != nil {
			return
		}
		// Strict server matching honours the servers of a path item: the
		// dashboard's /ui/api twins exist for the routes that list that
		// server, and for no other.
		var errs []error
		if spec, errs = validator.NewValidator(doc, config.WithStrictServerMatching()); len(errs) > 0 {
			specErr = errs[0]
		}
	})
	if specErr != nil {
		t.Fatalf("openapi document: %v", specErr)
	}
	return spec
}

// validating wraps a transport (nil: the default one) so that every
// response is checked against the OpenAPI document. JSON bodies are read,
// checked and handed on unchanged; audio and event streams are checked
// by status and media type only and pass through unread, so a test can
// still read a stream piece by piece. A request the gateway accepted (a
// 2xx answer) is checked too, where its body can be read again: whatever
// the gateway takes, the document must describe (strict decoding makes
// every accepted field one the document lists).
func validating(t testing.TB, rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &validatingTransport{t: t, next: rt, v: loadSpec(t)}
}

type validatingTransport struct {
	t    testing.TB
	next http.RoundTripper
	v    validator.Validator
}

func (vt *validatingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := vt.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	check := *resp
	check.Body = http.NoBody
	if strings.HasSuffix(mt, "json") {
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		check.Body = io.NopCloser(bytes.NewReader(body))
		check.ContentLength = int64(len(body))
	}
	vt.check(req, &check)
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		vt.checkRequest(req)
	}
	return resp, nil
}

// checkRequest validates an accepted request: its parameters, security
// and JSON body. Bodies of other types (uploads) and bodies that cannot
// be read again (a proxied request's) are left to the gateway's tests.
func (vt *validatingTransport) checkRequest(req *http.Request) {
	r := &http.Request{Method: req.Method, URL: &url.URL{Path: req.URL.Path, RawQuery: req.URL.RawQuery}, Header: req.Header, Body: http.NoBody}
	if req.Body != nil && req.Body != http.NoBody {
		mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
		if req.GetBody == nil || !strings.HasSuffix(mt, "json") {
			return
		}
		body, err := req.GetBody()
		if err != nil {
			return
		}
		r.Body = body
	}
	specMu.Lock()
	ok, errs := vt.v.ValidateHttpRequest(r)
	specMu.Unlock()
	if ok {
		return
	}
	for _, e := range errs {
		detail := ""
		for _, se := range e.SchemaValidationErrors {
			detail += "\n\t" + se.FieldPath + ": " + se.Reason
		}
		vt.t.Errorf("openapi: accepted request %s %s does not match the document: %s: %s%s", req.Method, req.URL.Path, e.Message, e.Reason, detail)
	}
}

func (vt *validatingTransport) check(req *http.Request, resp *http.Response) {
	// The validator looks the operation up by path and method only.
	r := &http.Request{Method: req.Method, URL: &url.URL{Path: req.URL.Path, RawQuery: req.URL.RawQuery}, Header: req.Header}
	specMu.Lock()
	ok, errs := vt.v.ValidateHttpResponse(r, resp)
	specMu.Unlock()
	if ok {
		return
	}
	if routeless(errs) && (resp.StatusCode == 404 || resp.StatusCode == 405) {
		// An unknown path or method has no operation to check against;
		// its answer must still be an error of the path's dialect.
		vt.checkUnrouted(req, resp)
		return
	}
	for _, e := range errs {
		detail := ""
		for _, se := range e.SchemaValidationErrors {
			detail += "\n\t" + se.FieldPath + ": " + se.Reason
		}
		vt.t.Errorf("openapi: %s %s -> %d %s: %s: %s%s", req.Method, req.URL.Path, resp.StatusCode, resp.Header.Get("Content-Type"), e.Message, e.Reason, detail)
	}
}

// routeless reports whether the validator failed only for lack of an
// operation for the request.
func routeless(errs []*vErrors.ValidationError) bool {
	for _, e := range errs {
		if e.ValidationType != "path" {
			return false
		}
	}
	return len(errs) > 0
}

func (vt *validatingTransport) checkUnrouted(req *http.Request, resp *http.Response) {
	body, _ := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var v struct {
		Code   string `json:"code"`
		Detail struct {
			Status string `json:"status"`
		} `json:"detail"`
	}
	_ = json.Unmarshal(body, &v)
	ct := resp.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(req.URL.Path, "/elevenlabs/") && ct == "application/json" && v.Detail.Status != "":
	case ct == "application/problem+json" && v.Code != "":
	default:
		vt.t.Errorf("openapi: %s %s (no operation) -> %d %s %s: not an error of the path's dialect", req.Method, req.URL.Path, resp.StatusCode, ct, body)
	}
}

// validatingProxy is a reverse proxy to the gateway whose answers are
// checked against the OpenAPI document, for clients that are not Go (the
// JS SDKs): they talk to the proxy's URL. Streams pass through as they
// come.
func validatingProxy(t testing.TB, gatewayBase string) string {
	t.Helper()
	target, err := url.Parse(gatewayBase)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(target)
	p.Transport = validating(t, nil)
	p.FlushInterval = -1
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestValidatorCatchesDrift checks that the harness's validation is not
// vacuous: answers that drift from the document fail it.
func TestValidatorCatchesDrift(t *testing.T) {
	v := loadSpec(t)
	tests := []struct {
		name, method, path, ct, body string
		status                       int
		ok                           bool
	}{
		{"problem", "GET", "/v1/voices", "application/problem+json", `{"type":"t","title":"x","status":401,"code":"unauthorized"}`, 401, true},
		{"problem without title", "GET", "/v1/voices", "application/problem+json", `{"type":"t","status":401,"code":"unauthorized"}`, 401, false},
		{"unknown problem code", "GET", "/v1/voices", "application/problem+json", `{"type":"t","title":"x","status":401,"code":"nope"}`, 401, false},
		{"page", "GET", "/v1/voices", "application/json", `{"data":[],"next_cursor":"","has_more":false,"limit":50}`, 200, true},
		{"page with extra field", "GET", "/v1/voices", "application/json", `{"data":[],"next_cursor":"","has_more":false,"limit":50,"total":3}`, 200, false},
		{"openai error", "POST", "/v1/audio/speech", "application/json", `{"error":{"message":"m","type":"invalid_request_error","param":null,"code":"validation_failed"}}`, 400, true},
		{"openai error without param", "GET", "/v1/models", "application/json", `{"error":{"message":"m","type":"invalid_request_error","code":"validation_failed"}}`, 400, false},
		{"clip", "POST", "/v1/audio/speech", "audio/pcm;rate=24000", ``, 200, true},
		{"clip of an undocumented type", "POST", "/v1/audio/speech", "video/mp4", ``, 200, false},
		{"elevenlabs models", "GET", "/elevenlabs/v1/models", "application/json", `[{"model_id":"espeak/espeak-ng","name":"x","can_do_text_to_speech":true}]`, 200, true},
		{"elevenlabs models, wrong shape", "GET", "/elevenlabs/v1/models", "application/json", `{"models":[]}`, 200, false},
		{"dashboard twin", "GET", "/ui/api/v1/voices", "application/json", `{"data":[],"next_cursor":"","has_more":false,"limit":50}`, 200, true},
		{"dashboard twin, wrong shape", "GET", "/ui/api/v1/voices", "application/json", `{"data":[]}`, 200, false},
		{"no dashboard twin", "POST", "/ui/api/v1/audio/speech", "audio/wav", ``, 200, false},
		{"no dashboard twin of operations", "GET", "/ui/api/healthz", "application/json", `{"status":"ok"}`, 200, false},
		{"no dashboard twin of the public probe", "GET", "/ui/api/health", "application/json", `{"status":"ok"}`, 200, false},
		{"dashboard twin of the dictionaries", "GET", "/ui/api/v1/pronunciation-dictionaries", "application/json", `{"data":[],"next_cursor":"","has_more":false,"limit":50}`, 200, true},
		{"dashboard twin of the key routes", "DELETE", "/ui/api/v1/api-keys/elevenlabs", "", ``, 204, true},
		{"voice without its envelope", "GET", "/v1/voices/v", "application/json", `{"id":"v"}`, 200, false},
		{"moderation block without its confidence", "POST", "/v1/audio/speech/with-timestamps", "application/json", `{"error":{"code":"content_moderation_blocked","message":"m","reason":{"type":"t","detail":"d"}},"code":"content_moderation_blocked"}`, 422, false},
		{"fail-closed moderation", "POST", "/v1/audio/speech/with-timestamps", "application/json", `{"error":{"code":"content_moderation_blocked","message":"m","reason":{"type":"error_fail_closed","detail":"d","confidence":0}},"code":"content_moderation_blocked"}`, 403, true},
		{"dashboard session", "GET", "/ui/api/session", "application/json", `{"org":"acme","key_id":"k","expires_at":"2026-01-02T15:04:05Z","csrf_token":"t"}`, 200, true},
		{"log row without its cache field", "GET", "/v1/logs", "application/json", `{"data":[{"request_id":"r"}],"next_cursor":"","has_more":false,"limit":50}`, 200, false},
	}
	check := func(name, method, path string, h http.Header, body string, status int, want bool) {
		req := httptest.NewRequest(method, path, nil)
		resp := &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}
		specMu.Lock()
		ok, errs := v.ValidateHttpResponse(req, resp)
		specMu.Unlock()
		if ok != want {
			t.Errorf("%s: valid = %v, want %v (%v)", name, ok, want, errs)
		}
	}
	for _, tt := range tests {
		check(tt.name, tt.method, tt.path, http.Header{"Content-Type": {tt.ct}}, tt.body, tt.status, tt.ok)
	}
	// Documented headers are checked too.
	headers := []struct {
		name, key, value string
		ok               bool
	}{
		{"cache hit", "X-Voxgate-Cache", "hit", true},
		{"unknown cache answer", "X-Voxgate-Cache", "maybe", false},
		{"provider", "X-Voxgate-Provider", "espeak/espeak-ng", true},
		{"provider without model", "X-Voxgate-Provider", "espeak", false},
	}
	for _, tt := range headers {
		check(tt.name, "POST", "/v1/audio/speech", http.Header{"Content-Type": {"audio/wav"}, tt.key: {tt.value}}, "", 200, tt.ok)
	}
	// Request bodies built from shared parts (allOf) stay closed, and
	// each endpoint takes only its own fields.
	const inline = `"model":"espeak","voice":"en","text":"x"`
	requests := []struct {
		name, method, path, body string
		ok                       bool
	}{
		{"speech", "POST", "/v1/audio/speech", `{` + inline + `,"output":"mp3","instructions":"calm","timestamps":"off"}`, true},
		{"speech, unknown field", "POST", "/v1/audio/speech", `{` + inline + `,"bogus":1}`, false},
		{"speech, timestamps on the plain endpoint", "POST", "/v1/audio/speech", `{` + inline + `,"timestamps":"on"}`, false},
		{"speech, captions on the plain endpoint", "POST", "/v1/audio/speech", `{` + inline + `,"captions":"srt"}`, false},
		{"speech, unknown output format", "POST", "/v1/audio/speech", `{` + inline + `,"output":"ogg"}`, false},
		{"speech, output object", "POST", "/v1/audio/speech", `{` + inline + `,"output":{"format":"wav","sampleRate":16000}}`, true},
		{"speech, 21 dictionaries", "POST", "/v1/audio/speech", `{` + inline + `,"pronunciations":{"dictionaryIds":[` + strings.Repeat(`"`+"6f1c6a52-5b0c-4d7e-9a53-3c1f2d8e9b10"+`",`, 20) + `"6f1c6a52-5b0c-4d7e-9a53-3c1f2d8e9b11"]}}`, false},
		{"with timestamps", "POST", "/v1/audio/speech/with-timestamps", `{` + inline + `,"timestamps":"auto","captions":"vtt"}`, true},
		{"with timestamps, unknown mode", "POST", "/v1/audio/speech/with-timestamps", `{` + inline + `,"timestamps":"maybe"}`, false},
		{"stream with output", "POST", "/v1/audio/speech/stream", `{` + inline + `,"output":"wav"}`, false},
		{"stream", "POST", "/v1/audio/speech/stream", `{` + inline + `}`, true},
		{"conversation", "POST", "/v1/audio/conversation", `{"model":"espeak","normalizeVolume":false,"turns":[{"mode":"inline","voice":"en","text":"x","instructions":"calm"}]}`, true},
		{"conversation, unknown field", "POST", "/v1/audio/conversation", `{"model":"espeak","turns":[{"voice":"en","text":"x"}],"bogus":1}`, false},
		{"dictionary change", "PATCH", "/v1/pronunciation-dictionaries/default", `{"description":"d"}`, true},
		{"dictionary change, unknown field", "PATCH", "/v1/pronunciation-dictionaries/default", `{"name":"n","bogus":1}`, false},
		{"rule without its word", "POST", "/v1/pronunciation-dictionaries/default/rules", `{"replacement":"r"}`, false},
	}
	for _, tt := range requests {
		req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer k")
		specMu.Lock()
		ok, errs := v.ValidateHttpRequest(req)
		specMu.Unlock()
		if ok != tt.ok {
			t.Errorf("request %s: valid = %v, want %v (%v)", tt.name, ok, tt.ok, errs)
		}
	}
}

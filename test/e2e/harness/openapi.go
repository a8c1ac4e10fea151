package harness

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
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"

	"github.com/voxgate/voxgate/gateway/edge/openapi"
)

var (
	specOnce sync.Once
	spec     validator.Validator
	specDoc  libopenapi.Document
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
		specDoc = doc
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

// RoundTrip sends req and checks the exchange against the document.
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
		if lines := jsonLines(body); len(lines) > 1 {
			// A stream of JSON objects, one a line (ElevenLabs'
			// /stream/with-timestamps): the document describes one
			// object, and each line must be one.
			for _, l := range lines {
				one := check
				one.Body = io.NopCloser(bytes.NewReader(l))
				one.ContentLength = int64(len(l))
				vt.check(req, &one)
			}
			if resp.StatusCode >= 200 && resp.StatusCode < 300 {
				vt.checkRequest(req)
			}
			return resp, nil
		}
		check.Body = io.NopCloser(bytes.NewReader(body))
		check.ContentLength = int64(len(body))
	}
	vt.check(req, &check)
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		vt.checkRequest(req)
	}
	return resp, nil
}

// jsonLines splits body into its lines when it is more than one JSON
// value, each on a line of its own; otherwise it returns nil.
func jsonLines(body []byte) [][]byte {
	if bytes.IndexByte(bytes.TrimSpace(body), '\n') < 0 {
		// A body on one line splits into at most one line, which
		// RoundTrip checks as one value whatever this returns; decoding
		// it here first cost about as much as that check for a large
		// body (a long clip's base64 in a timestamps answer).
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var v json.RawMessage
	if dec.Decode(&v) != nil || !dec.More() {
		return nil
	}
	var out [][]byte
	for _, l := range bytes.Split(body, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// checkRequest validates an accepted request: its parameters, security
// and JSON body. Bodies of other types (uploads) and bodies that cannot
// be read again (a proxied request's) are left to the gateway's tests.
func (vt *validatingTransport) checkRequest(req *http.Request) {
	r := &http.Request{Method: req.Method, URL: &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}, Header: req.Header, Body: http.NoBody}
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
	r := &http.Request{Method: req.Method, URL: &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}, Header: req.Header}
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
		Error struct {
			Code string `json:"code"`
			Type string `json:"type"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &v)
	ct := resp.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(req.URL.Path, "/elevenlabs/") && ct == "application/json" && v.Detail.Status != "":
	case openAIPath(req.URL.Path) && ct == "application/json" && v.Error.Code != "" && v.Error.Type != "":
	case ct == "application/problem+json" && v.Code != "":
	default:
		vt.t.Errorf("openapi: %s %s (no operation) -> %d %s %s: not an error of the path's dialect", req.Method, req.URL.Path, resp.StatusCode, ct, body)
	}
}

// openAIPath reports whether path is one of OpenAI's API that only the
// OpenAI dialect answers (GET /v1/models and below, and OpenAI endpoints
// voxgate does not serve): its errors are in OpenAI's shape.
func openAIPath(path string) bool {
	for _, p := range []string{"/v1/models", "/v1/audio/transcriptions", "/v1/audio/translations", "/v1/chat/",
		"/v1/completions", "/v1/embeddings", "/v1/responses", "/v1/moderations", "/v1/images/", "/v1/files"} {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// ValidatingProxy is a reverse proxy to the gateway whose answers are
// checked against the OpenAPI document, for clients that are not Go (the
// JS SDKs): they talk to the proxy's URL. Streams pass through as they
// come.
func ValidatingProxy(t testing.TB, gatewayBase string) string {
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

// CheckSchema checks body against the document's component schema name,
// for what the gateway sends that is no answer to a request (a job's
// webhook: the document's webhooks).
func CheckSchema(t testing.TB, name string, body []byte) {
	t.Helper()
	if ok, msgs := schemaErrors(t, name, body); !ok {
		t.Errorf("does not match the document's %s schema: %s\n%s", name, strings.Join(msgs, "; "), body)
	}
}

// schemaErrors validates body against component schema name.
func schemaErrors(t testing.TB, name string, body []byte) (bool, []string) {
	t.Helper()
	loadSpec(t)
	specMu.Lock()
	defer specMu.Unlock()
	m, err := specDoc.BuildV3Model()
	if err != nil {
		t.Fatalf("openapi model: %v", err)
	}
	proxy, ok := m.Model.Components.Schemas.Get(name)
	if !ok {
		t.Fatalf("the document has no schema %s", name)
	}
	var schema *base.Schema
	if schema, err = proxy.BuildSchema(); err != nil {
		t.Fatalf("schema %s: %v", name, err)
	}
	ok, errs := schema_validation.NewSchemaValidator().ValidateSchemaBytes(schema, body)
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Message+": "+e.Reason)
		for _, se := range e.SchemaValidationErrors {
			msgs = append(msgs, se.FieldPath+" "+se.Reason)
		}
	}
	return ok, msgs
}

package fakeupstream

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	"github.com/pb33f/libopenapi-validator/content"
	vErrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/paths"
	"github.com/pb33f/libopenapi/datamodel"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// A fake is written from a provider's documentation by the same hands
// that write the plugin, so the two can agree on a mistake. Where the
// provider publishes a machine-readable description of its API (an
// OpenAPI document), that document is the judge instead: the fake keeps
// the speech-relevant part of it (its apispec/ folder, with the source
// and the SHA-256 of the upstream file it was cut from), and every
// request the fake receives and every answer it gives is checked against
// it. A violation is recorded on the fake's Control and fails the test
// that started the fake when the test ends (Judge), whatever the test
// itself checked: a plugin that sends a field the provider does not
// know, or a value outside its documented range, cannot pass unseen, and
// neither can a fake that answers what the provider would not.

// Document is a provider's published API document, parsed once and used
// to judge a fake's traffic. It is safe for concurrent use.
type Document struct {
	name    string
	model   *v3.Document
	v       validator.Validator
	excuses []Excuse
	// mu serialises validations and path look-ups: the validator
	// caches compiled schemas and is not documented as safe for
	// concurrent use, and it shares the model.
	mu sync.Mutex
}

// LoadDocument parses an OpenAPI 3.x document (JSON or YAML). name says
// whose it is in violation messages ("ElevenLabs").
//
// The validator runs in strict mode for bodies and query parameters:
// a property or query parameter the document does not name is a
// violation even where the schema would let it through (most schemas
// allow additional properties), because a field the provider does not
// document is at best ignored by it. Headers are not held to it: HTTP
// clients and servers add their own.
//
// A multipart field named "x[]" counts as the array property x: the
// providers' own SDKs (OpenAI's, for timestamp_granularities) send
// arrays that way, which the document's schema cannot say.
func LoadDocument(name string, src []byte, excuses ...Excuse) (*Document, error) {
	cfg := datamodel.NewDocumentConfiguration()
	// What the parser would log (an unresolvable reference) comes back
	// from BuildV3Model as well; its log would only clutter test output.
	cfg.Logger = slog.New(slog.DiscardHandler)
	doc, err := libopenapi.NewDocumentWithConfiguration(src, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s API document: %w", name, err)
	}
	m, err := doc.BuildV3Model()
	if err != nil && m == nil {
		return nil, fmt.Errorf("%s API document: %w", name, err)
	}
	// A model built with errors is kept: the errors are references the
	// document itself cannot resolve (Mistral's event-stream schema points
	// into a $defs of its own from the root). A schema that is then used
	// to validate fails to compile, which is reported as a violation.
	//
	// JSON bodies are decoded by default; multipart ones (uploads) are
	// added. Other bodies (audio, event streams) have no decoder, so the
	// validator checks their media type and not their content.
	opts := []config.Option{
		config.WithStrictMode(),
		config.WithBodyDecoder("multipart/form-data", multipartDecoder()),
		config.WithoutResponseStatusValidation(),
	}
	if !strings.HasPrefix(m.Model.Version, "3.0") {
		// A 3.1 document's schemas are JSON Schema 2020-12 as they
		// stand. The OpenAPI vocabulary, which a 3.0 document needs (it
		// turns nullable into a null type), refuses to compile a 3.1
		// schema that still carries nullable, as OpenAI's do in places;
		// plain JSON Schema reads it as an annotation.
		opts = append(opts, config.WithoutOpenAPIMode())
	}
	v := validator.NewValidatorFromV3Model(&m.Model, opts...)
	return &Document{name: name, model: &m.Model, v: v, excuses: excuses}, nil
}

// Excuse is a violation that is the document's own fault, not the
// fake's or the plugin's: a oneOf whose branches overlap, say, which
// the provider's real answers break as well. Each is named where the
// document is loaded, with the reason, so that the list stays short and
// visible.
type Excuse struct {
	// Operation is the operation, "METHOD /path" as the document
	// writes the path.
	Operation string
	// Contains is a part of the violation's text.
	Contains string
	// Why says why the document is wrong here.
	Why string
}

// MustLoadDocument is LoadDocument for a document embedded in a fake: a
// document that does not parse is a build problem, so it panics.
func MustLoadDocument(name string, src []byte, excuses ...Excuse) *Document {
	d, err := LoadDocument(name, src, excuses...)
	if err != nil {
		panic(err)
	}
	return d
}

// Operations returns "METHOD /path" for every operation of the
// document, sorted: what the fake is judged on.
func (d *Document) Operations() []string {
	var out []string
	for p := d.model.Paths.PathItems.First(); p != nil; p = p.Next() {
		for op := p.Value().GetOperations().First(); op != nil; op = op.Next() {
			out = append(out, strings.ToUpper(op.Key())+" "+p.Key())
		}
	}
	sort.Strings(out)
	return out
}

// CheckRequest returns the violations of r, whose body is body, against
// the document.
func (d *Document) CheckRequest(r *http.Request, body []byte) []string {
	vr := d.request(r, body)
	d.mu.Lock()
	_, errs := d.v.ValidateHttpRequestSync(vr)
	d.mu.Unlock()
	return d.describe(r, "request", errs)
}

// CheckResponse returns the violations of an answer with status, header
// and body (nil for a body that is not JSON) to r. A status the
// operation does not document is not judged: the document says nothing
// about it. An audio answer (audio/*) is accepted where the document
// gives the status a binary body of an audio or octet-stream type: the
// documents name one type for a body whose codec varies with the
// request; what the codec is the fakes' own tests check. Raw audio
// answered as application/octet-stream counts as audio.
func (d *Document) CheckResponse(r *http.Request, status int, header http.Header, body []byte) []string {
	vr := d.request(r, nil)
	mt, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	header = header.Clone()
	if strings.HasPrefix(mt, "audio/") || mt == "application/octet-stream" {
		if alt, ok := d.binaryType(vr, status); ok {
			header.Set("Content-Type", alt)
		}
	}
	resp := &http.Response{StatusCode: status, Header: header, Body: http.NoBody, Request: vr}
	if body != nil {
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
	}
	d.mu.Lock()
	_, errs := d.v.ValidateHttpResponse(vr, resp)
	d.mu.Unlock()
	return d.describe(r, "answer "+strconv.Itoa(status), errs)
}

// request is the copy of r the validator reads: path, query, headers and
// body, with no host (the document's servers name the provider's).
func (d *Document) request(r *http.Request, body []byte) *http.Request {
	vr := &http.Request{Method: r.Method, URL: &url.URL{Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}, Header: r.Header, Body: http.NoBody}
	if len(body) > 0 {
		vr.Body = io.NopCloser(bytes.NewReader(body))
		vr.ContentLength = int64(len(body))
	}
	return vr
}

// findPath is paths.FindPath on the document, under mu: the model is
// shared with the validator.
func (d *Document) findPath(r *http.Request) (*v3.PathItem, []*vErrors.ValidationError, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return paths.FindPath(r, d.model, nil)
}

// routes reports whether the document has an operation for r's method
// and path.
func (d *Document) routes(r *http.Request) bool {
	item, errs, _ := d.findPath(d.request(r, nil))
	return item != nil && len(errs) == 0
}

// binaryType returns the media type the document gives the answer of
// r with status when it is a binary audio or octet-stream body and the
// answer's own type is not listed.
func (d *Document) binaryType(r *http.Request, status int) (string, bool) {
	item, errs, _ := d.findPath(r)
	if item == nil || len(errs) > 0 {
		return "", false
	}
	op := item.GetOperations().GetOrZero(strings.ToLower(r.Method))
	if op == nil || op.Responses == nil {
		return "", false
	}
	resp := op.Responses.Codes.GetOrZero(strconv.Itoa(status))
	if resp == nil {
		resp = op.Responses.Codes.GetOrZero(fmt.Sprintf("%dXX", status/100))
	}
	if resp == nil {
		resp = op.Responses.Default
	}
	if resp == nil || resp.Content == nil {
		return "", false
	}
	for c := resp.Content.First(); c != nil; c = c.Next() {
		key := strings.ToLower(c.Key())
		if !strings.HasPrefix(key, "audio/") && key != "application/octet-stream" {
			continue
		}
		if s := c.Value().Schema; s == nil || s.Schema() == nil || s.Schema().Format == "binary" || len(s.Schema().Type) == 0 || s.Schema().Type[0] == "string" {
			return c.Key(), true
		}
	}
	return "", false
}

// describe turns validation errors into violation lines, leaving out the
// strict checks of headers (see LoadDocument) and of the keys of a map:
// strict mode flags every key of an object whose schema declares no
// properties, though such a schema ({additionalProperties: {type:
// string}}, or a bare {type: object}) is the document saying that any
// key goes.
func (d *Document) describe(r *http.Request, what string, errs []*vErrors.ValidationError) []string {
	var out []string
	op := ""
	if _, _, tmpl := d.findPath(d.request(r, nil)); tmpl != "" {
		op = r.Method + " " + tmpl
	}
	for _, e := range errs {
		if strings.Contains(e.Message, "header 'retry-after'") {
			// Retry-After is the tests' knob (Fault.RetryAfter): they
			// ask for fractions of a second to stay fast, which HTTP's
			// integer seconds cannot say.
			continue
		}
		if e.ValidationType == vErrors.StrictValidationType {
			if e.ValidationSubType == vErrors.StrictSubTypeHeader {
				continue
			}
			if e.ValidationSubType == vErrors.StrictSubTypeProperty && strings.HasSuffix(e.Reason, "Declared properties: []") {
				continue
			}
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s API document: %s %s %s: %s", d.name, r.Method, r.URL.RequestURI(), what, e.Message)
		if e.Reason != "" && e.Reason != e.Message {
			b.WriteString(": " + e.Reason)
		}
		for _, se := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n\t%s: %s", se.FieldPath, se.Reason)
		}
		if !d.excused(op, b.String()) {
			out = append(out, b.String())
		}
	}
	return out
}

// excused reports whether violation v of operation op is one of the
// document's excuses.
func (d *Document) excused(op, v string) bool {
	for _, x := range d.excuses {
		if x.Operation == op && strings.Contains(v, x.Contains) {
			return true
		}
	}
	return false
}

// multipartDecoder is the validator's multipart decoder, with a field
// "x[]" read as the array property x (see LoadDocument).
func multipartDecoder() content.Decoder {
	decode := content.MultipartDecoder()
	return content.DecoderFunc(func(in *content.DecodeInput) (any, error) {
		v, err := decode.Decode(in)
		m, ok := v.(map[string]any)
		if err != nil || !ok {
			return v, err
		}
		for k, val := range m {
			name, isArray := strings.CutSuffix(k, "[]")
			if !isArray {
				continue
			}
			delete(m, k)
			items, ok := val.([]any)
			if !ok {
				items = []any{val}
			}
			if prior, ok := m[name].([]any); ok {
				items = append(prior, items...)
			}
			m[name] = items
		}
		return m, nil
	})
}

// violate records violations found in the fake's traffic.
func (c *Control) violate(v []string) {
	if len(v) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.violations = append(c.violations, v...)
}

// Violations returns what the fake's traffic broke of its API document
// so far, oldest first.
func (c *Control) Violations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.violations...)
}

// TakeViolations returns the violations so far and forgets them: a test
// that breaks the document on purpose (to see the fake refuse what the
// provider refuses) takes what it caused, so that only what it did not
// mean to cause fails it at the end.
func (c *Control) TakeViolations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.violations
	c.violations = nil
	return v
}

// Judge returns h checked against d: every request h receives and every
// answer it gives (see Document.CheckRequest and CheckResponse), the
// violations recorded, and tb failed at its end with each violation not
// taken (TakeViolations) by then. Call it before registering the
// server's Close with tb.Cleanup, so that the check runs once no handler
// is left running.
//
// With tb nil (a fake run outside a test, by voxbench) or a benchmark,
// h is returned as it is: nobody could be told of a violation, and a
// benchmark measures the gateway beside a fake that shares its CPU.
// WebSocket upgrades pass unchecked: an OpenAPI document does not
// describe the messages of a socket.
//
// outside lists path prefixes the fake serves that are not the provider's
// API and so not in its document (where a fake stands in for a file host
// the API links to): they pass unchecked.
func (c *Control) Judge(tb testing.TB, d *Document, h http.Handler, outside ...string) http.Handler {
	return c.JudgeAt(tb, d, "", h, outside...)
}

// JudgeAt is Judge for a fake mounted under prefix where the provider has
// the root its document's servers give (an OpenAI-compatible server at
// /kokoro/api/v1 where OpenAI has /v1): prefix is cut from a request's
// path before it is judged.
func (c *Control) JudgeAt(tb testing.TB, d *Document, prefix string, h http.Handler, outside ...string) http.Handler {
	if tb == nil || d == nil {
		return h
	}
	if _, ok := tb.(*testing.B); ok {
		return h
	}
	tb.Cleanup(func() {
		for _, v := range c.TakeViolations() {
			tb.Errorf("fake upstream: %s", v)
		}
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") || slices.ContainsFunc(outside, func(p string) bool { return strings.HasPrefix(r.URL.Path, p) }) {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		judged := r
		if rest, ok := strings.CutPrefix(r.URL.Path, prefix); ok && prefix != "" {
			judged = r.Clone(r.Context())
			judged.URL.Path, judged.URL.RawPath = "/"+strings.TrimPrefix(rest, "/"), ""
		}
		if !d.routes(judged) {
			// One line says it all; the answer has no operation to be
			// checked against either.
			c.violate([]string{fmt.Sprintf("%s API document: %s %s: the document has no such operation", d.name, r.Method, r.URL.RequestURI())})
			h.ServeHTTP(w, r)
			return
		}
		c.violate(d.CheckRequest(judged, body))
		rec := &recorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if !rec.wrote {
			// No answer: the client went away first (a test of a
			// timeout), or the fake hijacked the connection.
			return
		}
		var answer []byte
		if rec.keep {
			answer = rec.body.Bytes()
		}
		c.violate(d.CheckResponse(judged, rec.status, rec.header, answer))
	})
}

// recorder passes an answer on as it is written and keeps what judging
// it needs: the status, the headers and, for a JSON body, the body.
type recorder struct {
	http.ResponseWriter
	wrote  bool
	status int
	header http.Header
	keep   bool
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.wrote, r.status = true, status
		r.header = r.ResponseWriter.Header().Clone()
		mt, _, _ := mime.ParseMediaType(r.header.Get("Content-Type"))
		r.keep = mt == "application/json" || strings.HasSuffix(mt, "+json")
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	if !r.wrote {
		if r.ResponseWriter.Header().Get("Content-Type") == "" {
			r.ResponseWriter.Header().Set("Content-Type", http.DetectContentType(b))
		}
		r.WriteHeader(http.StatusOK)
	}
	if r.keep {
		r.body.Write(b)
	}
	return r.ResponseWriter.Write(b)
}

// Flush passes a streamed answer's flush on.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the server's writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

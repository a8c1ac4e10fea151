package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/voxgate/voxgate/sdk"
)

// API describes what differs between providers' HTTP APIs in the part
// every call shares: how a request is authenticated and how an error body
// reads. A cloud plugin declares one and builds its Endpoints from it.
type API struct {
	// Provider names the provider in errors ("openai").
	Provider string
	// DefaultBaseURL is used when the base_url setting is absent.
	DefaultBaseURL string
	// Authorize puts key on the request, e.g. `Authorization: Bearer key`
	// or `xi-api-key: key`.
	Authorize func(h http.Header, key string)
	// ParseError reads the provider's error body (see ErrorFromResponse).
	ParseError func(body []byte) (code, message string)
	// Classify, if set, adjusts a mapped error, e.g. a spent quota that a
	// provider reports as 401 or 429 but that no retry can fix.
	Classify func(e *sdk.Error)
}

// Endpoint is one snapshot of a cloud plugin's deployment: the common
// settings and the pooled client they configure. A plugin keeps it behind
// an atomic pointer and swaps a whole new one on Configure, so calls in
// flight keep the settings they started with.
type Endpoint struct {
	Settings
	API    *API
	Client *http.Client
	// Header holds headers every request of this deployment carries (an
	// API version, an organization): Do, DoJSON and Plan add them. Set it
	// right after NewEndpoint; it is never modified afterwards.
	Header map[string]string
}

// NewEndpoint parses the common settings (ParseSettings) for api and
// builds the client. A malformed setting is a KindInvalidRequest error
// naming the key.
func NewEndpoint(api *API, settings map[string]string) (*Endpoint, error) {
	s, err := ParseSettings(settings, api.DefaultBaseURL)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "%s settings: %v", api.Provider, err)
	}
	return &Endpoint{Settings: s, API: api, Client: NewClient(s.Client)}, nil
}

// WithTimeout bounds a whole-clip call by the timeout setting (none when
// it is 0).
func (e *Endpoint) WithTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if e.Timeout > 0 {
		return context.WithTimeout(ctx, e.Timeout)
	}
	return context.WithCancel(ctx)
}

// Do authenticates req with key, sends it under Policy (retries only when
// idempotent) and returns a successful response. Any failure is an
// *sdk.Error that never contains key: a missing key fails before any
// request, and an upstream error body is parsed, classified and redacted.
func (e *Endpoint) Do(ctx context.Context, req *http.Request, key string, idempotent bool) (*http.Response, error) {
	if key == "" {
		return nil, sdk.Errorf(sdk.KindUnauthorized, "%s: no API key: configure the gateway's managed key or send your own", e.API.Provider)
	}
	for k, v := range e.Header {
		req.Header.Set(k, v)
	}
	e.API.Authorize(req.Header, key)
	resp, err := Do(ctx, e.Client, req, Policy{Idempotent: idempotent, MaxAttempts: e.MaxAttempts, Provider: e.API.Provider})
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		return nil, e.explain(resp.StatusCode, resp.Header, body, key)
	}
	return resp, nil
}

// maxJSONAnswer bounds a JSON answer read by DoJSON: voice lists and
// clone answers are kilobytes; a misbehaving upstream must not fill memory.
const maxJSONAnswer = 16 << 20

// DoJSON is Do for a call whose answer is JSON: it decodes the answer into
// out and closes it. An answer that does not decode is a BodyError naming
// what ("voice list").
func (e *Endpoint) DoJSON(ctx context.Context, req *http.Request, key string, idempotent bool, what string, out any) error {
	resp, err := e.Do(ctx, req, key, idempotent)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJSONAnswer)).Decode(out); err != nil {
		return BodyError(ctx, e.API.Provider, what, err)
	}
	return nil
}

// explain maps an upstream error response: parsed, classified, redacted.
func (e *Endpoint) explain(status int, h http.Header, body []byte, key string) *sdk.Error {
	var code, msg string
	if e.API.ParseError != nil {
		code, msg = e.API.ParseError(body)
	}
	se := ErrorFromStatus(status, e.API.Provider, code, msg, RetryAfter(h, time.Now()))
	// Providers echo keys in messages, and some error codes are free text
	// (ElevenLabs' detail.status).
	se.Message = Redact(se.Message, key)
	se.UpstreamCode = Redact(se.UpstreamCode, key)
	if e.API.Classify != nil {
		e.API.Classify(se)
	}
	return se
}

// PlanReuse is how long Endpoint.Plan lets the gateway reuse a plan: long
// enough that a busy voice is planned a few times an hour, short enough
// that a changed deployment (a rotated managed key) is picked up soon.
const PlanReuse = 5 * time.Minute

// Plan builds an sdk.Plan for a JSON request: body encoded as JSON (with
// sdk.PlanText where the text goes), authenticated with key like Do, with
// the endpoint's attempts and timeout, reusable for PlanReuse. It carries
// the endpoint's Header, then header (this request's own). A missing key
// fails as in Do.
func (e *Endpoint) Plan(method, url string, body any, key string, header map[string]string) (*sdk.Plan, error) {
	if key == "" {
		return nil, sdk.Errorf(sdk.KindUnauthorized, "%s: no API key: configure the gateway's managed key or send your own", e.API.Provider)
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "%s: encode request body: %v", e.API.Provider, err)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	for _, m := range []map[string]string{e.Header, header} {
		for k, v := range m {
			h.Set(k, v)
		}
	}
	e.API.Authorize(h, key)
	flat := make(map[string]string, len(h))
	for k, v := range h {
		flat[k] = v[0]
	}
	attempts := e.MaxAttempts
	if attempts <= 0 {
		attempts = Policy{}.withDefaults().MaxAttempts
	}
	return &sdk.Plan{Method: method, URL: url, Header: flat, Body: data, MaxAttempts: attempts, Timeout: e.Timeout, ReuseFor: PlanReuse}, nil
}

// Explain implements the Explain half of sdk.Planner for a plugin built
// on Endpoint: the same mapping as Do gives the response of a call it
// sent itself.
func (e *Endpoint) Explain(f *sdk.Failure) error {
	h := make(http.Header, len(f.Header))
	for k, v := range f.Header {
		h.Set(k, v)
	}
	return e.explain(f.Status, h, f.Body, f.Credentials.APIKey)
}

// Close lets the idle connections of a replaced Endpoint go.
func (e *Endpoint) Close() { e.Client.CloseIdleConnections() }

// String names the endpoint for logs, never with credentials.
func (e *Endpoint) String() string { return fmt.Sprintf("%s at %s", e.API.Provider, e.BaseURL) }

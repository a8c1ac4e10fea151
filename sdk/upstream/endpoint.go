package upstream

import (
	"context"
	"fmt"
	"net/http"

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
	e.API.Authorize(req.Header, key)
	resp, err := Do(ctx, e.Client, req, Policy{Idempotent: idempotent, MaxAttempts: e.MaxAttempts, Provider: e.API.Provider})
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		se := ErrorFromResponse(resp, e.API.Provider, e.API.ParseError)
		se.Message = Redact(se.Message, key)
		if e.API.Classify != nil {
			e.API.Classify(se)
		}
		return nil, se
	}
	return resp, nil
}

// Close lets the idle connections of a replaced Endpoint go.
func (e *Endpoint) Close() { e.Client.CloseIdleConnections() }

// String names the endpoint for logs, never with credentials.
func (e *Endpoint) String() string { return fmt.Sprintf("%s at %s", e.API.Provider, e.BaseURL) }

// Package upstream is what a cloud provider plugin uses to call its
// provider's HTTP API: a pooled keep-alive client, a retry loop that
// honours Retry-After and the call's deadline, and the mapping of HTTP
// failures to *sdk.Error.
//
// It depends only on the standard library and the sdk package, so a
// third-party plugin can use it without pulling anything else in.
//
// A typical call:
//
//	req, err := upstream.NewJSONRequest(ctx, http.MethodPost, url, body)
//	...
//	resp, err := upstream.Do(ctx, client, req, upstream.Policy{Idempotent: true})
//	if err != nil {
//		return err // already an *sdk.Error
//	}
//	defer resp.Body.Close()
//	if resp.StatusCode >= 300 {
//		return upstream.ErrorFromResponse(resp, "acme", parseAcmeError)
//	}
package upstream

import (
	"net"
	"net/http"
	"time"
)

// ClientOptions tune the connection pool of NewClient. Zero fields take
// the defaults documented on each.
type ClientOptions struct {
	// DialTimeout bounds establishing a TCP connection; default 5 s.
	DialTimeout time.Duration
	// TLSHandshakeTimeout bounds the TLS handshake; default 5 s.
	TLSHandshakeTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for the response headers after
	// the request was written; default 60 s. Whole-clip endpoints that
	// answer only when synthesis is done need it generous; the call's
	// context deadline is the real bound.
	ResponseHeaderTimeout time.Duration
	// IdleConnTimeout is how long an idle keep-alive connection stays in
	// the pool; default 90 s.
	IdleConnTimeout time.Duration
	// MaxIdleConnsPerHost is how many idle connections to one provider
	// are kept; default 256. A gateway sends many concurrent requests to a
	// handful of hosts, so the standard library's default of 2 would
	// reconnect (TCP + TLS) on most calls; and a pool smaller than the
	// calls in flight closes the surplus after every burst and dials
	// again under load (voxbench runs 256 concurrent clients). An idle
	// connection costs a few KB and closes after IdleConnTimeout.
	MaxIdleConnsPerHost int
	// MaxConnsPerHost caps connections to one host, 0 (the default)
	// meaning no cap.
	MaxConnsPerHost int
}

func (o ClientOptions) withDefaults() ClientOptions {
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.TLSHandshakeTimeout <= 0 {
		o.TLSHandshakeTimeout = 5 * time.Second
	}
	if o.ResponseHeaderTimeout <= 0 {
		o.ResponseHeaderTimeout = 60 * time.Second
	}
	if o.IdleConnTimeout <= 0 {
		o.IdleConnTimeout = 90 * time.Second
	}
	if o.MaxIdleConnsPerHost <= 0 {
		o.MaxIdleConnsPerHost = 256
	}
	return o
}

// NewClient returns an *http.Client with a keep-alive connection pool
// sized for a gateway. It sets no overall Client.Timeout: that would cut
// long audio streams short. Bound each call with its context instead.
func NewClient(o ClientOptions) *http.Client {
	o = o.withDefaults()
	dialer := &net.Dialer{Timeout: o.DialTimeout, KeepAlive: 30 * time.Second}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   o.TLSHandshakeTimeout,
		ResponseHeaderTimeout: o.ResponseHeaderTimeout,
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       o.IdleConnTimeout,
		MaxIdleConns:          4 * o.MaxIdleConnsPerHost,
		MaxIdleConnsPerHost:   o.MaxIdleConnsPerHost,
		MaxConnsPerHost:       o.MaxConnsPerHost,
	}}
}

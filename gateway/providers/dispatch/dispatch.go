// Package dispatch sends the upstream requests that provider plugins plan
// (sdk.Planner) from the gateway itself.
//
// A planning plugin builds the provider's HTTP request (URL, headers with
// the call's credentials, JSON body) and the gateway sends it with
// fasthttp's client, handing the answer's body to the listener as it
// arrives. Audio then never crosses the plugin's gRPC socket, and the
// plugin's own HTTP client is off the path: measured with `make bench`,
// those two hops were most of what the gateway added to a provider call
// (see BENCHMARKS.md). The plugin keeps what is provider-specific: the
// plan, and the meaning of an error response (Explain).
//
// Plans are reused for requests that differ only in their text, for as
// long as the plugin allows (Plan.ReuseFor), so a busy voice costs one
// plugin call every few minutes rather than one per request.
package dispatch

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpproxy"

	"github.com/voxgate/voxgate/gateway/observe/tracing"
)

// Options tune a Client. Zero values take the defaults.
type Options struct {
	// MaxConnsPerHost bounds connections to one provider host in each of
	// the Client's two pools (streams, whole clips), so at most twice it
	// in all; default 1,024 (a slow provider must not make callers queue
	// at the gateway before the provider's own limits apply).
	MaxConnsPerHost int
	// MaxIdleConnDuration closes keep-alive connections idle this long;
	// default 60 s.
	MaxIdleConnDuration time.Duration
	// DialTimeout bounds TCP connect and TLS handshake; default 5 s.
	DialTimeout time.Duration
	// MaxBodyBytes bounds a whole clip; default 256 MiB.
	MaxBodyBytes int
	// MaxPlans bounds the plan cache; default 4,096.
	MaxPlans int
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
	// Counter, if set, returns the function that counts one plan of
	// provider obtained as result: "planned", "reused" or "unsupported".
	// It is asked once per cached plan, not per request: a labelled
	// metric's lookup took 6 µs of a stream's first byte on a cold cache.
	Counter func(provider, result string) func()
	// Retried, if set, is told of each retry of a request: reason is the
	// status retried ("429", "503", ...) or "transport" (no answer). The
	// one reconnect on a pooled connection the provider had closed is
	// not a retry: the request never reached the provider.
	Retried func(provider, reason string)
	// Tracer traces each attempt as an HTTP client span; nil is off.
	Tracer *tracing.Tracer
}

func (o Options) withDefaults() Options {
	if o.MaxConnsPerHost <= 0 {
		o.MaxConnsPerHost = 1024
	}
	if o.MaxIdleConnDuration <= 0 {
		o.MaxIdleConnDuration = 60 * time.Second
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 256 << 20
	}
	if o.MaxPlans <= 0 {
		o.MaxPlans = 4096
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Counter == nil {
		o.Counter = func(string, string) func() { return func() {} }
	}
	if o.Retried == nil {
		o.Retried = func(string, string) {}
	}
	return o
}

// Client sends planned requests. It is safe for concurrent use.
type Client struct {
	// streams sends streamed requests and clips the whole answer of: two
	// clients because the best read buffer differs (clipReadBuf).
	streams, clips *fasthttp.Client
	plans          *planCache
	now            func() time.Time
	counter        func(provider, result string) func()
	retried        func(provider, reason string)
	tracer         *tracing.Tracer
}

// clipReadBuf is the read buffer of the client that fetches whole clips.
// A clip is read to its end at once, so a buffer larger than a stream's
// takes a provider's answer in a quarter of the reads: a 144 KB clip
// sent in 16 KiB chunks took nine or more reads (and as many wake-ups)
// through a 16 KiB buffer, and 37% of the gateway's CPU per clip request
// was those reads (BENCHMARKS.md, round 3 session 8). The buffer is held
// only while a clip is read, not for a stream's life; a stream's is
// streamBuf, since every open stream keeps one.
const clipReadBuf = 64 << 10

// New returns a Client. It honours HTTP_PROXY, HTTPS_PROXY and NO_PROXY
// like the plugins' own clients do, so moving a call from a plugin to the
// gateway does not change the route it takes.
func New(o Options) (*Client, error) {
	o = o.withDefaults()
	return &Client{streams: newHTTP(o, streamBuf), clips: newHTTP(o, clipReadBuf), plans: newPlanCache(o.MaxPlans),
		now: o.Now, counter: o.Counter, retried: o.Retried, tracer: o.Tracer}, nil
}

// newHTTP is the fasthttp client of a Client, reading through a buffer
// of readBuf bytes: it holds the answer's headers (providers send a few
// KiB at most) and bounds one read of its body.
func newHTTP(o Options, readBuf int) *fasthttp.Client {
	hc := &fasthttp.Client{
		Name:                          "voxgate",
		MaxConnsPerHost:               o.MaxConnsPerHost,
		MaxIdleConnDuration:           o.MaxIdleConnDuration,
		MaxResponseBodySize:           o.MaxBodyBytes,
		ReadBufferSize:                readBuf,
		NoDefaultUserAgentHeader:      false,
		DisableHeaderNamesNormalizing: false,
		DisablePathNormalizing:        true, // send the plugin's URL as built
		DialDualStack:                 true,
		TLSConfig:                     &tls.Config{MinVersion: tls.VersionTLS12},
	}
	dialTimeout := o.DialTimeout
	hc.DialTimeout = func(addr string, timeout time.Duration) (net.Conn, error) {
		// timeout is what is left of the call's deadline; 0 means none.
		if timeout <= 0 || timeout > dialTimeout {
			timeout = dialTimeout
		}
		return trackPeer(fasthttp.DialDualStackTimeout(addr, timeout))
	}
	// A pooled keep-alive connection the provider closed while it sat
	// idle fails the next request before any answer: the request never
	// reached the provider, so one more try on a fresh connection is
	// safe even for POST (which fasthttp does not retry by itself).
	hc.RetryIfErr = func(_ *fasthttp.Request, attempts int, err error) (bool, bool) {
		return false, attempts < 2 && (errors.Is(err, fasthttp.ErrConnectionClosed) || errors.Is(err, io.EOF))
	}
	if proxyFromEnv() {
		d := &fasthttpproxy.Dialer{Timeout: o.DialTimeout, ConnectTimeout: o.DialTimeout, DialDualStack: true}
		hc.ConfigureClient = func(h *fasthttp.HostClient) error {
			dial, err := d.GetDialFuncForTLS(true, h.IsTLS)
			if err != nil {
				return fmt.Errorf("proxy from the environment: %w", err)
			}
			h.Dial, h.DialTimeout = func(addr string) (net.Conn, error) { return trackPeer(dial(addr)) }, nil
			return nil
		}
	}
	return hc
}

// proxyFromEnv reports whether a proxy is configured in the environment.
func proxyFromEnv() bool {
	for _, k := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"} {
		if os.Getenv(k) != "" {
			return true
		}
	}
	return false
}

// Close lets idle connections go.
func (c *Client) Close() {
	c.streams.CloseIdleConnections()
	c.clips.CloseIdleConnections()
}

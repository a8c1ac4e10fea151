package config

import (
	"net/url"
	"strings"
)

// Metrics says where /metrics is served. It is always on the admin
// socket. With neither key set it is not on the public listener: the
// public listener faces API clients, and what Prometheus reads (providers,
// routes, traffic, failures) is the operator's, not theirs.
type Metrics struct {
	// Listen is a separate TCP address for /metrics (with /healthz and
	// /readyz), e.g. 127.0.0.1:9464 or an internal interface's address;
	// /metrics then is not on the public listener at all.
	Listen string `yaml:"listen"`
	// Token, when set, must come as `Authorization: Bearer <token>` on
	// every /metrics request. Without Listen it puts /metrics on the
	// public listener behind this token. Usually "${METRICS_TOKEN}".
	Token Secret `yaml:"token"`
}

// Tracing configures OpenTelemetry traces, exported over OTLP. Off while
// Endpoint is empty.
type Tracing struct {
	// Endpoint is the OTLP receiver's base URL: http://collector:4318 for
	// http/protobuf, http://collector:4317 for grpc; https:// for TLS.
	Endpoint string `yaml:"endpoint"`
	// Protocol is "http/protobuf" (the default) or "grpc".
	Protocol string `yaml:"protocol"`
	// Headers are sent with every export, e.g. a vendor's API key as
	// "${HONEYCOMB_KEY}".
	Headers map[string]Secret `yaml:"headers"`
	// SampleRatio is the share of new traces kept, 0 to 1 (default 1); a
	// request with a sampled traceparent is always kept.
	SampleRatio *float64 `yaml:"sample_ratio"`
	// ServiceName is the service.name of the spans (default voxgate).
	ServiceName string `yaml:"service_name"`
}

// validateMetrics checks the metrics section.
func (c *Config) validateMetrics(bad report) {
	if l := c.Metrics.Listen; l != "" {
		if err := CheckListen(l); err != nil {
			bad("metrics.listen", "%v", err)
		} else if l == c.Server.Listen && !strings.HasSuffix(l, ":0") {
			bad("metrics.listen", "must differ from server.listen (%s): it is a listener of its own", l)
		}
	}
	if t := c.Metrics.Token.Value(); t != "" && len(t) < 16 {
		bad("metrics.token", "must be at least 16 characters (e.g. `openssl rand -hex 16`)")
	}
}

// defaults names the protocol the exporter uses when the file names none,
// so that the start-up line and anything else reading the config say the
// real one.
func (t *Tracing) defaults() {
	if t.Protocol == "" {
		t.Protocol = "http/protobuf"
	}
}

// validateTracing checks the tracing section.
func (c *Config) validateTracing(bad report) {
	if e := c.Tracing.Endpoint; e != "" {
		if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("tracing.endpoint", "%q is not an http:// or https:// URL of an OTLP receiver", e)
		}
	}
	switch c.Tracing.Protocol {
	case "", "http/protobuf", "grpc":
	default:
		bad("tracing.protocol", "must be http/protobuf or grpc, got %q", c.Tracing.Protocol)
	}
	if r := c.Tracing.SampleRatio; r != nil && (*r < 0 || *r > 1) {
		bad("tracing.sample_ratio", "must be from 0 to 1, got %g", *r)
	}
}

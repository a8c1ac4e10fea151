// Package metrics holds the gateway's Prometheus collectors.
//
// Each Metrics value owns its own registry (no global default registry), so
// several gateways can run in one process, as the tests do.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// Metrics are the gateway's collectors.
type Metrics struct {
	Registry *prometheus.Registry

	// Requests counts HTTP requests by route pattern and status.
	Requests *prometheus.CounterVec
	// Latency observes request durations by route pattern.
	Latency *prometheus.HistogramVec
	// ProviderCalls counts plugin calls by provider, operation and outcome.
	ProviderCalls *prometheus.CounterVec
	// ProviderLatency observes plugin call durations.
	ProviderLatency *prometheus.HistogramVec
	// ProviderPlans counts how the requests of planning plugins were
	// sent, by provider and result: planned (a plugin call), reused (a
	// cached plan) or unsupported (the plugin sends it itself).
	ProviderPlans *prometheus.CounterVec
	// PluginRestarts counts plugin process restarts by plugin.
	PluginRestarts *prometheus.CounterVec
	// ModerationDecisions counts moderation outcomes by ruleset, decision and reason.
	ModerationDecisions *prometheus.CounterVec
	// ModerationLatency observes moderation check durations by ruleset.
	ModerationLatency *prometheus.HistogramVec
	// Panics counts recovered handler panics.
	Panics prometheus.Counter
	// RateLimitErrors counts requests whose rate limit could not be
	// checked (the shared Redis was unreachable).
	RateLimitErrors prometheus.Counter
	// ConnsOpen is the open client connections.
	ConnsOpen prometheus.Gauge
	// ConnsRejected counts connections closed at once because a limit
	// was reached, by limit (max_conns, max_conns_per_ip).
	ConnsRejected *prometheus.CounterVec
	// AcceptErrors counts failed accepts that were retried (out of file
	// descriptors, for one).
	AcceptErrors prometheus.Counter

	// usage is the per-organization usage counters (CountUsage).
	usage *usage
}

// New creates the collectors and registers them with a fresh registry,
// together with the Go runtime and process collectors.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxgate_http_requests_total", Help: "HTTP requests by route and status.",
		}, []string{"route", "status"}),
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "voxgate_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route"}),
		ProviderCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxgate_provider_calls_total", Help: "Provider plugin calls by provider, operation and outcome.",
		}, []string{"provider", "op", "outcome"}),
		ProviderLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "voxgate_provider_call_duration_seconds", Help: "Provider plugin call latency.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"provider", "op"}),
		ProviderPlans: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxgate_provider_plans_total", Help: "Plans of requests the gateway sends for planning plugins, by provider and result (planned, reused, unsupported).",
		}, []string{"provider", "result"}),
		PluginRestarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxgate_plugin_restarts_total", Help: "Plugin process restarts.",
		}, []string{"plugin"}),
		ModerationDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxgate_moderation_decisions_total", Help: "Moderation decisions by ruleset, decision and reason type.",
		}, []string{"ruleset", "decision", "reason"}),
		ModerationLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "voxgate_moderation_duration_seconds", Help: "Moderation check latency by ruleset.",
			Buckets: []float64{.0001, .0005, .001, .005, .01, .05, .1, .25, .5, 1, 2},
		}, []string{"ruleset"}),
		Panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "voxgate_panics_recovered_total", Help: "Handler panics recovered.",
		}),
		ConnsOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "voxgate_http_connections_open", Help: "Open client connections.",
		}),
		ConnsRejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxgate_http_connections_rejected_total", Help: "Connections closed at once with a 503 because a limit was reached, by limit.",
		}, []string{"limit"}),
		AcceptErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "voxgate_http_accept_errors_total", Help: "Failed accepts retried with backoff (e.g. out of file descriptors).",
		}),
		RateLimitErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "voxgate_rate_limit_errors_total", Help: "Requests whose rate limit could not be checked (shared limiter unreachable).",
		}),
	}
	m.usage = newUsage()
	m.Registry.MustRegister(m.usage.collectors()...)
	m.Registry.MustRegister(m.Requests, m.Latency, m.ProviderCalls, m.ProviderLatency, m.ProviderPlans, m.PluginRestarts,
		m.ModerationDecisions, m.ModerationLatency, m.Panics, m.RateLimitErrors,
		m.ConnsOpen, m.ConnsRejected, m.AcceptErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Zeros, not "no data", on a dashboard before the first rejection.
	m.ConnsRejected.WithLabelValues("max_conns")
	m.ConnsRejected.WithLabelValues("max_conns_per_ip")
	return m
}

// LogQueue registers gauges for the request-log writer.
func (m *Metrics) LogQueue(depth func() int, dropped, written func() uint64) {
	m.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "voxgate_log_queue_depth", Help: "Request log rows waiting to be written.",
		}, func() float64 { return float64(depth()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "voxgate_log_rows_dropped_total", Help: "Request log rows dropped because the queue was full.",
		}, func() float64 { return float64(dropped()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "voxgate_log_rows_written_total", Help: "Request log rows written to storage.",
		}, func() float64 { return float64(written()) }),
	)
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() fasthttp.RequestHandler {
	return fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
}

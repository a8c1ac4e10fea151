// Package metrics holds the gateway's Prometheus collectors.
//
// Each Metrics value owns its own registry (no global default registry), so
// several gateways can run in one process, as the tests do.
package metrics

import (
	"net/http"
	"time"

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
	// Latency observes request durations by route pattern, from the
	// request's arrival to its last byte: a stream's whole length, not
	// its time to headers.
	Latency *prometheus.HistogramVec
	// InFlight is the HTTP requests being served (streams until their
	// last byte).
	InFlight prometheus.Gauge
	// TimeToFirstAudio observes, per provider and model, the time from a
	// request's arrival to its first audio: a stream's first audio
	// written to the client, a clip's audio ready to be written, a
	// realtime context's first audio after its first text. Cache hits
	// are observed apart (cache="hit"), so that they do not flatter the
	// providers' figure.
	TimeToFirstAudio *prometheus.HistogramVec
	// AudioConversions counts the answers the gateway converted instead
	// of passing the provider's bytes through, by source and target
	// format and reason (see speech's Reason constants).
	AudioConversions *prometheus.CounterVec
	// Fallbacks counts requests (and conversation turns) that fell back
	// from one provider/model to another, by both and the failure's
	// problem code.
	Fallbacks *prometheus.CounterVec
	// ProviderCalls counts provider calls by provider, model, operation
	// and outcome.
	ProviderCalls *prometheus.CounterVec
	// ProviderLatency observes provider call durations by provider, model
	// and operation.
	ProviderLatency *prometheus.HistogramVec
	// UpstreamRetries counts the retries of the requests the gateway
	// sends to providers itself (planned requests), by provider and
	// reason: the status that was retried (429, 503, ...) or "transport".
	// Retries a plugin makes inside its own process are not seen here.
	UpstreamRetries *prometheus.CounterVec
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
	// CacheRequests counts response-cache outcomes: hit, miss, bypass,
	// error (a read failed: served as a miss), write_error, too_large,
	// write_skipped.
	CacheRequests *prometheus.CounterVec

	// usage is the per-organization usage counters (CountUsage).
	usage *usage
}

// New creates the collectors and registers them with a fresh registry,
// together with the Go runtime and process collectors.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		InFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "voxgate_http_requests_in_flight", Help: "HTTP requests being served; a stream counts until its last byte.",
		}),
		TimeToFirstAudio: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "voxgate_time_to_first_audio_seconds", Help: "Time from a request's arrival to its first audio (a stream's first bytes written, a clip's audio ready, a realtime context's first audio after its first text), by provider, model and whether the response cache answered (cache=hit) or not (cache=miss).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .15, .2, .3, .5, .75, 1, 1.5, 2.5, 5, 10},
		}, []string{"provider", "model", "cache"}),
		AudioConversions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxgate_audio_conversions_total", Help: "Answers the gateway converted instead of passing the provider's bytes through, by source format, target format and reason (format, sample_rate, bitrate, header, processing, join, timestamps).",
		}, []string{"from", "to", "reason"}),
		Fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxgate_fallbacks_total", Help: "Requests and conversation turns that fell back from one provider/model (from) to the next target of its route (to), by the failure's problem code (reason).",
		}, []string{"from", "to", "reason"}),
		UpstreamRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxgate_upstream_retries_total", Help: "Retries of requests the gateway sends to providers itself, by provider and reason (the retried status, or transport).",
		}, []string{"provider", "reason"}),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxgate_http_requests_total", Help: "HTTP requests by route and status.",
		}, []string{"route", "status"}),
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "voxgate_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route"}),
		ProviderCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxgate_provider_calls_total", Help: "Provider calls by provider, model, operation and outcome.",
		}, []string{"provider", "model", "op", "outcome"}),
		ProviderLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "voxgate_provider_call_duration_seconds", Help: "Provider call latency by provider, model and operation (a stream: until its end).",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"provider", "model", "op"}),
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
		CacheRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxgate_cache_requests_total", Help: "Response cache outcomes: hit, miss, bypass, error (served as a miss), write_error, too_large, write_skipped.",
		}, []string{"result"}),
		RateLimitErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "voxgate_rate_limit_errors_total", Help: "Requests whose rate limit could not be checked (shared limiter unreachable).",
		}),
	}
	m.usage = newUsage()
	m.Registry.MustRegister(m.usage.collectors()...)
	m.Registry.MustRegister(m.Requests, m.Latency, m.InFlight, m.TimeToFirstAudio, m.AudioConversions, m.Fallbacks, m.UpstreamRetries, m.ProviderCalls, m.ProviderLatency, m.ProviderPlans, m.PluginRestarts,
		m.ModerationDecisions, m.ModerationLatency, m.Panics, m.RateLimitErrors,
		m.ConnsOpen, m.ConnsRejected, m.AcceptErrors, m.CacheRequests,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Zeros, not "no data", on a dashboard before the first rejection.
	m.ConnsRejected.WithLabelValues("max_conns")
	m.ConnsRejected.WithLabelValues("max_conns_per_ip")
	for _, r := range []string{"hit", "miss", "bypass", "error", "write_error", "too_large", "write_skipped"} {
		m.CacheRequests.WithLabelValues(r)
	}
	return m
}

// Routes gives each route's series a zero, so a dashboard shows 0 and not
// "no data" before the first request (the status label starts at 200).
func (m *Metrics) Routes(routes ...string) {
	for _, r := range routes {
		m.Route(r)
	}
}

// RouteSeries are one route's HTTP series, found once: its counter of
// answers with status 200 and its latency histogram. Hot path: the edge
// observes every request through them, where WithLabelValues hashes the
// labels and takes a read lock each time.
type RouteSeries struct {
	OK      prometheus.Counter
	Latency prometheus.Observer
}

// Route returns route's series (with their zeros, as Routes gives them).
func (m *Metrics) Route(route string) *RouteSeries {
	return &RouteSeries{OK: m.Requests.WithLabelValues(route, "200"), Latency: m.Latency.WithLabelValues(route)}
}

// ModelSeries are one provider model's series on the path of every call
// to it, found once (see RouteSeries): its time to first audio, and the
// successful calls and latency of each operation. Hot path: on a cold
// cache, the label lookup of the first-audio observer alone took about
// 3 µs of a stream's first byte.
type ModelSeries struct {
	// FirstAudio observes time to first audio: [0] a cache miss, [1] a hit.
	FirstAudio [2]prometheus.Observer
	// CallsOK counts successful calls by operation ("synthesize", "stream").
	CallsOK map[string]prometheus.Counter
	// Latency observes calls' latency by operation.
	Latency map[string]prometheus.Observer
}

// ProviderModel gives a provider model's series their zeros (calls and
// latency of each operation, time to first audio when it streams, and
// the upstream retries of the usual reasons when the gateway sends its
// requests) and returns them.
func (m *Metrics) ProviderModel(provider, model string, streams, direct bool) *ModelSeries {
	ops := []string{"synthesize"}
	ms := &ModelSeries{
		FirstAudio: [2]prometheus.Observer{m.TimeToFirstAudio.WithLabelValues(provider, model, "miss"), m.TimeToFirstAudio.WithLabelValues(provider, model, "hit")},
		CallsOK:    map[string]prometheus.Counter{},
		Latency:    map[string]prometheus.Observer{},
	}
	if streams {
		ops = append(ops, "stream")
	}
	for _, op := range ops {
		ms.CallsOK[op] = m.ProviderCalls.WithLabelValues(provider, model, op, "ok")
		ms.Latency[op] = m.ProviderLatency.WithLabelValues(provider, model, op)
	}
	if direct {
		for _, reason := range []string{"429", "503", "transport"} {
			m.UpstreamRetries.WithLabelValues(provider, reason)
		}
	}
	return ms
}

// Build registers voxgate_build_info: 1, labelled with the build's version
// and Go version, the usual way to join a version to other series.
func (m *Metrics) Build(version, goVersion string) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "voxgate_build_info", Help: "Always 1; the labels say which build runs.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": goVersion},
	})
	g.Set(1)
	m.Registry.MustRegister(g)
}

// PluginInstances registers voxgate_plugin_instances_up and
// voxgate_plugin_instances (configured), per plugin, read at each scrape
// from count, which calls yield once per plugin.
func (m *Metrics) PluginInstances(count func(yield func(plugin string, up, configured int))) {
	m.Registry.MustRegister(pluginCollector{count: count})
}

var (
	pluginUpDesc = prometheus.NewDesc("voxgate_plugin_instances_up",
		"Plugin processes that are healthy (started, answering pings), by plugin.", []string{"plugin"}, nil)
	pluginWantDesc = prometheus.NewDesc("voxgate_plugin_instances",
		"Plugin processes configured (instances), by plugin.", []string{"plugin"}, nil)
)

// pluginCollector reads the plugin pools at scrape time, so the gauge is
// never behind a restart.
type pluginCollector struct {
	count func(yield func(plugin string, up, configured int))
}

func (pluginCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pluginUpDesc
	ch <- pluginWantDesc
}

func (c pluginCollector) Collect(ch chan<- prometheus.Metric) {
	c.count(func(plugin string, up, configured int) {
		ch <- prometheus.MustNewConstMetric(pluginUpDesc, prometheus.GaugeValue, float64(up), plugin)
		ch <- prometheus.MustNewConstMetric(pluginWantDesc, prometheus.GaugeValue, float64(configured), plugin)
	})
}

// LogWriter is what the metrics read of the request-log writer
// (reqlog.Writer).
type LogWriter interface {
	QueueLen() int
	Dropped() uint64
	Written() uint64
	Sanitized() uint64
}

// LogQueue registers gauges and counters for the request-log writer.
func (m *Metrics) LogQueue(w LogWriter) {
	depth, dropped, written := w.QueueLen, w.Dropped, w.Written
	m.Registry.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "voxgate_log_rows_sanitized_total",
			Help: "Request log rows the storage refused as they were and that were written with their unstorable text (NUL, invalid UTF-8) replaced, marked sanitized.",
		}, func() float64 { return float64(w.Sanitized()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "voxgate_log_queue_depth", Help: "Request log rows waiting to be written.",
		}, func() float64 { return float64(depth()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "voxgate_log_rows_dropped_total", Help: "Request log rows dropped: the queue was full, or the storage refused the row.",
		}, func() float64 { return float64(dropped()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "voxgate_log_rows_written_total", Help: "Request log rows written to storage.",
		}, func() float64 { return float64(written()) }),
	)
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() fasthttp.RequestHandler {
	return fasthttpadaptor.NewFastHTTPHandler(m.HTTPHandler())
}

// HTTPHandler is Handler for net/http (the admin socket).
func (m *Metrics) HTTPHandler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}

// KeyPools exports the pooled provider keys' states as
// voxgate_provider_key_resting{provider,key} (1 while a key rests after
// the provider throttled or refused it), read from states at each scrape:
// a reload may add, remove or replace pools, and the series follow.
func (m *Metrics) KeyPools(states func() map[string]map[string]time.Time) {
	m.Registry.MustRegister(keyPoolCollector{states: states})
}

var keyRestingDesc = prometheus.NewDesc("voxgate_provider_key_resting",
	"1 while a pooled provider API key rests after the provider throttled (429) or refused (401) it.", []string{"provider", "key"}, nil)

// keyPoolCollector reads the key pools at scrape time.
type keyPoolCollector struct {
	states func() map[string]map[string]time.Time
}

func (keyPoolCollector) Describe(ch chan<- *prometheus.Desc) { ch <- keyRestingDesc }

func (c keyPoolCollector) Collect(ch chan<- prometheus.Metric) {
	for provider, keys := range c.states() {
		for name, until := range keys {
			v := 0.0
			if !until.IsZero() {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(keyRestingDesc, prometheus.GaugeValue, v, provider, name)
		}
	}
}

// Reloads are the configuration's reload counters: outcomes, and which
// configuration is loaded since when.
type Reloads struct {
	total *prometheus.CounterVec
	at    prometheus.Gauge
	info  *prometheus.GaugeVec
}

// NewReloads registers voxgate_config_reloads_total{result},
// voxgate_config_last_reload_timestamp_seconds and
// voxgate_config_info{hash}.
func (m *Metrics) NewReloads() *Reloads {
	r := &Reloads{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxgate_config_reloads_total", Help: "Configuration reloads (SIGHUP, voxgate reload) by result: ok (swapped in), refused (a mistake, or a setting that needs a restart; nothing changed).",
		}, []string{"result"}),
		at: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "voxgate_config_last_reload_timestamp_seconds", Help: "When the configuration in use was loaded (the start, or the last reload that succeeded), as a Unix time.",
		}),
		info: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "voxgate_config_info", Help: "Always 1; hash is the SHA-256 (first 12 hex digits) of the configuration file in use.",
		}, []string{"hash"}),
	}
	r.total.WithLabelValues("ok")
	r.total.WithLabelValues("refused")
	m.Registry.MustRegister(r.total, r.at, r.info)
	return r
}

// Loaded records that the configuration with hash is in use from at.
func (r *Reloads) Loaded(hash string, at time.Time) {
	r.at.Set(float64(at.UnixNano()) / 1e9)
	r.info.Reset()
	r.info.WithLabelValues(hash).Set(1)
}

// Count counts a reload's result ("ok" or "refused").
func (r *Reloads) Count(result string) { r.total.WithLabelValues(result).Inc() }

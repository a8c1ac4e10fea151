// Package tracing exports OpenTelemetry traces of the gateway's requests
// over OTLP, with the official go.opentelemetry.io SDK.
//
// A request is one server span (the edge), with child spans for its
// moderation check, the provider call (through the plugin, or sent by the
// gateway itself), whole-clip audio processing, and each upstream HTTP
// attempt the gateway sends. Provider calls follow the OpenTelemetry GenAI
// conventions where they fit: gen_ai.operation.name generate_content,
// gen_ai.output.type speech, gen_ai.provider.name and gen_ai.request.model.
//
// A nil *Tracer is tracing off, and every method is then a nil check that
// allocates nothing: Start hands back the caller's context and the no-op
// span already in it. Callers set attributes only when span.IsRecording().
package tracing

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// Protocols of the OTLP exporter.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Options configure a Tracer.
type Options struct {
	// Endpoint is the OTLP receiver's base URL, e.g.
	// http://otel-collector:4318 (http/protobuf; /v1/traces is added) or
	// http://otel-collector:4317 (grpc). https:// uses TLS.
	Endpoint string
	// Protocol is ProtocolHTTP (the default) or ProtocolGRPC.
	Protocol string
	// Headers are sent with every export (a vendor's API key, say).
	Headers map[string]string
	// SampleRatio is the share of new traces kept, up to 1; a request
	// that arrives with a sampled traceparent is always kept. 0 means the
	// default, 1; a negative value keeps no new trace.
	SampleRatio float64
	// ServiceName is the resource's service.name (default voxgate);
	// Version its service.version.
	ServiceName, Version string
}

// Tracer starts the gateway's spans and exports them.
type Tracer struct {
	tr   trace.Tracer
	tp   *sdktrace.TracerProvider
	prop propagation.TraceContext
}

// New returns a Tracer exporting to o.Endpoint.
func New(ctx context.Context, o Options) (*Tracer, error) {
	u, err := url.Parse(o.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("tracing.endpoint %q: want http://host:port or https://host:port", o.Endpoint)
	}
	var exp sdktrace.SpanExporter
	switch o.Protocol {
	case "", ProtocolHTTP:
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(strings.TrimSuffix(o.Endpoint, "/") + "/v1/traces")}
		if len(o.Headers) > 0 {
			opts = append(opts, otlptracehttp.WithHeaders(o.Headers))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	case ProtocolGRPC:
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpointURL(o.Endpoint)}
		if len(o.Headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(o.Headers))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	default:
		return nil, fmt.Errorf("tracing.protocol %q: want %s or %s", o.Protocol, ProtocolHTTP, ProtocolGRPC)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing exporter: %w", err)
	}
	return NewWithExporter(exp, o), nil
}

// NewWithExporter returns a Tracer that hands finished spans, in batches,
// to exp (tests and benchmarks pass an in-memory one).
func NewWithExporter(exp sdktrace.SpanExporter, o Options) *Tracer {
	name := o.ServiceName
	if name == "" {
		name = "voxgate"
	}
	ratio := min(o.SampleRatio, 1)
	switch {
	case ratio == 0:
		ratio = 1
	case ratio < 0:
		ratio = 0
	}
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(name), semconv.ServiceVersion(o.Version))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Second)),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
	)
	return &Tracer{tr: tp.Tracer("github.com/voxgate/voxgate/gateway"), tp: tp}
}

// Start starts a span named name as a child of the span in ctx (if any).
// With tracing off it returns ctx and the no-op span, allocating nothing.
func (t *Tracer) Start(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	if t == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	return t.tr.Start(ctx, name, trace.WithSpanKind(kind))
}

// StartServer starts a request's server span, continuing the caller's
// trace when the request carries a W3C traceparent (header reads it).
func (t *Tracer) StartServer(header func(key string) string, name string) (context.Context, trace.Span) {
	ctx := context.Background()
	if t == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	ctx = t.prop.Extract(ctx, headerCarrier(header))
	return t.tr.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer))
}

// Shutdown exports the spans still buffered and stops the exporter.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// headerCarrier reads a request's headers for the propagator.
type headerCarrier func(key string) string

func (h headerCarrier) Get(key string) string { return h(key) }
func (h headerCarrier) Set(string, string)    {}
func (h headerCarrier) Keys() []string        { return nil }

// Attributes of the GenAI conventions for a provider call.
func ProviderCall(provider, model string) []attribute.KeyValue {
	return []attribute.KeyValue{
		semconv.GenAIOperationNameGenerateContent,
		semconv.GenAIOutputTypeSpeech,
		semconv.GenAIProviderNameKey.String(provider),
		semconv.GenAIRequestModelKey.String(model),
	}
}

// Attribute keys used on the gateway's spans, from the semantic
// conventions where they have one.
var (
	HTTPMethod     = semconv.HTTPRequestMethodKey
	HTTPRoute      = semconv.HTTPRouteKey
	HTTPStatus     = semconv.HTTPResponseStatusCodeKey
	URLPath        = semconv.URLPathKey
	URLFull        = semconv.URLFullKey
	ResendCount    = semconv.HTTPRequestResendCountKey
	ErrorType      = semconv.ErrorTypeKey
	RequestID      = attribute.Key("voxgate.request_id")
	Org            = attribute.Key("voxgate.org")
	Via            = attribute.Key("voxgate.via")
	Ruleset        = attribute.Key("voxgate.moderation.ruleset")
	Decision       = attribute.Key("voxgate.moderation.decision")
	AudioMediaType = attribute.Key("voxgate.audio.media_type")
	AudioBytes     = attribute.Key("voxgate.audio.bytes")
)

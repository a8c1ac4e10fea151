package catalog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/voxgate/voxgate/gateway/observe/metrics"
	"github.com/voxgate/voxgate/gateway/observe/tracing"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/sdk"
)

// Calls runs calls to the providers' plugins: each under its provider's
// timeout, in a GenAI client span, and counted in the provider-call
// metrics (voxgate_provider_calls_total, voxgate_provider_latency_seconds).
// The pipeline's calls and the resources' (voice lists, clones, key
// checks) go through one Calls, so that they are timed out, traced and
// counted alike.
type Calls struct {
	metrics *metrics.Metrics
	tracer  *tracing.Tracer
	direct  bool
}

// NewCalls returns a Calls recording into m (nil: no metrics) and tracer
// (nil: tracing off). direct says whether the gateway sends the requests
// of planning plugins itself, which the spans report.
func NewCalls(m *metrics.Metrics, tracer *tracing.Tracer, direct bool) *Calls {
	return &Calls{metrics: m, tracer: tracer, direct: direct}
}

// Do runs fn, one call of operation op to model of provider p, under p's
// timeout, and records it. It returns how long the call took and its
// error as the caller should see it (see End).
func (c *Calls) Do(parent context.Context, p *Provider, model, op string, fn func(ctx context.Context) error) (time.Duration, error) {
	return c.DoUntil(parent, p, model, op, func(ctx context.Context, deadline time.Time) error {
		ctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		return fn(ctx)
	})
}

// DoUntil is Do for a call that makes a context of its own only where it
// needs one: fn gets parent's context (with the call's span) and the
// call's deadline, p's timeout or parent's deadline if that comes first,
// and must end by it. A call the gateway sends itself carries the
// deadline on its connection (dispatch's FetchBilled and OpenUntil),
// which saves a timer and a context per whole clip; a plugin call makes
// the context with context.WithDeadline.
func (c *Calls) DoUntil(parent context.Context, p *Provider, model, op string, fn func(ctx context.Context, deadline time.Time) error) (time.Duration, error) {
	start := time.Now()
	deadline := c.Deadline(parent, p, start)
	ctx := c.Start(parent, p, model, op)
	err := fn(ctx, deadline)
	d := time.Since(start)
	return d, c.EndBy(parent, ctx, deadline, p, model, op, d, err)
}

// Deadline is the deadline of a call of p's starting at start under
// parent: p's timeout, or parent's deadline if that comes first.
func (c *Calls) Deadline(parent context.Context, p *Provider, start time.Time) time.Time {
	deadline := start.Add(p.Policy.Timeout)
	if d, ok := parent.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return deadline
}

// Start starts the span of a call that ends later (a stream; End ends
// it): a GenAI client span, "generate_content MODEL", saying whether the
// plugin or the gateway itself sends the upstream request.
func (c *Calls) Start(ctx context.Context, p *Provider, model, op string) context.Context {
	if c.tracer == nil {
		return ctx // tracing off: not even the span's name is made
	}
	ctx, span := c.tracer.Start(ctx, "generate_content "+model, trace.SpanKindClient)
	if span.IsRecording() {
		via := "plugin"
		if c.direct && p.Planner() != nil {
			via = "gateway" // when the request is planned; a child span shows the upstream HTTP
		}
		span.SetAttributes(tracing.ProviderCall(p.ID, model)...)
		span.SetAttributes(attribute.String("voxgate.op", op), tracing.Via.String(via))
	}
	return ctx
}

// End records a call that took d and returns its error as the caller
// should see it: a call cut off by a deadline is a timeout, whatever the
// plugin said, and names the limit that fired: the request's own
// (parent's, server.request_timeout) or the provider's (ctx's,
// providers.<id>.timeout). ctx is the call's context, from Start.
func (c *Calls) End(parent, ctx context.Context, p *Provider, model, op string, d time.Duration, err error) error {
	cd, _ := ctx.Deadline()
	return c.EndBy(parent, ctx, cd, p, model, op, d, err)
}

// EndBy is End for a call whose deadline is not ctx's but deadline (zero:
// none): a planned stream's, which the connection enforces
// (dispatch.Client.OpenUntil) so that the call needs no context of its
// own.
func (c *Calls) EndBy(parent, ctx context.Context, deadline time.Time, p *Provider, model, op string, d time.Duration, err error) error {
	outcome := "ok"
	if err != nil {
		outcome = sdk.AsError(err).Kind.String()
		// The call's deadline passed: a timeout, whatever the plugin or
		// the connection reported (a context the call made for itself,
		// as DoUntil's plugin calls do, is not ctx).
		passed := !deadline.IsZero() && !time.Now().Before(deadline)
		timedOut := passed || errors.Is(ctx.Err(), context.DeadlineExceeded) || sdk.AsError(err).Kind == sdk.KindTimeout
		if timedOut {
			outcome = "timeout"
			// The call's deadline is the earlier of the request's and
			// the provider's: name the one that was binding. (The
			// plugin's side can report the deadline a moment before ctx
			// sees it.)
			pd, hasParent := parent.Deadline()
			if hasParent && !pd.After(deadline) {
				err = problem.New(problem.RequestTimeout, "the request did not finish within the gateway's request timeout (server.request_timeout)")
			} else if passed || errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
				err = &sdk.Error{Kind: sdk.KindTimeout, Message: fmt.Sprintf("the provider did not answer within %s (providers.%s.timeout)", p.Policy.Timeout, p.ID)}
			}
		}
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		if err != nil {
			span.SetAttributes(tracing.ErrorType.String(outcome))
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
	if c.metrics != nil {
		if ms := p.Series(model); ms != nil && outcome == "ok" && ms.CallsOK[op] != nil {
			ms.CallsOK[op].Inc()
			ms.Latency[op].Observe(d.Seconds())
			return err
		}
		label := p.MetricModel(model)
		c.metrics.ProviderCalls.WithLabelValues(p.ID, label, op, outcome).Inc()
		c.metrics.ProviderLatency.WithLabelValues(p.ID, label, op).Observe(d.Seconds())
	}
	return err
}

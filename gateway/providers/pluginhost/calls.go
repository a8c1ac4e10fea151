package pluginhost

import (
	"context"
	"errors"
	"strings"

	"github.com/voxgate/voxgate/sdk"
)

// The Pool implements sdk.Provider and sdk.Moderator by routing each call
// to an instance, so callers never see instances or restarts.
var (
	_ sdk.Provider    = (*Pool)(nil)
	_ sdk.Planner     = (*Pool)(nil)
	_ sdk.Transcriber = (*Pool)(nil)
	_ sdk.Moderator   = (*Pool)(nil)
)

// Configure is a no-op on the pool: settings are applied to every instance
// at (re)start from the Spec.
func (p *Pool) Configure(context.Context, map[string]string) error { return nil }

// do runs fn on an instance. A call that failed to reach a process which
// had just died (the dial was refused, so the plugin never saw it) is
// retried once on a healthy instance, waiting for the restart if needed;
// a call that reached the plugin is never retried here.
func (p *Pool) do(ctx context.Context, fn func(in *instance) error) error {
	for attempt := 0; ; attempt++ {
		in, err := p.acquire(ctx)
		if err != nil {
			return err
		}
		err = fn(in)
		in.release(err)
		if err == nil || attempt > 0 || !neverSent(err) {
			return err
		}
		in.markDead("connection refused")
	}
}

// neverSent reports a transport failure at connection set-up: gRPC says
// "error while dialing" only when no connection, and so no request, was
// made. (gRPC offers no typed error for this distinction.)
func neverSent(err error) bool {
	var se *sdk.Error
	return errors.As(err, &se) && se.Kind == sdk.KindUnavailable && strings.Contains(se.Message, "error while dialing")
}

// Describe implements sdk.Provider.
func (p *Pool) Describe(ctx context.Context) (d *sdk.Description, err error) {
	err = p.do(ctx, func(in *instance) error {
		d, err = in.prov().Describe(ctx)
		return err
	})
	return d, err
}

// Voices implements sdk.Provider.
func (p *Pool) Voices(ctx context.Context, req *sdk.VoicesRequest) (v []sdk.Voice, err error) {
	err = p.do(ctx, func(in *instance) error {
		v, err = in.prov().Voices(ctx, req)
		return err
	})
	return v, err
}

// Synthesize implements sdk.Provider.
func (p *Pool) Synthesize(ctx context.Context, req *sdk.SynthesizeRequest) (r *sdk.SynthesizeResponse, err error) {
	err = p.do(ctx, func(in *instance) error {
		r, err = in.prov().Synthesize(ctx, req)
		return err
	})
	return r, err
}

// Stream implements sdk.Provider.
func (p *Pool) Stream(ctx context.Context, req *sdk.SynthesizeRequest, send func(sdk.Chunk) error) error {
	return p.do(ctx, func(in *instance) error {
		return in.prov().Stream(ctx, req, send)
	})
}

// Clone implements sdk.Provider.
func (p *Pool) Clone(ctx context.Context, req *sdk.CloneRequest) (r *sdk.CloneResponse, err error) {
	err = p.do(ctx, func(in *instance) error {
		r, err = in.prov().Clone(ctx, req)
		return err
	})
	return r, err
}

// Plan implements sdk.Planner; only meaningful when the plugin's
// description says it plans.
func (p *Pool) Plan(ctx context.Context, req *sdk.PlanRequest) (pl *sdk.Plan, err error) {
	err = p.do(ctx, func(in *instance) error {
		pr, ok := in.prov().(sdk.Planner)
		if !ok {
			return sdk.Errorf(sdk.KindUnsupported, "plugin %s does not plan requests", p.spec.Name)
		}
		pl, err = pr.Plan(ctx, req)
		return err
	})
	return pl, err
}

// Transcribe implements sdk.Transcriber; only meaningful when the
// plugin's description says it transcribes.
func (p *Pool) Transcribe(ctx context.Context, req *sdk.TranscribeRequest) (t *sdk.Transcript, err error) {
	err = p.do(ctx, func(in *instance) error {
		tr, ok := in.prov().(sdk.Transcriber)
		if !ok {
			return sdk.Errorf(sdk.KindUnsupported, "plugin %s does not transcribe", p.spec.Name)
		}
		t, err = tr.Transcribe(ctx, req)
		return err
	})
	return t, err
}

// Explain implements sdk.Planner. The explanation is the plugin's answer,
// not a failed call: it is kept apart from the call's own error, so that
// an upstream 503 explained as KindUnavailable does not make the pool
// suspect the plugin process.
func (p *Pool) Explain(ctx context.Context, f *sdk.Failure) error {
	var explained error
	err := p.do(ctx, func(in *instance) error {
		pr, ok := in.prov().(sdk.Planner)
		if !ok {
			return sdk.Errorf(sdk.KindUnsupported, "plugin %s does not plan requests", p.spec.Name)
		}
		e := pr.Explain(ctx, f)
		var se *sdk.Error
		if errors.As(e, &se) && se.UpstreamStatus == f.Status {
			explained = se
			return nil
		}
		return e
	})
	if err != nil {
		return err
	}
	return explained
}

// Moderate implements sdk.Moderator.
func (p *Pool) Moderate(ctx context.Context, req *sdk.ModerationRequest) (r *sdk.ModerationResult, err error) {
	err = p.do(ctx, func(in *instance) error {
		in.mu.RLock()
		m := in.mod
		in.mu.RUnlock()
		if m == nil {
			return sdk.Errorf(sdk.KindUnsupported, "plugin %s is not a moderator", p.spec.Name)
		}
		r, err = m.Moderate(ctx, req)
		return err
	})
	return r, err
}

// prov returns the instance's current Provider client; a moderator
// instance yields one that reports KindUnsupported.
func (in *instance) prov() sdk.Provider {
	in.mu.RLock()
	p := in.provider
	in.mu.RUnlock()
	if p == nil {
		return notProvider{}
	}
	return p
}

type notProvider struct{ sdk.UnimplementedProvider }

func (notProvider) Describe(context.Context) (*sdk.Description, error) {
	return nil, sdk.Errorf(sdk.KindUnsupported, "not a provider plugin")
}

func (notProvider) Synthesize(context.Context, *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	return nil, sdk.Errorf(sdk.KindUnsupported, "not a provider plugin")
}

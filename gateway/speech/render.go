package speech

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/observe/tracing"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/providers/dispatch"
	"github.com/voxgate/voxgate/sdk"
)

// Result is a finished clip.
type Result struct {
	Audio      []byte
	MediaType  string
	Timestamps []sdk.WordTimestamp
	Warnings   []string
	// Source is where Timestamps came from (SourceNative, SourceAligned,
	// SourceSTT); empty when there are none.
	Source string
	// Match is the aligner's worst Match over the pieces (aligned only;
	// NaN otherwise), and ReferenceVoice the reference voice the first
	// piece matched best.
	Match          float64
	ReferenceVoice string
	// Pieces are the start times, in seconds, of the pieces a long text
	// was rendered in (one piece: [0]).
	Pieces []float64
	// Captions are the timestamps as captions, when asked for.
	Captions string
	// Conversion is what the gateway converted the provider's answer
	// from and to, and why; nil when the bytes passed through untouched.
	Conversion *Conversion
	release    func()
	// providerMS is the length of the provider's audio (before the
	// gateway stretched it), billed says what the provider reported it
	// billed: what the call cost (finalCost).
	providerMS int64
	billed     []sdk.BilledUsage
}

// Release hands Audio's buffer back to the pool it came from, if any;
// Audio must not be used afterwards. Not calling it is safe: the buffer
// is then left to the garbage collector.
func (r *Result) Release() {
	if r.release != nil {
		r.release()
		r.release = nil
	}
}

// Pooled reports whether Audio's buffer goes back to a pool on Release.
func (r *Result) Pooled() bool { return r.release != nil }

// NewPooledResult returns a clip whose Audio lives in a pooled buffer
// that release hands back: what a provider's pooled answer is, for tests
// of what the edge does with one.
func NewPooledResult(audio []byte, mediaType string, release func()) *Result {
	return &Result{Audio: audio, MediaType: mediaType, release: release}
}

// synthesize renders the job's whole clip: in one provider call when the
// text fits the model and any timestamps are the model's own (the
// provider's bytes then pass through untouched unless whole-clip
// processing is asked for), else piece by piece (synthesizePieces).
func (s *Service) synthesize(ctx context.Context, j *Job) (*Result, error) {
	if len(j.pieces) > 1 || j.timing == SourceAligned || j.timing == SourceSTT {
		res, err := s.synthesizePieces(ctx, j)
		if res != nil {
			res.Warnings = append(slices.Clip(j.Warnings), res.Warnings...)
		}
		return res, err
	}
	res, err := s.synthesizeOne(ctx, j) // fetch puts j.Warnings first
	if res != nil {
		res.Pieces = []float64{0}
		res.Match = math.NaN()
		if j.Delivery == DeliverTimestamps {
			res.Source = j.timing // native, or none
		}
	}
	return res, err
}

// synthesizeOne renders the job's whole clip in one provider call, in
// the encoding negotiate picks: the provider's bytes pass through
// untouched when the model produces what was asked; otherwise the
// gateway converts them (and applies whole-clip processing). Timestamps
// are mapped back through pronunciations. A job the gateway converts
// first waits for one of its organization's whole-clip turns (see
// clipSlots), so that it holds no provider audio while it waits; putting
// raw PCM in a WAV header is not such work.
func (s *Service) synthesizeOne(ctx context.Context, j *Job) (*Result, error) {
	r := j.rendition()
	convert := r.conv != nil && r.conv.Reason != ReasonHeader
	if convert {
		done, err := s.slots.acquire(ctx, j.Org)
		if err != nil {
			return nil, err
		}
		defer done()
	}
	res, err := s.fetch(ctx, j, r.ask)
	if err != nil || r.passThrough() {
		return res, err
	}
	if !convert {
		if err := wrapPCM(j, res); err != nil {
			return nil, err
		}
		res.Conversion = r.conv
		return res, nil
	}
	// Process owns the provider's bytes from here: the result lets go of
	// them so that the collector may take them once they are decoded.
	data, mediaType := res.Audio, res.MediaType
	res.Audio = nil
	_, span := s.tracer.Start(ctx, "audio.process", trace.SpanKindInternal)
	out, mt, err := audio.Process(data, mediaType, convertParams(j, r), s.limits.Output)
	if span.IsRecording() {
		span.SetAttributes(tracing.AudioMediaType.String(mt), tracing.AudioBytes.Int(len(out)))
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
	res.Release() // the provider's clip is done with either way
	if err != nil {
		return nil, processError(err, mediaType, j)
	}
	res.Audio, res.MediaType, res.Conversion = out, mt, r.conv
	if j.missedLoudness {
		res.Warnings = append(res.Warnings, missedLoudnessWarning(j.Params.Loudness.Target()))
	}
	return res, nil
}

// processError maps whole-clip processing's failures: an answer over the
// output limits is the caller's to change (422); anything else is the
// gateway's or the provider's audio's.
func processError(err error, mediaType string, j *Job) error {
	if errors.Is(err, audio.ErrOutputTooLarge) {
		return &problem.Error{Code: problem.OutputTooLarge, Detail: strings.TrimPrefix(err.Error(), audio.ErrOutputTooLarge.Error()+": "), Err: err}
	}
	return fmt.Errorf("process %s audio from %s: %w", mediaType, j.Provider.ID, err)
}

// fetch renders the job's whole clip through the provider in encoding
// ask, and returns it with its timestamps on the clip's final timeline:
// divided by a time-stretch's speed, and mapped back through
// pronunciations.
func (s *Service) fetch(ctx context.Context, j *Job, ask sdk.Encoding) (*Result, error) {
	req := j.request()
	req.Timestamps = j.Delivery == DeliverTimestamps && j.timing == SourceNative
	req.Format, req.SampleRate, req.Bitrate = ask.Format, ask.SampleRate, ask.Bitrate
	resp, release, err := s.renderPooled(ctx, j, req)
	if err != nil {
		return nil, err
	}
	res := &Result{Audio: resp.Audio, MediaType: resp.MediaType, Timestamps: resp.Timestamps, Warnings: append(j.Warnings[:len(j.Warnings):len(j.Warnings)], resp.Warnings...), release: release,
		billed: resp.Billed, providerMS: audio.Length(resp.Audio, resp.MediaType).Milliseconds()}
	if len(resp.Audio) == 0 || resp.MediaType == "" {
		res.Release()
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "the provider returned no audio"}
	}
	if s := j.Params.Stretch; s != 0 && s != 1 {
		// The stretched clip's timeline is the original's divided by speed.
		for i := range res.Timestamps {
			res.Timestamps[i].Start /= s
			res.Timestamps[i].End /= s
		}
	}
	if req.Timestamps {
		res.Timestamps = dropTagWords(res.Timestamps)
	}
	if j.subst != nil && req.Timestamps {
		ts, ok := j.subst.mapTimestamps(res.Timestamps)
		res.Timestamps = ts
		if !ok {
			res.Warnings = append(res.Warnings, "the provider's words did not line up with the pronunciation rules; timestamps are for the substituted text")
		}
	}
	if !req.Timestamps {
		res.Timestamps = nil // whatever the provider sent unasked
	}
	if res.Timestamps == nil && j.Delivery == DeliverTimestamps {
		res.Timestamps = []sdk.WordTimestamp{}
	}
	return res, nil
}

// render gets a whole clip from the provider by deadline: sent by the
// gateway when the plugin plans the request (the connection carries the
// deadline), by the plugin otherwise (under a context that does).
// release, when not nil, gives the clip's buffer back to the HTTP
// client's pool.
func (s *Service) render(ctx context.Context, deadline time.Time, j *Job, req *sdk.SynthesizeRequest) (_ *sdk.SynthesizeResponse, release func(), _ error) {
	plan, explain, err := s.plan(ctx, j, req, false, deadline)
	if err != nil {
		return nil, nil, err
	}
	if plan == nil {
		ctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		resp, err := j.Provider.Plugin.Synthesize(ctx, req)
		return resp, nil, err
	}
	audio, billed, release, err := s.dispatch.FetchBilled(ctx, plan, req.Text, deadline, explain)
	if err != nil {
		return nil, nil, err
	}
	return &sdk.SynthesizeResponse{Audio: audio, MediaType: plan.MediaType, Billed: billed}, release, nil
}

// planner returns the job's provider as a Planner when the gateway may
// send its requests itself: direct sending is on and the provider allows
// it (Provider.Planner).
func (s *Service) planner(j *Job) sdk.Planner {
	if s.dispatch == nil {
		return nil
	}
	return j.Provider.Planner()
}

// plan returns the job's plan, or nil when the request goes through the
// plugin (no planner, or the plugin cannot plan this request). A plan the
// plugin must be asked for is asked by deadline (zero: ctx's alone).
func (s *Service) plan(ctx context.Context, j *Job, req *sdk.SynthesizeRequest, stream bool, deadline time.Time) (*dispatch.Planned, dispatch.Explainer, error) {
	pl := s.planner(j)
	if pl == nil || req.Timestamps {
		return nil, nil, nil
	}
	plan, err := s.dispatch.Plan(ctx, j.Provider.ID, pl, req, stream, deadline)
	if err != nil {
		if sdk.AsError(err).Kind == sdk.KindUnsupported {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	creds := req.Credentials
	return plan, func(ctx context.Context, f *sdk.Failure) error {
		f.Credentials = creds
		return pl.Explain(ctx, f)
	}, nil
}

// decodableFormat picks the format to ask a provider for when the gateway
// will process the clip: PCM or WAV decode for free, MP3 only when the
// model offers nothing else.
func decodableFormat(m *sdk.Model) string {
	for _, f := range []string{sdk.FormatPCM, sdk.FormatWAV, sdk.FormatMP3} {
		if slices.Contains(m.OutputFormats, f) {
			return f
		}
	}
	return ""
}

// defaultFormat is the format a whole clip of m is answered in when the
// request names none: the model's own default (its first format), except
// raw PCM, which neither a player nor a client can read without being told
// its rate (the public client then cannot even compute the clip's
// duration): that becomes WAV, the same samples behind a header. PCM is
// answered when it is asked for.
func defaultFormat(m *sdk.Model) string {
	if len(m.OutputFormats) == 0 || m.OutputFormats[0] == sdk.FormatPCM {
		return audio.FormatWAV
	}
	return m.OutputFormats[0]
}

// wrapPCM answers res, a clip that came as raw PCM, as WAV: the samples
// untouched behind a header (ReasonHeader). On failure res is released.
func wrapPCM(j *Job, res *Result) error {
	if mt, err := audio.ParseMediaType(res.MediaType); err != nil || mt.Format != audio.FormatPCM {
		return nil // the provider chose a format with a header itself
	}
	wav, wmt, err := audio.WrapPCM(res.Audio, res.MediaType)
	res.Release() // the provider's buffer: the clip is in wav now, or failed
	if err != nil {
		return fmt.Errorf("%s audio from %s: %w", res.MediaType, j.Provider.ID, err)
	}
	res.Audio, res.MediaType = wav, wmt
	return nil
}

// convertParams are the whole-clip parameters that turn the provider's
// answer into r's output: j's level and stretch, r's encoding.
func convertParams(j *Job, r rendition) audio.Params {
	p := j.Params
	o := r.out
	out := &audio.OutputParams{Format: o.Format}
	if o.SampleRate != 0 {
		out.SampleRate = &o.SampleRate
	}
	if o.Bitrate != 0 {
		out.Bitrate = &o.Bitrate
	}
	p.Output = out
	return p
}

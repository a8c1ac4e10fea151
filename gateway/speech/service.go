package speech

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/credentials"
	"github.com/voxgate/voxgate/gateway/dispatch"
	"github.com/voxgate/voxgate/gateway/metrics"
	"github.com/voxgate/voxgate/gateway/moderation"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/sdk"
)

// Moderator checks text before any provider is called.
type Moderator interface {
	// Ruleset returns the ruleset a request of org uses: requested when
	// given (it must be one of the org's), else the org's default. An
	// unknown id is a validation problem.
	Ruleset(org, requested string) (string, error)
	// Check runs the ruleset over text.
	Check(ctx context.Context, ruleset, text string) moderation.Verdict
}

// Store is the storage the speech service uses: saved voices, and the
// uploaded media voices are cloned from. Declared here, by its user.
type Store interface {
	GetVoice(ctx context.Context, orgID, id string) (*store.Voice, error)
	CreateVoice(ctx context.Context, v *store.Voice) error
	GetMedia(ctx context.Context, orgID, id string) (*store.Media, error)
	MediaData(ctx context.Context, orgID, id string) ([]byte, error)
}

// Service runs speech requests.
type Service struct {
	limits   Limits
	cat      *Catalog
	store    Store
	dicts    Dictionaries
	defaults defaultRules
	creds    *credentials.Resolver
	mod      Moderator
	dispatch *dispatch.Client
	metrics  *metrics.Metrics
	log      *zap.Logger
}

// Deps are the Service's collaborators.
type Deps struct {
	// Limits bound what one request may ask for.
	Limits  Limits
	Catalog *Catalog
	Store   Store
	// Dictionaries holds the organizations' pronunciation dictionaries;
	// nil applies inline rules only.
	Dictionaries Dictionaries
	Credentials  *credentials.Resolver
	Moderator    Moderator // nil: no moderation
	// Direct sends the requests of planning plugins (sdk.Planner); nil
	// keeps every call inside the plugins.
	Direct  *dispatch.Client
	Metrics *metrics.Metrics
	Logger  *zap.Logger
}

// New returns a Service.
func New(d Deps) *Service {
	return &Service{limits: d.Limits, cat: d.Catalog, store: d.Store, dicts: d.Dictionaries, creds: d.Credentials, mod: d.Moderator, dispatch: d.Direct, metrics: d.Metrics, log: d.Logger}
}

// Catalog returns the provider catalog.
func (s *Service) Catalog() *Catalog { return s.cat }

// Credentials returns the credential resolver.
func (s *Service) Credentials() *credentials.Resolver { return s.creds }

// Job is a resolved, policy-checked speech request, ready to run.
type Job struct {
	Org      string
	Delivery Delivery
	Provider *ProviderEntry
	Model    *sdk.Model
	// Voice is the provider-side voice id; VoiceRef the saved voice's id.
	Voice    string
	VoiceRef string
	// Text is the request's text; spoken is what the provider receives
	// after pronunciations.
	Text    string
	subst   *substitution
	Options []byte
	Creds   sdk.Credentials
	Speed   float64
	Params  audio.Params
	Ruleset string
	Verdict moderation.Verdict
	// skipTimestamps: a with-timestamps request that returns none
	// (timestamps "off", or "auto" on a model without them); warnings
	// are added to the result's.
	skipTimestamps bool
	warnings       []string
}

// Result is a finished clip.
type Result struct {
	Audio      []byte
	MediaType  string
	Timestamps []sdk.WordTimestamp
	Warnings   []string
	release    func()
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

// prepare validates r for org on endpoint ep and resolves everything the
// provider call needs. Failures are *problem.Error values.
func (s *Service) prepare(ctx context.Context, org string, r *Request, ep Delivery) (*Job, error) {
	if err := r.Validate(ep); err != nil {
		return nil, err
	}
	j := &Job{Org: org, Delivery: ep, Text: *r.Text, Params: r.Params()}
	var savedOpts map[string]any
	if r.VoiceID != "" {
		v, err := s.savedVoice(ctx, org, r.VoiceID)
		if err != nil {
			return nil, err
		}
		p, m, err := s.cat.Resolve(v.Provider, v.Model)
		if err != nil {
			return nil, err
		}
		j.Provider, j.Model, j.Voice, j.VoiceRef = p, m, v.VoiceID, v.ID
		savedOpts = v.ProviderOptions
	} else {
		p, m, err := s.cat.ResolveModel(r.Model)
		if err != nil {
			return nil, err
		}
		j.Provider, j.Model, j.Voice = p, m, r.Voice
	}
	opts, err := mergeOptions(savedOpts, r.ProviderOptions)
	if err != nil {
		return nil, err
	}
	if j.Options, err = withInstructions(opts, r.Instructions); err != nil {
		return nil, err
	}
	if err := s.checkCapabilities(j, r); err != nil {
		return nil, err
	}
	limit := j.Model.MaxTextChars
	if limit <= 0 {
		limit = s.limits.MaxTextChars
	}
	if n := utf8.RuneCountInString(j.Text); n > limit {
		return nil, problem.New(problem.TextTooLong, "text has %d characters; model %s/%s accepts at most %d", n, j.Provider.ID, j.Model.ID, limit)
	}
	sources := r.rules
	if sources == nil {
		if sources, err = s.requestRules(ctx, org, r.Pronunciations); err != nil {
			return nil, err
		}
	}
	if rules := layerRules(j.Text, sources...); rules != nil {
		j.subst = rules.apply(j.Text)
	}
	if j.Creds, err = s.creds.For(ctx, org, j.Provider.ID); err != nil {
		return nil, err
	}
	if s.mod != nil {
		if j.Ruleset, err = s.mod.Ruleset(org, r.ModerationRulesetID); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// savedVoice loads a saved voice of org.
func (s *Service) savedVoice(ctx context.Context, org, id string) (*store.Voice, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, problem.New(problem.VoiceNotFound, "no voice %q in this organization (voiceId is a saved voice's uuid)", id)
	}
	v, err := s.store.GetVoice(ctx, org, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, problem.New(problem.VoiceNotFound, "no voice %s in this organization", id)
	}
	if err != nil {
		return nil, err
	}
	if v.Provider == "" || v.Model == "" || v.VoiceID == "" {
		return nil, problem.New(problem.VoiceIncomplete, "saved voice %s lacks a provider, model or provider voice id", id)
	}
	return v, nil
}

func (s *Service) checkCapabilities(j *Job, r *Request) error {
	caps := j.Model.Capabilities
	name := j.Provider.ID + "/" + j.Model.ID
	switch j.Delivery {
	case DeliverTimestamps:
		switch {
		case r.Timestamps == TimestampsOff:
			j.skipTimestamps = true
		case caps.Timestamps:
		case r.Timestamps == TimestampsAuto:
			j.skipTimestamps = true
			j.warnings = append(j.warnings, fmt.Sprintf("model %s does not return word timestamps; the audio comes without them (timestamps: auto)", name))
		default:
			return problem.New(problem.TimestampsUnavailable, "model %s does not return word timestamps (send \"timestamps\": \"auto\" to get the audio without them)", name)
		}
	case DeliverStream:
		if !caps.Streaming {
			return problem.New(problem.StreamingUnsupported, "model %s cannot stream; use POST /v1/audio/speech", name)
		}
	}
	if r.Speed != nil && *r.Speed != 1 {
		switch {
		case caps.Speed && inRange(*r.Speed, j.Model.MinSpeed, j.Model.MaxSpeed):
			j.Speed = *r.Speed
		case j.Delivery == DeliverStream:
			// Without native speed, speed is a whole-clip parameter.
			return &problem.Error{Code: problem.ParamNotAllowedOnStream,
				Detail:     fmt.Sprintf("model %s cannot speak at speed %g natively; that needs the whole clip, use POST /v1/audio/speech", name, *r.Speed),
				Validation: []problem.FieldError{problem.Field("whole-clip parameter for this model", "speed")}}
		default:
			// The gateway renders at normal speed and stretches the
			// whole clip, keeping pitch.
			j.Params.Stretch = *r.Speed
		}
	}
	return nil
}

// inRange reports whether a model's native speed range (0 = unbounded on
// that side) holds speed.
func inRange(speed, lo, hi float64) bool {
	return (lo == 0 || speed >= lo) && (hi == 0 || speed <= hi)
}

// mergeOptions overlays the request's providerOptions on a saved voice's.
func mergeOptions(saved map[string]any, req json.RawMessage) ([]byte, error) {
	if len(saved) == 0 {
		if len(req) == 0 || string(req) == "null" {
			return nil, nil
		}
		return req, nil
	}
	merged := make(map[string]any, len(saved))
	for k, v := range saved {
		merged[k] = v
	}
	if len(req) > 0 && string(req) != "null" {
		var over map[string]any
		if err := json.Unmarshal(req, &over); err != nil {
			return nil, problem.Validation(problem.Field("must be an object", "providerOptions"))
		}
		for k, v := range over {
			merged[k] = v
		}
	}
	return json.Marshal(merged)
}

// withInstructions adds the request's instructions to its provider
// options as "instructions", the name the providers that take them use
// (OpenAI's gpt-4o-mini-tts). Giving them both ways is ambiguous: 400.
func withInstructions(opts []byte, in *string) ([]byte, error) {
	if in == nil {
		return opts, nil
	}
	m := map[string]any{}
	if len(opts) > 0 {
		if err := json.Unmarshal(opts, &m); err != nil {
			return nil, problem.Validation(problem.Field("must be an object", "providerOptions"))
		}
	}
	if _, ok := m["instructions"]; ok {
		return nil, problem.Validation(problem.Field("give instructions once: here or as providerOptions.instructions", "instructions"))
	}
	m["instructions"] = *in
	return json.Marshal(m)
}

// moderate runs the job's ruleset over its text. A blocked request gets a
// *moderation.BlockedError and must not reach the provider.
func (s *Service) moderate(ctx context.Context, j *Job) error {
	if s.mod == nil {
		return nil
	}
	j.Verdict = s.mod.Check(ctx, j.Ruleset, j.Text)
	// Pronunciation rules change what the provider speaks, so the spoken
	// text is checked too: a rule must not smuggle blocked words past the
	// check of the written text.
	if spoken := j.spokenText(); !j.Verdict.Blocked() && spoken != j.Text {
		v := s.mod.Check(ctx, j.Ruleset, spoken)
		v.Latency += j.Verdict.Latency
		if v.Blocked() || j.Verdict.Decision != moderation.DecisionAllowOnError {
			j.Verdict = v
		}
	}
	if j.Verdict.Blocked() {
		return &moderation.BlockedError{Verdict: j.Verdict, TurnIndex: -1}
	}
	return nil
}

func (j *Job) spokenText() string {
	if j.subst != nil {
		return j.subst.text
	}
	return j.Text
}

func (j *Job) request() *sdk.SynthesizeRequest {
	return &sdk.SynthesizeRequest{
		Model:       j.Model.ID,
		Voice:       j.Voice,
		Text:        j.spokenText(),
		Speed:       j.Speed,
		Options:     j.Options,
		Credentials: j.Creds,
	}
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

// synthesize renders the job's whole clip, applies whole-clip processing
// and maps timestamps back through pronunciations.
func (s *Service) synthesize(ctx context.Context, j *Job) (*Result, error) {
	req := j.request()
	req.Timestamps = j.Delivery == DeliverTimestamps && !j.skipTimestamps
	process := audio.NeedsProcessing(j.Params)
	if process {
		req.Format = decodableFormat(j.Model)
	}
	var (
		resp    *sdk.SynthesizeResponse
		release func()
	)
	if _, err := s.call(ctx, j, "synthesize", func(ctx context.Context) error {
		var err error
		resp, release, err = s.render(ctx, j, req)
		return err
	}); err != nil {
		return nil, err
	}
	res := &Result{Audio: resp.Audio, MediaType: resp.MediaType, Timestamps: resp.Timestamps, Warnings: resp.Warnings, release: release}
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
	if j.subst != nil && req.Timestamps {
		ts, ok := j.subst.mapTimestamps(resp.Timestamps)
		res.Timestamps = ts
		if !ok {
			res.Warnings = append(res.Warnings, "the provider's words did not line up with the pronunciation rules; timestamps are for the substituted text")
		}
	}
	if process {
		data, mt, err := audio.Process(resp.Audio, resp.MediaType, j.Params)
		res.Release() // the provider's clip is done with either way
		if err != nil {
			return nil, fmt.Errorf("process %s audio from %s: %w", resp.MediaType, j.Provider.ID, err)
		}
		res.Audio, res.MediaType = data, mt
	}
	if j.Delivery == DeliverTimestamps {
		if !req.Timestamps {
			res.Timestamps = nil // whatever the provider sent unasked
		}
		if res.Timestamps == nil {
			res.Timestamps = []sdk.WordTimestamp{}
		}
	}
	res.Warnings = append(res.Warnings, j.warnings...)
	return res, nil
}

// planner returns the job's provider as a Planner when the gateway may
// send its requests itself: the plugin plans, direct sending is on, and
// the provider's configuration does not turn it off.
func (s *Service) planner(j *Job) sdk.Planner {
	if s.dispatch == nil || !j.Provider.Desc.Plans || !j.Provider.Policy.Direct {
		return nil
	}
	pl, _ := j.Provider.Plugin.(sdk.Planner)
	return pl
}

// plan returns the job's plan, or nil when the request goes through the
// plugin (no planner, or the plugin cannot plan this request).
func (s *Service) plan(ctx context.Context, j *Job, req *sdk.SynthesizeRequest, stream bool) (*dispatch.Planned, dispatch.Explainer, error) {
	pl := s.planner(j)
	if pl == nil || req.Timestamps {
		return nil, nil, nil
	}
	plan, err := s.dispatch.Plan(ctx, j.Provider.ID, pl, req, stream)
	if err != nil {
		if sdk.AsError(err).Kind == sdk.KindUnsupported {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	creds := j.Creds
	return plan, func(ctx context.Context, f *sdk.Failure) error {
		f.Credentials = creds
		return pl.Explain(ctx, f)
	}, nil
}

// render gets a whole clip from the provider: sent by the gateway when
// the plugin plans the request, by the plugin otherwise. release, when
// not nil, gives the clip's buffer back to the HTTP client's pool.
func (s *Service) render(ctx context.Context, j *Job, req *sdk.SynthesizeRequest) (_ *sdk.SynthesizeResponse, release func(), _ error) {
	plan, explain, err := s.plan(ctx, j, req, false)
	if err != nil {
		return nil, nil, err
	}
	if plan == nil {
		resp, err := j.Provider.Plugin.Synthesize(ctx, req)
		return resp, nil, err
	}
	audio, release, err := s.dispatch.Fetch(ctx, plan, req.Text, explain)
	if err != nil {
		return nil, nil, err
	}
	return &sdk.SynthesizeResponse{Audio: audio, MediaType: plan.MediaType}, release, nil
}

// Source is a stream of audio being rendered for one job.
type Source interface {
	// MediaType is the stream's media type; known once Next has
	// returned for the first time.
	MediaType() string
	// Next returns the next piece of audio as it arrives; the slice is
	// valid until the next call. The end of the stream is io.EOF; any
	// other error ended it early.
	Next() ([]byte, error)
	// Close stops the stream if it is still running, releases it and
	// returns what ended it: nil for a complete stream, else the error.
	// It records the provider call's metrics.
	Close() error
}

// openStream starts rendering the job as a stream, under the provider's
// timeout. The caller reads it with Next and must Close it. A failure to
// start is returned here when the provider reports it before any audio
// (always, for planned requests: the answer's status is known first).
func (s *Service) openStream(ctx context.Context, j *Job) (Source, error) {
	req := j.request()
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, j.Provider.Policy.Timeout)
	start := time.Now()
	plan, explain, err := s.plan(ctx, j, req, true)
	if err == nil && plan != nil {
		var body *dispatch.Body
		if body, err = s.dispatch.Open(ctx, plan, req.Text, explain); err == nil {
			return &directSource{Body: body, done: s.ender(parent, ctx, cancel, j, start)}, nil
		}
	}
	if err != nil {
		err = s.ender(parent, ctx, cancel, j, start)(err)
		return nil, err
	}
	ps := &pluginSource{chunks: make(chan sdk.Chunk, 8), errc: make(chan error, 1), cancel: cancel, done: s.ender(parent, ctx, cancel, j, start)}
	go func() {
		defer close(ps.chunks)
		ps.errc <- j.Provider.Plugin.Stream(ctx, req, func(ch sdk.Chunk) error {
			select {
			case ps.chunks <- ch:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	return ps, nil
}

// ender returns the function that ends a stream's provider call: it
// releases ctx and records the call's metrics, and returns the error
// as the caller should see it.
func (s *Service) ender(parent, ctx context.Context, cancel context.CancelFunc, j *Job, start time.Time) func(error) error {
	return func(err error) error {
		err = s.observe(parent, ctx, j, "stream", time.Since(start), err)
		cancel()
		return err
	}
}

// directSource is a planned stream read straight from the provider.
type directSource struct {
	*dispatch.Body
	done func(error) error
	err  error // what ended the stream early
}

func (d *directSource) Next() ([]byte, error) {
	b, err := d.Body.Next()
	if err != nil && !errors.Is(err, io.EOF) {
		d.err = err
	}
	return b, err
}

func (d *directSource) Close() error {
	d.Body.Close()
	return d.done(d.err)
}

// pluginSource is a stream the plugin renders, relayed through a channel:
// the plugin's Stream pushes and Next pulls.
type pluginSource struct {
	chunks    chan sdk.Chunk
	errc      chan error
	cancel    context.CancelFunc
	done      func(error) error
	mediaType string
	err       error
	ended     bool
}

func (p *pluginSource) MediaType() string { return p.mediaType }

func (p *pluginSource) Next() ([]byte, error) {
	for !p.ended {
		ch, ok := <-p.chunks
		if !ok {
			p.ended = true
			p.err = <-p.errc
			break
		}
		if p.mediaType == "" {
			p.mediaType = ch.MediaType
		}
		if len(ch.Data) > 0 {
			return ch.Data, nil
		}
	}
	if p.err != nil {
		return nil, p.err
	}
	return nil, io.EOF
}

func (p *pluginSource) Close() error {
	if !p.ended {
		p.cancel() // stop the plugin, then let its Stream return
		for range p.chunks {
		}
		p.ended, p.err = true, <-p.errc
	}
	return p.done(p.err)
}

// call runs one plugin call under the provider's timeout and records its
// metrics.
func (s *Service) call(parent context.Context, j *Job, op string, fn func(ctx context.Context) error) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(parent, j.Provider.Policy.Timeout)
	defer cancel()
	start := time.Now()
	err := fn(ctx)
	d := time.Since(start)
	return d, s.observe(parent, ctx, j, op, d, err)
}

// observe records a provider call's metrics and returns its error as the
// caller should see it: a call cut off by a deadline is a timeout,
// whatever the plugin said, and names the limit that fired: the
// request's own (parent's, server.request_timeout) or the provider's
// (ctx's, providers.<id>.timeout).
func (s *Service) observe(parent, ctx context.Context, j *Job, op string, d time.Duration, err error) error {
	outcome := "ok"
	if err != nil {
		outcome = sdk.AsError(err).Kind.String()
		timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded) || sdk.AsError(err).Kind == sdk.KindTimeout
		if timedOut {
			outcome = "timeout"
			// ctx's deadline is the earlier of the request's and the
			// provider's: name the one that was binding. (The plugin's
			// side can report the deadline a moment before ctx sees it.)
			pd, hasParent := parent.Deadline()
			cd, _ := ctx.Deadline()
			if hasParent && !pd.After(cd) {
				err = problem.New(problem.RequestTimeout, "the request did not finish within the gateway's request timeout (server.request_timeout)")
			} else if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
				err = &sdk.Error{Kind: sdk.KindTimeout, Message: fmt.Sprintf("the provider did not answer within %s (providers.%s.timeout)", j.Provider.Policy.Timeout, j.Provider.ID)}
			}
		}
	}
	if s.metrics != nil {
		s.metrics.ProviderCalls.WithLabelValues(j.Provider.ID, op, outcome).Inc()
		s.metrics.ProviderLatency.WithLabelValues(j.Provider.ID, op).Observe(d.Seconds())
	}
	return err
}

// credits returns the credits charged for chars characters on j's model.
func (s *Service) credits(j *Job) int {
	rate := j.Provider.Policy.CreditsPer1kChars
	if r, ok := j.Provider.Policy.ModelCredits[j.Model.ID]; ok {
		rate = r
	}
	return int(math.Ceil(float64(utf8.RuneCountInString(j.Text)) * rate / 1000))
}

// logRow returns the request-log fields that describe j.
func (s *Service) logRow(j *Job) store.LogRow {
	row := store.LogRow{
		Provider:    j.Provider.ID,
		Model:       j.Model.ID,
		VoiceID:     j.Voice,
		VoiceRef:    j.VoiceRef,
		CharCount:   utf8.RuneCountInString(j.Text),
		CreditsUsed: s.credits(j),
	}
	if len(j.Options) > 0 {
		row.ProviderOptions = string(j.Options)
	}
	v := j.Verdict
	row.ModerationDecision = v.Decision
	row.ModerationReasonType = v.ReasonType
	row.ModerationReasonDetail = v.ReasonDetail
	row.ModerationConfidence = v.Confidence
	row.ModerationLatencyMS = v.Latency.Milliseconds()
	return row
}

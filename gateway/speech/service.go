package speech

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/admission/budget"
	"github.com/voxgate/voxgate/gateway/admission/moderation"
	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/observe/metrics"
	"github.com/voxgate/voxgate/gateway/observe/tracing"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/providers/credentials"
	"github.com/voxgate/voxgate/gateway/providers/dispatch"
	"github.com/voxgate/voxgate/gateway/providers/keypool"
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
	slots    *clipSlots
	streams  *streamSlots
	cat      *Catalog
	store    Store
	dicts    Dictionaries
	creds    *credentials.Resolver
	mod      Moderator
	dispatch *dispatch.Client
	metrics  *metrics.Metrics
	tracer   *tracing.Tracer
	log      *zap.Logger
	budgets  *budget.Budgets
	// pools are the providers' managed key pools, by provider id.
	pools map[string]*keypool.Pool
	cache *responseCache
	// routes are the deployment's fallbacks by "provider/model".
	routes map[string]Route
	// orgBudgets are the organizations' credit budgets.
	orgBudgets map[string]budget.Limit
	align      Alignment
	// alignSlots bounds the alignments running at once.
	alignSlots chan struct{}
	// refVoices caches the reference provider's voice list.
	refMu     sync.Mutex
	refVoices []sdk.Voice
	// voiceLangs caches the languages of providers' voices.
	voiceLangs voiceLangs
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
	// Tracer traces the pipeline's steps; nil is tracing off.
	Tracer *tracing.Tracer
	Logger *zap.Logger
	// Budgets counts credits against OrgBudgets and keys' budgets; nil
	// enforces none.
	Budgets    *budget.Budgets
	OrgBudgets map[string]budget.Limit
	// Cache keeps rendered answers; a nil Store turns it off.
	Cache CacheOptions
	// Routes are the deployment's fallbacks by "provider/model".
	Routes map[string]Route
	// Pools are the providers' managed key pools, by provider id.
	Pools map[string]*keypool.Pool
	// Alignment is how words are timed for models without timestamps.
	Alignment Alignment
}

// New returns a Service.
func New(d Deps) *Service {
	s := &Service{limits: d.Limits, slots: newClipSlots(d.Limits.WholeClipConcurrency, d.Limits.WholeClipWait),
		streams: newStreamSlots(d.Limits.StreamsPerOrg), cat: d.Catalog, store: d.Store, dicts: d.Dictionaries,
		creds: d.Credentials, mod: d.Moderator, dispatch: d.Direct, metrics: d.Metrics, tracer: d.Tracer, log: d.Logger,
		budgets: d.Budgets, orgBudgets: d.OrgBudgets, cache: newResponseCache(d.Cache, d.Metrics, d.Logger), routes: d.Routes, pools: d.Pools,
		align: d.Alignment}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.limits.PieceConcurrency < 1 {
		s.limits.PieceConcurrency = 1
	}
	s.alignSlots = make(chan struct{}, max(d.Alignment.Concurrency, 1))
	return s
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
	// Text is the request's text. tagged is the text with the audio
	// tags the model does not perform removed; spokenText is what the
	// provider receives, after pronunciations too.
	Text   string
	tagged string
	subst  *substitution
	// rules are the pronunciation rule sources the text is spoken with
	// (the organization's default dictionary, the listed ones, inline).
	rules [][]PronunciationRule
	// pieces is the spoken text cut to the model's limit: one piece
	// unless the text is longer.
	pieces []string
	// timing is where word timestamps come from (DeliverTimestamps).
	timing string
	// noCache asks for a fresh rendering (Cache-Control: no-cache).
	noCache bool
	// fallbacks are the saved voice's equivalent voices, if any.
	fallbacks []store.VoiceTarget
	// req is the request the job was prepared from (for its fallbacks).
	req     *Request
	Options []byte
	Creds   sdk.Credentials
	Speed   float64
	Params  audio.Params
	Ruleset string
	Verdict moderation.Verdict
	// Stream is the encoding a stream asks the provider for; zero is
	// the model's preferred one.
	Stream StreamFormat
	// conv is what the gateway converts the job's stream from and to
	// (applyStreamFormat, transcode); nil while it passes through.
	conv *Conversion
	// Warnings say what of the request was dropped or changed (removed
	// audio tags, options meant for another provider, instructions the
	// model ignores); the answer carries them.
	Warnings []string
}

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
	j := &Job{Org: org, Delivery: ep, Text: *r.Text, Params: r.Params(), noCache: r.NoCache, req: r}
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
		j.fallbacks = v.Fallbacks
		savedOpts = v.ProviderOptions
	} else {
		p, m, err := s.cat.ResolveModel(r.Model)
		if err != nil {
			return nil, err
		}
		j.Provider, j.Model, j.Voice = p, m, r.Voice
	}
	if err := checkScope(ctx, j); err != nil {
		return nil, err
	}
	reqOpts, warnings, err := r.dialectOptions(j)
	if err != nil {
		return nil, err
	}
	j.Warnings = warnings
	opts, err := mergeOptions(savedOpts, reqOpts)
	if err != nil {
		return nil, err
	}
	j.Options = opts
	if err := s.checkCapabilities(j, r); err != nil {
		return nil, err
	}
	if err := j.applyStreamFormat(r.StreamFormat); err != nil {
		return nil, err
	}
	if n := utf8.RuneCountInString(j.Text); n > s.limits.MaxTextChars {
		return nil, problem.New(problem.TextTooLong, "text has %d characters; a request may have at most %d (limits.max_text_chars)", n, s.limits.MaxTextChars)
	}
	var tagWarnings []string
	j.tagged, tagWarnings = applyTags(j.Text, j.Model, j.name())
	j.Warnings = append(j.Warnings, tagWarnings...)
	if strings.TrimSpace(j.tagged) == "" {
		return nil, problem.Validation(problem.Field(fmt.Sprintf("has nothing to say once the audio tags %s does not perform are removed", j.name()), "text"))
	}
	sources := r.rules
	if sources == nil {
		if sources, err = s.requestRules(ctx, org, r.Pronunciations); err != nil {
			return nil, err
		}
	}
	j.rules = sources
	j.setText(j.tagged)
	j.pieces = splitText(j.spokenText(), s.pieceLimit(j))
	if err := j.checkEncodable(); err != nil {
		return nil, err
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
		if r.Timestamps == TimestampsOff {
			j.timing = SourceNone
			break
		}
		var err error
		if j.timing, err = s.chooseTiming(j); err != nil {
			if r.Timestamps != TimestampsAuto {
				return err
			}
			j.timing = SourceNone
			j.Warnings = append(j.Warnings, fmt.Sprintf("No word timestamps (timestamps: auto): %s.", problem.From(err, "").Detail))
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

// moderate runs the job's ruleset over its text. A blocked request gets a
// *moderation.BlockedError and must not reach the provider.
func (s *Service) moderate(ctx context.Context, j *Job) error {
	if s.mod == nil {
		return nil
	}
	ctx, span := s.tracer.Start(ctx, "moderation", trace.SpanKindInternal)
	defer func() {
		if span.IsRecording() {
			span.SetAttributes(tracing.Ruleset.String(j.Ruleset), tracing.Decision.String(j.Verdict.Decision))
		}
		span.End()
	}()
	j.Verdict = s.mod.Check(ctx, j.Ruleset, j.Text)
	// Pronunciation rules change what the provider speaks, so the spoken
	// text is checked too: a rule must not smuggle blocked words past the
	// check of the written text.
	if spoken := j.spokenText(); !j.Verdict.Blocked() && j.subst != nil && spoken != j.tagged {
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

// setText makes tagged (the text with the audio tags the model does not
// perform removed) the job's text to speak, with its pronunciation rules
// applied.
func (j *Job) setText(tagged string) {
	j.tagged, j.subst = tagged, nil
	if rules := layerRules(tagged, j.rules...); rules != nil {
		j.subst = rules.apply(tagged)
	}
}

func (j *Job) spokenText() string {
	if j.subst != nil {
		return j.subst.text
	}
	return j.tagged
}

// request is the provider request for the job's whole spoken text.
func (j *Job) request() *sdk.SynthesizeRequest { return j.requestFor(j.spokenText()) }

// requestIn is requestFor in format ("": the job's stream format): in
// another format than the job's, the model's first encoding of it, at the
// job's rate when the model has that rate in it. Every piece of a long
// text's stream is asked for this way, so all come alike.
func (j *Job) requestIn(text, format string) *sdk.SynthesizeRequest {
	req := j.requestFor(text)
	if format != "" && format != req.Format {
		req.Format, req.Bitrate = format, 0
		if !hasRate(j.Model, format, req.SampleRate) {
			req.SampleRate = 0
		}
	}
	return req
}

// requestFor is the provider request for text (the whole or a piece).
func (j *Job) requestFor(text string) *sdk.SynthesizeRequest {
	return &sdk.SynthesizeRequest{
		Model:       j.Model.ID,
		Voice:       j.Voice,
		Text:        text,
		Speed:       j.Speed,
		Options:     j.Options,
		Credentials: j.Creds,
		Format:      j.Stream.Format,
		SampleRate:  j.Stream.SampleRate,
		Bitrate:     j.Stream.Bitrate,
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

// processing is the reason j's samples must go through the gateway
// whatever its model offers (volumeDbfs, a time-stretch), or "".
func (j *Job) processing() string {
	if p := j.Params; p.VolumeDbfs != nil || (p.Stretch != 0 && p.Stretch != 1) {
		return ReasonProcessing
	}
	return ""
}

// checkEncodable refuses a clip whose output the gateway would have to
// encode in a format it cannot produce (AAC): the model does not produce
// it, or the gateway works on the samples.
func (j *Job) checkEncodable() error {
	if j.Delivery == DeliverStream || j.Params.Output == nil || audio.Encodes(j.Params.Output.Format) {
		return nil
	}
	r := j.rendition()
	if len(j.pieces) > 1 || j.timing == SourceAligned || j.timing == SourceSTT {
		r = j.piecesRendition()
	}
	if r.passThrough() {
		return nil
	}
	return unavailableOutput(j.Params.Output)
}

// rendition negotiates j's clip when it renders in one provider call.
func (j *Job) rendition() rendition {
	return negotiate(j.Model, j.Params.Output, j.processing())
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

// MetricModel is the model label of j's metrics: its model's id when the
// provider lists it, else sdk.AnyModel. A passed-through id comes from
// the caller, and a label per such id would let callers grow the metrics
// without bound; its logs and log rows still carry the id.
func (j *Job) MetricModel() string {
	if j.Provider.Model(j.Model.ID) == nil {
		return sdk.AnyModel
	}
	return j.Model.ID
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
	res := &Result{Audio: resp.Audio, MediaType: resp.MediaType, Timestamps: resp.Timestamps, Warnings: append(j.Warnings[:len(j.Warnings):len(j.Warnings)], resp.Warnings...), release: release}
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
	creds := req.Credentials
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
// timeout, converted by the gateway when the model does not stream the
// format asked for (transcode). The caller reads it with Next and must
// Close it. A failure to start is returned here when the provider reports
// it before any audio (always, for planned requests: the answer's status
// is known first).
func (s *Service) openStream(ctx context.Context, j *Job) (Source, error) {
	if len(j.pieces) > 1 {
		first, err := s.openOne(ctx, j, j.pieces[0], streamFormat(j.Model))
		if err != nil {
			return nil, err
		}
		return transcode(j, s.openPieces(ctx, j, first), true), nil
	}
	src, err := s.openOne(ctx, j, j.spokenText(), "")
	if err != nil {
		return nil, err
	}
	return transcode(j, src, false), nil
}

// openOne starts rendering text (all of j's, or its first piece) as a
// stream, in format ("" = the job's stream format, or the model's
// default).
func (s *Service) openOne(ctx context.Context, j *Job, text, format string) (Source, error) {
	return s.openStreamRequest(ctx, j, j.requestIn(text, format))
}

// openStreamRequest is openStream with the provider request given.
func (s *Service) openStreamRequest(ctx context.Context, j *Job, req *sdk.SynthesizeRequest) (Source, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, j.Provider.Policy.Timeout)
	ctx = s.startCall(ctx, j, "stream")
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
	ctx = s.startCall(ctx, j, op)
	start := time.Now()
	err := fn(ctx)
	d := time.Since(start)
	return d, s.observe(parent, ctx, j, op, d, err)
}

// startCall starts the span of a provider call (ended by observe): a
// GenAI client span, "generate_content MODEL", saying whether the plugin
// or the gateway itself sends the upstream request.
func (s *Service) startCall(ctx context.Context, j *Job, op string) context.Context {
	ctx, span := s.tracer.Start(ctx, "generate_content "+j.Model.ID, trace.SpanKindClient)
	if span.IsRecording() {
		via := "plugin"
		if s.planner(j) != nil {
			via = "gateway" // when the request is planned; a child span shows the upstream HTTP
		}
		span.SetAttributes(tracing.ProviderCall(j.Provider.ID, j.Model.ID)...)
		span.SetAttributes(attribute.String("voxgate.op", op), tracing.Via.String(via))
	}
	return ctx
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
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		if err != nil {
			span.SetAttributes(tracing.ErrorType.String(outcome))
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
	if s.metrics != nil {
		s.metrics.ProviderCalls.WithLabelValues(j.Provider.ID, j.MetricModel(), op, outcome).Inc()
		s.metrics.ProviderLatency.WithLabelValues(j.Provider.ID, j.MetricModel(), op).Observe(d.Seconds())
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

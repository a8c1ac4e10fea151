// Package speech is the synthesis pipeline: it turns a validated speech
// request into provider calls and audio. It resolves the voice (saved or
// inline), applies the organization's provider policy and credentials,
// runs moderation, calls the plugin with the provider's timeout, applies
// pronunciations and whole-clip audio processing, and reports what
// happened for the request log. It reads saved voices and pronunciation
// dictionaries but never edits them (gateway/resources does), and finds
// providers and models in the catalog (gateway/providers/catalog).
//
// One request's path, top to bottom:
//
//	speak.go    Speak: prepare, moderate, then attempt the target and
//	            its fallbacks in turn (fallback.go)
//	prepare.go  the request checked and resolved into a Job: voice,
//	            model, options, capabilities, rules, credentials
//	attempt.go  one target: from the response cache, or reserved from
//	            the budgets and rendered
//	render.go   a whole clip from the plugin, or sent by the gateway
//	            itself when the plugin plans the request
//	stream.go   a stream from the plugin, relayed as it arrives
//
// Conversations (conversation.go, convstream.go) and the realtime socket
// (live.go) run their turns and segments through the same steps.
//
// Around the provider call it also removes the audio tags a model does
// not perform (tags.go), cuts a text longer than the model accepts into
// pieces rendered concurrently and joined, or streamed in order
// (text.go, pieces.go, piecestream.go), times the words of models without
// timestamps by aligning their audio against eSpeak references or by
// speech-to-text (timing.go, stt.go, package align), and lays timestamps
// out as captions (captions.go).
package speech

import (
	"context"
	"sync"

	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/admission/budget"
	"github.com/voxgate/voxgate/gateway/admission/moderation"
	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/observe/metrics"
	"github.com/voxgate/voxgate/gateway/observe/tracing"
	"github.com/voxgate/voxgate/gateway/pricing"
	"github.com/voxgate/voxgate/gateway/providers/catalog"
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

// Store is where the pipeline reads saved voices from; declared here, by
// its user. The gateway gives it the read cache, so they come from
// memory.
type Store interface {
	GetVoice(ctx context.Context, orgID, id string) (*store.Voice, error)
}

// Dictionaries is where the pipeline reads an organization's
// pronunciation rules from; any store backend satisfies it. The gateway
// gives it the read cache, so the rules come from memory.
type Dictionaries interface {
	DictionaryRules(ctx context.Context, orgID string, ids []string) (defaults []store.PronunciationRule, byID [][]store.PronunciationRule, err error)
}

// Service runs speech requests.
type Service struct {
	limits  Limits
	slots   *clipSlots
	streams *streamSlots
	cat     *catalog.Catalog
	// calls runs the plugin calls (timeout, span, metrics).
	calls    *catalog.Calls
	store    Store
	dicts    Dictionaries
	creds    *credentials.Resolver
	mod      Moderator
	dispatch *dispatch.Client
	metrics  *metrics.Metrics
	// counter counts the billing units of a job's calls (cost.go);
	// currency names what budgets in money count.
	counter  *pricing.Counter
	currency string
	tracer   *tracing.Tracer
	log      *zap.Logger
	budgets  *budget.Budgets
	// pools are the providers' managed key pools, by provider id.
	pools map[string]*keypool.Pool
	cache *responseCache
	// routes are the deployment's fallbacks by "provider/model".
	routes map[string]Route
	// orgBudgets are the organizations' credit budgets; orgBudget, when
	// set, is asked instead (organizations made through the admin API).
	orgBudgets map[string]budget.Limit
	orgBudget  func(org string) budget.Limit
	align      Alignment
	// alignSlots bounds the alignments running at once.
	alignSlots chan struct{}
	// refVoices caches the reference provider's voice list.
	refMu     sync.Mutex
	refVoices []sdk.Voice
	// voiceLangs caches the languages of providers' voices.
	voiceLangs voiceLangs
	// voices are the voices' learned loudness, for leveling streams.
	voices *voiceLoudness
	// orgLoudness is Deps.OrgLoudness.
	orgLoudness func(org string) (audio.LoudnessTarget, bool)
}

// defaultLoudness returns the loudness a request of org asking for
// neither volumeDbfs nor loudness gets: its organization's default
// target, or nil.
func (s *Service) defaultLoudness(org string, vol *float64, l *audio.LoudnessParams) *audio.LoudnessParams {
	if l != nil || vol != nil || s.orgLoudness == nil {
		return l
	}
	t, ok := s.orgLoudness(org)
	if !ok {
		return nil
	}
	// Copied out of t: pointers into t itself would put t on the heap for
	// every request, an organization with no default too.
	integrated, peak := t.Integrated, t.TruePeak
	return &audio.LoudnessParams{Integrated: &integrated, TruePeak: &peak}
}

// Deps are the Service's collaborators.
type Deps struct {
	// Limits bound what one request may ask for.
	Limits Limits
	// Currency is what costs and budgets in money are counted in
	// (pricing.currency).
	Currency string
	Catalog  *catalog.Catalog
	Store    Store
	// Dictionaries holds the organizations' pronunciation dictionaries;
	// nil applies inline rules only.
	Dictionaries Dictionaries
	Credentials  *credentials.Resolver
	Moderator    Moderator // nil: no moderation
	// Direct sends the requests of planning plugins (sdk.Planner); nil
	// keeps every call inside the plugins.
	Direct *dispatch.Client
	// Calls runs the plugin calls; nil makes one from Metrics, Tracer
	// and Direct.
	Calls   *catalog.Calls
	Metrics *metrics.Metrics
	// Tracer traces the pipeline's steps; nil is tracing off.
	Tracer *tracing.Tracer
	Logger *zap.Logger
	// Budgets counts credits against OrgBudgets and keys' budgets; nil
	// enforces none.
	Budgets    *budget.Budgets
	OrgBudgets map[string]budget.Limit
	// OrgBudget, when set, returns an organization's budget instead of
	// OrgBudgets: the gateway's organizations change while it runs.
	OrgBudget func(org string) budget.Limit
	// Cache keeps rendered answers; a nil Store turns it off.
	Cache CacheOptions
	// Routes are the deployment's fallbacks by "provider/model".
	Routes map[string]Route
	// Pools are the providers' managed key pools, by provider id.
	Pools map[string]*keypool.Pool
	// Alignment is how words are timed for models without timestamps.
	Alignment Alignment
	// OrgLoudness returns an organization's default loudness target, for
	// clips and conversations that ask for neither volumeDbfs nor
	// loudness; nil (or ok false) is none.
	OrgLoudness func(org string) (t audio.LoudnessTarget, ok bool)
}

// New returns a Service.
func New(d Deps) *Service {
	s := &Service{limits: d.Limits, slots: newClipSlots(d.Limits.WholeClipConcurrency, d.Limits.WholeClipWait),
		streams: newStreamSlots(d.Limits.StreamsPerOrg), cat: d.Catalog, store: d.Store, dicts: d.Dictionaries,
		creds: d.Credentials, mod: d.Moderator, dispatch: d.Direct, metrics: d.Metrics, tracer: d.Tracer, log: d.Logger,
		budgets: d.Budgets, orgBudgets: d.OrgBudgets, orgBudget: d.OrgBudget, cache: newResponseCache(d.Cache, d.Metrics, d.Logger), routes: d.Routes, pools: d.Pools,
		align: d.Alignment, orgLoudness: d.OrgLoudness, voices: newVoiceLoudness(maxLearnedVoices), counter: pricing.NewCounter(),
		currency: d.Currency}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	// A bound of 0 on what runs at once would never start anything (a
	// conversation would wait for a turn until its context ended): it
	// means one at a time, as for whole-clip work and streams.
	s.limits.PieceConcurrency = max(s.limits.PieceConcurrency, 1)
	s.limits.ConversationConcurrency = max(s.limits.ConversationConcurrency, 1)
	s.alignSlots = make(chan struct{}, max(d.Alignment.Concurrency, 1))
	s.calls = d.Calls
	if s.calls == nil {
		s.calls = catalog.NewCalls(d.Metrics, d.Tracer, d.Direct != nil)
	}
	return s
}

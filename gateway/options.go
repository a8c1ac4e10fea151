package gateway

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/voxgate/voxgate/config"
	"github.com/voxgate/voxgate/gateway/admission/budget"
	"github.com/voxgate/voxgate/gateway/admission/moderation"
	"github.com/voxgate/voxgate/gateway/admission/orgs"
	"github.com/voxgate/voxgate/gateway/admission/ratelimit"
	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/edge"
	"github.com/voxgate/voxgate/gateway/edge/dialect"
	"github.com/voxgate/voxgate/gateway/jobs"
	"github.com/voxgate/voxgate/gateway/observe/tracing"
	"github.com/voxgate/voxgate/gateway/pricing"
	"github.com/voxgate/voxgate/gateway/providers/catalog"
	"github.com/voxgate/voxgate/gateway/providers/credentials"
	"github.com/voxgate/voxgate/gateway/providers/keypool"
	"github.com/voxgate/voxgate/gateway/providers/pluginhost"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/driver"
	"github.com/voxgate/voxgate/gateway/store/reqlog"
	"github.com/voxgate/voxgate/sdk"
)

// This file is the one place where the configuration becomes each
// component's typed options. The components below gateway/ take what is
// made here and never see *config.Config: what one may decide is exactly
// what its options hold, and a config key moves or changes meaning in
// one place. Every function reads a config that config.Parse has
// checked, and is called at start.

// ServerOptions is the typed view of cfg's edge settings.
func ServerOptions(cfg *config.Config) edge.Options {
	o := edge.Options{
		Currency:         cfg.Pricing.Currency,
		ReadTimeout:      cfg.Server.ReadTimeout.D(),
		WriteTimeout:     cfg.Server.WriteTimeout.D(),
		IdleTimeout:      cfg.Server.IdleTimeout.D(),
		RequestTimeout:   cfg.Server.RequestTimeout.D(),
		MaxBodyBytes:     cfg.Server.MaxBodyBytes,
		MaxMediaBytes:    cfg.Limits.MaxMediaBytes,
		MaxBodyMemory:    cfg.Server.MaxBodyMemory,
		BodyMemoryPerOrg: cfg.Limits.BodyMemoryPerOrg,
		MaxTextChars:     speech.DefaultModelTextChars,
		AccessLog:        cfg.Server.AccessLog == nil || *cfg.Server.AccessLog,
		MaxConns:         cfg.Server.MaxConns,
		MaxConnsPerIP:    cfg.Server.MaxConnsPerIP,
		MetricsPublic:    cfg.Metrics.Listen == "" && cfg.Metrics.Token != "",
		MetricsToken:     cfg.Metrics.Token.Value(),
		CORS:             edge.CORSOptions{AllowedOrigins: cfg.CORS.AllowedOrigins, MaxAge: cfg.CORS.MaxAge.D()},
	}
	if o.MaxConns == 0 {
		o.MaxConns = edge.DefaultMaxConns()
	}
	return o
}

// Aliases is the typed view of cfg's model and voice aliases, the top
// level's and each organization's.
func Aliases(cfg *config.Config) *dialect.Aliases {
	set := func(a config.Aliases) dialect.AliasSet {
		out := dialect.AliasSet{Models: a.Models, Voices: make(map[string]dialect.VoiceAlias, len(a.Voices))}
		for name, v := range a.Voices {
			if v != nil {
				out.Voices[name] = dialect.VoiceAlias{Model: v.Model, Voice: v.Voice, SavedVoice: v.SavedVoice}
			}
		}
		return out
	}
	orgs := make(map[string]dialect.AliasSet, len(cfg.Orgs))
	for name, o := range cfg.Orgs {
		if o != nil {
			orgs[name] = set(o.Aliases)
		}
	}
	return dialect.NewAliases(set(cfg.Aliases), orgs)
}

// StorageConfig is the typed view of cfg's storage settings, with paths
// resolved against the config file.
func StorageConfig(cfg *config.Config) driver.Config {
	return driver.Config{
		Driver:       cfg.Storage.Driver,
		Path:         cfg.Resolve(cfg.Storage.Path),
		DSN:          cfg.Storage.DSN.Value(),
		MaxConns:     cfg.Storage.MaxConns,
		LogRetention: time.Duration(cfg.Storage.LogRetainDays) * 24 * time.Hour,
	}
}

// RequestLogOptions is the typed view of cfg's request-log writer
// settings; Open adds the logger.
func RequestLogOptions(cfg *config.Config) reqlog.Options {
	return reqlog.Options{
		QueueSize: cfg.Storage.LogQueueSize,
		BatchSize: cfg.Storage.LogBatchSize,
		Retention: StorageConfig(cfg).LogRetention,
	}
}

// AdminSocket returns the admin socket path of cfg.
func AdminSocket(cfg *config.Config) string {
	if cfg.Admin.Socket != "" {
		return cfg.Resolve(cfg.Admin.Socket)
	}
	return cfg.Resolve(cfg.Storage.Path) + ".sock"
}

// SecretsKeyFile is the file of the key that seals stored provider keys
// (when secrets.key_env names no set variable): secrets.key_file, or
// secrets.key beside the database.
func SecretsKeyFile(cfg *config.Config) string {
	if cfg.Secrets.KeyFile != "" {
		return cfg.Resolve(cfg.Secrets.KeyFile)
	}
	return filepath.Join(filepath.Dir(cfg.Resolve(cfg.Storage.Path)), "secrets.key")
}

// TracingOptions is the typed view of cfg's tracing settings; on is false
// when tracing is off (no tracing.endpoint).
func TracingOptions(cfg *config.Config, version string) (o tracing.Options, on bool) {
	tc := cfg.Tracing
	if tc.Endpoint == "" {
		return o, false
	}
	o = tracing.Options{Endpoint: tc.Endpoint, Protocol: tc.Protocol, ServiceName: tc.ServiceName, Version: version}
	if tc.SampleRatio != nil {
		o.SampleRatio = *tc.SampleRatio
		if o.SampleRatio == 0 {
			o.SampleRatio = -1 // keep none of the new traces
		}
	}
	if len(tc.Headers) > 0 {
		o.Headers = make(map[string]string, len(tc.Headers))
		for k, v := range tc.Headers {
			o.Headers[k] = v.Value()
		}
	}
	return o, true
}

// shared is where the counters several instances share live (rate
// limits, credit budgets, key pools' slots) and what a request gets while
// they cannot be asked.
type shared struct {
	// redisURL is the shared Redis; "" counts in each instance's memory.
	redisURL string
	// rateLimitFailOpen lets requests through while the limiter cannot
	// be asked; budgetFailOpen does the same for budgets.
	rateLimitFailOpen, budgetFailOpen bool
}

// sharedOptions is the typed view of cfg's shared section.
func sharedOptions(cfg *config.Config) shared {
	return shared{
		redisURL:          cfg.Shared.RedisURL.Value(),
		rateLimitFailOpen: cfg.Shared.RateLimitOnError != "deny",
		budgetFailOpen:    cfg.Shared.BudgetOnError == "allow",
	}
}

// FileOrgs is what gateway.yaml declares of each organization that the
// organization directory (admission/orgs) holds: budgets, rate limits
// and default loudness targets.
func FileOrgs(cfg *config.Config) []orgs.File {
	budgets := OrgBudgets(cfg)
	out := make([]orgs.File, 0, len(cfg.Orgs))
	for name, o := range cfg.Orgs {
		if o == nil {
			continue
		}
		f := orgs.File{ID: name, Budget: budgets[name],
			Synthesis: ratelimit.Limit{Rate: o.RateLimit, Burst: o.RateBurst},
			Reads:     ratelimit.Limit{Rate: o.ReadRateLimit, Burst: o.ReadRateBurst}}
		if l := o.Loudness; l != nil {
			f.Loudness = &orgs.Loudness{Integrated: l.Integrated, TruePeak: l.Ceiling()}
		}
		if w := o.FailoverWindowMs; w != nil {
			d := time.Duration(*w) * time.Millisecond
			f.FailoverWindow = &d
		}
		f.Provenance = store.OrgProvenance{Unmarked: !o.Provenance.MarkOn(), ConsentOptional: !o.Provenance.ConsentRequiredOn(),
			NoRecords: !o.Provenance.RecordsOn()}
		out = append(out, f)
	}
	return out
}

// OrgBudgets is the typed view of the organizations' credit budgets.
func OrgBudgets(cfg *config.Config) map[string]budget.Limit {
	out := map[string]budget.Limit{}
	for name, o := range cfg.Orgs {
		if o.Budget != nil {
			out[name] = budget.Limit{Credits: o.Budget.Credits, Cost: pricing.FromFloat(o.Budget.Cost), Period: budget.Period(o.Budget.Period)}
		}
	}
	return out
}

// KeyPool is what keypool.New takes of one provider's pool of managed
// keys.
type KeyPool struct {
	Keys []keypool.Key
	// Wait bounds a call's wait for a key's concurrency slot.
	Wait time.Duration
	// Hold is how long a slot may stay taken: the longest a call can
	// take, and a minute, so that a crashed instance's slots come back.
	Hold time.Duration
}

// KeyPools is the typed view of the providers' pools of managed keys, by
// provider; providers with one key (or none) have no pool.
func KeyPools(cfg *config.Config) map[string]KeyPool {
	out := map[string]KeyPool{}
	for id, p := range cfg.Providers {
		if len(p.APIKeys) == 0 {
			continue
		}
		keys := make([]keypool.Key, len(p.APIKeys))
		for i, k := range p.APIKeys {
			keys[i] = keypool.Key{Name: k.Name, Secret: k.Key.Value(), Weight: k.Weight, MaxConcurrency: k.MaxConcurrency}
		}
		hold := max(p.Timeout.D(), cfg.Server.RequestTimeout.D()) + time.Minute
		out[id] = KeyPool{Keys: keys, Wait: p.QueueWait.D(), Hold: hold}
	}
	return out
}

// CredentialsPolicy is the typed view of cfg's credential rules: each
// provider's managed key and each organization's access to each provider.
func CredentialsPolicy(cfg *config.Config) *credentials.Policy {
	providers := make(map[string]credentials.Provider, len(cfg.Providers))
	for id, p := range cfg.Providers {
		providers[id] = credentials.Provider{Managed: p.Managed, ManagedKey: p.APIKey.Value()}
	}
	orgs := make(map[string]map[string]credentials.OrgAccess, len(cfg.Orgs))
	for name, o := range cfg.Orgs {
		access := map[string]credentials.OrgAccess{}
		if o != nil {
			for id, op := range o.Providers {
				if op != nil {
					access[id] = credentials.OrgAccess{Enabled: op.Enabled, BYOK: op.BYOK, Managed: op.Managed, OwnKey: op.APIKey.Value()}
				}
			}
		}
		orgs[name] = access
	}
	return credentials.NewPolicy(providers, orgs)
}

// PluginHostOptions is the typed view of cfg's plugin settings; the host
// gets its logger and metrics at start.
func PluginHostOptions(cfg *config.Config) pluginhost.Options {
	return pluginhost.Options{StartTimeout: cfg.Plugins.StartTimeout.D(), HealthInterval: cfg.Plugins.HealthInterval.D()}
}

// PluginSpecs lists the plugins cfg runs: every provider's, then every
// moderation plugin's (named "moderation."+name), each in id order.
func PluginSpecs(cfg *config.Config) []pluginhost.Spec {
	var specs []pluginhost.Spec
	for _, name := range sortedKeys(cfg.Providers) {
		p := cfg.Providers[name]
		specs = append(specs, pluginhost.Spec{Name: name, Kind: pluginhost.KindProvider, Path: pluginPath(cfg, p.Plugin),
			Instances: p.Instances, Settings: p.Settings})
	}
	for _, name := range sortedKeys(cfg.Moderation.Plugins) {
		m := cfg.Moderation.Plugins[name]
		specs = append(specs, pluginhost.Spec{Name: "moderation." + name, Kind: pluginhost.KindModerator, Path: pluginPath(cfg, m.Plugin),
			Instances: m.Instances, Settings: m.Settings})
	}
	return specs
}

// ProviderPolicies is the typed view of how the gateway treats each
// provider.
func ProviderPolicies(cfg *config.Config) map[string]catalog.Policy {
	out := make(map[string]catalog.Policy, len(cfg.Providers))
	for id, p := range cfg.Providers {
		out[id] = catalog.Policy{
			Timeout:           p.Timeout.D(),
			CreditsPer1kChars: p.CreditsPer1kChars,
			ModelCredits:      p.ModelCredits,
			Direct:            p.Direct(),
			Timestamps:        timing(p.Timestamps),
			Currency:          cfg.Pricing.Currency,
			Prices:            ConfigPrices(cfg, id),
		}
	}
	return out
}

// ConfigPrices is the typed view of the operator's prices for provider's
// models (pricing.prices), by model id ("*" for every model); nil when
// none are given.
func ConfigPrices(cfg *config.Config, provider string) map[string][]pricing.Price {
	var out map[string][]pricing.Price
	for target, list := range cfg.Pricing.Prices {
		pid, model, _ := strings.Cut(target, "/")
		if pid != provider {
			continue
		}
		ps := make([]pricing.Price, 0, len(list))
		for _, p := range list {
			ps = append(ps, pricing.Price{Unit: pricing.Unit(p.Unit), Amount: p.Amount, Per: p.Per, Currency: cfg.Pricing.Currency,
				Source: "config", Tokenizer: p.Tokenizer, TokensPerSecond: p.TokensPerSecond, PerCharacter: p.PerCharacter})
		}
		if out == nil {
			out = map[string][]pricing.Price{}
		}
		out[model] = ps
	}
	return out
}

// SpeechLimits is the typed view of cfg's request limits.
func SpeechLimits(cfg *config.Config) speech.Limits {
	l := cfg.Limits
	return speech.Limits{
		MaxTextChars:            l.MaxTextChars,
		PieceConcurrency:        l.PieceConcurrency,
		MaxTurns:                l.MaxTurns,
		MaxConversationChars:    l.MaxConversationChars,
		ConversationConcurrency: l.ConversationConcurrency,
		Output: audio.Limits{
			MaxDuration: time.Duration(l.MaxOutputSeconds) * time.Second,
			MaxBytes:    l.MaxOutputBytes,
		},
		WholeClipConcurrency: l.WholeClipConcurrency,
		WholeClipWait:        l.WholeClipWait.D(),
		StreamsPerOrg:        l.StreamsPerOrg,
	}
}

// Alignment is the typed view of how cfg times the words of models
// without timestamps of their own.
func Alignment(cfg *config.Config) speech.Alignment {
	a := cfg.Alignment
	return speech.Alignment{Method: timing(a.Method), Reference: a.Reference, STTProvider: a.STT.Provider, STTModel: a.STT.Model, Concurrency: a.Concurrency}
}

// timing maps a provider's timestamps setting or the alignment method
// onto the speech service's names for them.
func timing(s string) string {
	switch s {
	case config.TimestampsAuto:
		return speech.TimingAuto
	case config.TimestampsNative:
		return speech.TimingNative
	case config.TimestampsAligned:
		return speech.TimingAligned
	case config.TimestampsSTT:
		return speech.TimingSTT
	case config.TimestampsOff:
		return speech.TimingOff
	}
	return s // config.Parse allows no other
}

// Routes is the typed view of the deployment's fallbacks.
func Routes(cfg *config.Config) map[string]speech.Route {
	out := map[string]speech.Route{}
	for from, ts := range cfg.Fallbacks {
		for _, t := range ts {
			out[from] = append(out[from], speech.FallbackTarget{Model: t.Model, Voice: t.Voice, Voices: t.Voices})
		}
	}
	return out
}

// CacheOptions is the typed view of cfg's response-cache settings,
// without the store: Open opens the one cache.driver names (see
// responseCache).
func CacheOptions(cfg *config.Config) speech.CacheOptions {
	c := cfg.Cache
	return speech.CacheOptions{TTL: c.TTL.D(), MaxEntryBytes: int(c.MaxEntryBytes), ShareManaged: c.ShareManaged}
}

// JobsOptions is the typed view of the jobs section and
// limits.max_job_chars; jobs.dir is JobsDir.
func JobsOptions(cfg *config.Config) jobs.Options {
	j := cfg.Jobs
	dir := JobsDir(cfg)
	retries := 3
	if j.ChunkRetries != nil {
		retries = *j.ChunkRetries
	}
	return jobs.Options{Dir: dir, MaxChars: cfg.Limits.MaxJobChars, ChunkChars: j.ChunkChars, Rate: j.SampleRate,
		PerInstance: j.PerInstance, PerOrg: j.PerOrg, Lease: j.Lease.D(), Poll: j.Poll.D(), ChunkRetries: retries,
		RetryBackoff: j.RetryBackoff.D(), WebhookBackoff: j.WebhookBackoff.D(), WebhookRetryFor: j.WebhookRetryFor.D(),
		WebhookAllowPrivate: j.WebhookAllowPrivate, WebhookAllowHTTP: j.WebhookAllowHTTP, Retention: j.Retention.D(),
		LocalSweep: j.DirSweep.D()}
}

// JobsDir is the folder of long-form jobs' files: jobs.dir, or jobs/
// beside the storage file.
func JobsDir(cfg *config.Config) string {
	if cfg.Jobs.Dir != "" {
		return cfg.Resolve(cfg.Jobs.Dir)
	}
	return filepath.Join(filepath.Dir(cfg.Resolve(cfg.Storage.Path)), "jobs")
}

// cacheDir is the disk cache's directory: cache.path, or cache/ beside
// the storage file.
func cacheDir(cfg *config.Config) string {
	if cfg.Cache.Path != "" {
		return cfg.Resolve(cfg.Cache.Path)
	}
	return filepath.Join(filepath.Dir(cfg.Resolve(cfg.Storage.Path)), "cache")
}

// ModerationOptions is the typed view of cfg's moderation rulesets, the
// moderation plugins their checks call, and the rulesets each
// organization may use.
func ModerationOptions(cfg *config.Config) moderation.Options {
	m := cfg.Moderation
	o := moderation.Options{
		Rulesets: make(map[string]moderation.Ruleset, len(m.Rulesets)),
		Plugins:  make(map[string]moderation.Plugin, len(m.Plugins)),
		Orgs:     make(map[string]moderation.OrgRulesets, len(cfg.Orgs)),
	}
	for name, p := range m.Plugins {
		o.Plugins[name] = moderation.Plugin{APIKey: p.APIKey.Value(), Timeout: p.Timeout.D()}
	}
	for name, r := range m.Rulesets {
		rs := moderation.Ruleset{Mode: r.Mode, Timeout: r.Timeout.D(), Checks: make([]moderation.Check, len(r.Checks))}
		for i, ch := range r.Checks {
			c := moderation.Check{Builtin: ch.Builtin != nil, Plugin: ch.Plugin}
			if ch.Builtin != nil && len(ch.Builtin.Categories) > 0 {
				c.Categories = make(map[string]*moderation.Category, len(ch.Builtin.Categories))
				for cat, cc := range ch.Builtin.Categories {
					var mc *moderation.Category // an empty category stays, empty
					if cc != nil {
						mc = &moderation.Category{Terms: cc.Terms, Patterns: cc.Patterns}
					}
					c.Categories[cat] = mc
				}
			}
			for _, cr := range ch.Rules {
				c.Rules = append(c.Rules, moderation.CustomRule{Name: cr.Name, Prompt: cr.Prompt, Enabled: cr.On()})
			}
			rs.Checks[i] = c
		}
		o.Rulesets[name] = rs
	}
	for name, org := range cfg.Orgs {
		if org != nil {
			o.Orgs[name] = moderation.OrgRulesets{Default: org.Moderation, Rulesets: org.Rulesets}
		}
	}
	return o
}

// moderator builds the moderation engine from cfg's rulesets and the
// moderation plugins among pools (pool "moderation."+name). It is built
// even when no ruleset is configured, so that every request's log row
// says moderation was off rather than leaving the field empty.
func (g *Gateway) moderator(cfg *config.Config, pools map[string]*pluginhost.Pool) (speech.Moderator, error) {
	plugins := func(name string) sdk.Moderator {
		// A nil *Pool must not become a non-nil sdk.Moderator.
		if p := pools["moderation."+name]; p != nil {
			return p
		}
		return nil
	}
	e, err := moderation.New(ModerationOptions(cfg), plugins, g.metrics, g.log.Named("moderation"))
	if err != nil {
		return nil, err
	}
	return e, nil
}

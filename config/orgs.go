package config

import "math"

// Org configures one organization.
type Org struct {
	// Moderation names the org's default moderation ruleset ("" = off).
	Moderation string `yaml:"moderation"`
	// Rulesets lists further rulesets a request may pick with
	// moderation_ruleset_id; the default is always allowed.
	Rulesets []string `yaml:"rulesets"`
	// Providers holds the org's per-provider flags.
	Providers map[string]*OrgProvider `yaml:"providers"`
	// RateLimit caps the org's requests per second (0 = unlimited).
	RateLimit float64 `yaml:"rate_limit"`
	// RateBurst is the token-bucket burst (default: max(1, RateLimit)).
	RateBurst int `yaml:"rate_burst"`
	// ReadRateLimit caps the org's other API requests per second (listing
	// voices, logs, providers; voice and media writes): a budget of its
	// own, so reads never spend the synthesis budget (0 = unlimited).
	ReadRateLimit float64 `yaml:"read_rate_limit"`
	// ReadRateBurst is the read budget's burst (default: max(1, rate)).
	ReadRateBurst int `yaml:"read_rate_burst"`
	// DevKey asks the gateway to create a key for this org at first start
	// and print it once (for the offline default deployment).
	DevKey bool `yaml:"dev_key"`
	// Budget caps the credits the org spends per period (nil: none).
	Budget *Budget `yaml:"budget"`
	// Aliases are the org's own model and voice names; they win over the
	// top-level aliases of the same name.
	Aliases Aliases `yaml:"aliases"`
	// Provenance turns marking off or makes consent for cloned voices
	// optional (provenance.go).
	Provenance OrgProvenance `yaml:"provenance"`
	// Loudness is the org's default EBU R128 target for clips,
	// conversations and streams that ask for neither volumeDbfs nor
	// loudness, nor opt out with {"off": true} (nil: none; the providers'
	// levels pass through).
	Loudness *Loudness `yaml:"loudness"`
	// FailoverWindowMs is how much audio (ms) a realtime context of the
	// org may have sent and still move to a fallback provider mid-utterance
	// (docs/realtime.md; nil: the gateway's 3000; 0: never). A context's
	// own failoverWindowMs overrides it.
	FailoverWindowMs *int `yaml:"failover_window_ms"`
}

// Loudness is an EBU R128 loudness target.
type Loudness struct {
	// Integrated is the integrated loudness in LUFS, -70 to -5 (e.g. -16
	// for spoken word, -23 for broadcast).
	Integrated float64 `yaml:"integrated"`
	// TruePeak is the true-peak ceiling in dBTP, -20 to 0 (default -1).
	TruePeak *float64 `yaml:"true_peak"`
}

// Loudness bounds, the request field's (gateway/audio's; repeated here
// so that config does not link the audio libraries).
const (
	minIntegratedLufs = -70.0
	maxIntegratedLufs = -5.0
	minTruePeakDbtp   = -20.0
	maxTruePeakDbtp   = 0.0
	// DefaultTruePeakDbtp is the ceiling of a target that names none.
	DefaultTruePeakDbtp = -1.0
)

// Ceiling returns l's true-peak ceiling, DefaultTruePeakDbtp when unset.
func (l *Loudness) Ceiling() float64 {
	if l.TruePeak == nil {
		return DefaultTruePeakDbtp
	}
	return *l.TruePeak
}

// Budget is a budget per Period ("day" or "month", UTC): Credits, Cost
// (in pricing.currency), or both; zero is none.
type Budget struct {
	Credits int64 `yaml:"credits"`
	// Cost caps the money spent per period, in pricing.currency (12.5 is
	// 12.50 USD).
	Cost   float64 `yaml:"cost"`
	Period string  `yaml:"period"`
}

// OrgProvider holds one org's flags for one provider.
type OrgProvider struct {
	Enabled bool `yaml:"enabled"`
	// BYOK says the org brings its own provider key (from APIKey below or
	// stored with `voxgate secrets set`).
	BYOK bool `yaml:"byok"`
	// APIKey is the org's own provider key when given in config.
	APIKey Secret `yaml:"api_key"`
	// Managed lets the org use the gateway's managed credential; defaults
	// to the provider's Managed flag.
	Managed *bool `yaml:"managed"`
}

// validateOrgs checks the orgs section: at least one organization, and
// every ruleset, provider and alias an organization names exists. An
// organization's provider entry left empty ({} or nothing) is filled in
// as all flags off.
func (c *Config) validateOrgs(bad report) {
	if len(c.Orgs) == 0 {
		bad("orgs", "at least one organization is required")
	}
	for _, name := range sortedKeys(c.Orgs) {
		o := c.Orgs[name]
		key := "orgs." + name
		if o == nil {
			bad(key, "empty org block")
			continue
		}
		if !validID(name) {
			bad(key, "org id must be lower-case letters, digits, - or _")
		}
		if o.Moderation != "" && c.Moderation.Rulesets[o.Moderation] == nil {
			bad(key+".moderation", "unknown ruleset %q", o.Moderation)
		}
		for _, r := range o.Rulesets {
			if c.Moderation.Rulesets[r] == nil {
				bad(key+".rulesets", "unknown ruleset %q", r)
			}
		}
		for _, pn := range sortedKeys(o.Providers) {
			if c.Providers[pn] == nil {
				bad(key+".providers."+pn, "unknown provider %q (not under providers:)", pn)
			}
			if o.Providers[pn] == nil {
				o.Providers[pn] = &OrgProvider{}
			}
		}
		c.checkAliases(key+".aliases", &o.Aliases, true, bad)
		if o.RateLimit < 0 {
			bad(key+".rate_limit", "must not be negative")
		}
		if o.ReadRateLimit < 0 {
			bad(key+".read_rate_limit", "must not be negative")
		}
		if l := o.Loudness; l != nil {
			if !(l.Integrated >= minIntegratedLufs && l.Integrated <= maxIntegratedLufs) {
				bad(key+".loudness.integrated", "must be between %g and %g LUFS, got %g", minIntegratedLufs, maxIntegratedLufs, l.Integrated)
			}
			if tp := l.Ceiling(); !(tp >= minTruePeakDbtp && tp <= maxTruePeakDbtp) {
				bad(key+".loudness.true_peak", "must be between %g and %g dBTP, got %g", minTruePeakDbtp, maxTruePeakDbtp, tp)
			}
		}
		if w := o.FailoverWindowMs; w != nil && (*w < 0 || *w > MaxFailoverWindowMs) {
			bad(key+".failover_window_ms", "must be between 0 and %d (milliseconds), got %d", MaxFailoverWindowMs, *w)
		}
		if b := o.Budget; b != nil {
			switch {
			case b.Credits < 0:
				bad(key+".budget.credits", "must not be negative, got %d", b.Credits)
			case b.Cost < 0 || math.IsNaN(b.Cost) || math.IsInf(b.Cost, 0):
				bad(key+".budget.cost", "must not be negative, got %v", b.Cost)
			case b.Credits < 1 && b.Cost <= 0:
				bad(key+".budget.credits", "give credits (at least 1), cost (more than 0, in %s) or both", c.Pricing.Currency)
			}
			if b.Period != "day" && b.Period != "month" {
				bad(key+".budget.period", "must be day or month, got %q", b.Period)
			}
		}
	}
}

// MaxFailoverWindowMs bounds a failover window (the realtime start
// message's failoverWindowMs has the same bound): past a minute of audio,
// a switch of voice is never what a listener wants.
const MaxFailoverWindowMs = 60000

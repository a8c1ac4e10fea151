package metrics

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/voxgate/voxgate/gateway/store"
)

// usage holds the per-organization usage counters: the same figures as
// GET /v1/usage (top-level requests only, see store.Counted), as they
// happen, for alerting and dashboards outside the gateway. Organizations
// come from the config, so the org label's values are bounded.
type usage struct {
	requests, characters, audioSeconds, credits *prometheus.CounterVec
	// cost counts money spent by organization, in the gateway's
	// currency; estimateError is how far each call's quote was from
	// what it cost ((cost - quote) / quote), by provider: where the
	// answer's audio or the provider's own figure replaced the count.
	cost          *prometheus.CounterVec
	estimateError *prometheus.HistogramVec

	// orgs caches each organization's counters, so a request costs no
	// label hashing.
	orgs sync.Map // org id -> *orgUsage
}

type orgUsage struct {
	requests, characters, audioSeconds, credits, cost prometheus.Counter
}

func newUsage() *usage {
	vec := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"org"})
	}
	return &usage{
		requests:     vec("voxgate_usage_requests_total", "Requests counted towards usage (conversation turns are in their conversation), by organization."),
		characters:   vec("voxgate_usage_characters_total", "Characters synthesized, by organization."),
		audioSeconds: vec("voxgate_usage_audio_seconds_total", "Seconds of audio sent, by organization."),
		credits:      vec("voxgate_usage_credits_total", "Credits charged, by organization."),
		cost:         vec("voxgate_usage_cost_total", "Money spent, in the gateway's currency (pricing.currency), by organization."),
		estimateError: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "voxgate_cost_estimate_error_ratio",
			Help:    "How far a call's quoted cost was from what it cost, as (cost - quote) / quote, by provider: 0 where the count was exact.",
			Buckets: []float64{-0.5, -0.2, -0.1, -0.05, -0.01, 0, 0.01, 0.05, 0.1, 0.2, 0.5, 1}}, []string{"provider"}),
	}
}

func (u *usage) collectors() []prometheus.Collector {
	return []prometheus.Collector{u.requests, u.characters, u.audioSeconds, u.credits, u.cost, u.estimateError}
}

func (u *usage) org(id string) *orgUsage {
	if o, ok := u.orgs.Load(id); ok {
		return o.(*orgUsage)
	}
	o := &orgUsage{
		requests:     u.requests.WithLabelValues(id),
		characters:   u.characters.WithLabelValues(id),
		audioSeconds: u.audioSeconds.WithLabelValues(id),
		credits:      u.credits.WithLabelValues(id),
		cost:         u.cost.WithLabelValues(id),
	}
	actual, _ := u.orgs.LoadOrStore(id, o)
	return actual.(*orgUsage)
}

// Orgs gives each organization's usage counters their zeros, so that a
// dashboard shows 0 for an organization that has made no request yet
// rather than "no data".
func (m *Metrics) Orgs(ids ...string) {
	if m == nil {
		return
	}
	for _, id := range ids {
		m.usage.org(id)
	}
}

// CountUsage adds a request-log row to its organization's usage counters
// when it counts towards usage. Hot path (every request): a map load and
// four atomic adds.
func (m *Metrics) CountUsage(r *store.LogRow) {
	if m == nil {
		return
	}
	if r.Cost > 0 && r.CostEstimate > 0 && r.Provider != "" && (r.ParentRequestID != "" || !strings.Contains(r.Path, "/conversation")) {
		// Each provider call's row once: a conversation's own row sums
		// its turns', which are observed themselves.
		m.usage.estimateError.WithLabelValues(r.Provider).Observe(float64(r.Cost-r.CostEstimate) / float64(r.CostEstimate))
	}
	if r.OrgID == "" || !store.Counted(r) {
		return
	}
	o := m.usage.org(r.OrgID)
	o.requests.Inc()
	if r.CharCount > 0 {
		o.characters.Add(float64(r.CharCount))
	}
	if r.AudioMS > 0 {
		o.audioSeconds.Add(float64(r.AudioMS) / 1000)
	}
	if r.CreditsUsed > 0 {
		o.credits.Add(float64(r.CreditsUsed))
	}
	if r.Cost > 0 {
		o.cost.Add(float64(r.Cost) * 1e-9)
	}
}

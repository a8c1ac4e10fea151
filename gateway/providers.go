package gateway

import (
	"context"
	"sort"

	"go.uber.org/zap"

	"github.com/voxgate/voxgate/config"
	"github.com/voxgate/voxgate/gateway/edge"
	"github.com/voxgate/voxgate/gateway/providers/catalog"
	"github.com/voxgate/voxgate/gateway/providers/credentials"
	"github.com/voxgate/voxgate/gateway/providers/dispatch"
	"github.com/voxgate/voxgate/gateway/providers/keypool"
	"github.com/voxgate/voxgate/gateway/providers/pluginhost"
	"github.com/voxgate/voxgate/gateway/resources"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/sdk"
)

// attachProviders starts the provider (and moderation) plugins, and
// builds the shared parts of the speech path (the dispatcher of planned
// requests, the response cache's store) and the first Live: the catalog,
// the speech service and what else a reload may change (see buildLive).
func (g *Gateway) attachProviders(ctx context.Context, d *edge.Deps) error {
	cfg := g.cfg
	ho := PluginHostOptions(cfg)
	ho.Logger, ho.Metrics = g.log.Named("plugins"), g.metrics
	host := pluginhost.New(ho)
	g.host = host
	g.closers = append(g.closers, host.Close)

	specs := PluginSpecs(cfg)
	if len(specs) == 0 {
		g.log.Warn("no providers configured: only voices and logs are served")
		d.Live = g.noProviders(cfg)
		return nil
	}
	if err := host.Start(ctx, specs); err != nil {
		return settingsErrors(cfg, err)
	}
	g.metrics.PluginInstances(host.Instances)
	dc, err := dispatch.New(dispatch.Options{
		Counter: func(provider, result string) func() {
			return g.metrics.ProviderPlans.WithLabelValues(provider, result).Inc
		},
		Retried: func(provider, reason string) { g.metrics.UpstreamRetries.WithLabelValues(provider, reason).Inc() },
		Tracer:  g.tracer,
	})
	if err != nil {
		return err
	}
	g.dispatch = dc
	g.closers = append(g.closers, func(context.Context) error { dc.Close(); return nil })
	if g.cacheStore, err = g.responseCache(); err != nil {
		return err
	}
	g.calls = catalog.NewCalls(g.metrics, g.tracer, dc != nil)
	live, err := g.buildLive(ctx, cfg, host.Pools(), *g.keyPools.Load())
	if err != nil {
		return err
	}
	d.Live = live
	g.pluginsReady = host.Ready
	return nil
}

// noProviders is the Live of a gateway without plugins: voices, media
// and logs only.
func (g *Gateway) noProviders(cfg *config.Config) *edge.Live {
	return edge.NewLive(edge.LiveDeps{
		Resources:   resources.New(resources.Deps{Store: g.data, Credentials: g.creds, CheckRule: speech.ValidateStoredRule}),
		Credentials: g.creds,
		Aliases:     Aliases(cfg),
	})
}

// buildLive builds what requests are served with under cfg, calling the
// plugins of pools (by plugin name) and the managed keys of keyPools: the
// catalog (each provider describes itself), the moderation engine, the
// credential rules, the speech service, the resource routes' service, the
// aliases and the organizations' rate limits. It starts and changes
// nothing: at start and at every reload, what it returns is swapped in
// whole, or, when it fails, dropped.
func (g *Gateway) buildLive(ctx context.Context, cfg *config.Config, pools map[string]*pluginhost.Pool, keyPools map[string]*keypool.Pool) (*edge.Live, error) {
	plugins := map[string]sdk.Provider{}
	for name := range cfg.Providers {
		plugins[name] = pools[name]
	}
	cat, err := catalog.New(ctx, ProviderPolicies(cfg), plugins, func(id string) bool { return pools[id].Ready() })
	if err != nil {
		return nil, err
	}
	for _, p := range cat.Providers() {
		models := make([]string, 0, len(p.Desc.Models))
		for _, m := range p.Desc.Models {
			models = append(models, m.ID)
		}
		// "gateway" when the gateway sends the provider's requests itself
		// (the plugin plans them), "plugin" when the plugin does.
		sender := "plugin"
		if p.Desc.Plans && p.Policy.Direct {
			sender = "gateway"
		}
		// Desc.Models holds the listed models only: say apart whether
		// the provider also takes model ids it does not list.
		g.log.Info("provider ready", zap.String("provider", p.ID), zap.String("name", p.Name), zap.Strings("models", models),
			zap.Bool("passes_other_model_ids_through", p.PassThrough() != nil),
			zap.String("default_model", p.Desc.DefaultModel), zap.String("requests_sent_by", sender))
		for _, m := range p.Desc.Models {
			p.SetSeries(m.ID, g.metrics.ProviderModel(p.ID, m.ID, m.Capabilities.Streaming, sender == "gateway"))
		}
	}
	mod, err := g.moderator(cfg, pools)
	if err != nil {
		return nil, err
	}
	policy := CredentialsPolicy(cfg)
	policy.WithOrgs(g.orgAccess) // organizations made through the admin API
	creds := credentials.NewResolver(policy, g.data, g.sealer)
	cacheOpts := CacheOptions(cfg)
	cacheOpts.Store = g.cacheStore
	svc := speech.New(speech.Deps{
		Cache:        cacheOpts,
		Currency:     cfg.Pricing.Currency,
		Routes:       Routes(cfg),
		Pools:        keyPools,
		Limits:       SpeechLimits(cfg),
		Catalog:      cat,
		Calls:        g.calls,
		Store:        g.data,
		Dictionaries: g.data,
		Credentials:  creds,
		Budgets:      g.budgets,
		OrgBudgets:   OrgBudgets(cfg),
		OrgBudget:    g.orgBudget,
		OrgLoudness:  g.orgLoudness,
		Moderator:    mod,
		Direct:       g.dispatch,
		Metrics:      g.metrics,
		Tracer:       g.tracer,
		Logger:       g.log.Named("speech"),
		Alignment:    Alignment(cfg),
	})
	g.logAlignment(Alignment(cfg), cat)
	return edge.NewLive(edge.LiveDeps{
		Speech:      svc,
		Catalog:     cat,
		Credentials: creds,
		Aliases:     Aliases(cfg),
		Resources: resources.New(resources.Deps{Store: g.data, Catalog: cat, Calls: g.calls, Credentials: creds,
			CheckRule: speech.ValidateStoredRule}),
	}), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// logAlignment says at start-up how word timestamps are made for models
// without their own, and warns when the configuration leaves them with
// none.
func (g *Gateway) logAlignment(a speech.Alignment, cat *catalog.Catalog) {
	switch {
	case a.Method == speech.TimingOff:
		g.log.Info("alignment off: models without word timestamps answer 501 on /with-timestamps")
	case a.Method == speech.TimingSTT:
		g.log.Info("word timestamps for models without their own come from speech-to-text", zap.String("provider", a.STTProvider), zap.String("model", a.STTModel))
	case a.Reference == "" || cat.Provider(a.Reference) == nil:
		g.log.Warn("no reference provider for alignment (alignment.reference, e.g. espeak): models without word timestamps answer 501 on /with-timestamps")
	default:
		g.log.Info("word timestamps for models without their own are aligned offline", zap.String("reference", a.Reference), zap.Int("concurrency", a.Concurrency))
	}
}

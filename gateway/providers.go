package gateway

import (
	"context"
	"sort"

	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/edge"
	"github.com/voxgate/voxgate/gateway/providers/catalog"
	"github.com/voxgate/voxgate/gateway/providers/dispatch"
	"github.com/voxgate/voxgate/gateway/providers/pluginhost"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/sdk"
)

// attachProviders starts the provider (and moderation) plugins, reads their
// descriptions into the catalog and gives the server its speech service
// and the catalog.
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
		return nil
	}
	if err := host.Start(ctx, specs); err != nil {
		return settingsErrors(cfg, err)
	}
	g.metrics.PluginInstances(host.Instances)
	plugins := map[string]sdk.Provider{}
	for name := range cfg.Providers {
		plugins[name] = host.Pool(name)
	}
	cat, err := catalog.New(ctx, ProviderPolicies(cfg), plugins, func(id string) bool { return host.Pool(id).Ready() })
	if err != nil {
		return err
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
			g.metrics.ProviderModel(p.ID, m.ID, m.Capabilities.Streaming, sender == "gateway")
		}
	}
	dc, err := dispatch.New(dispatch.Options{
		Observe: func(provider, result string) { g.metrics.ProviderPlans.WithLabelValues(provider, result).Inc() },
		Retried: func(provider, reason string) { g.metrics.UpstreamRetries.WithLabelValues(provider, reason).Inc() },
		Tracer:  g.tracer,
	})
	if err != nil {
		return err
	}
	g.closers = append(g.closers, func(context.Context) error { dc.Close(); return nil })
	mod, err := g.moderator(host)
	if err != nil {
		return err
	}
	cacheOpts, err := g.responseCache()
	if err != nil {
		return err
	}
	g.catalog, g.calls = cat, catalog.NewCalls(g.metrics, g.tracer, dc != nil)
	d.Catalog, d.Credentials = cat, g.creds
	d.Speech = speech.New(speech.Deps{
		Cache:        cacheOpts,
		Routes:       Routes(cfg),
		Pools:        g.pools,
		Limits:       SpeechLimits(cfg),
		Catalog:      cat,
		Calls:        g.calls,
		Store:        g.data,
		Dictionaries: g.data,
		Credentials:  g.creds,
		Budgets:      g.budgets,
		OrgBudgets:   OrgBudgets(cfg),
		Moderator:    mod,
		Direct:       dc,
		Metrics:      g.metrics,
		Tracer:       g.tracer,
		Logger:       g.log.Named("speech"),
		Alignment:    Alignment(cfg),
	})
	g.logAlignment(Alignment(cfg), cat)
	g.pluginsReady = host.Ready
	return nil
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

package gateway

import (
	"context"
	"path/filepath"
	"sort"

	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/credentials"
	"github.com/voxgate/voxgate/gateway/dispatch"
	"github.com/voxgate/voxgate/gateway/pluginhost"
	"github.com/voxgate/voxgate/gateway/server"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/sdk"
)

// attachProviders starts the provider (and moderation) plugins, reads their
// descriptions into the catalog and gives the server its speech service.
func (g *Gateway) attachProviders(ctx context.Context, d *server.Deps) error {
	cfg := g.cfg
	host := pluginhost.New(pluginhost.Options{
		Logger:         g.log.Named("plugins"),
		Metrics:        g.metrics,
		StartTimeout:   cfg.Plugins.StartTimeout.D(),
		HealthInterval: cfg.Plugins.HealthInterval.D(),
	})
	g.host = host
	g.closers = append(g.closers, host.Close)

	var specs []pluginhost.Spec
	for _, name := range sortedKeys(cfg.Providers) {
		p := cfg.Providers[name]
		specs = append(specs, pluginhost.Spec{Name: name, Kind: pluginhost.KindProvider, Path: g.pluginPath(p.Plugin),
			Instances: p.Instances, Settings: p.Settings})
	}
	for _, name := range sortedKeys(cfg.Moderation.Plugins) {
		m := cfg.Moderation.Plugins[name]
		specs = append(specs, pluginhost.Spec{Name: "moderation." + name, Kind: pluginhost.KindModerator, Path: g.pluginPath(m.Plugin),
			Instances: m.Instances, Settings: m.Settings})
	}
	if len(specs) == 0 {
		g.log.Warn("no providers configured: only voices and logs are served")
		return nil
	}
	if err := host.Start(ctx, specs); err != nil {
		return err
	}
	plugins := map[string]sdk.Provider{}
	for name := range cfg.Providers {
		plugins[name] = host.Pool(name)
	}
	cat, err := speech.NewCatalog(ctx, speech.ProviderPolicies(cfg), plugins, func(id string) bool { return host.Pool(id).Ready() })
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
		g.log.Info("provider ready", zap.String("provider", p.ID), zap.String("name", p.Name), zap.Strings("models", models),
			zap.String("default_model", p.Desc.DefaultModel), zap.String("requests_sent_by", sender))
	}
	dc, err := dispatch.New(dispatch.Options{Observe: func(provider, result string) {
		g.metrics.ProviderPlans.WithLabelValues(provider, result).Inc()
	}})
	if err != nil {
		return err
	}
	g.closers = append(g.closers, func(context.Context) error { dc.Close(); return nil })
	mod, err := g.moderator(host)
	if err != nil {
		return err
	}
	d.Speech = speech.New(speech.Deps{
		Limits:       speech.LimitsFrom(cfg),
		Catalog:      cat,
		Store:        g.store,
		Dictionaries: g.store,
		Credentials:  credentials.NewResolver(g.policy, g.store, g.sealer),
		Moderator:    mod,
		Direct:       dc,
		Metrics:      g.metrics,
		Logger:       g.log.Named("speech"),
	})
	d.Ready = host.Ready
	return nil
}

// pluginPath resolves a plugin binary name against plugins.dir.
func (g *Gateway) pluginPath(name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(g.cfg.Resolve(g.cfg.Plugins.Dir), name)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

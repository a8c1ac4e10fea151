package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/voxgate/voxgate/config"
	"github.com/voxgate/voxgate/gateway/edge/admin"
	"github.com/voxgate/voxgate/gateway/observe/metrics"
	"github.com/voxgate/voxgate/gateway/providers/pluginhost"
)

// A reload (SIGHUP, `voxgate reload`, `systemctl reload`) reads the
// configuration file again, checks it in full as `voxgate config check`
// does, and swaps in what requests are served with (edge.Live) at once:
// providers and plugins (added, removed, restarted when their block
// changed), organizations declared in the file, rulesets, rate limits and
// budgets, aliases, fallbacks, moderation, alignment and the response
// cache's ttl and sharing. Settings that only a restart can change
// (listeners, storage, the shared Redis, the secrets key's source, ...:
// restartOnly) refuse the reload, and so does any mistake: the gateway
// then goes on exactly as it was.
//
// The swap does not drop a request: a request takes the Live of the
// moment once, as it arrives, and keeps it to its end; a plugin the new
// configuration no longer runs as it was is stopped only once the last
// request holding the old Live has ended.

// Source reads the configuration file again for a reload: the config
// with the command line's overrides applied, and the SHA-256 of the
// file's bytes (Hash). Mistakes come back as a *config.Errors.
type Source func() (cfg *config.Config, hash string, err error)

// Hash is the form of a configuration file's hash the gateway shows: the
// first 12 hex digits of the SHA-256 of its bytes.
func Hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:6])
}

// reloader is the gateway's reload state.
type reloader struct {
	source  Source
	metrics *metrics.Reloads
	// mu makes reloads one at a time.
	mu sync.Mutex
	// hash and at are the configuration in use; last is the last reload's
	// outcome (nil before the first).
	current atomic.Pointer[loadedConfig]
	last    atomic.Pointer[admin.ReloadView]
}

// loadedConfig is which file is in use since when.
type loadedConfig struct {
	Hash string    `json:"hash,omitempty"`
	At   time.Time `json:"loaded_at"`
}

func (r *reloader) loaded(hash string, at time.Time) {
	r.current.Store(&loadedConfig{Hash: hash, At: at.UTC()})
	r.metrics.Loaded(hash, at)
}

// state is the configuration's part of /readyz's body.
func (r *reloader) state() any {
	out := map[string]any{"loaded": r.current.Load()}
	if last := r.last.Load(); last != nil {
		out["last_reload"] = last
	}
	return out
}

// ErrReloadRefused is returned by Reload when it changed nothing.
var ErrReloadRefused = errors.New("reload refused: the gateway runs as it was")

// Reload reads the configuration again (Options.Source), checks it, and
// swaps it in, as SIGHUP does. It returns the outcome; when the reload is
// refused it also returns an error wrapping ErrReloadRefused, and nothing
// has changed. Every outcome is logged: a refusal with one line per
// mistake and a summary.
func (g *Gateway) Reload(ctx context.Context) (admin.ReloadView, error) {
	r := &g.reload
	r.mu.Lock()
	defer r.mu.Unlock()
	v := admin.ReloadView{At: time.Now().UTC()}
	changes, hash, errs := g.reloadLocked(ctx)
	v.Hash = hash
	if len(errs) > 0 {
		v.Result = "refused"
		for _, err := range errs {
			v.Mistakes = append(v.Mistakes, err.Error())
			g.log.Error("reload refused: "+err.Error(), zap.String("hash", hash))
		}
		g.log.Error("reload refused: the gateway runs as it was", zap.Int("mistakes", len(errs)), zap.String("hash", hash))
		r.metrics.Count("refused")
		r.last.Store(&v)
		return v, fmt.Errorf("%w (%d mistakes)", ErrReloadRefused, len(errs))
	}
	v.Result, v.Changes = "ok", changes
	summary := "nothing"
	if len(changes) > 0 {
		summary = strings.Join(changes, ", ")
	}
	g.log.Info("reloaded: "+summary, zap.String("hash", hash))
	r.metrics.Count("ok")
	r.loaded(hash, v.At)
	r.last.Store(&v)
	return v, nil
}

// reloadView is Reload for the admin socket.
func (g *Gateway) reloadView(ctx context.Context) (admin.ReloadView, error) { return g.Reload(ctx) }

// reloadLocked does the reload's work under reloader.mu: every mistake
// found, or the changes made.
func (g *Gateway) reloadLocked(ctx context.Context) (changes []string, hash string, errs []error) {
	if g.reload.source == nil {
		return nil, "", []error{errors.New("this gateway was started without a configuration file to read again")}
	}
	if !g.started.Load() || g.draining.Load() {
		return nil, "", []error{errors.New("the gateway is starting or stopping")}
	}
	cfg, hash, err := g.reload.source()
	if err != nil {
		return nil, hash, unjoinErrors(err)
	}
	for _, w := range cfg.Warnings {
		g.log.Warn("config: " + w)
	}
	// The same check as `voxgate config check`: what the file names on
	// this machine (plugin binaries, paths, the secrets key).
	if err := Preflight(cfg); err != nil {
		return nil, hash, unjoinErrors(err)
	}
	old := g.conf.Load()
	if errs := restartOnly(old, cfg); len(errs) > 0 {
		return nil, hash, errs
	}
	if (len(PluginSpecs(old)) > 0) != (len(PluginSpecs(cfg)) > 0) {
		return nil, hash, []error{errors.New("providers: a gateway started without plugins serves no speech routes, and one started with them keeps them: going from none to some, or from some to none, needs a restart")}
	}

	// Start what is new or changed, beside what runs: until the swap the
	// old plugins serve every request.
	running := g.host.Pools()
	pools := make(map[string]*pluginhost.Pool, len(running))
	var launch []pluginhost.Spec
	for _, sp := range PluginSpecs(cfg) {
		if p, ok := running[sp.Name]; ok && pluginhost.SameSpec(p.Spec(), sp) {
			pools[sp.Name] = p
			continue
		}
		launch = append(launch, sp)
	}
	launched := map[string]*pluginhost.Pool{}
	if len(launch) > 0 {
		if launched, err = g.host.Launch(ctx, launch); err != nil {
			return nil, hash, unjoinErrors(err)
		}
	}
	for name, p := range launched {
		pools[name] = p
	}
	oldKeys := *g.keyPools.Load()
	keyPools := g.buildKeyPools(cfg, old, oldKeys)
	live, err := g.buildLive(ctx, cfg, pools, keyPools)
	if err != nil {
		launchedPools := make([]*pluginhost.Pool, 0, len(launched))
		for _, p := range launched {
			launchedPools = append(launchedPools, p)
		}
		g.host.Retire(context.Background(), launchedPools) // never installed: no call is on them
		return nil, hash, unjoinErrors(err)
	}

	// The swap: from here on new requests are served with cfg.
	g.keyPools.Store(&keyPools)
	prev := g.server.SwapLive(live)
	g.conf.Store(cfg)
	g.orgs.SetFile(FileOrgs(cfg))
	replaced := g.host.Install(pools)
	orgs := make([]string, 0, len(cfg.Orgs))
	for id := range cfg.Orgs {
		orgs = append(orgs, id)
	}
	g.metrics.Orgs(orgs...)

	if len(replaced) > 0 {
		// The old plugins stop once no request holds the old
		// configuration, or after the longest a request may take. (A
		// shutdown meanwhile stops them with the rest: Host.Close.)
		go func() {
			wait := old.Server.RequestTimeout.D() + old.Server.WriteTimeout.D() + time.Minute
			wctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			if err := prev.Wait(wctx); err != nil {
				g.log.Warn("reload: requests on the old configuration still run; stopping its plugins anyway", zap.Int64("requests", prev.Held()))
			}
			g.host.Retire(wctx, replaced)
		}()
	}
	return describeChanges(old, cfg, running, launched), hash, nil
}

// unjoinErrors splits an errors.Join or *config.Errors into its parts.
func unjoinErrors(err error) []error {
	var es *config.Errors
	if errors.As(err, &es) {
		return es.Errs
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// restartOnly names each setting that differs between old and cfg and
// that only a restart applies: everything but the sections a reload swaps
// in (providers, orgs, moderation, limits except max_media_bytes and
// body_memory_per_org, alignment, fallbacks, aliases, and the response
// cache's ttl and share_managed). Values are never shown: some are
// secrets (storage.dsn, shared.redis_url, metrics.token).
func restartOnly(old, cfg *config.Config) []error {
	strip := func(c *config.Config) config.Config {
		s := *c
		s.Providers, s.Orgs, s.Moderation, s.Alignment, s.Fallbacks, s.Aliases = nil, nil, config.Moderation{}, config.Alignment{}, nil, config.Aliases{}
		s.Limits = config.Limits{MaxMediaBytes: c.Limits.MaxMediaBytes, BodyMemoryPerOrg: c.Limits.BodyMemoryPerOrg}
		s.Cache.TTL, s.Cache.ShareManaged = 0, false
		s.Dir, s.Warnings = "", nil
		return s
	}
	a, b := strip(old), strip(cfg)
	var paths []string
	diffPaths("", reflect.ValueOf(a), reflect.ValueOf(b), &paths)
	sort.Strings(paths)
	errs := make([]error, 0, len(paths))
	for _, p := range paths {
		errs = append(errs, fmt.Errorf("%s: changed, but only a restart applies it (the reload changed nothing; restore it, or restart)", p))
	}
	return errs
}

// diffPaths appends the dotted YAML key of each leaf where a and b
// differ.
func diffPaths(prefix string, a, b reflect.Value, out *[]string) {
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	if a.Kind() != b.Kind() {
		*out = append(*out, prefix)
		return
	}
	switch a.Kind() {
	case reflect.Struct:
		t := a.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			diffPaths(join(name), a.Field(i), b.Field(i), out)
		}
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				*out = append(*out, prefix)
			}
			return
		}
		diffPaths(prefix, a.Elem(), b.Elem(), out)
	case reflect.Map:
		keys := map[string]reflect.Value{}
		for _, k := range a.MapKeys() {
			keys[fmt.Sprint(k.Interface())] = k
		}
		for _, k := range b.MapKeys() {
			keys[fmt.Sprint(k.Interface())] = k
		}
		for name, k := range keys {
			av, bv := a.MapIndex(k), b.MapIndex(k)
			if !av.IsValid() || !bv.IsValid() {
				*out = append(*out, join(name))
				continue
			}
			diffPaths(join(name), av, bv, out)
		}
	default:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			*out = append(*out, prefix)
		}
	}
}

// describeChanges says what a reload changed, one line per part of the
// configuration that changed: "providers: +azure -polly ~espeak".
func describeChanges(old, cfg *config.Config, running, launched map[string]*pluginhost.Pool) []string {
	var out []string
	add := func(what string, d diff) {
		plus, minus, changed := d.plus, d.minus, d.changed
		if len(plus)+len(minus)+len(changed) == 0 {
			return
		}
		var parts []string
		for _, p := range plus {
			parts = append(parts, "+"+p)
		}
		for _, m := range minus {
			parts = append(parts, "-"+m)
		}
		for _, c := range changed {
			parts = append(parts, "~"+c)
		}
		out = append(out, what+" "+strings.Join(parts, " "))
	}
	add("providers", mapDiff(old.Providers, cfg.Providers))
	add("orgs", mapDiff(old.Orgs, cfg.Orgs))
	add("rulesets", mapDiff(old.Moderation.Rulesets, cfg.Moderation.Rulesets))
	add("moderation plugins", mapDiff(old.Moderation.Plugins, cfg.Moderation.Plugins))
	add("fallbacks", mapDiff(old.Fallbacks, cfg.Fallbacks))
	var restarted []string
	for name := range launched {
		if _, ok := running[name]; ok {
			restarted = append(restarted, name)
		}
	}
	sort.Strings(restarted)
	if len(restarted) > 0 {
		out = append(out, "plugins restarted "+strings.Join(restarted, " "))
	}
	for _, s := range []struct {
		name     string
		old, new any
	}{
		{"aliases", old.Aliases, cfg.Aliases},
		{"limits", old.Limits, cfg.Limits},
		{"alignment", old.Alignment, cfg.Alignment},
		{"moderation", moderationRest(old.Moderation), moderationRest(cfg.Moderation)},
		{"cache", old.Cache, cfg.Cache},
	} {
		if !reflect.DeepEqual(s.old, s.new) {
			out = append(out, s.name+" changed")
		}
	}
	return out
}

// moderationRest is the moderation section without its rulesets and
// plugins (describeChanges lists those by name).
func moderationRest(m config.Moderation) config.Moderation {
	m.Rulesets, m.Plugins = nil, nil
	return m
}

// diff is the keys a map gained, lost and changed.
type diff struct{ plus, minus, changed []string }

// mapDiff lists the keys added to, removed from and changed between two
// maps, each sorted.
func mapDiff[V any](a, b map[string]V) diff {
	var plus, minus, changed []string
	for k, bv := range b {
		av, ok := a[k]
		switch {
		case !ok:
			plus = append(plus, k)
		case !reflect.DeepEqual(av, bv):
			changed = append(changed, k)
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			minus = append(minus, k)
		}
	}
	sort.Strings(plus)
	sort.Strings(minus)
	sort.Strings(changed)
	return diff{plus, minus, changed}
}

// liveSecrets is the admin socket's view of the organizations' own
// provider keys, under the credential rules in use (a reload may change
// which organization may bring a key).
type liveSecrets struct{ g *Gateway }

// SetSecret implements admin.Secrets.
func (s liveSecrets) SetSecret(ctx context.Context, org, provider, value string) error {
	return s.g.server.Live().Credentials.SetSecret(ctx, org, provider, value)
}

// DeleteSecret implements admin.Secrets.
func (s liveSecrets) DeleteSecret(ctx context.Context, org, provider string) error {
	return s.g.server.Live().Credentials.DeleteSecret(ctx, org, provider)
}

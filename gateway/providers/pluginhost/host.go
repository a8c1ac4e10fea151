// Package pluginhost runs provider and moderation plugins as separate
// processes through hashicorp/go-plugin.
//
// Each configured plugin gets a Pool of one or more instances (processes).
// Calls are spread over the healthy instances; an instance whose process
// died is restarted in the background with backoff, while calls that were
// in flight on it fail fast (KindUnavailable, which the edge maps to 503).
// Later calls wait for a healthy instance, bounded by their context, so a
// crash costs the calls that were running, not the ones that follow.
package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/observe/metrics"
)

// Kind says which contract a plugin serves.
type Kind int

const (
	// KindProvider is a text-to-speech provider (sdk.Provider).
	KindProvider Kind = iota
	// KindModerator is a moderation plugin (sdk.Moderator).
	KindModerator
)

func (k Kind) String() string {
	if k == KindModerator {
		return "moderator"
	}
	return "provider"
}

// Spec describes one plugin to run.
type Spec struct {
	// Name is the config id, e.g. "espeak".
	Name string
	Kind Kind
	// Path is the plugin binary.
	Path string
	// Instances is the number of processes (at least 1).
	Instances int
	// Settings are passed to Configure after every (re)start.
	Settings map[string]string
	// Env is extra environment for the process ("K=V").
	Env []string
}

// Options tune the host.
type Options struct {
	Logger  *zap.Logger
	Metrics *metrics.Metrics
	// StartTimeout bounds one plugin start (handshake + Configure).
	StartTimeout time.Duration
	// HealthInterval is how often instances are pinged.
	HealthInterval time.Duration
}

// Host owns the pools of all plugins.
//
// The set of pools can change while the gateway runs (a configuration
// reload: Launch, then Install, then Retire), so it is kept under mu.
// Nothing on a request's path asks the host: requests reach a plugin
// through the *Pool the catalog and the moderation engine hold.
type Host struct {
	opts Options
	log  *zap.Logger

	mu    sync.RWMutex
	pools map[string]*Pool
	// retiring are pools replaced by Install and not yet stopped by
	// Retire; Close stops them too.
	retiring map[*Pool]struct{}
}

// New returns an empty host.
func New(opts Options) *Host {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	if opts.HealthInterval <= 0 {
		opts.HealthInterval = 5 * time.Second
	}
	return &Host{opts: opts, log: opts.Logger, pools: map[string]*Pool{}, retiring: map[*Pool]struct{}{}}
}

// Start launches every spec's instances concurrently and waits for all of
// them. It fails, naming each plugin that did not load, if any fails; the
// plugins that did start are stopped again by Close.
func (h *Host) Start(ctx context.Context, specs []Spec) error {
	pools, err := h.launch(ctx, specs)
	h.mu.Lock()
	for name, p := range pools {
		h.pools[name] = p
	}
	h.mu.Unlock()
	return err
}

// Launch starts pools for specs as Start does, without installing them:
// the host's pools stay as they were until Install. On failure the pools
// that did start are stopped again and the error names each plugin that
// did not load.
func (h *Host) Launch(ctx context.Context, specs []Spec) (map[string]*Pool, error) {
	pools, err := h.launch(ctx, specs)
	if err != nil {
		var wg sync.WaitGroup
		for _, p := range pools {
			wg.Add(1)
			go func() { defer wg.Done(); p.close() }()
		}
		wg.Wait()
		return nil, err
	}
	return pools, nil
}

func (h *Host) launch(ctx context.Context, specs []Spec) (map[string]*Pool, error) {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	pools := make(map[string]*Pool, len(specs))
	for _, sp := range specs {
		if _, err := os.Stat(sp.Path); err != nil {
			errs = append(errs, fmt.Errorf("%s plugin %q: binary %s not found (run `make build`)", sp.Kind, sp.Name, sp.Path))
			continue
		}
		p := newPool(sp, h.opts)
		pools[sp.Name] = p
		if h.opts.Metrics != nil {
			h.opts.Metrics.PluginRestarts.WithLabelValues(sp.Name) // a zero, not "no data"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			if err := p.start(ctx); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s plugin %q: %w", sp.Kind, sp.Name, err))
				mu.Unlock()
				return
			}
			h.log.Info("plugin loaded", zap.String("plugin", sp.Name), zap.String("kind", sp.Kind.String()),
				zap.String("path", sp.Path), zap.Int("instances", len(p.instances)), zap.Duration("took", time.Since(start)))
		}()
	}
	wg.Wait()
	return pools, errors.Join(errs...)
}

// Install makes pools the host's whole set and returns the pools it held
// that are not in it (removed, or replaced by a pool of the same name).
// The returned pools keep running: calls already on them go on until
// Retire stops them.
func (h *Host) Install(pools map[string]*Pool) (replaced []*Pool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for name, old := range h.pools {
		if pools[name] != old {
			replaced = append(replaced, old)
			h.retiring[old] = struct{}{}
		}
	}
	h.pools = make(map[string]*Pool, len(pools))
	for name, p := range pools {
		h.pools[name] = p
	}
	return replaced
}

// Retire stops pools that Install replaced, each once the calls in
// flight on it have ended, or when ctx ends (the calls still running
// then fail).
func (h *Host) Retire(ctx context.Context, pools []*Pool) {
	var wg sync.WaitGroup
	for _, p := range pools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.idle(ctx)
			p.close()
			h.mu.Lock()
			delete(h.retiring, p)
			h.mu.Unlock()
			h.log.Info("plugin stopped: no longer in the configuration, or replaced", zap.String("plugin", p.spec.Name))
		}()
	}
	wg.Wait()
}

// Specs returns the spec of every installed pool, by name.
func (h *Host) Specs() map[string]Spec {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make(map[string]Spec, len(h.pools))
	for name, p := range h.pools {
		out[name] = p.spec
	}
	return out
}

// Pools returns the installed pools by name (a copy).
func (h *Host) Pools() map[string]*Pool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make(map[string]*Pool, len(h.pools))
	for name, p := range h.pools {
		out[name] = p
	}
	return out
}

// Instances calls yield with each plugin's healthy and configured
// process counts, in name order (the voxgate_plugin_instances gauges).
func (h *Host) Instances(yield func(plugin string, up, configured int)) {
	pools := h.Pools()
	for _, name := range sortedNames(pools) {
		p := pools[name]
		yield(name, p.healthyCount(), len(p.instances))
	}
}

// Pool returns the pool of a plugin, nil if unknown.
func (h *Host) Pool(name string) *Pool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.pools[name]
}

// Ready reports an error naming the plugins with no healthy instance.
func (h *Host) Ready() error {
	var down []string
	for name, p := range h.Pools() {
		if p.healthyCount() == 0 {
			down = append(down, name)
		}
	}
	if len(down) > 0 {
		sort.Strings(down)
		return fmt.Errorf("plugins without a healthy instance: %v", down)
	}
	return nil
}

// Close stops every plugin process, retiring ones included.
func (h *Host) Close(ctx context.Context) error {
	h.mu.RLock()
	all := make([]*Pool, 0, len(h.pools)+len(h.retiring))
	for _, p := range h.pools {
		all = append(all, p)
	}
	for p := range h.retiring {
		all = append(all, p)
	}
	h.mu.RUnlock()
	var wg sync.WaitGroup
	for _, p := range all {
		wg.Add(1)
		go func() { defer wg.Done(); p.close() }()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stopping plugins: %w", ctx.Err())
	}
}

// SameSpec reports whether a and b run the same plugin the same way: a
// reload keeps a pool whose spec did not change, and restarts one whose
// spec did.
func SameSpec(a, b Spec) bool {
	return a.Name == b.Name && a.Kind == b.Kind && a.Path == b.Path && max(a.Instances, 1) == max(b.Instances, 1) &&
		maps.Equal(a.Settings, b.Settings) && slices.Equal(a.Env, b.Env)
}

func sortedNames(pools map[string]*Pool) []string {
	names := make([]string, 0, len(pools))
	for name := range pools {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func command(sp Spec) *exec.Cmd {
	cmd := exec.Command(sp.Path)
	cmd.Env = append(os.Environ(), sp.Env...)
	dieWithParent(cmd)
	return cmd
}

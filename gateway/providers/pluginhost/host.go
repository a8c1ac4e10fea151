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
	"os"
	"os/exec"
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
type Host struct {
	opts  Options
	log   *zap.Logger
	pools map[string]*Pool
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
	return &Host{opts: opts, log: opts.Logger, pools: map[string]*Pool{}}
}

// Start launches every spec's instances concurrently and waits for all of
// them. It fails, naming each plugin that did not load, if any fails; the
// plugins that did start are stopped again by Close.
func (h *Host) Start(ctx context.Context, specs []Spec) error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, sp := range specs {
		if _, err := os.Stat(sp.Path); err != nil {
			errs = append(errs, fmt.Errorf("%s plugin %q: binary %s not found (run `make build`)", sp.Kind, sp.Name, sp.Path))
			continue
		}
		p := newPool(sp, h.opts)
		h.pools[sp.Name] = p
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
	return errors.Join(errs...)
}

// Instances calls yield with each plugin's healthy and configured
// process counts, in name order (the voxgate_plugin_instances gauges).
func (h *Host) Instances(yield func(plugin string, up, configured int)) {
	names := make([]string, 0, len(h.pools))
	for name := range h.pools {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := h.pools[name]
		yield(name, p.healthyCount(), len(p.instances))
	}
}

// Pool returns the pool of a plugin, nil if unknown.
func (h *Host) Pool(name string) *Pool { return h.pools[name] }

// Ready reports an error naming the plugins with no healthy instance.
func (h *Host) Ready() error {
	var down []string
	for name, p := range h.pools {
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

// Close stops every plugin process.
func (h *Host) Close(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, p := range h.pools {
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

func command(sp Spec) *exec.Cmd {
	cmd := exec.Command(sp.Path)
	cmd.Env = append(os.Environ(), sp.Env...)
	dieWithParent(cmd)
	return cmd
}

package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-plugin"
	"go.uber.org/zap"

	"github.com/voxgate/voxgate/sdk"
)

// Pool is the set of running instances of one plugin.
type Pool struct {
	spec      Spec
	opts      Options
	log       *zap.Logger
	instances []*instance
	next      atomic.Uint32

	// changed is closed and replaced whenever an instance becomes healthy,
	// waking calls that wait for one.
	mu      sync.Mutex
	changed chan struct{}
	closed  bool
	stop    chan struct{}
}

// instance is one plugin process. Its fields are replaced on restart under
// mu; callers take a snapshot with get.
type instance struct {
	pool *Pool
	idx  int

	mu       sync.RWMutex
	client   *plugin.Client
	provider sdk.Provider
	mod      sdk.Moderator
	healthy  bool
	// restarting is set while a restart goroutine owns the instance.
	restarting bool
	inflight   atomic.Int64
}

func newPool(sp Spec, opts Options) *Pool {
	if sp.Instances < 1 {
		sp.Instances = 1
	}
	p := &Pool{spec: sp, opts: opts, log: opts.Logger.With(zap.String("plugin", sp.Name)), changed: make(chan struct{}), stop: make(chan struct{})}
	for i := 0; i < sp.Instances; i++ {
		p.instances = append(p.instances, &instance{pool: p, idx: i})
	}
	return p
}

// Name returns the plugin's config id.
func (p *Pool) Name() string { return p.spec.Name }

func (p *Pool) start(ctx context.Context) error {
	errs := make([]error, len(p.instances))
	var wg sync.WaitGroup
	for i, in := range p.instances {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = in.launch(ctx)
		}()
	}
	wg.Wait()
	// Every instance finds the same mistakes in the settings: say them
	// once.
	for _, err := range errs {
		var se *SettingsError
		if errors.As(err, &se) {
			return se
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, in := range p.instances {
		go in.watch()
	}
	return nil
}

// launch starts the process, dispenses the service and configures it.
func (in *instance) launch(ctx context.Context) error {
	p := in.pool
	cfg := sdk.ClientConfig(command(p.spec))
	cfg.Logger = newHCLogger(p.log.With(zap.Int("instance", in.idx)), "plugin."+p.spec.Name)
	cfg.StartTimeout = p.opts.StartTimeout
	client := plugin.NewClient(cfg)
	ctx, cancel := context.WithTimeout(ctx, p.opts.StartTimeout)
	defer cancel()
	var prov sdk.Provider
	var mod sdk.Moderator
	var err error
	if p.spec.Kind == KindModerator {
		mod, err = sdk.DispenseModerator(client)
		if err == nil {
			err = validate(ctx, p.spec, mod)
		}
		if err == nil {
			err = mod.Configure(ctx, p.spec.Settings)
		}
	} else {
		prov, err = sdk.DispenseProvider(client)
		if err == nil {
			err = validate(ctx, p.spec, prov)
		}
		if err == nil {
			err = prov.Configure(ctx, p.spec.Settings)
		}
	}
	var se *SettingsError
	if errors.As(err, &se) {
		client.Kill()
		return err
	}
	if err != nil {
		client.Kill()
		return fmt.Errorf("start: %w", err)
	}
	in.mu.Lock()
	in.client, in.provider, in.mod, in.healthy = client, prov, mod, true
	in.mu.Unlock()
	p.signal()
	return nil
}

// signal wakes calls waiting for a healthy instance.
func (p *Pool) signal() {
	p.mu.Lock()
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

// watch notices a dead process within ~100ms (go-plugin reports Exited as
// soon as the process is reaped) and pings the plugin every
// HealthInterval to notice a wedged one.
func (in *instance) watch() {
	p := in.pool
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastPing := time.Now()
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
		in.mu.RLock()
		client, healthy, restarting := in.client, in.healthy, in.restarting
		in.mu.RUnlock()
		if restarting || client == nil {
			continue
		}
		if client.Exited() {
			in.markDead("process exited")
			continue
		}
		if healthy && time.Since(lastPing) >= p.opts.HealthInterval {
			lastPing = time.Now()
			if err := ping(client); err != nil {
				in.markDead("health check failed: " + err.Error())
			}
		}
	}
}

func ping(c *plugin.Client) error {
	rpc, err := c.Client()
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- rpc.Ping() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		return errors.New("ping timed out")
	}
}

// markDead takes the instance out of rotation and restarts it once.
func (in *instance) markDead(reason string) {
	in.mu.Lock()
	if in.restarting {
		in.mu.Unlock()
		return
	}
	in.healthy = false
	in.restarting = true
	old := in.client
	in.mu.Unlock()
	p := in.pool
	p.log.Warn("plugin instance down; restarting", zap.Int("instance", in.idx), zap.String("reason", reason))
	if p.opts.Metrics != nil {
		p.opts.Metrics.PluginRestarts.WithLabelValues(p.spec.Name).Inc()
	}
	go in.restart(old)
}

func (in *instance) restart(old *plugin.Client) {
	p := in.pool
	if old != nil {
		old.Kill()
	}
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		select {
		case <-p.stop:
			return
		default:
		}
		err := in.launch(context.Background())
		if err == nil {
			in.mu.Lock()
			in.restarting = false
			in.mu.Unlock()
			p.log.Info("plugin instance restarted", zap.Int("instance", in.idx), zap.Int("attempt", attempt))
			return
		}
		p.log.Error("plugin restart failed", zap.Int("instance", in.idx), zap.Int("attempt", attempt), zap.Error(err), zap.Duration("retry_in", backoff))
		select {
		case <-p.stop:
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

// Ready reports whether at least one instance is healthy.
func (p *Pool) Ready() bool { return p.healthyCount() > 0 }

func (p *Pool) healthyCount() int {
	n := 0
	for _, in := range p.instances {
		in.mu.RLock()
		if in.healthy {
			n++
		}
		in.mu.RUnlock()
	}
	return n
}

// acquire picks the healthy instance with the fewest calls in flight
// (round-robin among equals), waiting for one while none is healthy. Hot
// path: one RLock per instance, no allocation.
func (p *Pool) acquire(ctx context.Context) (*instance, error) {
	for {
		var best *instance
		var bestLoad int64
		n := len(p.instances)
		start := int(p.next.Add(1))
		for i := 0; i < n; i++ {
			in := p.instances[(start+i)%n]
			in.mu.RLock()
			ok := in.healthy
			in.mu.RUnlock()
			if !ok {
				continue
			}
			if load := in.inflight.Load(); best == nil || load < bestLoad {
				best, bestLoad = in, load
			}
		}
		if best != nil {
			best.inflight.Add(1)
			return best, nil
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, sdk.Errorf(sdk.KindUnavailable, "plugin %s is stopped", p.spec.Name)
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, &sdk.Error{Kind: sdk.KindUnavailable, Message: fmt.Sprintf("no healthy %s plugin instance: %v", p.spec.Name, ctx.Err())}
		}
	}
}

// release ends a call; a transport failure marks the instance for restart.
func (in *instance) release(err error) {
	in.inflight.Add(-1)
	if err == nil {
		return
	}
	var se *sdk.Error
	if errors.As(err, &se) && se.Kind == sdk.KindUnavailable {
		in.mu.RLock()
		c := in.client
		in.mu.RUnlock()
		// Only a dead process warrants a restart; an upstream outage is
		// also KindUnavailable but the plugin itself is fine, and answers
		// a ping.
		if c != nil && (c.Exited() || ping(c) != nil) {
			in.markDead("process died during a call")
		}
	}
}

func (p *Pool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.stop)
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, in := range p.instances {
		in.mu.Lock()
		c := in.client
		in.healthy = false
		in.mu.Unlock()
		if c != nil {
			wg.Add(1)
			go func() { defer wg.Done(); stop(c) }()
		}
	}
	wg.Wait()
}

// killGrace bounds a graceful plugin stop.
const killGrace = 5 * time.Second

// stop ends a plugin process: gracefully through go-plugin, which asks the
// plugin to exit and kills it 2 s later, but go-plugin's shutdown RPC has
// no deadline of its own, so a wedged or starved plugin could hold Kill
// indefinitely. Past killGrace the process is killed outright, which also
// unblocks Kill. Should Kill still hang (its clean-up waits for the
// plugin's output pipes, which a process stuck in the kernel keeps open),
// stop gives up after a second grace period: the process is signalled,
// and shutting down the gateway must not wait on it.
func stop(c *plugin.Client) {
	done := make(chan struct{})
	go func() { c.Kill(); close(done) }()
	select {
	case <-done:
		return
	case <-time.After(killGrace):
	}
	if rc := c.ReattachConfig(); rc != nil && rc.Pid > 0 {
		_ = syscall.Kill(rc.Pid, syscall.SIGKILL)
	}
	select {
	case <-done:
	case <-time.After(killGrace):
	}
}

// PIDs returns the process ids of the running instances (tests kill them).
func (p *Pool) PIDs() []int {
	var pids []int
	for _, in := range p.instances {
		in.mu.RLock()
		if in.client != nil && in.healthy {
			if rc := in.client.ReattachConfig(); rc != nil && rc.Pid > 0 {
				pids = append(pids, rc.Pid)
			}
		}
		in.mu.RUnlock()
	}
	return pids
}

// Spec returns the spec the pool runs.
func (p *Pool) Spec() Spec { return p.spec }

// inflight is the calls running on the pool's instances.
func (p *Pool) inflight() int64 {
	var n int64
	for _, in := range p.instances {
		n += in.inflight.Load()
	}
	return n
}

// idle returns once no call is running on the pool, or when ctx ends.
// Only a retired pool is waited for (no new call reaches it), so polling
// a few times a second is enough: a counter's waiters would cost every
// call on the hot path for the sake of a reload.
func (p *Pool) idle(ctx context.Context) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for p.inflight() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Package gateway assembles a running voxgate: storage, authentication,
// the request-log writer, provider plugins and the HTTP edge, with an
// orderly start and shutdown. cmd/voxgate and the integration tests both
// start the gateway through Open and Start.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"runtime"
	"sort"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/voxgate/voxgate/config"
	"github.com/voxgate/voxgate/gateway/admission/auth"
	"github.com/voxgate/voxgate/gateway/admission/budget"
	"github.com/voxgate/voxgate/gateway/admission/manage"
	"github.com/voxgate/voxgate/gateway/admission/orgs"
	"github.com/voxgate/voxgate/gateway/admission/ratelimit"
	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/edge"
	"github.com/voxgate/voxgate/gateway/edge/admin"
	"github.com/voxgate/voxgate/gateway/edge/ui"
	"github.com/voxgate/voxgate/gateway/jobs"
	"github.com/voxgate/voxgate/gateway/observe/metrics"
	"github.com/voxgate/voxgate/gateway/observe/redislog"
	"github.com/voxgate/voxgate/gateway/observe/tracing"
	"github.com/voxgate/voxgate/gateway/provenance"
	"github.com/voxgate/voxgate/gateway/providers/catalog"
	"github.com/voxgate/voxgate/gateway/providers/credentials"
	"github.com/voxgate/voxgate/gateway/providers/dispatch"
	"github.com/voxgate/voxgate/gateway/providers/keypool"
	"github.com/voxgate/voxgate/gateway/providers/pluginhost"
	"github.com/voxgate/voxgate/gateway/records"
	"github.com/voxgate/voxgate/gateway/speech/respcache"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/driver"
	"github.com/voxgate/voxgate/gateway/store/readcache"
	"github.com/voxgate/voxgate/gateway/store/reqlog"
)

// Options tune Open.
type Options struct {
	// Logger receives all logs; nil means a no-op logger.
	Logger *zap.Logger
	// Banner receives the one-time development key message; nil discards.
	Banner io.Writer
	// Version is the build's version, for voxgate_build_info.
	Version string
	// Source reads the configuration again for a reload (SIGHUP, `voxgate
	// reload`): the file the gateway was started with, with the command
	// line's overrides applied, and the hash of the file's bytes. Nil
	// refuses reloads.
	Source Source
	// ConfigHash is the hash of the file the start's configuration was
	// read from ("" if unknown), for voxgate_config_info and /readyz.
	ConfigHash string
	// FingerprintWorker is the command (a voxgate binary and its
	// fingerprint-worker subcommand, provenance.SelfCommand) whose child
	// processes compute audio fingerprints when provenance.fingerprints
	// is on. Empty fingerprints in this process (a program embedding the
	// gateway without the binary), with a warning: a fault in the C
	// libraries then takes the whole process down.
	FingerprintWorker []string
}

// Gateway is a running voxgate instance.
type Gateway struct {
	// jobs runs long-form jobs; jobsStop stops its worker and jobsDone is
	// closed once it has (see Start, Shutdown).
	jobs     *jobs.Service
	jobsStop context.CancelFunc
	jobsDone chan struct{}
	// cfg is the configuration the gateway started with. What a reload
	// may change is read from conf instead; what it may not (listeners,
	// storage, the shared Redis, the secrets key) stays cfg's.
	cfg *config.Config
	// conf is the configuration in use: cfg, or the last one a reload
	// swapped in.
	conf   atomic.Pointer[config.Config]
	reload reloader
	log    *zap.Logger
	banner io.Writer
	store  store.Backend
	// data is store as the request path reads it: saved voices,
	// pronunciation rules and BYOK keys from memory, kept current by
	// change notifications and served stale while the store is away.
	// Everything that reads or writes those records goes through it (a
	// bbolt file has no notifications: this instance's writes are its
	// only changes).
	data *readcache.Cache
	auth *auth.Authenticator
	// orgs is every organization: gateway.yaml's and those made through
	// the admin API (kept in the store, followed through its change
	// notifications). Everything that asks about an organization at run
	// time asks it.
	orgs    *orgs.Directory
	logs    *reqlog.Writer
	metrics *metrics.Metrics
	tracer  *tracing.Tracer
	sealer  *credentials.Sealer
	// policy is the credential rules of the config, built once.
	policy *credentials.Policy
	// creds picks provider calls' credentials and keeps the
	// organizations' own provider keys (sealed by sealer).
	creds *credentials.Resolver
	// catalog and calls are the providers and the calls made to them;
	// nil without providers (attachProviders).
	calls   *catalog.Calls
	budgets *budget.Budgets
	// keyPools are the providers' managed key pools in use; slots counts
	// their concurrency (shared by the pools a reload builds).
	keyPools atomic.Pointer[map[string]*keypool.Pool]
	slots    keypool.Slots
	// dispatch and cacheStore are the speech path's parts no reload
	// changes; nil without providers.
	dispatch   *dispatch.Client
	cacheStore respcache.Store
	server     *edge.Server
	admin      *admin.Server
	host       *pluginhost.Host
	ln         net.Listener
	// metricsLn is metrics.listen's listener, if configured.
	metricsLn net.Listener
	serveCh   chan error
	closers   []func(context.Context) error
	stopped   bool
	// started is set when Start has finished (development keys made):
	// until then /readyz says "starting", so a load balancer, a
	// supervisor or a test waiting on it sees the start completed.
	started atomic.Bool
	// draining is set when Shutdown begins: from then on /readyz says so,
	// on every listener and every connection still open, so a load
	// balancer stops sending before the instance goes.
	draining atomic.Bool
	// pluginsReady reports whether every provider has a live plugin
	// process; nil without providers.
	pluginsReady func() error
}

// Open prepares a gateway from cfg: opens storage, loads keys, starts the
// plugins and builds the HTTP edge. It does not listen yet.
func Open(ctx context.Context, cfg *config.Config, opts Options) (_ *Gateway, err error) {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	banner := opts.Banner
	if banner == nil {
		banner = io.Discard
	}
	g := &Gateway{cfg: cfg, log: log, banner: banner, metrics: metrics.New(), policy: CredentialsPolicy(cfg)}
	g.conf.Store(cfg)
	g.reload.source = opts.Source
	g.reload.metrics = g.metrics.NewReloads()
	g.reload.loaded(opts.ConfigHash, time.Now())
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	g.metrics.Build(version, runtime.Version())
	ids := make([]string, 0, len(cfg.Orgs))
	for id := range cfg.Orgs {
		ids = append(ids, id)
	}
	g.metrics.Orgs(ids...)
	defer func() {
		if err != nil {
			g.close(context.Background())
		}
	}()
	// The Redis client's own lines (a pool that cannot dial) go through
	// zap as JSON, not as plain text on stderr.
	redislog.Install(log.Named("redis"))
	// Everything that can be known before starting is checked first, all
	// at once: a start that cannot succeed changes nothing.
	if err := Preflight(cfg); err != nil {
		return nil, err
	}

	sc := StorageConfig(cfg)
	g.store, err = driver.Open(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("open storage (%s): %w", driver.Describe(sc), err)
	}
	g.closers = append(g.closers, func(context.Context) error { return g.store.Close() })
	log.Info("storage opened", zap.String("driver", sc.Driver), zap.String("where", driver.Describe(sc)))
	if driver.Ephemeral(sc) {
		log.Warn("STORAGE IS IN MEMORY ONLY: every API key, voice, upload, provider key, dictionary and log row is lost when this process exits; storage.driver memory is for tests and trying voxgate out, use bolt or postgres to keep data")
	}
	g.data = readcache.New(g.store, readcache.Options{Logger: log.Named("storecache")})
	g.storeMetrics()

	if g.tracer, err = newTracer(ctx, cfg, version); err != nil {
		return nil, err
	}
	if g.tracer != nil {
		// Closed late (closers run in reverse): the spans of requests
		// that finish during shutdown are exported too.
		g.closers = append(g.closers, g.tracer.Shutdown)
		log.Info("tracing: exporting spans over OTLP", zap.String("endpoint", cfg.Tracing.Endpoint), zap.String("protocol", cfg.Tracing.Protocol))
	}

	if g.sealer, err = OpenSealer(ctx, cfg, g.store); err != nil {
		return nil, err
	}
	g.orgs = orgs.New(FileOrgs(cfg))
	if err := g.orgs.Reload(ctx, g.store); err != nil {
		return nil, err
	}
	for _, o := range g.orgs.List() {
		g.metrics.Orgs(o.ID) // the usage series of API-made ones too, from zero
	}
	g.policy.WithOrgs(g.orgAccess)
	g.creds = credentials.NewResolver(g.policy, g.data, g.sealer)

	g.auth, err = auth.NewWithOrgs(ctx, g.store, g.orgState)
	if err != nil {
		return nil, err
	}
	if w, ok := g.store.(store.Watcher); ok {
		g.watch(w)
		log.Info("api keys, organizations, saved voices, dictionaries and provider keys follow the shared storage: changes made on any instance apply here within a second")
	}

	lo := RequestLogOptions(cfg)
	lo.Logger = log.Named("reqlog")
	g.logs = reqlog.New(g.store, lo)
	g.logs.Start()
	g.closers = append(g.closers, g.logs.Close)
	g.metrics.LogQueue(g.logs)

	limiter, failOpen, err := g.rateLimiter(ctx)
	if err != nil {
		return nil, err
	}
	g.budgets = g.budgetCounter(limiter)
	g.slots = g.keySlots(limiter)
	pools := g.buildKeyPools(cfg, nil, nil)
	g.keyPools.Store(&pools)
	g.metrics.KeyPools(g.keyStates)
	deps := edge.Deps{
		KeyStates:       g.keyStates,
		ConfigState:     g.reload.state,
		Limiter:         limiter,
		LimiterFailOpen: failOpen,
		Options:         ServerOptions(cfg),
		Logger:          log,
		Records:         records.New(g.data),
		StoreState:      g.storeState,
		CursorSecret:    g.store.Secret(),
		Auth:            g.auth,
		Logs:            g.logs,
		Metrics:         g.metrics,
		Tracer:          g.tracer,
		UI:              ui.New(g.auth, ui.NewSessions(g.auth, g.store.Secret(), 0, nil)),
		Ready:           g.ready,
		OnIdle:          g.releaseStoreMemory,
		Orgs:            g.orgs,
	}
	var index *provenance.Index
	if fs, ok := g.store.(store.FingerprintStore); ok && cfg.Provenance.Fingerprints {
		// Fingerprints are computed off the request path, one clip at a
		// time, in child processes (provenance.Workers says why): the
		// machine's other cores serve requests.
		if cmd := opts.FingerprintWorker; len(cmd) > 0 {
			bg := provenance.NewWorkers(cmd, 1, fingerprintTimeout)
			fg := provenance.NewWorkers(cmd, 1, fingerprintTimeout)
			index = provenance.NewIndex(fs, log.Named("provenance"), 1, bg, fg)
			g.closers = append(g.closers, func(context.Context) error {
				index.Close()
				bg.Close()
				fg.Close()
				return nil
			})
		} else {
			log.Warn("provenance: fingerprints are computed inside the gateway process (no fingerprint worker command)")
			index = provenance.NewIndex(fs, log.Named("provenance"), 1, provenance.InProcess{}, provenance.InProcess{})
			g.closers = append(g.closers, func(context.Context) error { index.Close(); return nil })
		}
	}
	keys, ok := g.store.(store.SigningKeyStore)
	if !ok {
		return nil, fmt.Errorf("provenance: the %T store cannot record the signing key", g.store)
	}
	if deps.Provenance, err = openProvenance(ctx, cfg, keys, index); err != nil {
		return nil, err
	}
	if err := g.attachProviders(ctx, &deps); err != nil {
		return nil, err
	}
	// The admin API asks the configuration in use (a reload's) which
	// providers exist.
	deps.Admin = manage.New(g.store, g.orgs, g.auth, func(id string) bool { return g.conf.Load().Providers[id] != nil })
	g.jobs = jobs.New(JobsOptions(cfg), jobs.Deps{Store: g.store, Speaker: g.speaker, Logger: log.Named("jobs"),
		Provenance: deps.Provenance, Unmarked: g.unmarked, NoRecords: g.noRecords, OrgLoudness: g.orgLoudness,
		Record: func(row store.LogRow) {
			g.metrics.CountUsage(&row)
			g.logs.Record(row)
		}})
	g.jobs.SetMetrics(g.metrics.Jobs(g.jobs.Running))
	deps.Jobs = g.jobs
	g.server = edge.New(deps)
	return g, nil
}

// Start listens on the configured address and the admin socket, serves in
// the background, and then makes the development keys (see devKeys).
func (g *Gateway) Start() error {
	ln, err := net.Listen("tcp", g.cfg.Server.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", g.cfg.Server.Listen, err)
	}
	g.ln = ln
	sock := AdminSocket(g.cfg)
	g.admin, err = admin.Listen(sock, admin.Deps{Keys: g.auth, Secrets: liveSecrets{g}, Metrics: g.metrics.HTTPHandler(),
		Reload: g.reloadView})
	if err != nil {
		ln.Close()
		return err
	}
	if addr := g.cfg.Metrics.Listen; addr != "" {
		if g.metricsLn, err = net.Listen("tcp", addr); err != nil {
			ln.Close()
			_ = g.admin.Close(context.Background())
			return fmt.Errorf("metrics.listen %s: %w", addr, err)
		}
	}
	g.serveCh = make(chan error, 2)
	go func() { g.serveCh <- g.server.Serve(ln) }()
	if g.metricsLn != nil {
		go func() {
			if err := g.server.ServeMetrics(g.metricsLn); err != nil {
				g.serveCh <- fmt.Errorf("metrics listener: %w", err)
			}
		}()
	}
	g.logMetrics()
	jctx, stop := context.WithCancel(context.Background())
	g.jobsStop, g.jobsDone = stop, make(chan struct{})
	go func() {
		defer close(g.jobsDone)
		g.jobs.Run(jctx)
	}()
	maxConns, perIP := g.server.ConnLimits()
	g.log.Info("listening", zap.String("addr", "http://"+ln.Addr().String()), zap.String("admin_socket", sock),
		zap.Int("max_conns", maxConns), zap.Int("max_conns_per_ip", perIP))
	// Only now: a development key is shown once, so it is made only by a
	// start that succeeded. One made by a start that then failed (a plugin
	// missing, the port taken) would be printed and lost, and the next
	// start, seeing the org has a key, would show none.
	if err := g.devKeys(context.Background()); err != nil {
		return fmt.Errorf("development key: %w", err)
	}
	g.started.Store(true)
	return nil
}

// ready reports whether the gateway should be sent requests: it has
// finished starting (see started), is not draining, and every provider has
// a live plugin process. The store is not asked: every instance shares it,
// so taking instances out for its outage would only turn the requests
// memory can serve (see storecache) into failures; /readyz reports it in
// its body instead (storeState).
func (g *Gateway) ready() error {
	switch {
	case g.draining.Load():
		return errors.New("shutting down")
	case !g.started.Load():
		return errors.New("still starting")
	case g.pluginsReady != nil:
		return g.pluginsReady()
	}
	return nil
}

// storeState reports, for /readyz, whether the store answers.
func (g *Gateway) storeState() (up bool, since time.Time) {
	st := g.data.State()
	return st.Up, st.Since
}

// storeMetrics exports the store's reachability and the record cache's
// work.
func (g *Gateway) storeMetrics() {
	c := g.data
	g.metrics.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "voxgate_store_up",
		Help: "1 while the store (bbolt or PostgreSQL) answers, 0 from the moment it could not be reached until it answers again. Synthesis goes on from memory meanwhile; writes answer 503.",
	}, func() float64 {
		if c.State().Up {
			return 1
		}
		return 0
	}))
	const lookupsHelp = "Lookups of saved voices, dictionary rules and BYOK keys by requests: hit (memory), miss (read from the store), stale (an out-of-date entry served because the store could not be reached)."
	const entriesHelp = "Records held in memory for requests, by kind (bounded; dictionary_rules counts rules)."
	for _, kind := range []readcache.Kind{readcache.KindVoice, readcache.KindRules, readcache.KindSecret} {
		for _, r := range []readcache.Result{readcache.Hit, readcache.Miss, readcache.Stale} {
			g.metrics.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "voxgate_store_cache_lookups_total", Help: lookupsHelp,
				ConstLabels: prometheus.Labels{"kind": kind.String(), "result": r.String()},
			}, func() float64 { return float64(c.Counts(kind, r)) }))
		}
		g.metrics.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "voxgate_store_cache_entries", Help: entriesHelp, ConstLabels: prometheus.Labels{"kind": kind.String()},
		}, func() float64 { _, cost := c.Size(kind); return float64(cost) }))
	}
}

// budgetCounter returns the credit budgets: counted in the shared Redis
// when the rate limiter uses one, else in this process.
func (g *Gateway) budgetCounter(limiter ratelimit.Limiter) *budget.Budgets {
	failOpen := sharedOptions(g.cfg).budgetFailOpen
	budgeted := len(OrgBudgets(g.cfg)) > 0
	if r, ok := limiter.(*ratelimit.Redis); ok {
		if budgeted {
			g.log.Info("credit budgets are shared across instances through redis", zap.Bool("allow_when_unreachable", failOpen))
		}
		return budget.New(budget.NewRedis(r.Client()), failOpen)
	}
	if budgeted {
		g.log.Info("credit budgets are per instance (no shared.redis_url): N instances allow N times a budget")
	}
	return budget.New(budget.NewMemory(), failOpen)
}

// responseCache opens the store of the response cache the config names;
// nil when the cache is off. (A reload changes its ttl and sharing, not
// its store: see restartOnly.)
func (g *Gateway) responseCache() (respcache.Store, error) {
	c := g.cfg.Cache
	switch c.Driver {
	case config.CacheDisk:
		dir := cacheDir(g.cfg)
		d, err := respcache.OpenDisk(dir, c.MaxBytes, c.MaxEntryBytes)
		if err != nil {
			return nil, err
		}
		n, size := d.Size()
		g.log.Info("response cache on disk", zap.String("dir", dir), zap.Int("entries", n), zap.Int64("bytes", size),
			zap.Int64("max_bytes", c.MaxBytes), zap.Duration("ttl", c.TTL.D()))
		return d, nil
	case config.CacheRedis:
		r, err := respcache.NewRedis(sharedOptions(g.cfg).redisURL, c.MaxEntryBytes)
		if err != nil {
			return nil, err
		}
		g.closers = append(g.closers, func(context.Context) error { return r.Close() })
		g.log.Info("response cache in the shared redis", zap.Duration("ttl", c.TTL.D()))
		return r, nil
	}
	return nil, nil
}

// keySlots returns where the key pools count their concurrency slots: in
// the shared Redis when the rate limiter uses one, else in this process.
func (g *Gateway) keySlots(limiter ratelimit.Limiter) keypool.Slots {
	if r, ok := limiter.(*ratelimit.Redis); ok {
		// With Redis away, each instance counts its own slots: calls go
		// on, bounded per instance, rather than failing.
		var lastWarn atomic.Int64
		return keypool.NewFallback(keypool.NewRedis(r.Client()), func(err error) {
			g.metrics.RateLimitErrors.Inc()
			if now := time.Now().UnixNano(); now-lastWarn.Load() > int64(10*time.Second) {
				lastWarn.Store(now)
				g.log.Warn("key pool slots: the shared Redis cannot be reached; counting this instance's calls only", zap.Error(err))
			}
		})
	}
	return keypool.NewMemory()
}

// buildKeyPools builds cfg's providers' managed key pools. A pool of old
// (built from prev) whose keys and bounds did not change is kept, with
// the keys' resting states; the others are new.
func (g *Gateway) buildKeyPools(cfg, prev *config.Config, old map[string]*keypool.Pool) map[string]*keypool.Pool {
	var before map[string]KeyPool
	if prev != nil {
		before = KeyPools(prev)
	}
	pools := map[string]*keypool.Pool{}
	for id, kp := range KeyPools(cfg) {
		if p, ok := old[id]; ok && reflect.DeepEqual(before[id], kp) {
			pools[id] = p
			continue
		}
		pools[id] = keypool.New(id, kp.Keys, g.slots, kp.Wait, kp.Hold)
		g.log.Info("provider key pool", zap.String("provider", id), zap.Strings("keys", pools[id].Names()))
	}
	return pools
}

// keyStates reports the key pools' states for /readyz and the metrics;
// nil without pools.
func (g *Gateway) keyStates() map[string]map[string]time.Time {
	pools := *g.keyPools.Load()
	if len(pools) == 0 {
		return nil
	}
	out := make(map[string]map[string]time.Time, len(pools))
	for id, p := range pools {
		out[id] = p.States()
	}
	return out
}

// newTracer returns the tracer the config asks for, nil (off) without
// tracing.endpoint.
func newTracer(ctx context.Context, cfg *config.Config, version string) (*tracing.Tracer, error) {
	o, on := TracingOptions(cfg, version)
	if !on {
		return nil, nil
	}
	return tracing.New(ctx, o)
}

// logMetrics says where /metrics is served.
func (g *Gateway) logMetrics() {
	sock := zap.String("admin_socket", AdminSocket(g.cfg))
	auth := zap.Bool("token_required", g.cfg.Metrics.Token != "")
	switch {
	case g.metricsLn != nil:
		g.log.Info("metrics listening", zap.String("addr", "http://"+g.metricsLn.Addr().String()+"/metrics"), auth, sock)
	case g.cfg.Metrics.Token != "":
		g.log.Info("metrics on the public listener, behind metrics.token", sock)
	default:
		g.log.Info("metrics on the admin socket only; set metrics.listen or metrics.token to let Prometheus scrape", sock)
	}
}

// MetricsAddr returns the metrics listener's address (host:port), "" when
// metrics.listen is not set.
func (g *Gateway) MetricsAddr() string {
	if g.metricsLn == nil {
		return ""
	}
	return g.metricsLn.Addr().String()
}

// Addr returns the listening address (host:port).
func (g *Gateway) Addr() string {
	if g.ln == nil {
		return ""
	}
	return g.ln.Addr().String()
}

// Done is closed with the serve error when the server stops by itself.
func (g *Gateway) Done() <-chan error { return g.serveCh }

// Shutdown stops accepting requests, lets in-flight ones finish, drains the
// log queue, stops the plugins and closes storage, within ctx's deadline.
//
// Shutdown is idempotent: later calls return nil.
func (g *Gateway) Shutdown(ctx context.Context) error {
	if g.stopped {
		return nil
	}
	g.stopped = true
	g.draining.Store(true)
	var errs []error
	if g.admin != nil {
		errs = append(errs, g.admin.Close(ctx))
	}
	if g.server != nil && g.ln != nil {
		if err := g.server.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
	}
	if g.metricsLn != nil {
		_ = g.metricsLn.Close() // in case its server had not started yet
	}
	if g.jobsStop != nil {
		// The jobs' chunks in flight stop; their leases run out and the
		// next start (or another instance) resumes them.
		g.jobsStop()
		select {
		case <-g.jobsDone:
		case <-ctx.Done():
		}
	}
	// Acknowledged log rows first: they must reach disk even if stopping a
	// plugin later runs out of time. (Close is idempotent; the closer
	// below is then a no-op.)
	if g.logs != nil {
		if err := g.logs.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("request log: %w", err))
		}
	}
	errs = append(errs, g.close(ctx))
	g.log.Info("stopped")
	return errors.Join(errs...)
}

// close runs the closers in reverse order of acquisition.
func (g *Gateway) close(ctx context.Context) error {
	var errs []error
	for i := len(g.closers) - 1; i >= 0; i-- {
		if err := g.closers[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	g.closers = nil
	return errors.Join(errs...)
}

// rateLimiter picks the rate-limit strategy: Redis when shared.redis_url
// is set (limits hold across instances), else this process's memory (each
// instance enforces the limits alone), and says which in the log.
func (g *Gateway) rateLimiter(ctx context.Context) (ratelimit.Limiter, bool, error) {
	sh := sharedOptions(g.cfg)
	failOpen, url := sh.rateLimitFailOpen, sh.redisURL
	if url == "" {
		g.log.Info("rate limits are per instance (no shared.redis_url): N instances allow N times an organization's rate")
		return ratelimit.NewMemory(), failOpen, nil
	}
	r, err := ratelimit.NewRedis(url)
	if err != nil {
		return nil, false, err
	}
	g.closers = append(g.closers, func(context.Context) error { return r.Close() })
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := r.Ping(pctx); err != nil {
		// Not fatal: the limiter reconnects by itself, and until then
		// requests get rate_limit_on_error's answer.
		g.log.Warn("shared rate limiter: redis does not answer yet", zap.Bool("letting_requests_through", failOpen), zap.Error(err))
	}
	g.log.Info("rate limits are shared across instances through redis")
	return r, failOpen, nil
}

// watch keeps memory in step with a shared backend: a key change another
// instance announces reloads the key table (bursts of them coalesce into
// one reload), and every other change goes to the record cache, which
// also learns from the watch whether the store is there. The watch stops
// at shutdown.
func (g *Gateway) watch(w store.Watcher) {
	ctx, cancel := context.WithCancel(context.Background())
	kick := make(chan struct{}, 1)
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		_ = w.Watch(ctx, func(c store.Change) {
			g.data.Apply(c)
			if c.Kind == store.ChangeKey || c.Kind == store.ChangeOrg || c.Kind == store.ChangeResync {
				select {
				case kick <- struct{}{}:
				default:
				}
			}
		})
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		for {
			select {
			case <-ctx.Done():
				return
			case <-kick:
			}
			rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
			// Keys and organizations reload together: both are small,
			// and a key of a new organization needs the organization.
			err := g.orgs.Reload(rctx, g.store)
			if err == nil {
				err = g.auth.Reload(rctx)
			}
			if err != nil && ctx.Err() == nil {
				g.log.Warn("reloading api keys and organizations after a change on another instance failed; retrying", zap.Error(err))
				select { // Retry soon: a missed revocation must not linger.
				case kick <- struct{}{}:
				default:
				}
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			rcancel()
		}
	}()
	g.closers = append(g.closers, func(context.Context) error {
		cancel()
		<-done
		<-done
		return nil
	})
}

// FileOrgs returns the organizations declared in the configuration file
// in use: the start's, or the last reload's. They are the file's alone; a
// reload replaces them (in the organization directory too) and nothing
// else.
func (g *Gateway) FileOrgs() map[string]*config.Org { return g.conf.Load().Orgs }

// orgState is what authentication needs of an organization: the file's
// or the admin API's, and whether it is disabled.
func (g *Gateway) orgState(org string) auth.OrgState {
	o, ok := g.orgs.Get(org)
	switch {
	case !ok:
		return auth.OrgUnknown
	case o.Disabled:
		return auth.OrgDisabled
	}
	return auth.OrgActive
}

// orgAccess is the provider access of an organization made through the
// admin API (the file's are in the credentials policy itself).
func (g *Gateway) orgAccess(org, provider string) (credentials.OrgAccess, bool) {
	o, ok := g.orgs.Get(org)
	if !ok || o.Stored == nil {
		return credentials.OrgAccess{}, false
	}
	p := o.Stored.Providers[provider]
	return credentials.OrgAccess{Enabled: p.Enabled, BYOK: p.BYOK, Managed: p.Managed}, true
}

// orgLoudness is an organization's default loudness target (see
// speech.Deps.OrgLoudness).
func (g *Gateway) orgLoudness(org string) (audio.LoudnessTarget, bool) {
	o, _ := g.orgs.Get(org)
	if o == nil || o.Loudness == nil {
		return audio.LoudnessTarget{}, false
	}
	return audio.LoudnessTarget{Integrated: o.Loudness.Integrated, TruePeak: o.Loudness.TruePeak}, true
}

// orgBudget is an organization's credit budget, the file's or the admin
// API's.
func (g *Gateway) orgBudget(org string) budget.Limit {
	o, _ := g.orgs.Get(org)
	if o == nil {
		return budget.Limit{}
	}
	return o.Budget
}

// devKeys creates and prints a key for every org marked dev_key that has no
// key yet: the offline default deployment works on first start.
func (g *Gateway) devKeys(ctx context.Context) error {
	names := make([]string, 0, len(g.cfg.Orgs))
	for name, o := range g.cfg.Orgs {
		if o.DevKey {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, org := range names {
		keys, err := g.store.ListKeys(ctx, org)
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			continue
		}
		plain, k, err := g.auth.Create(ctx, org, "development key")
		if err != nil {
			return err
		}
		g.log.Info("created development key", zap.String("org", org), zap.String("key_id", k.ID), zap.String("prefix", k.Prefix))
		fmt.Fprintf(g.banner, "\n  Development API key for org %q (shown once, store it now):\n\n    %s\n\n  Try: curl -s http://%s/v1/voices -H 'Authorization: Bearer %s'\n  or sign in to the dashboard with it: http://%s/ui/\n\n", org, plain, g.Addr(), plain, g.Addr())
	}
	return nil
}

// CreateKey makes an API key of org (tests use it; the admin socket and
// the CLI go through auth.Authenticator).
func (g *Gateway) CreateKey(ctx context.Context, org, name string, scope store.KeyScope) (string, *store.APIKey, error) {
	return g.auth.CreateWith(ctx, org, name, scope)
}

// CreateAdminKey makes an admin key, as `voxgate keys create --admin`
// does (tests use it).
func (g *Gateway) CreateAdminKey(ctx context.Context, name string) (string, *store.APIKey, error) {
	return g.auth.CreateAdmin(ctx, name)
}

// RevokeKey revokes an API key (tests use it).
func (g *Gateway) RevokeKey(ctx context.Context, id string) (*store.APIKey, error) {
	return g.auth.Revoke(ctx, id)
}

// SetSecret stores an org's own provider key, encrypted, as `voxgate
// secrets set` does (tests use it).
func (g *Gateway) SetSecret(ctx context.Context, org, provider, value string) error {
	return liveSecrets{g}.SetSecret(ctx, org, provider, value)
}

// speaker is the speech service requests are served with now, for the
// jobs' worker; nil when there is none.
func (g *Gateway) speaker() jobs.Speaker {
	if g.server == nil {
		return nil
	}
	if l := g.server.Live(); l != nil && l.Speech != nil {
		return l.Speech
	}
	return nil
}

// unmarked reports whether org turned provenance marks off, in the
// organization directory (gateway.yaml's or the admin API's).
func (g *Gateway) unmarked(org string) bool {
	o, ok := g.orgs.Get(org)
	return ok && o.Provenance.Unmarked
}

// noRecords reports whether org turned signed provenance records off.
func (g *Gateway) noRecords(org string) bool {
	o, ok := g.orgs.Get(org)
	return ok && o.Provenance.NoRecords
}

// Jobs returns the long-form job service.
func (g *Gateway) Jobs() *jobs.Service { return g.jobs }

// Metrics exposes the registry (tests read it).
func (g *Gateway) Metrics() *metrics.Metrics { return g.metrics }

// Store exposes storage (tests read it).
func (g *Gateway) Store() store.Backend { return g.store }

// PluginPIDs returns the process ids of a plugin's healthy instances.
func (g *Gateway) PluginPIDs(name string) []int {
	if g.host == nil || g.host.Pool(name) == nil {
		return nil
	}
	return g.host.Pool(name).PIDs()
}

// Logs exposes the request-log writer (tests flush it).
func (g *Gateway) Logs() *reqlog.Writer { return g.logs }

// releaseStoreMemory gives back the resident pages of an embedded store's
// file map once the server is quiet (see bolt.Store.ReleaseMemory).
func (g *Gateway) releaseStoreMemory() {
	if r, ok := g.store.(interface{ ReleaseMemory() error }); ok {
		if err := r.ReleaseMemory(); err != nil {
			g.log.Debug("releasing the store's mapped pages failed", zap.Error(err))
		}
	}
}

// fingerprintTimeout bounds one fingerprint in a worker process: the
// longest file identify takes is fingerprinted in about a second.
const fingerprintTimeout = 30 * time.Second

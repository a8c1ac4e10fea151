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
	"path/filepath"
	"sort"
	"time"

	"go.uber.org/zap"

	"github.com/voxgate/voxgate/config"
	"github.com/voxgate/voxgate/gateway/admin"
	"github.com/voxgate/voxgate/gateway/auth"
	"github.com/voxgate/voxgate/gateway/credentials"
	"github.com/voxgate/voxgate/gateway/metrics"
	"github.com/voxgate/voxgate/gateway/pluginhost"
	"github.com/voxgate/voxgate/gateway/ratelimit"
	"github.com/voxgate/voxgate/gateway/reqlog"
	"github.com/voxgate/voxgate/gateway/server"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/driver"
	"github.com/voxgate/voxgate/gateway/ui"
)

// Options tune Open.
type Options struct {
	// Logger receives all logs; nil means a no-op logger.
	Logger *zap.Logger
	// Banner receives the one-time development key message; nil discards.
	Banner io.Writer
}

// Gateway is a running voxgate instance.
type Gateway struct {
	cfg     *config.Config
	log     *zap.Logger
	banner  io.Writer
	store   store.Backend
	auth    *auth.Authenticator
	logs    *reqlog.Writer
	metrics *metrics.Metrics
	sealer  *credentials.Sealer
	// policy is the credential rules of the config, built once.
	policy  *credentials.Policy
	server  *server.Server
	admin   *admin.Server
	host    *pluginhost.Host
	ln      net.Listener
	serveCh chan error
	closers []func(context.Context) error
	stopped bool
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
	g := &Gateway{cfg: cfg, log: log, banner: banner, metrics: metrics.New(), policy: credentials.PolicyFrom(cfg)}
	defer func() {
		if err != nil {
			g.close(context.Background())
		}
	}()

	sc := StorageConfig(cfg)
	g.store, err = driver.Open(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("open storage (%s): %w", driver.Describe(sc), err)
	}
	g.closers = append(g.closers, func(context.Context) error { return g.store.Close() })
	log.Info("storage opened", zap.String("driver", sc.Driver), zap.String("where", driver.Describe(sc)))

	keyFile := DefaultSecretsKeyFile(cfg)
	if cfg.Secrets.KeyFile != "" {
		keyFile = cfg.Resolve(cfg.Secrets.KeyFile)
	}
	key, err := credentials.LoadKey(cfg.Secrets.KeyEnv, keyFile)
	if err != nil {
		return nil, err
	}
	if g.sealer, err = credentials.NewSealer(key); err != nil {
		return nil, err
	}

	g.auth, err = auth.New(ctx, g.store, g.orgExists)
	if err != nil {
		return nil, err
	}
	if err := g.devKeys(ctx); err != nil {
		return nil, err
	}
	if w, ok := g.store.(store.KeyWatcher); ok {
		g.watchKeys(w)
		log.Info("api keys follow the shared storage: keys created or revoked on any instance apply here within a second")
	}

	g.logs = reqlog.New(g.store, reqlog.Options{
		QueueSize: cfg.Storage.LogQueueSize,
		BatchSize: cfg.Storage.LogBatchSize,
		Retention: sc.LogRetention,
		Logger:    log.Named("reqlog"),
	})
	g.logs.Start()
	g.closers = append(g.closers, g.logs.Close)
	g.metrics.LogQueue(g.logs.QueueLen, g.logs.Dropped, g.logs.Written)

	limiter, failOpen, err := g.rateLimiter(ctx)
	if err != nil {
		return nil, err
	}
	deps := server.Deps{
		Limiter:         limiter,
		LimiterFailOpen: failOpen,
		Options:         ServerOptions(cfg),
		Logger:          log,
		Store:           g.store,
		CursorSecret:    g.store.Secret(),
		Auth:            g.auth,
		Logs:            g.logs,
		Metrics:         g.metrics,
		UI:              ui.New(g.auth, ui.NewSessions(g.auth, g.store.Secret(), 0, nil)),
	}
	if err := g.attachProviders(ctx, &deps); err != nil {
		return nil, err
	}
	g.server = server.New(deps)
	return g, nil
}

// Start listens on the configured address and the admin socket and serves
// in the background.
func (g *Gateway) Start() error {
	ln, err := net.Listen("tcp", g.cfg.Server.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", g.cfg.Server.Listen, err)
	}
	g.ln = ln
	sock := g.cfg.Admin.Socket
	if sock == "" {
		sock = AdminSocket(g.cfg)
	}
	g.admin, err = admin.Listen(g.cfg.Resolve(sock), g)
	if err != nil {
		ln.Close()
		return err
	}
	g.serveCh = make(chan error, 1)
	go func() { g.serveCh <- g.server.Serve(ln) }()
	maxConns, perIP := g.server.ConnLimits()
	g.log.Info("listening", zap.String("addr", "http://"+ln.Addr().String()), zap.String("admin_socket", g.cfg.Resolve(sock)),
		zap.Int("max_conns", maxConns), zap.Int("max_conns_per_ip", perIP))
	return nil
}

// ServerOptions is the typed view of cfg's edge settings.
func ServerOptions(cfg *config.Config) server.Options {
	o := server.Options{
		ReadTimeout:    cfg.Server.ReadTimeout.D(),
		WriteTimeout:   cfg.Server.WriteTimeout.D(),
		IdleTimeout:    cfg.Server.IdleTimeout.D(),
		RequestTimeout: cfg.Server.RequestTimeout.D(),
		MaxBodyBytes:   cfg.Server.MaxBodyBytes,
		MaxMediaBytes:  cfg.Limits.MaxMediaBytes,
		MaxTextChars:   cfg.Limits.MaxTextChars,
		AccessLog:      cfg.Server.AccessLog == nil || *cfg.Server.AccessLog,
		MaxConns:       cfg.Server.MaxConns,
		MaxConnsPerIP:  cfg.Server.MaxConnsPerIP,
		Orgs:           make(map[string]server.OrgLimits, len(cfg.Orgs)),
	}
	for name, org := range cfg.Orgs {
		o.Orgs[name] = server.OrgLimits{
			Synthesis: ratelimit.Limit{Rate: org.RateLimit, Burst: org.RateBurst},
			Reads:     ratelimit.Limit{Rate: org.ReadRateLimit, Burst: org.ReadRateBurst},
		}
	}
	if o.MaxConns == 0 {
		o.MaxConns = server.DefaultMaxConns()
	}
	return o
}

// StorageConfig is the typed view of cfg's storage settings, with paths
// resolved against the config file.
func StorageConfig(cfg *config.Config) driver.Config {
	return driver.Config{
		Driver:       cfg.Storage.Driver,
		Path:         cfg.Resolve(cfg.Storage.Path),
		DSN:          cfg.Storage.DSN.Value(),
		MaxConns:     cfg.Storage.MaxConns,
		LogRetention: time.Duration(cfg.Storage.LogRetainDays) * 24 * time.Hour,
	}
}

// AdminSocket returns the admin socket path of cfg.
func AdminSocket(cfg *config.Config) string {
	if cfg.Admin.Socket != "" {
		return cfg.Resolve(cfg.Admin.Socket)
	}
	return cfg.Resolve(cfg.Storage.Path) + ".sock"
}

// DefaultSecretsKeyFile is where the BYOK sealing key lives when the config
// names none: beside the database.
func DefaultSecretsKeyFile(cfg *config.Config) string {
	return filepath.Join(filepath.Dir(cfg.Resolve(cfg.Storage.Path)), "secrets.key")
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
	var errs []error
	if g.admin != nil {
		errs = append(errs, g.admin.Close(ctx))
	}
	if g.server != nil && g.ln != nil {
		if err := g.server.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
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
	failOpen := g.cfg.Shared.RateLimitOnError != "deny"
	url := g.cfg.Shared.RedisURL.Value()
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

// watchKeys keeps the in-memory key table in step with a shared backend:
// every change another instance announces reloads the table. Bursts of
// events coalesce into one reload, and the watch stops at shutdown.
func (g *Gateway) watchKeys(w store.KeyWatcher) {
	ctx, cancel := context.WithCancel(context.Background())
	kick := make(chan struct{}, 1)
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		_ = w.WatchKeys(ctx, func(store.KeyEvent) {
			select {
			case kick <- struct{}{}:
			default:
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
			if err := g.auth.Reload(rctx); err != nil && ctx.Err() == nil {
				g.log.Warn("reloading api keys after a change on another instance failed; retrying", zap.Error(err))
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

func (g *Gateway) orgExists(org string) bool { return g.cfg.Orgs[org] != nil }

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
		fmt.Fprintf(g.banner, "\n  Development API key for org %q (shown once, store it now):\n\n    %s\n\n  Try: curl -s http://%s/v1/voices -H 'Authorization: Bearer %s'\n  or sign in to the dashboard with it: http://%s/ui/\n\n", org, plain, g.cfg.Server.Listen, plain, g.cfg.Server.Listen)
	}
	return nil
}

// The admin.Backend implementation.

// CreateKey implements admin.Backend.
func (g *Gateway) CreateKey(ctx context.Context, org, name string) (string, *store.APIKey, error) {
	return g.auth.Create(ctx, org, name)
}

// ListKeys implements admin.Backend.
func (g *Gateway) ListKeys(ctx context.Context, org string) ([]store.APIKey, error) {
	return g.store.ListKeys(ctx, org)
}

// RevokeKey implements admin.Backend.
func (g *Gateway) RevokeKey(ctx context.Context, id string) (*store.APIKey, error) {
	return g.auth.Revoke(ctx, id)
}

// OrgExists implements admin.Backend.
func (g *Gateway) OrgExists(org string) bool { return g.orgExists(org) }

// SetSecret implements admin.Backend: it stores an org's own provider key,
// encrypted.
func (g *Gateway) SetSecret(ctx context.Context, org, provider, value string) error {
	return credentials.StoreBYOK(ctx, g.store, g.sealer, g.policy, org, provider, value)
}

// DeleteSecret implements admin.Backend.
func (g *Gateway) DeleteSecret(ctx context.Context, org, provider string) error {
	return g.store.DeleteSecret(ctx, org, credentials.SecretName(provider))
}

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

// Command voxgate is the text-to-speech edge gateway: `voxgate serve` runs
// it; `voxgate keys` and `voxgate secrets` administer it, whether or not a
// gateway is running on the same database.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"

	"github.com/voxgate/voxgate/config"
	"github.com/voxgate/voxgate/gateway"
	"github.com/voxgate/voxgate/gateway/admin"
	"github.com/voxgate/voxgate/gateway/auth"
	"github.com/voxgate/voxgate/gateway/credentials"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/driver"
	"github.com/voxgate/voxgate/gateway/store/migrate"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `voxgate: a text-to-speech edge gateway

Usage:
  voxgate serve   [--config FILE] [--listen ADDR] [--data DATA]
  voxgate keys    create --org ORG [--name NAME] [--config FILE] [--data DATA]
  voxgate keys    list   [--org ORG] [--config FILE] [--data DATA]
  voxgate keys    revoke KEY_ID [--config FILE] [--data DATA]
  voxgate secrets set    --org ORG --provider PROVIDER [--config FILE] [--data DATA]   (reads the key from stdin)
  voxgate secrets delete --org ORG --provider PROVIDER [--config FILE] [--data DATA]
  voxgate migrate --to postgres --dsn URL [--config FILE] [--data PATH]
  voxgate config  check  [--config FILE]
  voxgate version

FILE defaults to ./gateway.yaml. DATA overrides the config's storage: a
bbolt file path, or a postgres:// URL (then storage.driver is postgres).
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(args[1:], stdout, stderr)
	case "keys":
		err = keys(args[1:], stdout)
	case "secrets":
		err = secrets(args[1:], stdin, stdout)
	case "config":
		err = configCmd(args[1:], stdout)
	case "migrate":
		err = migrateCmd(args[1:], stdout)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "voxgate", version)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "voxgate: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "voxgate: %v\n\n%s", err, usage)
			return 2
		}
		fmt.Fprintf(stderr, "voxgate: %v\n", err)
		return 1
	}
	return 0
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// flags parses a subcommand's flags; positional arguments may come before
// or after the flags.
func flags(name string, args []string, define func(*flag.FlagSet)) ([]string, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	define(fs)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usageError{fmt.Sprintf("%s: %v", name, err)}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func loadConfig(path string) (*config.Config, error) {
	cfg, err := config.Load(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w\n(run from the repository root, or pass --config FILE)", err)
		}
		return nil, err
	}
	return cfg, nil
}

func serve(args []string, stdout, stderr io.Writer) error {
	var cfgPath, listen, data, logLevel string
	var devLog bool
	if _, err := flags("serve", args, func(fs *flag.FlagSet) {
		fs.StringVar(&cfgPath, "config", "gateway.yaml", "config file")
		fs.StringVar(&listen, "listen", "", "listen address, overrides server.listen")
		fs.StringVar(&data, "data", "", "bbolt file or postgres:// URL, overrides storage")
		fs.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
		fs.BoolVar(&devLog, "dev-log", false, "human-readable logs instead of JSON")
	}); err != nil {
		return err
	}
	cfg, err := loadConfig(cfgPath)
	if err != nil {
		return err
	}
	if listen != "" {
		cfg.Server.Listen = listen
	}
	applyData(cfg, data)
	log, err := newLogger(stderr, logLevel, devLog)
	if err != nil {
		return usageError{err.Error()}
	}
	defer log.Sync() //nolint:errcheck // flushes the buffered log on exit

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	log.Info("starting voxgate", zap.String("version", version), zap.String("config", cfgPath))
	g, err := gateway.Open(ctx, cfg, gateway.Options{Logger: log, Banner: stdout})
	if err != nil {
		return err
	}
	if err := g.Start(); err != nil {
		_ = g.Shutdown(context.Background())
		return err
	}
	var stopped error
	select {
	case <-ctx.Done():
		log.Info("shutting down: finishing in-flight requests")
	case err := <-g.Done():
		// Serve returns before Shutdown only when it cannot go on: exit
		// non-zero, so that a supervisor restarts the gateway.
		stopped = fmt.Errorf("the HTTP server stopped unexpectedly: %v", err)
		log.Error("server stopped unexpectedly; shutting down", zap.Error(err))
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownTimeout.D())
	defer cancel()
	if err := g.Shutdown(sctx); err != nil {
		return err
	}
	return stopped
}

func newLogger(w io.Writer, level string, dev bool) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	if dev {
		encCfg.EncodeLevel = zapcore.CapitalColorLevelEncoder
		enc = zapcore.NewConsoleEncoder(encCfg)
	} else {
		enc = zapcore.NewJSONEncoder(encCfg)
	}
	// Buffered: the access log writes a line per request, and a write
	// system call per line sat on the request path. Lines reach w within a
	// second, and Sync (called on exit) flushes the rest.
	ws := &zapcore.BufferedWriteSyncer{WS: zapcore.AddSync(w), Size: 256 << 10, FlushInterval: time.Second}
	core := zapcore.NewCore(enc, ws, lvl)
	return zap.New(core), nil
}

// applyData applies a --data value: a postgres:// URL selects the
// PostgreSQL driver with that DSN, anything else is a bbolt file path.
func applyData(cfg *config.Config, data string) {
	switch {
	case data == "":
	case strings.HasPrefix(data, "postgres://"), strings.HasPrefix(data, "postgresql://"):
		cfg.Storage.Driver = config.DriverPostgres
		cfg.Storage.DSN = config.Secret(data)
	default:
		cfg.Storage.Driver = config.DriverBolt
		cfg.Storage.Path = data
	}
}

// withBackend runs fn against the running gateway's admin socket, or
// directly against the storage. PostgreSQL is always used directly: it is
// shared, and the running instances hear of key changes from it. A bbolt
// file is locked by a running gateway, so the CLI goes through that
// gateway's admin socket when one answers.
func withBackend(cfgPath, data string, viaSocket func(*admin.Client) error, direct func(*config.Config, store.Backend) error) error {
	cfg, err := loadConfig(cfgPath)
	if err != nil {
		return err
	}
	applyData(cfg, data)
	ctx := context.Background()
	if cfg.Storage.Driver != config.DriverPostgres {
		if c, err := admin.Dial(ctx, gateway.AdminSocket(cfg)); err == nil {
			return viaSocket(c)
		}
	}
	sc := gateway.StorageConfig(cfg)
	st, err := driver.Open(ctx, sc)
	if err != nil {
		if errors.Is(err, store.ErrLocked) {
			return fmt.Errorf("the database is held by a running gateway, but its admin socket %s does not answer; stop the gateway or check admin.socket", gateway.AdminSocket(cfg))
		}
		return fmt.Errorf("open storage (%s): %w", driver.Describe(sc), err)
	}
	defer st.Close()
	return direct(cfg, st)
}

// parseScope reads keys create's scope flags.
func parseScope(expires, providers, models, budgetFlag string, now time.Time) (store.KeyScope, error) {
	var sc store.KeyScope
	if expires != "" {
		if d, err := time.ParseDuration(expires); err == nil {
			sc.ExpiresAt = now.Add(d).UTC()
		} else if t, err := time.Parse(time.RFC3339, expires); err == nil {
			sc.ExpiresAt = t.UTC()
		} else if t, err := time.Parse("2006-01-02", expires); err == nil {
			sc.ExpiresAt = t.UTC()
		} else {
			return sc, fmt.Errorf("--expires %q is neither a duration (720h) nor a date (2027-01-31) nor an RFC 3339 time", expires)
		}
	}
	split := func(v string) []string {
		var out []string
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				out = append(out, f)
			}
		}
		return out
	}
	sc.Providers, sc.Models = split(providers), split(models)
	if budgetFlag != "" {
		n, period, ok := strings.Cut(budgetFlag, "/")
		credits, err := strconv.ParseInt(n, 10, 64)
		if !ok || err != nil || credits < 1 || (period != "day" && period != "month") {
			return sc, fmt.Errorf("--budget %q is not CREDITS/day or CREDITS/month (e.g. 5000/month)", budgetFlag)
		}
		sc.Budget, sc.BudgetPeriod = credits, period
	}
	return sc, auth.ValidateScope(sc)
}

func keys(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usageError{"keys: say create, list or revoke"}
	}
	var cfgPath, data, org, name, expires, providers, models, budgetFlag string
	pos, err := flags("keys "+args[0], args[1:], func(fs *flag.FlagSet) {
		fs.StringVar(&cfgPath, "config", "gateway.yaml", "config file")
		fs.StringVar(&data, "data", "", "bbolt file or postgres:// URL, overrides storage")
		fs.StringVar(&org, "org", "", "organization")
		fs.StringVar(&name, "name", "", "a label for the key")
		fs.StringVar(&expires, "expires", "", "create: the key stops working after this duration (720h) or at this time (2027-01-31 or RFC 3339)")
		fs.StringVar(&providers, "providers", "", "create: the only providers the key may use, comma-separated")
		fs.StringVar(&models, "models", "", "create: the only models the key may use, comma-separated provider/model")
		fs.StringVar(&budgetFlag, "budget", "", "create: the key's own credit budget, CREDITS/day or CREDITS/month")
	})
	if err != nil {
		return err
	}
	ctx := context.Background()
	switch args[0] {
	case "create":
		if org == "" {
			return usageError{"keys create: --org is required"}
		}
		scope, err := parseScope(expires, providers, models, budgetFlag, time.Now())
		if err != nil {
			return usageError{"keys create: " + err.Error()}
		}
		return withBackend(cfgPath, data, func(c *admin.Client) error {
			v, err := c.CreateKey(ctx, org, name, admin.View(&store.APIKey{Scope: scope}).Scope)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, v.Key)
			return nil
		}, func(cfg *config.Config, st store.Backend) error {
			if cfg.Orgs[org] == nil {
				return fmt.Errorf("organization %q is not in the config; add it under orgs: first", org)
			}
			plain, _, err := auth.CreateKeyWith(ctx, st, org, name, scope)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, plain)
			return nil
		})
	case "list":
		print := func(keys []admin.KeyView) {
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tORG\tNAME\tPREFIX\tCREATED\tSTATUS\tSCOPE")
			for _, k := range keys {
				status := "active"
				if k.RevokedAt != nil {
					status = "revoked " + k.RevokedAt.Format(time.RFC3339)
				} else if sc := k.Scope; sc != nil && sc.ExpiresAt != nil && !sc.ExpiresAt.After(time.Now()) {
					status = "expired " + sc.ExpiresAt.Format(time.RFC3339)
				}
				name := k.Name
				if name == "" {
					name = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s…\t%s\t%s\t%s\n", k.ID, k.OrgID, name, k.Prefix, k.CreatedAt.Format(time.RFC3339), status, describeScope(k.Scope))
			}
			tw.Flush()
		}
		return withBackend(cfgPath, data, func(c *admin.Client) error {
			keys, err := c.ListKeys(ctx, org)
			if err != nil {
				return err
			}
			print(keys)
			return nil
		}, func(_ *config.Config, st store.Backend) error {
			keys, err := st.ListKeys(ctx, org)
			if err != nil {
				return err
			}
			views := make([]admin.KeyView, 0, len(keys))
			for i := range keys {
				views = append(views, admin.View(&keys[i]))
			}
			print(views)
			return nil
		})
	case "revoke":
		if len(pos) != 1 {
			return usageError{"keys revoke: give exactly one KEY_ID (see `voxgate keys list`)"}
		}
		id := pos[0]
		done := func() { fmt.Fprintf(stdout, "revoked %s\n", id) }
		return withBackend(cfgPath, data, func(c *admin.Client) error {
			if _, err := c.RevokeKey(ctx, id); err != nil {
				return err
			}
			done()
			return nil
		}, func(_ *config.Config, st store.Backend) error {
			if _, err := st.RevokeKey(ctx, id); err != nil {
				if errors.Is(err, store.ErrNotFound) {
					return fmt.Errorf("no key %s (see `voxgate keys list`)", id)
				}
				return err
			}
			done()
			return nil
		})
	}
	return usageError{fmt.Sprintf("keys: unknown subcommand %q", args[0])}
}

func secrets(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return usageError{"secrets: say set or delete"}
	}
	var cfgPath, data, org, provider string
	if _, err := flags("secrets "+args[0], args[1:], func(fs *flag.FlagSet) {
		fs.StringVar(&cfgPath, "config", "gateway.yaml", "config file")
		fs.StringVar(&data, "data", "", "bbolt file or postgres:// URL, overrides storage")
		fs.StringVar(&org, "org", "", "organization")
		fs.StringVar(&provider, "provider", "", "provider id")
	}); err != nil {
		return err
	}
	if org == "" || provider == "" {
		return usageError{"secrets: --org and --provider are required"}
	}
	ctx := context.Background()
	switch args[0] {
	case "set":
		value, err := readSecret(stdin)
		if err != nil {
			return err
		}
		return withBackend(cfgPath, data, func(c *admin.Client) error {
			if err := c.SetSecret(ctx, org, provider, value); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "stored the %s key of org %s (encrypted)\n", provider, org)
			return nil
		}, func(cfg *config.Config, st store.Backend) error {
			s, err := sealerFor(cfg)
			if err != nil {
				return err
			}
			if err := credentials.StoreBYOK(ctx, st, s, credentials.PolicyFrom(cfg), org, provider, value); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "stored the %s key of org %s (encrypted)\n", provider, org)
			return nil
		})
	case "delete":
		return withBackend(cfgPath, data, func(c *admin.Client) error {
			return c.DeleteSecret(ctx, org, provider)
		}, func(_ *config.Config, st store.Backend) error {
			return st.DeleteSecret(ctx, org, credentials.SecretName(provider))
		})
	}
	return usageError{fmt.Sprintf("secrets: unknown subcommand %q", args[0])}
}

// readSecret reads a key from stdin without echo on a terminal.
func readSecret(stdin io.Reader) (string, error) {
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(os.Stderr, "provider key: ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(os.Stderr)
		return strings.TrimSpace(string(b)), err
	}
	b, err := io.ReadAll(io.LimitReader(stdin, 64<<10))
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", errors.New("no key on stdin: pipe it in, e.g. `printf %s \"$KEY\" | voxgate secrets set ...`")
	}
	return v, nil
}

func sealerFor(cfg *config.Config) (*credentials.Sealer, error) {
	keyFile := cfg.Secrets.KeyFile
	if keyFile == "" {
		keyFile = gateway.DefaultSecretsKeyFile(cfg)
	} else {
		keyFile = cfg.Resolve(keyFile)
	}
	k, err := credentials.LoadKey(cfg.Secrets.KeyEnv, keyFile)
	if err != nil {
		return nil, err
	}
	return credentials.NewSealer(k)
}

func configCmd(args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "check" {
		return usageError{"config: say check"}
	}
	var cfgPath string
	if _, err := flags("config check", args[1:], func(fs *flag.FlagSet) {
		fs.StringVar(&cfgPath, "config", "gateway.yaml", "config file")
	}); err != nil {
		return err
	}
	cfg, err := loadConfig(cfgPath)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s is valid: %d provider(s), %d org(s), %d moderation ruleset(s)\n", cfgPath, len(cfg.Providers), len(cfg.Orgs), len(cfg.Moderation.Rulesets))
	return nil
}

// migrateCmd copies the bbolt file into PostgreSQL: resumable, verified by
// counts. The gateway must be stopped (it holds the file's lock).
func migrateCmd(args []string, stdout io.Writer) error {
	var cfgPath, data, to, dsn string
	if _, err := flags("migrate", args, func(fs *flag.FlagSet) {
		fs.StringVar(&cfgPath, "config", "gateway.yaml", "config file (for the bbolt path)")
		fs.StringVar(&data, "data", "", "bbolt file, overrides storage.path")
		fs.StringVar(&to, "to", "", "destination driver: postgres")
		fs.StringVar(&dsn, "dsn", "", "destination PostgreSQL URL (default $DATABASE_URL)")
	}); err != nil {
		return err
	}
	if to != config.DriverPostgres {
		return usageError{"migrate: say --to postgres"}
	}
	if dsn == "" {
		dsn = os.Getenv("DATABASE_URL")
	}
	if dsn == "" {
		return usageError{"migrate: give --dsn postgres://... (or set DATABASE_URL)"}
	}
	cfg, err := loadConfig(cfgPath)
	if err != nil {
		return err
	}
	path := cfg.Resolve(cfg.Storage.Path)
	if data != "" {
		path = data
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("no bbolt file to migrate at %s: %w", path, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(stdout, "copying %s into postgres %s\n", path, driver.Describe(driver.Config{Driver: driver.Postgres, DSN: dsn}))
	r, err := migrate.BoltToPostgres(ctx, path, dsn, func(line string) { fmt.Fprintln(stdout, "  "+line) })
	if errors.Is(err, store.ErrLocked) {
		return fmt.Errorf("%s is held by a running gateway: stop it first, then migrate", path)
	}
	if r != nil {
		for _, c := range r.Counts {
			fmt.Fprintf(stdout, "%-8s %d in the file, %d verified in postgres\n", c.Kind, c.Source, c.Verified)
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "done: set storage.driver: postgres and storage.dsn, and keep the same secrets key (secrets.key_env or secrets.key_file) so stored provider keys still open")
	return nil
}

// describeScope is a key's scope in one line for keys list.
func describeScope(sc *admin.ScopeView) string {
	if sc == nil {
		return "-"
	}
	var parts []string
	if sc.ExpiresAt != nil {
		parts = append(parts, "expires "+sc.ExpiresAt.Format(time.RFC3339))
	}
	if len(sc.Providers) > 0 {
		parts = append(parts, "providers "+strings.Join(sc.Providers, ","))
	}
	if len(sc.Models) > 0 {
		parts = append(parts, "models "+strings.Join(sc.Models, ","))
	}
	if sc.Budget > 0 {
		parts = append(parts, fmt.Sprintf("budget %d/%s", sc.Budget, sc.BudgetPeriod))
	}
	return strings.Join(parts, "; ")
}

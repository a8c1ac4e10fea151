// Command voxgate is the text-to-speech edge gateway: `voxgate serve` runs
// it; `voxgate keys` and `voxgate secrets` administer it, whether or not a
// gateway is running on the same database.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"

	"github.com/alecthomas/kong"
	"github.com/coreos/go-systemd/v22/daemon"
	"golang.org/x/sys/unix"

	"github.com/voxgate/voxgate/config"
	"github.com/voxgate/voxgate/gateway"
	"github.com/voxgate/voxgate/gateway/admission/auth"
	"github.com/voxgate/voxgate/gateway/edge/admin"
	"github.com/voxgate/voxgate/gateway/provenance"
	"github.com/voxgate/voxgate/gateway/providers/credentials"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/driver"
	"github.com/voxgate/voxgate/gateway/store/migrate"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// The command line is parsed by alecthomas/kong: every command is a struct
// whose fields are its flags and arguments, with their help text in tags,
// so `voxgate COMMAND --help` describes every flag of that command, and
// parsing is done (and refused with exit status 2) before any command runs.

// commandLine is the whole command line.
type commandLine struct {
	Serve   serveCmd   `cmd:"" help:"Run the gateway: serve the HTTP API and run the provider plugins."`
	Keys    keysCmd    `cmd:"" help:"Create, list and revoke API keys, whether or not a gateway is running."`
	Secrets secretsCmd `cmd:"" help:"Store or delete an organization's own provider key (BYOK), encrypted."`
	Config  configCmd  `cmd:"" help:"Check a config file without starting anything."`
	Reload  reloadCmd  `cmd:"" help:"Make the running gateway read its config file again (as SIGHUP does) and print what changed."`
	Migrate migrateCmd `cmd:"" help:"Copy a bbolt database into PostgreSQL (stop the gateway first)."`
	Version versionCmd `cmd:"" help:"Print the version."`
	// FingerprintWorker is the child process a gateway runs for audio
	// fingerprints (gateway/provenance.Workers); not for people.
	FingerprintWorker fingerprintWorkerCmd `cmd:"" name:"fingerprint-worker" hidden:"" help:"Serve audio fingerprints on stdin/stdout for a running gateway (internal)."`
}

const description = `voxgate: a text-to-speech edge gateway.`

// configFlag is the --config flag every command but version takes.
type configFlag struct {
	ConfigFile string `name:"config" default:"gateway.yaml" placeholder:"FILE" help:"The config file (default: ${default}); relative paths inside it are relative to it."`
}

// dataFlag is --data: the storage to use instead of the config's.
type dataFlag struct {
	Data string `placeholder:"DATA" help:"Storage to use instead of the config's: a bbolt file path, or a postgres:// URL (which selects storage.driver postgres)."`
}

// streams are the process's standard streams, bound into every Run.
type streams struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// usageError is a mistake on the command line: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// exitHelp stops parsing once --help has printed: kong calls its Exit
// hook and would otherwise go on to check required flags.
type exitHelp struct{ code int }

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	var c commandLine
	parser, err := kong.New(&c,
		kong.Name("voxgate"),
		kong.Description(description),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(exitHelp{code}) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, FlagsLast: true, NoExpandSubcommands: false, WrapUpperBound: 100}),
		kong.Bind(&streams{stdin: stdin, stdout: stdout, stderr: stderr}),
	)
	if err != nil {
		panic(err) // the cli struct is malformed: a bug, caught by every test
	}
	noCommand := len(args) == 0
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(exitHelp)
			if !ok {
				panic(r)
			}
			code = e.code
			if noCommand {
				code = 2 // the usage was printed because something was missing
			}
		}
	}()
	switch {
	case noCommand:
		parser.Stdout = stderr
		_, _ = parser.Parse([]string{"--help"})
		return 2 // not reached: --help exits through exitHelp
	case args[0] == "help":
		// `voxgate help keys create` is `voxgate keys create --help`.
		args = append(append([]string{}, args[1:]...), "--help")
	case args[0] == "--version" || args[0] == "-v":
		args = []string{"version"}
	}
	ctx, err := parser.Parse(args)
	if err != nil {
		var pe *kong.ParseError
		if errors.As(err, &pe) && pe.Context != nil && pe.Context.Selected() == nil && !strings.HasPrefix(args[0], "-") {
			err = fmt.Errorf("unknown command %q", args[0])
		}
		fmt.Fprintf(stderr, "voxgate: %v\n", err)
		if pe != nil && pe.Context != nil {
			fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", commandPath(pe.Context))
		} else {
			fmt.Fprintln(stderr, "Run 'voxgate --help' for usage.")
		}
		return 2
	}
	if err := ctx.Run(); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "voxgate: %v\nRun '%s --help' for usage.\n", err, commandPath(ctx))
			return 2
		}
		fmt.Fprintf(stderr, "voxgate: %v\n", err)
		return 1
	}
	return 0
}

// commandPath names the command ctx selected, e.g. "voxgate keys create".
func commandPath(ctx *kong.Context) string {
	if n := ctx.Selected(); n != nil {
		return n.FullPath()
	}
	return "voxgate"
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

// serveCmd is `voxgate serve`.
type serveCmd struct {
	configFlag
	Listen string `placeholder:"ADDR" help:"The HTTP listen address, overriding server.listen (e.g. 127.0.0.1:8080, or :8080 for every interface)."`
	dataFlag
	LogLevel string `default:"info" enum:"debug,info,warn,error" help:"The least severe log level written: debug, info, warn or error."`
	DevLog   bool   `help:"Write the log as human-readable console lines instead of JSON (coloured only on a terminal, and never with NO_COLOR set)."`
}

// Help is serve's long description.
func (serveCmd) Help() string {
	return `Runs the gateway until SIGINT or SIGTERM, then finishes in-flight requests
(up to server.shutdown_timeout) and stops. SIGHUP reads the config file
again and swaps it in without dropping a request, or, on any mistake or a
setting that needs a restart, logs why and runs on unchanged (see
'voxgate reload'). Logs go to stderr as JSON lines; the development key of
an org with dev_key: true is printed on stdout at its first successful
start.`
}

// Run implements `voxgate serve`.
func (c *serveCmd) Run(std *streams) error {
	cfg, data, err := config.LoadBytes(c.ConfigFile)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w\n(run from the repository root, or pass --config FILE)", err)
		}
		return err
	}
	if c.Listen != "" {
		if err := config.CheckListen(c.Listen); err != nil {
			return usageError{"--listen: " + err.Error()}
		}
	}
	c.override(cfg)
	// Every request gets a random UUID as its id (and every log row of a
	// fallback attempt or conversation turn another): with the pool, one
	// getrandom call serves 256 of them instead of one system call each
	// on the request path. The bytes still come from crypto/rand; ids are
	// not secrets (API keys are drawn from crypto/rand directly).
	uuid.EnableRandPool()
	log, err := newLogger(std.stderr, c.LogLevel, c.DevLog)
	if err != nil {
		return usageError{err.Error()}
	}
	defer log.Sync() //nolint:errcheck // flushes the buffered log on exit

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// SIGHUP is a reload, from the start: its default action would end
	// the process mid-request. One arriving before the gateway has
	// started waits in the channel and reloads once it has.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	log.Info("starting voxgate", zap.String("version", version), zap.String("config", c.ConfigFile))
	for _, w := range cfg.Warnings {
		log.Warn("config: " + w)
	}
	worker, err := provenance.SelfCommand()
	if err != nil {
		return err
	}
	g, err := gateway.Open(ctx, cfg, gateway.Options{Logger: log, Banner: std.stdout, Version: version,
		Source: c.source, ConfigHash: gateway.Hash(data), FingerprintWorker: worker})
	if err != nil {
		return err
	}
	if err := g.Start(); err != nil {
		_ = g.Shutdown(context.Background())
		return err
	}
	notify(log, daemon.SdNotifyReady, "STATUS=serving on "+g.Addr())
	var stopped error
wait:
	for {
		select {
		case <-hup:
			log.Info("SIGHUP: reloading the configuration", zap.String("config", c.ConfigFile))
			notify(log, daemon.SdNotifyReloading, monotonicUsec())
			rctx, cancel := context.WithTimeout(ctx, cfg.Plugins.StartTimeout.D()+time.Minute)
			v, _ := g.Reload(rctx) // logs its outcome, every mistake included
			cancel()
			notify(log, daemon.SdNotifyReady, "STATUS=serving on "+g.Addr()+"; last reload "+v.Result)
		case <-ctx.Done():
			log.Info("shutting down: finishing in-flight requests")
			break wait
		case err := <-g.Done():
			// Serve returns before Shutdown only when it cannot go on: exit
			// non-zero, so that a supervisor restarts the gateway.
			stopped = fmt.Errorf("the HTTP server stopped unexpectedly: %v", err)
			log.Error("server stopped unexpectedly; shutting down", zap.Error(err))
			break wait
		}
	}
	notify(log, daemon.SdNotifyStopping, "STATUS=draining")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownTimeout.D())
	defer cancel()
	if err := g.Shutdown(sctx); err != nil {
		return err
	}
	return stopped
}

// notify tells systemd (Type=notify, deploy/voxgate.service) the
// gateway's state: READY=1 once it serves, RELOADING=1 then READY=1
// around a reload, so that `systemctl reload` returns when the reload is
// done, and STOPPING=1 when the drain begins. Without $NOTIFY_SOCKET (not
// under systemd) it does nothing.
func notify(log *zap.Logger, state ...string) {
	if _, err := daemon.SdNotify(false, strings.Join(state, "\n")); err != nil {
		log.Warn("sd_notify failed", zap.Error(err))
	}
}

// monotonicUsec is the MONOTONIC_USEC field systemd wants with
// RELOADING=1: CLOCK_MONOTONIC in microseconds.
func monotonicUsec() string {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return "MONOTONIC_USEC=0"
	}
	return "MONOTONIC_USEC=" + strconv.FormatInt(ts.Nano()/1000, 10)
}

// override applies the command line's settings over the file's: at
// start, and to every reload's reading of the file, so that a reload does
// not see --listen or --data as a change.
func (c *serveCmd) override(cfg *config.Config) {
	if c.Listen != "" {
		cfg.Server.Listen = c.Listen
	}
	applyData(cfg, c.Data)
}

// source reads the config file again for a reload (gateway.Source).
func (c *serveCmd) source() (*config.Config, string, error) {
	cfg, data, err := config.LoadBytes(c.ConfigFile)
	hash := ""
	if data != nil {
		hash = gateway.Hash(data)
	}
	if err != nil {
		return nil, hash, err
	}
	c.override(cfg)
	return cfg, hash, nil
}

// reloadCmd is `voxgate reload`.
type reloadCmd struct {
	configFlag
	dataFlag
	Timeout time.Duration `default:"2m" help:"How long to wait for the gateway's answer (a reload that starts plugins waits for them)."`
}

// Help is reload's long description.
func (reloadCmd) Help() string {
	return `Asks the gateway running with this config (through its admin socket) to read
its config file again, check it as 'config check' does, and swap it in
without dropping a request: providers and plugins, organizations, rulesets,
limits, aliases, fallbacks, moderation, the cache's ttl. A mistake, or a
change to a setting only a restart applies (listen addresses, storage, the
shared Redis, the secrets key), refuses the reload: every reason is
printed, the gateway runs on unchanged, and the exit status is 1.
SIGHUP and 'systemctl reload voxgate' do the same.`
}

// Run implements `voxgate reload`.
func (c *reloadCmd) Run(std *streams) error {
	cfg, err := loadConfig(c.ConfigFile)
	if err != nil {
		var es *config.Errors
		if !errors.As(err, &es) || es.Partial == nil {
			return err
		}
		// The file has mistakes, but names the socket: the gateway
		// reports them too, and says it runs on.
		cfg = es.Partial
	}
	applyData(cfg, c.Data) // the socket of a gateway started with --data
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
	defer cancel()
	sock := gateway.AdminSocket(cfg)
	a, err := admin.Dial(ctx, sock)
	if err != nil {
		return fmt.Errorf("no gateway answers on the admin socket %s: is it running with this config?", sock)
	}
	v, err := a.Reload(ctx)
	if errors.Is(err, admin.ErrReloadRefused) {
		for _, m := range v.Mistakes {
			fmt.Fprintln(std.stderr, "  "+m)
		}
		return fmt.Errorf("reload refused (%d mistakes): the gateway runs as it was", len(v.Mistakes))
	}
	if err != nil {
		return err
	}
	if len(v.Changes) == 0 {
		fmt.Fprintf(std.stdout, "reloaded %s (config %s): nothing changed\n", c.ConfigFile, v.Hash)
		return nil
	}
	fmt.Fprintf(std.stdout, "reloaded %s (config %s):\n", c.ConfigFile, v.Hash)
	for _, ch := range v.Changes {
		fmt.Fprintln(std.stdout, "  "+ch)
	}
	return nil
}

// newLogger builds the gateway's logger on w: JSON lines, or with dev a
// console format, coloured only when w is a terminal and NO_COLOR is not
// set (https://no-color.org): escape codes in a file or a pipe make the
// log harder to read and to search.
func newLogger(w io.Writer, level string, dev bool) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	if dev {
		encCfg.EncodeLevel = zapcore.CapitalLevelEncoder
		if colour(w) {
			encCfg.EncodeLevel = zapcore.CapitalColorLevelEncoder
		}
		enc = zapcore.NewConsoleEncoder(encCfg)
	} else {
		enc = zapcore.NewJSONEncoder(encCfg)
	}
	// Buffered: the access log writes a line per request, and a write
	// system call per line sat on the request path. Lines reach w within a
	// second, and Sync (called on exit) flushes the rest. w is wrapped so
	// that its own Sync is not called: the buffer's flush each second
	// would otherwise fsync a log file every second, idle or not (a disk
	// flush a second for nothing; the kernel writes the lines back anyway).
	ws := &zapcore.BufferedWriteSyncer{WS: zapcore.AddSync(struct{ io.Writer }{w}), Size: 256 << 10, FlushInterval: time.Second}
	core := zapcore.NewCore(enc, ws, lvl)
	return zap.New(core), nil
}

// colour reports whether w is a terminal that should get colour.
func colour(w io.Writer) bool {
	if _, off := os.LookupEnv("NO_COLOR"); off {
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
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
// gateway's admin socket when one answers. Memory storage lives inside
// the gateway: without one to ask there is nothing to open.
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
	if driver.Ephemeral(sc) {
		return fmt.Errorf("storage.driver is memory: the data lives inside the running gateway, and none answers on its admin socket %s; start it (voxgate serve) and run this again", gateway.AdminSocket(cfg))
	}
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

// keysCmd is `voxgate keys`.
type keysCmd struct {
	Create keysCreateCmd `cmd:"" help:"Create a key for an organization and print it (only the key, once)."`
	List   keysListCmd   `cmd:"" help:"List keys: id, org, name, prefix, created, status. Never the keys themselves."`
	Revoke keysRevokeCmd `cmd:"" help:"Revoke a key by its id (see 'voxgate keys list'); it stops working at once."`
}

// keysHelp is the long description of the keys commands.
const keysHelp = `While a gateway runs on a bbolt file, this goes through its admin socket;
otherwise it opens the storage itself (PostgreSQL: always, and every
instance applies the change within a second).`

type keysCreateCmd struct {
	configFlag
	dataFlag
	Org       string `placeholder:"ORG" help:"The organization (an id under orgs: in the config, or one made through the admin API). Required unless --admin."`
	Admin     bool   `help:"Make an admin key instead: it calls the admin API (/v1/admin/) and nothing else, and belongs to no organization."`
	Name      string `placeholder:"NAME" help:"A label for the key, shown by 'keys list'."`
	Expires   string `placeholder:"WHEN" help:"The key stops working after this long (720h) or at this time (2027-01-31, or RFC 3339)."`
	Providers string `placeholder:"P,P" help:"The only providers the key may use, comma-separated (others: 403 key_scope_denied)."`
	Models    string `placeholder:"P/M,P/M" help:"The only models the key may use, comma-separated provider/model."`
	Budget    string `placeholder:"N/PERIOD" help:"The key's own credit budget, CREDITS/day or CREDITS/month (e.g. 5000/month)."`
}

func (keysCreateCmd) Help() string { return keysHelp }

// Run implements `voxgate keys create`.
func (c *keysCreateCmd) Run(std *streams) error {
	ctx := context.Background()
	if c.Admin {
		return c.runAdmin(ctx, std)
	}
	if c.Org == "" {
		return usageError{"keys create: missing flags: --org=ORG (or --admin for an admin key)"}
	}
	scope, err := parseScope(c.Expires, c.Providers, c.Models, c.Budget, time.Now())
	if err != nil {
		return usageError{"keys create: " + err.Error()}
	}
	return withBackend(c.ConfigFile, c.Data, func(a *admin.Client) error {
		v, err := a.CreateKey(ctx, c.Org, c.Name, admin.View(&store.APIKey{Scope: scope}).Scope)
		if err != nil {
			return err
		}
		fmt.Fprintln(std.stdout, v.Key)
		return nil
	}, func(cfg *config.Config, st store.Backend) error {
		if cfg.Orgs[c.Org] == nil {
			if _, err := st.GetOrg(ctx, c.Org); errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("organization %q is not in the config nor made through the admin API; add it under orgs: first", c.Org)
			} else if err != nil {
				return err
			}
		}
		plain, _, err := auth.CreateKeyWith(ctx, st, c.Org, c.Name, scope)
		if err != nil {
			return err
		}
		fmt.Fprintln(std.stdout, plain)
		return nil
	})
}

// runAdmin makes an admin key. Scopes do not apply to it: it calls the
// admin API only.
func (c *keysCreateCmd) runAdmin(ctx context.Context, std *streams) error {
	if c.Org != "" || c.Expires != "" || c.Providers != "" || c.Models != "" || c.Budget != "" {
		return usageError{"keys create --admin: an admin key belongs to no organization and has no scope; drop --org, --expires, --providers, --models and --budget"}
	}
	return withBackend(c.ConfigFile, c.Data, func(a *admin.Client) error {
		v, err := a.CreateAdminKey(ctx, c.Name)
		if err != nil {
			return err
		}
		fmt.Fprintln(std.stdout, v.Key)
		return nil
	}, func(_ *config.Config, st store.Backend) error {
		plain, _, err := auth.CreateAdminKey(ctx, st, c.Name)
		if err != nil {
			return err
		}
		fmt.Fprintln(std.stdout, plain)
		return nil
	})
}

type keysListCmd struct {
	configFlag
	dataFlag
	Org string `placeholder:"ORG" help:"Only this organization's keys."`
}

func (keysListCmd) Help() string { return keysHelp }

// Run implements `voxgate keys list`.
func (c *keysListCmd) Run(std *streams) error {
	ctx := context.Background()
	print := func(keys []admin.KeyView) {
		tw := tabwriter.NewWriter(std.stdout, 0, 4, 2, ' ', 0)
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
	return withBackend(c.ConfigFile, c.Data, func(a *admin.Client) error {
		keys, err := a.ListKeys(ctx, c.Org)
		if err != nil {
			return err
		}
		print(keys)
		return nil
	}, func(_ *config.Config, st store.Backend) error {
		keys, err := st.ListKeys(ctx, c.Org)
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
}

type keysRevokeCmd struct {
	ID string `arg:"" name:"KEY_ID" help:"The key's id (the first column of 'voxgate keys list')."`
	configFlag
	dataFlag
}

func (keysRevokeCmd) Help() string { return keysHelp }

// Run implements `voxgate keys revoke`.
func (c *keysRevokeCmd) Run(std *streams) error {
	ctx := context.Background()
	done := func() { fmt.Fprintf(std.stdout, "revoked %s\n", c.ID) }
	return withBackend(c.ConfigFile, c.Data, func(a *admin.Client) error {
		if _, err := a.RevokeKey(ctx, c.ID); err != nil {
			return err
		}
		done()
		return nil
	}, func(_ *config.Config, st store.Backend) error {
		if _, err := st.RevokeKey(ctx, c.ID); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("no key %s (see `voxgate keys list`)", c.ID)
			}
			return err
		}
		done()
		return nil
	})
}

// secretsCmd is `voxgate secrets`.
type secretsCmd struct {
	Set    secretsSetCmd    `cmd:"" help:"Store an organization's own key for a provider, read from stdin (not echoed on a terminal)."`
	Delete secretsDeleteCmd `cmd:"" help:"Delete an organization's stored key for a provider."`
}

// secretFlags name whose key it is.
type secretFlags struct {
	configFlag
	dataFlag
	Org      string `required:"" placeholder:"ORG" help:"The organization."`
	Provider string `required:"" placeholder:"PROVIDER" help:"The provider id (under providers: in the config)."`
}

type secretsSetCmd struct{ secretFlags }

// Help is the long description of `secrets set`.
func (secretsSetCmd) Help() string {
	return `The key is encrypted (AES-256-GCM, bound to org and provider) with the
secrets key (secrets.key_env or secrets.key_file) and never printed again.
Example: printf %s "$KEY" | voxgate secrets set --org acme --provider elevenlabs`
}

// Run implements `voxgate secrets set`.
func (c *secretsSetCmd) Run(std *streams) error {
	ctx := context.Background()
	value, err := readSecret(std.stdin, std.stderr)
	if err != nil {
		return err
	}
	stored := func() { fmt.Fprintf(std.stdout, "stored the %s key of org %s (encrypted)\n", c.Provider, c.Org) }
	return withBackend(c.ConfigFile, c.Data, func(a *admin.Client) error {
		if err := a.SetSecret(ctx, c.Org, c.Provider, value); err != nil {
			return err
		}
		stored()
		return nil
	}, func(cfg *config.Config, st store.Backend) error {
		s, err := sealerFor(ctx, cfg, st)
		if err != nil {
			return err
		}
		if err := credentials.StoreBYOK(ctx, st, s, gateway.CredentialsPolicy(cfg), c.Org, c.Provider, value); err != nil {
			return err
		}
		stored()
		return nil
	})
}

type secretsDeleteCmd struct{ secretFlags }

// Run implements `voxgate secrets delete`.
func (c *secretsDeleteCmd) Run(std *streams) error {
	ctx := context.Background()
	return withBackend(c.ConfigFile, c.Data, func(a *admin.Client) error {
		return a.DeleteSecret(ctx, c.Org, c.Provider)
	}, func(_ *config.Config, st store.Backend) error {
		return credentials.DeleteBYOK(ctx, st, c.Org, c.Provider)
	})
}

// readSecret reads a key from stdin without echo on a terminal.
func readSecret(stdin io.Reader, stderr io.Writer) (string, error) {
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(stderr, "provider key: ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(stderr)
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

// sealerFor is the CLI's sealer for st, under the secrets key guard
// (gateway.OpenSealer): another key than the one that sealed st's
// secrets is refused before anything is written.
func sealerFor(ctx context.Context, cfg *config.Config, st store.Backend) (*credentials.Sealer, error) {
	return gateway.OpenSealer(ctx, cfg, st)
}

// configCmd is `voxgate config`.
type configCmd struct {
	Check configCheckCmd `cmd:"" help:"Check a config file as 'serve' would, without starting anything: every mistake in one run."`
}

type configCheckCmd struct {
	configFlag
}

// Help is the long description of `config check`.
func (configCheckCmd) Help() string {
	return `Reports every mistake in one run: unknown keys, bad values, references to
rulesets or providers that do not exist, every provider block's settings as
its plugin judges them (each plugin is started once to check them, nothing
is applied), and what a start would find missing on this machine (plugin
binaries, a writable storage path, the secrets key, a short enough admin
socket path); when the store can be read without disturbing a running
gateway, the secrets key is checked against the key that sealed the store's
provider keys, and the provenance signing key against the one the store
records (refused as a start refuses it, unless provenance.rotate_key). ${VAR} references to unset variables are warnings. Exit
status 1 when there is a mistake.`
}

// Run implements `voxgate config check`.
func (c *configCheckCmd) Run(std *streams) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cfg, err := loadConfig(c.ConfigFile)
	var es *config.Errors
	switch {
	case errors.As(err, &es):
		// What the file names is checked too, as far as it decoded: one
		// run shows every mistake.
		if es.Partial != nil {
			warnings, cerr := gateway.Check(ctx, es.Partial, nil)
			if cerr != nil {
				es.Errs = append(es.Errs, unjoin(cerr)...)
				config.SortByLine(es.Errs)
			}
			es.Warnings = append(es.Warnings, warnings...)
		}
		warn(std.stderr, es.Warnings)
		return es
	case err != nil:
		return err
	}
	warnings, err := gateway.Check(ctx, cfg, nil)
	warn(std.stderr, append(cfg.Warnings, warnings...))
	if err != nil {
		return &config.Errors{File: c.ConfigFile, Errs: unjoin(err)}
	}
	fmt.Fprintf(std.stdout, "%s is valid: %d provider(s), %d org(s), %d moderation ruleset(s)\n", c.ConfigFile, len(cfg.Providers), len(cfg.Orgs), len(cfg.Moderation.Rulesets))
	return nil
}

func warn(w io.Writer, warnings []string) {
	for _, m := range warnings {
		fmt.Fprintln(w, "warning: "+m)
	}
}

// unjoin splits an errors.Join error into its parts.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// migrateCmd is `voxgate migrate`: it copies the bbolt file into
// PostgreSQL, resumably, verified by counts. The gateway must be stopped
// (it holds the file's lock).
type migrateCmd struct {
	configFlag
	To   string `required:"" enum:"postgres" placeholder:"DRIVER" help:"The destination driver: postgres."`
	DSN  string `name:"dsn" env:"DATABASE_URL" placeholder:"URL" help:"The destination PostgreSQL URL."`
	Data string `placeholder:"PATH" help:"The bbolt file to copy, instead of the config's storage.path."`
}

// Help is migrate's long description.
func (migrateCmd) Help() string {
	return `It can be stopped and run again (it resumes), and ends by counting every
kind of record on both sides. Keep the same secrets key afterwards so that
stored provider keys still open. Long-form jobs are copied as records (a
running one is resumed by the first PostgreSQL instance's worker); their
files stay in jobs.dir: share it between the instances (docs/jobs.md). The
provenance signing key's fingerprint is recorded on PostgreSQL, so give its
instances the same key; a database that records another key is refused,
before anything is copied (docs/provenance.md).`
}

// Run implements `voxgate migrate`.
func (c *migrateCmd) Run(std *streams) error {
	stdout := std.stdout
	if c.DSN == "" {
		return usageError{"migrate: give --dsn postgres://... (or set DATABASE_URL)"}
	}
	cfg, err := loadConfig(c.ConfigFile)
	if err != nil {
		return err
	}
	path := cfg.Resolve(cfg.Storage.Path)
	if c.Data != "" {
		path = c.Data
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("no bbolt file to migrate at %s: %w", path, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(stdout, "copying %s into postgres %s\n", path, driver.Describe(driver.Config{Driver: driver.Postgres, DSN: c.DSN}))
	r, err := migrate.BoltToPostgres(ctx, path, c.DSN, func(line string) { fmt.Fprintln(stdout, "  "+line) })
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
	fmt.Fprintln(stdout, "and give the PostgreSQL instances this deployment's provenance signing key (provenance.key_env, or the key file: data/provenance.key by default): the key the file recorded is recorded on PostgreSQL, and a start with another is refused")
	fmt.Fprintln(stdout, "jobs' files are not copied: give the PostgreSQL instances this jobs.dir (a shared file system for several; docs/jobs.md, Moving from bbolt to PostgreSQL)")
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

// versionCmd is `voxgate version` (also --version, -v).
type versionCmd struct{}

// fingerprintWorkerCmd is `voxgate fingerprint-worker`.
type fingerprintWorkerCmd struct{}

// Run serves fingerprint requests until the gateway closes stdin.
func (fingerprintWorkerCmd) Run(std *streams) error {
	return provenance.ServeWorker(std.stdin, std.stdout)
}

// Run implements `voxgate version`.
func (versionCmd) Run(std *streams) error {
	fmt.Fprintln(std.stdout, "voxgate", version)
	return nil
}

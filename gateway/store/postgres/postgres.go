// Package postgres is the storage backend that several gateway instances
// share: PostgreSQL through pgx.
//
// # Schema and migrations
//
// The schema is plain SQL in migrations/, embedded in the binary and
// applied in order at Open, each file in its own transaction, recorded in
// voxgate_schema_version. Open takes a session advisory lock first, so
// instances starting together apply each migration once. A database newer
// than the binary is refused rather than misread. Embedded files over a
// migration library: the schema is ours alone, migrations only go forward,
// and two dozen lines keep a dependency (and its own bookkeeping tables)
// out of every deployment.
//
// # Layout and invariants
//
// Every table is keyed by organization first, so each query names its
// organization and an id of another one is simply absent (ErrNotFound).
// Times are bigint nanoseconds (see migrations/0001_initial.sql).
//
// Request logs live in a table partitioned by UTC day. Partitions are
// created on demand before a batch lands in them (under an advisory lock,
// so instances do not race) and dropped whole by PurgeLogs. Each filter of
// GET /v1/logs has an index ending in (ts, seq), and a list query is one
// descending range scan from its position with LIMIT: partitions are range
// partitions on ts, so the planner appends them in order and stops after
// the page. A batch goes in with COPY in one transaction.
//
// The usage rollup (usage_daily, one row per organization, day, provider,
// model and key) is upserted in the transaction that copies a batch of
// log rows in, its groups in one sorted order so that instances writing
// at once cannot deadlock; GET /v1/usage reads a range of its primary key.
//
// Key changes are announced with NOTIFY on channel voxgate_keys in the
// transaction that makes them, and changes of voices, dictionaries, rules
// and secrets by triggers on channel voxgate_changes
// (migrations/0007_change_notify.sql); Watch listens on both, so every
// instance's in-memory key table and record cache follow within a second.
//
// A failure to reach the server (refused, reset, timed out) is wrapped in
// store.ErrUnavailable, which the HTTP layer answers with 503; the pool
// reconnects by itself when the server is back.
package postgres

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/voxgate/voxgate/gateway/store"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Options tune a Store.
type Options struct {
	store.Options
	// MaxConns bounds the connection pool (default 16).
	MaxConns int
	// OpTimeout bounds one storage call, so a server that stops answering
	// fails requests instead of holding them (default 10 s).
	OpTimeout time.Duration
}

// Store is the PostgreSQL backend. It is safe for concurrent use.
type Store struct {
	pool      *pgxpool.Pool
	dsn       string
	where     string
	now       func() time.Time
	retention time.Duration
	opTimeout time.Duration
	secret    []byte
	parts     *partitions
}

// Store satisfies the whole storage contract, and the optional watch.
var (
	_ store.Backend    = (*Store)(nil)
	_ store.KeyWatcher = (*Store)(nil)
	_ store.Watcher    = (*Store)(nil)
)

const (
	secretLen  = 32
	keyChannel = "voxgate_keys"
	// migrateLock is the advisory lock id taken while migrating ("voxg").
	migrateLock = 0x766f7867
)

// Open connects to dsn, applies pending migrations and loads the
// deployment secret. Errors name the server (Describe), never the
// password.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	where := Describe(dsn)
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres %s: bad DSN: %w", where, redact(err, dsn))
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = 16
	}
	if opts.OpTimeout <= 0 {
		opts.OpTimeout = 10 * time.Second
	}
	pc.MaxConns = int32(opts.MaxConns)
	if pc.ConnConfig.ConnectTimeout == 0 {
		pc.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	pc.HealthCheckPeriod = 5 * time.Second
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres %s: %w", where, redact(err, dsn))
	}
	s := &Store{
		pool: pool, dsn: dsn, where: where,
		now: opts.Clock(), retention: opts.Retention(), opTimeout: opts.OpTimeout,
	}
	s.parts = newPartitions()
	if err := s.init(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres %s: %w", where, redact(err, dsn))
	}
	return s, nil
}

// init migrates and loads the secret on one connection that holds the
// migration lock.
func (s *Store) init(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return classify(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLock); err != nil {
		return classify(err)
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", migrateLock) //nolint:errcheck // released with the session anyway
	if err := migrate(ctx, conn.Conn()); err != nil {
		return err
	}
	secret := make([]byte, secretLen)
	_, _ = rand.Read(secret) // crypto/rand.Read never fails; it aborts the process instead.
	if _, err := conn.Exec(ctx, "INSERT INTO voxgate_meta (name, value) VALUES ('secret', $1) ON CONFLICT (name) DO NOTHING", secret); err != nil {
		return fmt.Errorf("store secret: %w", classify(err))
	}
	if err := conn.QueryRow(ctx, "SELECT value FROM voxgate_meta WHERE name = 'secret'").Scan(&s.secret); err != nil {
		return fmt.Errorf("load secret: %w", classify(err))
	}
	if len(s.secret) != secretLen {
		return fmt.Errorf("corrupt deployment secret (%d bytes)", len(s.secret))
	}
	return nil
}

// migrate applies the embedded migrations newer than the recorded version.
func migrate(ctx context.Context, conn *pgx.Conn) error {
	if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS voxgate_schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"); err != nil {
		return fmt.Errorf("schema version table: %w", classify(err))
	}
	var current int
	if err := conn.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM voxgate_schema_version").Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", classify(err))
	}
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(files)
	latest := 0
	for _, f := range files {
		v, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(f, "migrations/"), "_", 2)[0])
		if err != nil {
			return fmt.Errorf("migration %s: name must start with its version number", f)
		}
		latest = max(latest, v)
		if v <= current {
			continue
		}
		sql, err := migrations.ReadFile(f)
		if err != nil {
			return err
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO voxgate_schema_version (version) VALUES ($1)", v)
			return err
		})
		if err != nil {
			return fmt.Errorf("apply migration %s: %w", f, classify(err))
		}
	}
	if current > latest {
		return fmt.Errorf("database schema version %d is newer than this binary's %d", current, latest)
	}
	return nil
}

// Close closes the pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Secret returns a copy of the deployment secret stored in the database,
// the same on every instance.
func (s *Store) Secret() []byte { return append([]byte(nil), s.secret...) }

// Describe names a DSN's server for messages: user@host:port/database,
// never the password.
func Describe(dsn string) string {
	c, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "(unparsable DSN)"
	}
	host := c.Host
	if strings.HasPrefix(host, "/") {
		host = "unix:" + host
	}
	return fmt.Sprintf("%s@%s/%s", c.User, net.JoinHostPort(host, strconv.Itoa(int(c.Port))), c.Database)
}

// op bounds one storage call by the operation timeout.
func (s *Store) op(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.opTimeout)
}

// redact removes the DSN's password from an error's text, should a driver
// error ever quote it.
func redact(err error, dsn string) error {
	c, perr := pgconn.ParseConfig(dsn)
	if perr != nil || c.Password == "" || !strings.Contains(err.Error(), c.Password) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), c.Password, "[redacted]"))
}

// classify maps driver errors to store errors: a unique violation is
// ErrExists, a server that cannot be reached is ErrUnavailable. Errors the
// server reported about the statement itself stay as they are.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch {
		case pg.Code == "23505":
			return fmt.Errorf("%w: %s", store.ErrExists, pg.ConstraintName)
		case pg.Code == "22021", pg.Code == "22P05":
			// character_not_in_repertoire (a NUL or invalid UTF-8 in text),
			// untranslatable_character (\u0000 in jsonb): writes check
			// their text first (store.ValidText), so this is a lookup by
			// such text, which can match nothing.
			return fmt.Errorf("%w: %w", store.ErrInvalidText, err)
		case strings.HasPrefix(pg.Code, "08"), pg.Code == "57P01", pg.Code == "57P02", pg.Code == "57P03", pg.Code == "53300":
			// Connection exceptions, admin/crash shutdown, cannot connect
			// now, too many connections: the server is going or not there.
			return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
		}
		return err
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	// Everything else is the way to the server: dial errors, resets, an
	// operation or connect timeout, a closed pool.
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}

// nanos converts a time to the stored nanoseconds.
func nanos(t time.Time) int64 { return t.UnixNano() }

// fromNanos converts stored nanoseconds to a UTC time.
func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

func requireIDs(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			return fmt.Errorf("store: %s is required", pairs[i])
		}
	}
	return nil
}

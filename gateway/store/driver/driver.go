// Package driver opens the storage backend a deployment configures. It is
// the one place that knows every backend, so the rest of the gateway (and
// the CLI) names none of them.
package driver

import (
	"context"
	"fmt"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
	"github.com/voxgate/voxgate/gateway/store/memory"
	"github.com/voxgate/voxgate/gateway/store/postgres"
)

// Names of the drivers, as storage.driver spells them.
const (
	Bolt     = "bolt"
	Postgres = "postgres"
	// Memory keeps everything in the process's memory, for tests and
	// trying the gateway out: every record is lost when it exits.
	Memory = "memory"
)

// Config is the typed view of the storage settings.
type Config struct {
	// Driver is Bolt, Postgres or Memory.
	Driver string
	// Path is the bbolt file (Bolt).
	Path string
	// DSN is the PostgreSQL connection string (Postgres).
	DSN string
	// MaxConns bounds the PostgreSQL pool.
	MaxConns int
	// LogRetention is how long request log rows are kept.
	LogRetention time.Duration
}

// Open opens the configured backend. The caller closes it.
func Open(ctx context.Context, c Config) (store.Backend, error) {
	opts := store.Options{LogRetention: c.LogRetention}
	switch c.Driver {
	case Bolt, "":
		return bolt.Open(c.Path, opts)
	case Postgres:
		return postgres.Open(ctx, c.DSN, postgres.Options{Options: opts, MaxConns: c.MaxConns})
	case Memory:
		return memory.New(opts), nil
	}
	return nil, fmt.Errorf("unknown storage driver %q (want %q, %q or %q)", c.Driver, Bolt, Postgres, Memory)
}

// Ephemeral reports whether c's data goes with the process that opened it
// (Memory): a start must say so loudly, and a command run beside the
// gateway cannot open the gateway's data, only ask the gateway.
func Ephemeral(c Config) bool { return c.Driver == Memory }

// Describe names where c keeps its data for logs and errors: the file of
// Bolt, the host and database of Postgres (never its password), and that
// Memory keeps it nowhere.
func Describe(c Config) string {
	switch c.Driver {
	case Postgres:
		return "postgres " + postgres.Describe(c.DSN)
	case Memory:
		return "memory (nothing is kept when the process exits)"
	}
	return "bolt " + c.Path
}

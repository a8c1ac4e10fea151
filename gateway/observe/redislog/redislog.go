// Package redislog sends the Redis client's own log lines (go-redis
// writes them with the standard library's log package, as plain text on
// stderr) through zap, so that they are JSON lines like every other line
// of the gateway's log.
package redislog

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// Logger adapts a zap.Logger to go-redis's logging interface
// (redis.SetLogger). The client's lines report trouble (a pool that
// cannot dial, a pubsub that reconnects), so they are warnings.
type Logger struct {
	log *zap.Logger
}

// New returns a Logger writing to log.
func New(log *zap.Logger) *Logger { return &Logger{log: log} }

// Printf implements go-redis's internal.Logging.
func (l *Logger) Printf(_ context.Context, format string, v ...any) {
	l.log.Warn(strings.TrimSpace(fmt.Sprintf(format, v...)))
}

// Install makes log the Redis client's logger. go-redis offers only a
// process-wide logger (redis.SetLogger), so the gateway installs it once
// at start, before it makes its clients; a later call replaces it.
func Install(log *zap.Logger) {
	redis.SetLogger(New(log))
}

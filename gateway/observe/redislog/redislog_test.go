package redislog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/voxgate/voxgate/gateway/observe/redislog"
)

// TestLinesAreJSON: what the Redis client logs comes out as one zap JSON
// line a message, at warn level, with the logger's name.
func TestLinesAreJSON(t *testing.T) {
	var buf bytes.Buffer
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	log := zap.New(zapcore.NewCore(enc, zapcore.AddSync(&buf), zap.DebugLevel)).Named("redis")
	var l interface {
		Printf(context.Context, string, ...any)
	} = redislog.New(log)
	l.Printf(context.Background(), "redis: %s:%d: connection pool: failed to dial after %d attempts: %v\n", "127.0.0.1", 1, 5, "refused")
	_ = log.Sync()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines: %q", len(lines), buf.String())
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatalf("not JSON: %q", lines[0])
	}
	if m["level"] != "warn" || m["logger"] != "redis" || m["msg"] != "redis: 127.0.0.1:1: connection pool: failed to dial after 5 attempts: refused" {
		t.Errorf("line %v", m)
	}
	// And it is what the client takes.
	redis.SetLogger(redislog.New(log))
}

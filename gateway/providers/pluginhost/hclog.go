package pluginhost

import (
	"bytes"
	"io"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/zap"
)

// newHCLogger returns the hclog.Logger go-plugin needs, writing into zap.
// go-plugin re-logs each line a plugin prints on stderr through it, so
// plugin output lands in the gateway's structured log with the plugin name.
// A writer bridge (rather than a full hclog.Logger implementation over zap)
// keeps this to a few lines; the level is read back from hclog's prefix.
func newHCLogger(log *zap.Logger, name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:            name,
		Level:           hclog.Debug,
		Output:          zapWriter{log},
		DisableTime:     true,
		IncludeLocation: false,
	})
}

type zapWriter struct{ log *zap.Logger }

var levels = []struct {
	tag []byte
	lvl func(*zap.Logger) func(string, ...zap.Field)
}{
	{[]byte("[ERROR]"), func(l *zap.Logger) func(string, ...zap.Field) { return l.Error }},
	{[]byte("[WARN]"), func(l *zap.Logger) func(string, ...zap.Field) { return l.Warn }},
	{[]byte("[INFO]"), func(l *zap.Logger) func(string, ...zap.Field) { return l.Info }},
}

func (w zapWriter) Write(p []byte) (int, error) {
	line := bytes.TrimSpace(p)
	logf := w.log.Debug
	for _, l := range levels {
		if i := bytes.Index(line, l.tag); i >= 0 && i < 8 {
			logf = l.lvl(w.log)
			line = bytes.TrimSpace(line[i+len(l.tag):])
			break
		}
	}
	if i := bytes.Index(line, []byte("[DEBUG]")); i >= 0 && i < 8 {
		line = bytes.TrimSpace(line[i+7:])
	}
	logf(string(line))
	return len(p), nil
}

var _ io.Writer = zapWriter{}

package sdktest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/voxgate/voxgate/sdk"
)

// StartPlugin launches the provider plugin binary at binaryPath the way the
// gateway does (go-plugin, gRPC, AutoMTLS) and returns the host-side
// Provider. env entries ("KEY=value") are added to the plugin's
// environment, over the test's own. The process is killed at tb.Cleanup;
// its log (go-plugin's and the plugin's stderr) goes to tb.Log if the test
// failed.
func StartPlugin(tb testing.TB, binaryPath string, env ...string) sdk.Provider {
	tb.Helper()
	p, err := sdk.DispenseProvider(newClient(tb, binaryPath, env))
	if err != nil {
		tb.Fatalf("start provider plugin %s: %v", binaryPath, err)
	}
	return p
}

// StartModerator launches a moderation plugin binary like StartPlugin and
// returns the host-side Moderator.
func StartModerator(tb testing.TB, binaryPath string, env ...string) sdk.Moderator {
	tb.Helper()
	m, err := sdk.DispenseModerator(newClient(tb, binaryPath, env))
	if err != nil {
		tb.Fatalf("start moderator plugin %s: %v", binaryPath, err)
	}
	return m
}

func newClient(tb testing.TB, binaryPath string, env []string) *plugin.Client {
	cmd := exec.Command(binaryPath)
	// Ours after the host's so that ours win (exec keeps the last of
	// duplicate keys); go-plugin adds its magic cookie after both.
	cmd.Env = append(os.Environ(), env...)
	cfg := sdk.ClientConfig(cmd)
	cfg.SkipHostEnv = true
	out := &testLog{tb: tb}
	cfg.Logger = hclog.New(&hclog.LoggerOptions{
		Name: filepath.Base(binaryPath),
		// Debug is the level at which go-plugin relays the plugin's plain
		// stderr (a panic's stack trace, say).
		Level:  hclog.Debug,
		Output: out,
	})
	c := plugin.NewClient(cfg)
	tb.Cleanup(func() {
		c.Kill()
		out.close()
	})
	return c
}

// testLog keeps the plugin's log (go-plugin's own lines and the plugin's
// stderr) and hands it to tb.Log when the test failed: a passing test stays
// quiet, also in benchmarks, whose logs are always printed. It is bounded
// so that a chatty plugin cannot eat the test's memory.
type testLog struct {
	tb      testing.TB
	mu      sync.Mutex
	buf     []byte
	dropped int
}

// maxTestLog is how much log testLog keeps; older lines are dropped.
const maxTestLog = 256 << 10

func (w *testLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - maxTestLog; over > 0 {
		w.buf = w.buf[over:]
		w.dropped += over
	}
	return len(p), nil
}

// close reports the log if the test failed; later writes (go-plugin's
// goroutines may outlive the test) are kept but never reported, since
// tb.Log panics after the test ended.
func (w *testLog) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.tb.Failed() || len(w.buf) == 0 {
		return
	}
	if w.dropped > 0 {
		w.tb.Logf("plugin log (first %d bytes dropped):\n%s", w.dropped, w.buf)
	} else {
		w.tb.Logf("plugin log:\n%s", w.buf)
	}
	w.buf = nil
}

// BuildPlugin compiles the main package pkg (an import path, or a
// directory like ".") into dir with `go build` and returns the binary's
// path. Call it once per test binary, from TestMain or under a sync.Once:
// linking takes seconds.
func BuildPlugin(ctx context.Context, pkg, dir string) (string, error) {
	name := filepath.Base(pkg)
	if pkg == "." || name == "." {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("build %s: %w", pkg, err)
		}
		name = filepath.Base(wd)
	}
	out := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, msg)
	}
	return out, nil
}

// MainWithPlugin is for a plugin's TestMain: it builds the plugin package
// in the current directory into a temporary directory, stores the binary's
// path in *path, runs the tests and returns their exit code:
//
//	var pluginPath string
//
//	func TestMain(m *testing.M) { os.Exit(sdktest.MainWithPlugin(m, &pluginPath)) }
func MainWithPlugin(m *testing.M, path *string) int {
	dir, err := os.MkdirTemp("", "voxgate-plugin-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if *path, err = BuildPlugin(context.Background(), ".", dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

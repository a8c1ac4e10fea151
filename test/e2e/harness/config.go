package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/config"
)

// ESpeakConfig is BaseConfig with eSpeak, enabled for both orgs:
// saving a voice asks the provider for its voice list, which an org may
// do only for a provider it has enabled.
const ESpeakConfig = `
server:
  listen: 127.0.0.1:0
  max_body_bytes: 65536
storage:
  path: %DIR%/voxgate.db
  log_batch_size: 64
plugins:
  dir: %BIN%/plugins
providers:
  espeak: {plugin: voxgate-espeak, managed: true}
orgs:
  acme:
    providers: {espeak: {enabled: true}}
  globex:
    providers: {espeak: {enabled: true}}
`

// SpeechConfig runs the real eSpeak plugin and the test-kit plugin.
const SpeechConfig = `
server:
  listen: 127.0.0.1:0
  max_body_bytes: 65536
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
  health_interval: 1s
providers:
  espeak: {plugin: voxgate-espeak, managed: true, instances: 1, credits_per_1k_chars: 2}
  testkit:
    plugin: %BIN%/testplugins/voxgate-testplugin
    managed: true
    timeout: 2s
    call_log: %DIR%/calls.jsonl
    max_text_chars: "100"
    timestamps: native
orgs:
  acme:
    providers:
      espeak: {enabled: true}
      testkit: {enabled: true}
  globex:
    providers:
      espeak: {enabled: false}
`

// BaseConfig is the YAML every test gateway starts from; extra is appended
// under the top level (providers:, moderation: ... blocks).
const BaseConfig = `
server:
  listen: 127.0.0.1:0
  max_body_bytes: 65536
storage:
  path: %DIR%/voxgate.db
  log_batch_size: 64
plugins:
  dir: %BIN%/plugins
orgs:
  acme:
    providers: {}
  globex:
    providers: {}
`

// BinDir is where `make build` put the binaries: $VOXGATE_BIN_DIR (the
// Makefile sets it), else bin/ at the module's root.
func BinDir(t testing.TB) string {
	if d := os.Getenv("VOXGATE_BIN_DIR"); d != "" {
		return d
	}
	return Path(t, "bin")
}

// Path is a path inside the repository (elems joined under the module's
// root), so that a test finds bin/, test/jsclient or docs/ whatever the
// depth of its package.
func Path(t testing.TB, elems ...string) string {
	return filepath.Join(append([]string{Root(t)}, elems...)...)
}

// Root is the module's root: the nearest folder up from the test's
// working directory (its package's folder) that holds go.mod.
func Root(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		if filepath.Dir(dir) == dir {
			t.Fatalf("no go.mod above %s", wd)
		}
	}
}

// testConfig expands the placeholders of a test config.
func testConfig(t testing.TB, yaml, dir string) *config.Config {
	t.Helper()
	yaml = strings.ReplaceAll(yaml, "%DIR%", dir)
	yaml = strings.ReplaceAll(yaml, "%BIN%", BinDir(t))
	cfg, err := config.Parse([]byte(yaml), os.LookupEnv)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	cfg.Dir = dir
	return cfg
}

package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
)

// cliIn runs the CLI with stdin and extra environment. A command that
// should have refused but runs on (a serve that started) is killed after
// 30 seconds and fails the test by its exit code.
func cliIn(t *testing.T, stdin string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

func guardConfig(t *testing.T, dir, secrets string) string {
	t.Helper()
	path := filepath.Join(dir, "gateway.yaml")
	cfg := fmt.Sprintf(`server:
  listen: 127.0.0.1:0
storage:
  path: ./data/voxgate.db
plugins:
  dir: %s
providers:
  espeak: {plugin: voxgate-espeak, managed: true}
orgs:
  acme:
    providers:
      espeak: {enabled: true, byok: true}
  default:
    providers:
      espeak: {enabled: true}
%s`, pluginsDir(), secrets)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSecretsKeyGuard: the first stored provider key records the secrets
// key's fingerprint; then the CLI, `config check` and `serve` with
// another key refuse, naming where the key came from; a lost key file is
// not replaced by a new one.
func TestSecretsKeyGuard(t *testing.T) {
	dir := t.TempDir()
	cfg := guardConfig(t, dir, "")
	keyFile := filepath.Join(dir, "data", "secrets.key")
	if out, stderr, code := cliIn(t, "sk-acme-1234", nil, "secrets", "set", "--config", cfg, "--org", "acme", "--provider", "espeak"); code != 0 {
		t.Fatalf("first secrets set: %d %s %s", code, out, stderr)
	}
	good, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatalf("no key file made for an empty store: %v", err)
	}
	stray := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)) + "\n"
	if err := os.WriteFile(keyFile, []byte(stray), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"secrets", "set", "--config", cfg, "--org", "acme", "--provider", "espeak"},
		{"config", "check", "--config", cfg},
		{"serve", "--config", cfg},
	} {
		out, stderr, code := cliIn(t, "sk-stray-9999", nil, args...)
		if code != 1 || !strings.Contains(stderr, "wrong secrets key") || !strings.Contains(stderr, keyFile) {
			t.Errorf("%s with another key: code %d, %s %s", args[0], code, out, stderr)
		}
	}
	// The lost key file is not made anew: the store holds secrets.
	_ = os.Remove(keyFile)
	for _, args := range [][]string{{"config", "check", "--config", cfg}, {"serve", "--config", cfg}} {
		out, stderr, code := cliIn(t, "", nil, args...)
		if code != 1 || !strings.Contains(stderr, keyFile) || !strings.Contains(stderr, "does not exist") {
			t.Errorf("%s without the key file: code %d, %s %s", args[0], code, out, stderr)
		}
	}
	if _, err := os.Stat(keyFile); !os.IsNotExist(err) {
		t.Fatalf("a new key file was made for a store that holds secrets (%v)", err)
	}
	// The right key, from the environment this time, works.
	env := []string{"VOXGATE_TEST_GUARD_KEY=" + strings.TrimSpace(string(good))}
	cfg = guardConfig(t, dir, "secrets:\n  key_env: VOXGATE_TEST_GUARD_KEY\n")
	if out, stderr, code := cliIn(t, "", env, "config", "check", "--config", cfg); code != 0 {
		t.Errorf("config check with the right key: %d %s %s", code, out, stderr)
	}
	if out, stderr, code := cliIn(t, "sk-acme-5678", env, "secrets", "set", "--config", cfg, "--org", "acme", "--provider", "espeak"); code != 0 {
		t.Errorf("secrets set with the right key: %d %s %s", code, out, stderr)
	}
}

// TestSecretsKeyEnvUnset: a named key_env that is not set stops serve and
// fails config check, and makes no key file.
func TestSecretsKeyEnvUnset(t *testing.T) {
	dir := t.TempDir()
	cfg := guardConfig(t, dir, "secrets:\n  key_env: VOXGATE_TEST_UNSET_SECRETS_KEY\n")
	for _, args := range [][]string{{"config", "check", "--config", cfg}, {"serve", "--config", cfg}} {
		out, stderr, code := cliIn(t, "", nil, args...)
		if code != 1 || !strings.Contains(stderr, "$VOXGATE_TEST_UNSET_SECRETS_KEY") || !strings.Contains(stderr, "not set") {
			t.Errorf("%s: code %d, %s %s", args[0], code, out, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "secrets.key")); !os.IsNotExist(err) {
		t.Errorf("a key file was made although key_env is named (%v)", err)
	}
}

// TestSecretsCommandsFollowTheAPI: secrets set refuses an organization
// that may not bring its own key (the API's 403 byok_not_allowed rule),
// and secrets delete leaves no record of the key behind.
func TestSecretsCommandsFollowTheAPI(t *testing.T) {
	dir := t.TempDir()
	cfg := guardConfig(t, dir, "")
	out, stderr, code := cliIn(t, "sk-default", nil, "secrets", "set", "--config", cfg, "--org", "default", "--provider", "espeak")
	if code != 1 || !strings.Contains(stderr, "does not bring its own espeak key") {
		t.Errorf("secrets set for default: code %d, %s %s", code, out, stderr)
	}
	if out, stderr, code := cliIn(t, "sk-acme-1234", nil, "secrets", "set", "--config", cfg, "--org", "acme", "--provider", "espeak"); code != 0 {
		t.Fatalf("secrets set: %d %s %s", code, out, stderr)
	}
	if out, stderr, code := cliIn(t, "", nil, "secrets", "delete", "--config", cfg, "--org", "acme", "--provider", "espeak"); code != 0 {
		t.Fatalf("secrets delete: %d %s %s", code, out, stderr)
	}
	db, err := bolt.Open(filepath.Join(dir, "data", "voxgate.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, org := range []string{"acme", "default"} {
		if names, err := db.ListSecretNames(context.Background(), org); err != nil || len(names) != 0 {
			t.Errorf("%s's secrets after delete: %v, %v", org, names, err)
		}
	}
}

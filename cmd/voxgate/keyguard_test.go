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

	"github.com/voxgate/voxgate/gateway/provenance"
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

// TestProvenanceKeyGuardInConfigCheck: `config check` meets the
// provenance signing key guard as a start does, with the start's message
// (another key, a missing key file a start would replace with a new key,
// an unset key_env), lets provenance.rotate_key through, and records or
// makes nothing itself.
func TestProvenanceKeyGuardInConfigCheck(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := guardConfig(t, dir, "")
	dbPath := filepath.Join(dir, "data", "voxgate.db")
	keyFile := filepath.Join(dir, "data", "provenance.key")
	seed := func(b byte) (string, *provenance.Signer) {
		s, err := provenance.NewSigner(bytes.Repeat([]byte{b}, 32))
		if err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32)) + "\n", s
	}
	firstText, first := seed(1)
	strayText, stray := seed(2)
	if err := os.MkdirAll(filepath.Dir(keyFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte(firstText), 0o600); err != nil {
		t.Fatal(err)
	}
	// The store records the first key, as the first start does.
	db, err := bolt.Open(dbPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := first.CheckKey(ctx, db, keyFile, false); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	recorded := func() {
		t.Helper()
		if fp, err := bolt.PeekSigningKey(dbPath); err != nil || !bytes.Equal(fp, first.Fingerprint()) {
			t.Errorf("the store's signing key after config check: %x (%v), want the first key's %x", fp, err, first.Fingerprint())
		}
	}
	if out, stderr, code := cliIn(t, "", nil, "config", "check", "--config", cfg); code != 0 {
		t.Fatalf("config check with the recorded key: %d %s %s", code, out, stderr)
	}

	// Another key: config check refuses it with the message serve stops with.
	if err := os.WriteFile(keyFile, []byte(strayText), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"config", "check", "--config", cfg}, {"serve", "--config", cfg}} {
		out, stderr, code := cliIn(t, "", nil, args...)
		if code != 1 {
			t.Errorf("%s with another provenance key: code %d, %s %s", args[0], code, out, stderr)
		}
		for _, want := range []string{"wrong provenance signing key", keyFile, stray.KeyID(), first.KeyID(), "provenance.rotate_key: true"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%s with another provenance key does not say %q: %s", args[0], want, stderr)
			}
		}
	}
	recorded()

	// rotate_key lets the new key through, as a start records it; the
	// check itself records nothing.
	const rotate = "provenance:\n  rotate_key: true\n" // guardConfig rewrites the one file
	if out, stderr, code := cliIn(t, "", nil, "config", "check", "--config", guardConfig(t, dir, rotate)); code != 0 {
		t.Errorf("config check with rotate_key: %d %s %s", code, out, stderr)
	}
	recorded()

	// A lost key file: a start would make a new key and be refused.
	_ = os.Remove(keyFile)
	cfg = guardConfig(t, dir, "")
	out, stderr, code := cliIn(t, "", nil, "config", "check", "--config", cfg)
	if code != 1 || !strings.Contains(stderr, "provenance.key_file: "+keyFile+" does not exist") || !strings.Contains(stderr, first.KeyID()) || !strings.Contains(stderr, "provenance.rotate_key: true") {
		t.Errorf("config check without the key file: code %d, %s %s", code, out, stderr)
	}
	if _, err := os.Stat(keyFile); !os.IsNotExist(err) {
		t.Errorf("config check made a key file (%v)", err)
	}
	if out, stderr, code := cliIn(t, "", nil, "config", "check", "--config", guardConfig(t, dir, rotate)); code != 0 {
		t.Errorf("config check without the key file, with rotate_key: %d %s %s", code, out, stderr)
	}
	if _, err := os.Stat(keyFile); !os.IsNotExist(err) {
		t.Errorf("config check with rotate_key made a key file (%v)", err)
	}

	// A named key_env that is not set stops a start: config check says so.
	unset := guardConfig(t, dir, "provenance:\n  key_env: VOXGATE_TEST_UNSET_PROVENANCE_KEY\n")
	out, stderr, code = cliIn(t, "", nil, "config", "check", "--config", unset)
	if code != 1 || !strings.Contains(stderr, "$VOXGATE_TEST_UNSET_PROVENANCE_KEY, which is not set") {
		t.Errorf("config check with an unset provenance.key_env: code %d, %s %s", code, out, stderr)
	}
	// And the right key from the environment passes.
	env := []string{"VOXGATE_TEST_PROVENANCE_KEY=" + strings.TrimSpace(firstText)}
	fromEnv := guardConfig(t, dir, "provenance:\n  key_env: VOXGATE_TEST_PROVENANCE_KEY\n")
	if out, stderr, code := cliIn(t, "", env, "config", "check", "--config", fromEnv); code != 0 {
		t.Errorf("config check with the recorded key from the environment: %d %s %s", code, out, stderr)
	}
	recorded()
}

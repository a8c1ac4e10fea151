package credentials_test

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/providers/credentials"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
)

func sealer(t *testing.T, fill byte, source string) *credentials.Sealer {
	t.Helper()
	key := make([]byte, 32)
	for i := range key {
		key[i] = fill
	}
	s, err := credentials.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	return s.WithSource(source)
}

// TestKeyGuard: the first sealed write records the key's fingerprint
// (never the key); a write with another key is refused naming its
// source, and nothing of it is stored; the right key keeps working.
func TestKeyGuard(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "v.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	right, wrong := sealer(t, 1, "data/secrets.key"), sealer(t, 2, "$STRAY_KEY")
	if err := credentials.StoreBYOK(ctx, db, right, policy(), "acme", "openai", "sk-right-1234"); err != nil {
		t.Fatal(err)
	}
	fp, has, err := db.SealFingerprint(ctx)
	key := make([]byte, 32)
	for i := range key {
		key[i] = 1
	}
	if err != nil || !has || string(fp) != string(credentials.Fingerprint(key)) {
		t.Fatalf("recorded %x, has %v, err %v", fp, has, err)
	}
	if strings.Contains(string(fp), string(key)) {
		t.Fatal("the fingerprint holds the key")
	}
	err = credentials.StoreBYOK(ctx, db, wrong, policy(), "acme", "openai", "sk-stray-9999")
	if !errors.Is(err, credentials.ErrWrongKey) || !strings.Contains(err.Error(), "$STRAY_KEY") {
		t.Fatalf("write with another key: %v", err)
	}
	if got, err := credentials.LoadBYOK(ctx, db, right, "acme", "openai"); err != nil || got != "sk-right-1234" {
		t.Fatalf("after the refused write: %q, %v", got, err)
	}
	if err := credentials.CheckKey(ctx, db, key, "x"); err != nil {
		t.Errorf("CheckKey with the right key: %v", err)
	}
	other := make([]byte, 32)
	if err := credentials.CheckKey(ctx, db, other, "other/secrets.key"); !errors.Is(err, credentials.ErrWrongKey) || !strings.Contains(err.Error(), "other/secrets.key") {
		t.Errorf("CheckKey with another key: %v", err)
	}
}

// TestLoadKey: a named variable that is not set is an error, never a new
// file; a missing file is made only when the caller allows it.
func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "secrets.key")
	t.Setenv("VOXGATE_TEST_KEY_UNSET", "")
	if _, _, err := credentials.LoadKey("VOXGATE_TEST_KEY_UNSET", file, true); err == nil || !strings.Contains(err.Error(), "$VOXGATE_TEST_KEY_UNSET") {
		t.Errorf("unset key_env: %v", err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("a key file was made although key_env is named (%v)", err)
	}
	if _, _, err := credentials.LoadKey("", file, false); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("missing file, no create: %v", err)
	}
	k, source, err := credentials.LoadKey("", file, true)
	if err != nil || len(k) != 32 || source != file {
		t.Fatalf("create: %d bytes from %q, %v", len(k), source, err)
	}
	t.Setenv("VOXGATE_TEST_KEY_SET", base64.StdEncoding.EncodeToString(k))
	if k2, source, err := credentials.LoadKey("VOXGATE_TEST_KEY_SET", "", false); err != nil || string(k2) != string(k) || source != "$VOXGATE_TEST_KEY_SET" {
		t.Errorf("key_env: %q, %v", source, err)
	}
}

// TestCLISecretsRules: StoreBYOK (what `voxgate secrets set` calls)
// refuses what the API refuses, by the same rule, and DeleteBYOK leaves
// no byok-meta record behind.
func TestCLISecretsRules(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "v.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	p := credentials.NewPolicy(
		map[string]credentials.Provider{"openai": {Managed: true, ManagedKey: "m"}, "espeak": {Managed: true}},
		map[string]map[string]credentials.OrgAccess{
			"default": {"espeak": {Enabled: true}},
			"acme":    {"openai": {Enabled: true, BYOK: true}},
		})
	s := sealer(t, 1, "k")
	err = credentials.StoreBYOK(ctx, db, s, p, "default", "espeak", "key")
	var pe *problem.Error
	if !errors.As(err, &pe) || pe.Code != problem.BYOKNotAllowed {
		t.Fatalf("secrets set for an org that may not bring a key: %v", err)
	}
	if names, _ := db.ListSecretNames(ctx, "default"); len(names) != 0 {
		t.Fatalf("stored anyway: %v", names)
	}
	if err := credentials.StoreBYOK(ctx, db, s, p, "acme", "openai", "sk-1234"); err != nil {
		t.Fatal(err)
	}
	if err := credentials.DeleteBYOK(ctx, db, "acme", "openai"); err != nil {
		t.Fatal(err)
	}
	if names, _ := db.ListSecretNames(ctx, "acme"); len(names) != 0 {
		t.Errorf("left behind: %v", names)
	}
	if err := credentials.DeleteBYOK(ctx, db, "acme", "openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
}

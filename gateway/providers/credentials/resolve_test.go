package credentials_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/voxgate/voxgate/config"
	"github.com/voxgate/voxgate/gateway/providers/credentials"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
	"github.com/voxgate/voxgate/gateway/store/readcache"
)

const policyYAML = `
providers:
  openai: {plugin: voxgate-openai, managed: true, api_key: managed-key}
orgs:
  acme:
    providers:
      openai: {enabled: true, byok: true}
`

// TestStoredKeysFollowTheStore: an organization's own key is used from the
// moment it is stored until it is replaced or deleted, through the cache
// the gateway gives the resolver, and reusing it costs no allocation.
func TestStoredKeysFollowTheStore(t *testing.T) {
	cfg, err := config.Parse([]byte(policyYAML), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(t.TempDir(), "v.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sealer, err := credentials.NewSealer(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	st := readcache.New(db, readcache.Options{})
	r := credentials.NewResolver(credentials.PolicyFrom(cfg), st, sealer)
	ctx := context.Background()
	key := func() string {
		t.Helper()
		c, err := r.For(ctx, "acme", "openai")
		if err != nil {
			t.Fatal(err)
		}
		return c.APIKey
	}
	if got := key(); got != "managed-key" {
		t.Fatalf("without a stored key: %q", got)
	}
	if err := r.StoreOwnKey(ctx, "acme", "openai", "sk-first", time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := key(); got != "sk-first" {
		t.Fatalf("after storing: %q", got)
	}
	if n := testing.AllocsPerRun(50, func() { key() }); n != 0 {
		t.Errorf("%v allocations to reuse a stored key, want 0", n)
	}
	if err := r.StoreOwnKey(ctx, "acme", "openai", "sk-second", time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := key(); got != "sk-second" {
		t.Fatalf("after replacing: %q", got)
	}
	// Replaced behind the resolver's back (another instance), then
	// announced.
	ct, err := sealer.Seal([]byte("sk-third"), []byte("acme/openai"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.PutSecret(ctx, "acme", credentials.SecretName("openai"), ct); err != nil {
		t.Fatal(err)
	}
	st.Apply(store.Change{Kind: store.ChangeSecret, OrgID: "acme", ID: credentials.SecretName("openai")})
	if got := key(); got != "sk-third" {
		t.Fatalf("after another instance replaced it: %q", got)
	}
	if err := r.DeleteOwnKey(ctx, "acme", "openai"); err != nil {
		t.Fatal(err)
	}
	if got := key(); got != "managed-key" {
		t.Fatalf("after deleting: %q", got)
	}
}

package credentials_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/providers/credentials"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
	"github.com/voxgate/voxgate/gateway/store/readcache"
)

// policy is openai offered with a managed key, and acme bringing its own.
func policy() *credentials.Policy {
	return credentials.NewPolicy(
		map[string]credentials.Provider{"openai": {Managed: true, ManagedKey: "managed-key"}},
		map[string]map[string]credentials.OrgAccess{"acme": {"openai": {Enabled: true, BYOK: true}}})
}

// TestStoredKeysFollowTheStore: an organization's own key is used from the
// moment it is stored until it is replaced or deleted, through the cache
// the gateway gives the resolver, and reusing it costs no allocation.
func TestStoredKeysFollowTheStore(t *testing.T) {
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
	r := credentials.NewResolver(policy(), st, sealer)
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

// TestPolicyFlags: an organization's flags for a provider follow its own
// entry; the provider's managed flag is the most it may have, and a
// provider it does not list is off for it.
func TestPolicyFlags(t *testing.T) {
	off, on := false, true
	providers := map[string]credentials.Provider{
		"cloud": {Managed: true, ManagedKey: "k"},
		"byok":  {},
	}
	tests := []struct {
		name     string
		access   map[string]credentials.OrgAccess
		provider string
		want     credentials.Flags
	}{
		{"not listed", nil, "cloud", credentials.Flags{Managed: true}},
		{"listed", map[string]credentials.OrgAccess{"cloud": {Enabled: true}}, "cloud", credentials.Flags{Enabled: true, Managed: true}},
		{"managed turned off", map[string]credentials.OrgAccess{"cloud": {Enabled: true, Managed: &off}}, "cloud", credentials.Flags{Enabled: true}},
		{"managed not offered", map[string]credentials.OrgAccess{"byok": {Enabled: true, BYOK: true, Managed: &on}}, "byok", credentials.Flags{Enabled: true, BYOK: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := credentials.NewPolicy(providers, map[string]map[string]credentials.OrgAccess{"acme": tt.access})
			if err := p.Exists("acme", tt.provider); err != nil {
				t.Fatal(err)
			}
			r := credentials.NewResolver(p, nil, nil)
			if got := r.Flags("acme", tt.provider); got != tt.want {
				t.Errorf("flags %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestNoAPIKeyExplains: the 403 no_api_key text says why there is no key,
// and says "brings its own key" only of an organization that does.
func TestNoAPIKeyExplains(t *testing.T) {
	off := false
	p := credentials.NewPolicy(
		map[string]credentials.Provider{"openai": {Managed: false, ManagedKey: "k"}, "eleven": {Managed: true, ManagedKey: "k"}},
		map[string]map[string]credentials.OrgAccess{"acme": {
			"openai": {Enabled: true},
			"eleven": {Enabled: true, Managed: &off},
		}})
	r := credentials.NewResolver(p, nil, nil)
	for _, provider := range []string{"openai", "eleven"} {
		_, err := r.For(context.Background(), "acme", provider)
		if err == nil {
			t.Fatalf("%s: got credentials", provider)
		}
		msg := err.Error()
		if strings.Contains(msg, "brings its own key") || !strings.Contains(msg, "does not bring its own key") || !strings.Contains(msg, "managed") {
			t.Errorf("%s: %q", provider, msg)
		}
	}
}

package resources

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/internal/testplugin/calllog"
)

// TestProviderKeys: an organization's own key is stored only where it may
// bring one, only once the provider took it in a call, and is shown by
// its last four characters only.
func TestProviderKeys(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	const key = "sk-test-0123456789"
	tests := []struct {
		name, org, provider, key string
		code                     problem.Code
	}{
		{name: "too short", org: "acme", provider: "testkit", key: "sk-1", code: problem.ValidationFailed},
		{name: "spaces around", org: "acme", provider: "testkit", key: " " + key, code: problem.ValidationFailed},
		{name: "unknown provider", org: "acme", provider: "nope", key: key, code: problem.NotFound},
		{name: "provider disabled", org: "globex", provider: "testkit", key: key, code: problem.ProviderDisabled},
		{name: "brings no key", org: "initech", provider: "testkit", key: key, code: problem.BYOKNotAllowed},
		{name: "stored", org: "acme", provider: "testkit", key: key},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := f.count(t, "")
			k, err := f.s.PutProviderKey(ctx, tt.org, tt.provider, tt.key, now)
			wantCode(t, err, tt.code)
			if tt.code != "" {
				if f.count(t, "") != calls {
					t.Error("a refused key reached the provider")
				}
				own, err := f.s.OwnKeys(ctx, tt.org)
				if err != nil || own[tt.provider] {
					t.Errorf("a refused key was stored (%v)", err)
				}
				return
			}
			if k.LastFour != "6789" || !k.UpdatedAt.Equal(now) {
				t.Errorf("answered %+v", k)
			}
		})
	}
	// The key was checked with a voice list and a synthesis, made with it.
	log, err := calllog.Read(f.calls)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(key))
	used := map[string]bool{}
	for _, c := range log {
		if c.KeySHA256 == hex.EncodeToString(sum[:]) && c.BYOK {
			used[c.Method] = true
		}
	}
	if !used["voices"] || !used["synthesize"] {
		t.Errorf("the key was checked with %v, want voices and synthesize", used)
	}
	list, next, more, err := f.s.ListProviderKeys(ctx, "acme", 10, nil)
	if err != nil || len(list) != 1 || more || string(next) != "testkit" || list[0].LastFour != "6789" {
		t.Fatalf("list: %+v %q %v %v", list, next, more, err)
	}
	if list, _, _, _ := f.s.ListProviderKeys(ctx, "initech", 10, nil); len(list) != 0 {
		t.Errorf("initech lists acme's key: %+v", list)
	}
	wantCode(t, f.s.DeleteProviderKey(ctx, "initech", "testkit"), problem.NotFound)
	if err := f.s.DeleteProviderKey(ctx, "acme", "testkit"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, f.s.DeleteProviderKey(ctx, "acme", "testkit"), problem.NotFound)
	wantCode(t, f.s.DeleteProviderKey(ctx, "acme", "nope"), problem.NotFound)
	if own, err := f.s.OwnKeys(ctx, "acme"); err != nil || len(own) != 0 {
		t.Errorf("after delete: %v %v", own, err)
	}
}

package auth

import (
	"context"
	"sync"
	"testing"

	"github.com/voxgate/voxgate/gateway/store"
)

// racyKeys is a key store whose next ListKeys answers a snapshot taken
// when it was called but returns only when released: a reload reading
// the shared store while this instance creates or revokes a key.
type racyKeys struct {
	mu      sync.Mutex
	keys    []store.APIKey
	hold    chan struct{} // non-nil: the next ListKeys waits on it
	reading chan struct{} // closed when that ListKeys has its snapshot
}

func (r *racyKeys) CreateKey(_ context.Context, k *store.APIKey) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys = append(r.keys, *k)
	return nil
}

func (r *racyKeys) ListKeys(context.Context, string) ([]store.APIKey, error) {
	r.mu.Lock()
	snap := append([]store.APIKey(nil), r.keys...)
	hold, reading := r.hold, r.reading
	r.hold = nil
	r.mu.Unlock()
	if hold != nil {
		close(reading)
		<-hold
	}
	return snap, nil
}

func (r *racyKeys) RevokeKey(_ context.Context, id string) (*store.APIKey, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.keys {
		if r.keys[i].ID == id {
			r.keys[i].RevokedAt = r.keys[i].CreatedAt.Add(1)
			k := r.keys[i]
			return &k, nil
		}
	}
	return nil, store.ErrNotFound
}

// TestReloadNeverUndoesALocalChange: a reload whose snapshot was read
// before this instance created or revoked a key must not apply it, or
// the new key fails and the revoked one works until the next reload.
func TestReloadNeverUndoesALocalChange(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name   string
		change func(t *testing.T, a *Authenticator, old string) (key string, want bool)
	}{
		{"create", func(t *testing.T, a *Authenticator, _ string) (string, bool) {
			plain, _, err := a.Create(ctx, "acme", "new")
			if err != nil {
				t.Fatal(err)
			}
			return plain, true
		}},
		{"revoke", func(t *testing.T, a *Authenticator, old string) (string, bool) {
			p, ok := a.AuthenticateKey([]byte(old))
			if !ok {
				t.Fatal("the old key does not work")
			}
			if _, err := a.Revoke(ctx, p.KeyID); err != nil {
				t.Fatal(err)
			}
			return old, false
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := &racyKeys{}
			old, _, err := CreateKey(ctx, st, "acme", "old")
			if err != nil {
				t.Fatal(err)
			}
			a, err := New(ctx, st, func(string) bool { return true })
			if err != nil {
				t.Fatal(err)
			}
			hold, reading := make(chan struct{}), make(chan struct{})
			st.mu.Lock()
			st.hold, st.reading = hold, reading
			st.mu.Unlock()
			done := make(chan error)
			go func() { done <- a.Reload(ctx) }()
			<-reading // the reload has its snapshot, from before the change
			key, want := tt.change(t, a, old)
			close(hold)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if _, ok := a.AuthenticateKey([]byte(key)); ok != want {
				t.Errorf("after the reload the key authenticates: %v, want %v", ok, want)
			}
		})
	}
}

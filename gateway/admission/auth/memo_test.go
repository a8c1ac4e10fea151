package auth

import (
	"context"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/memory"
)

// TestMemo: a connection's memo answers as Check would, request after
// request, through every change a key or its organization can go
// through: another key on the same connection, a revocation, an update,
// a reload, a disabled organization, an expired key.
func TestMemo(t *testing.T) {
	if keyLen > memoKeyCap {
		t.Fatalf("a key is %d bytes; a Memo holds %d", keyLen, memoKeyCap)
	}
	ctx := context.Background()
	states := map[string]OrgState{"acme": OrgActive, "globex": OrgActive}
	a, st := withOrgStates(t, states)
	one, oneKey, _ := a.Create(ctx, "acme", "one")
	two, _, _ := a.Create(ctx, "globex", "two")
	soon, soonKey, _ := a.CreateWith(ctx, "acme", "soon", store.KeyScope{ExpiresAt: time.Now().Add(time.Hour)})
	// A key one character off one, of the right length.
	forged := []byte(one)
	forged[len(forged)-1] ^= 1
	var m Memo
	check := func(step, key string, want Status, org string) {
		t.Helper()
		p, got := a.CheckMemo([]byte("Bearer "+key), &m)
		if p2, plain := a.Check([]byte("Bearer " + key)); plain != got || p2.KeyID != p.KeyID {
			t.Fatalf("%s: the memo says %v (%s), Check says %v (%s)", step, got, p.KeyID, plain, p2.KeyID)
		}
		if got != want || (want == StatusOK && p.OrgID != org) {
			t.Fatalf("%s: %v, org %q; want %v, org %q", step, got, p.OrgID, want, org)
		}
	}
	check("first", one, StatusOK, "acme")
	check("again, from the memo", one, StatusOK, "acme")
	check("a forged key on the same connection", string(forged), StatusUnknown, "")
	check("the key again", one, StatusOK, "acme")
	check("another key on the same connection", two, StatusOK, "globex")
	check("back", one, StatusOK, "acme")
	states["acme"] = OrgDisabled
	check("organization disabled", one, StatusOrgDisabled, "")
	states["acme"] = OrgActive
	check("organization enabled again", one, StatusOK, "acme")
	if _, err := a.Revoke(ctx, oneKey.ID); err != nil {
		t.Fatal(err)
	}
	check("revoked here", one, StatusUnknown, "")
	check("the other key", two, StatusOK, "globex")
	// Revoked by another instance sharing the store: the reload applies it.
	p, _ := a.Check([]byte("Bearer " + two))
	if _, err := st.RevokeKey(ctx, p.KeyID); err != nil {
		t.Fatal(err)
	}
	check("revoked elsewhere, before the reload", two, StatusOK, "globex")
	if err := a.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	check("revoked elsewhere, reloaded", two, StatusUnknown, "")
	check("a key with an expiry", soon, StatusOK, "acme")
	// Updated here: the principal the memo gives is the new one.
	later := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	k := *soonKey
	k.Scope.ExpiresAt = later
	if _, err := a.Update(ctx, &k); err != nil {
		t.Fatal(err)
	}
	if p, st := a.CheckMemo([]byte("Bearer "+soon), &m); st != StatusOK || p.Scope == nil || !p.Scope.ExpiresAt.Equal(later) {
		t.Fatalf("after an update: %v, scope %+v; want the expiry %v", st, p.Scope, later)
	}
	// Expired through the store (as another instance would), reloaded.
	k.Scope.ExpiresAt = time.Now().Add(-time.Second)
	if _, err := st.UpdateKey(ctx, &k); err != nil {
		t.Fatal(err)
	}
	if err := a.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	check("expired", soon, StatusExpired, "")
	check("not a key", "vxk_nope", StatusUnknown, "")
	check("no bearer", "", StatusUnknown, "")
}

// BenchmarkCheck compares a key check with and without a connection's
// memo (the memo skips the key's SHA-256 and the table).
func BenchmarkCheck(b *testing.B) {
	ctx := context.Background()
	a, err := New(ctx, memory.New(store.Options{}), func(string) bool { return true })
	if err != nil {
		b.Fatal(err)
	}
	key, _, _ := a.Create(ctx, "acme", "k")
	header := []byte("Bearer " + key)
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			if _, st := a.Check(header); st != StatusOK {
				b.Fatal(st)
			}
		}
	})
	b.Run("memo", func(b *testing.B) {
		var m Memo
		for b.Loop() {
			if _, st := a.CheckMemo(header, &m); st != StatusOK {
				b.Fatal(st)
			}
		}
	})
}

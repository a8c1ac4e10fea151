package auth

import (
	"context"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/memory"
)

// TestCheckStatuses: Check tells an expired key and a disabled
// organization's key from an unknown one, admin keys skip the
// organization check, and an update applies at once.
func TestCheckStatuses(t *testing.T) {
	ctx := context.Background()
	states := map[string]OrgState{"live": OrgActive, "off": OrgDisabled}
	a, st := withOrgStates(t, states)
	live, _, _ := a.Create(ctx, "live", "k")
	off, _, _ := a.Create(ctx, "off", "k")
	gone, _, _ := a.Create(ctx, "gone", "k")
	soon, soonKey, _ := a.CreateWith(ctx, "live", "k", store.KeyScope{ExpiresAt: time.Now().Add(time.Hour)})
	adm, _, _ := a.CreateAdmin(ctx, "ops")
	for _, tc := range []struct {
		name, key string
		want      Status
		admin     bool
	}{
		{"active", live, StatusOK, false},
		{"disabled organization", off, StatusOrgDisabled, false},
		{"unknown organization", gone, StatusUnknown, false},
		{"not a key", "vxk_nope", StatusUnknown, false},
		{"admin", adm, StatusOK, true},
	} {
		p, got := a.Check([]byte("Bearer " + tc.key))
		if got != tc.want || p.Admin != tc.admin {
			t.Errorf("%s: %v (admin %v), want %v (admin %v)", tc.name, got, p.Admin, tc.want, tc.admin)
		}
		if _, ok := a.Authenticate([]byte("Bearer " + tc.key)); ok != (tc.want == StatusOK) {
			t.Errorf("%s: Authenticate = %v", tc.name, ok)
		}
	}
	// Expiry moved into the past through the store (as another instance
	// would), then applied here by Update.
	k := *soonKey
	k.Scope.ExpiresAt = time.Now().Add(-time.Second)
	if _, err := st.UpdateKey(ctx, &k); err != nil {
		t.Fatal(err)
	}
	if err := a.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if p, got := a.Check([]byte("Bearer " + soon)); got != StatusExpired || p.KeyID != soonKey.ID {
		t.Errorf("expired: %v %+v", got, p)
	}
	// A rate limit set by Update is the principal's at once.
	k.Scope = store.KeyScope{RatePerMinute: 5}
	if _, err := a.Update(ctx, &k); err != nil {
		t.Fatal(err)
	}
	if p, got := a.Check([]byte("Bearer " + soon)); got != StatusOK || p.Scope == nil || p.Scope.RatePerMinute != 5 || p.RateKey != "key:"+soonKey.ID {
		t.Errorf("after Update: %v %+v", got, p)
	}
}

// withOrgStates is an Authenticator on a fresh memory store whose
// organizations' states are read from states at each check, so a test
// changes them by writing to the map.
func withOrgStates(t *testing.T, states map[string]OrgState) (*Authenticator, *memory.Store) {
	t.Helper()
	st := memory.New(store.Options{})
	a, err := NewWithOrgs(context.Background(), st, func(org string) OrgState { return states[org] })
	if err != nil {
		t.Fatal(err)
	}
	return a, st
}

package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
)

// testKeyUpdateAndAdmin checks what the admin API writes to keys: the
// admin kind round-trips, and UpdateKey changes the name and scope only.
func testKeyUpdateAndAdmin(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := newClock()
	s := openWith(t, open, clk)
	mustDo(t, s.CreateKey(ctx, &store.APIKey{ID: "adm", OrgID: store.AdminOrg, Name: "ops", Hash: []byte("hash-a"), Admin: true}))
	mustDo(t, s.CreateKey(ctx, &store.APIKey{ID: "k1", OrgID: "o1", Name: "ci", Prefix: "vxk_ab", Hash: []byte("hash-1")}))
	if k, err := s.KeyByHash(ctx, []byte("hash-a")); err != nil || !k.Admin || k.OrgID != store.AdminOrg {
		t.Errorf("admin key by hash = %+v, %v; want Admin", k, err)
	}
	if ks, err := s.ListKeys(ctx, "o1"); err != nil || len(ks) != 1 || ks[0].Admin {
		t.Errorf("ListKeys(o1) = %+v, %v; want one key, not admin", ks, err)
	}

	scope := store.KeyScope{ExpiresAt: clk.Now().Add(time.Hour), Budget: 70, BudgetPeriod: "month", RatePerMinute: 12, BudgetCost: 2_500_000_000}
	got, err := s.UpdateKey(ctx, &store.APIKey{ID: "k1", OrgID: "other", Name: "renamed", Prefix: "x", Hash: []byte("x"), Scope: scope, Admin: true})
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "renamed" || !sameScope(got.Scope, scope) || got.OrgID != "o1" || got.Prefix != "vxk_ab" || string(got.Hash) != "hash-1" || got.Admin {
		t.Errorf("UpdateKey = %+v; want name and scope changed, nothing else", got)
	}
	byHash, err := s.KeyByHash(ctx, []byte("hash-1"))
	if err != nil || byHash.Name != "renamed" || !sameScope(byHash.Scope, scope) {
		t.Errorf("after UpdateKey, KeyByHash = %+v, %v", byHash, err)
	}
	if _, err := s.UpdateKey(ctx, &store.APIKey{ID: "nope", Name: "x"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UpdateKey(unknown) = %v, want ErrNotFound", err)
	}
	if _, err := s.UpdateKey(ctx, &store.APIKey{ID: "k1", Name: "bad\x00name"}); !errors.Is(err, store.ErrInvalidText) {
		t.Errorf("UpdateKey(NUL name) = %v, want ErrInvalidText", err)
	}
	if k, _ := s.KeyByHash(ctx, []byte("hash-1")); k.Name != "renamed" {
		t.Errorf("a refused update changed the key: %+v", k)
	}
}

// testOrgs checks the organizations of the admin API: create, get,
// update, list by id, ErrExists and ErrNotFound, text refused.
func testOrgs(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := newClock()
	s := openWith(t, open, clk)
	if got, err := s.ListOrgs(ctx); err != nil || len(got) != 0 {
		t.Fatalf("ListOrgs of an empty store = %+v, %v", got, err)
	}
	off := false
	window := 1500 // a realtime failover window (ms)
	b := &store.Org{ID: "beta", Name: "Beta team", Budget: 500, BudgetPeriod: "day", RatePerMinute: 30, BudgetCost: 7_000_000_000,
		Loudness: &store.OrgLoudness{Integrated: -16, TruePeak: -1.5}, FailoverWindowMs: &window,
		Provenance: store.OrgProvenance{Unmarked: true, NoRecords: true},
		Providers:  map[string]store.OrgProvider{"espeak": {Enabled: true}, "openai": {Enabled: true, BYOK: true, Managed: &off}}}
	mustDo(t, s.CreateOrg(ctx, b))
	clk.Advance(time.Second)
	mustDo(t, s.CreateOrg(ctx, &store.Org{ID: "alpha", Name: "Alpha"}))
	if err := s.CreateOrg(ctx, &store.Org{ID: "beta", Name: "again"}); !errors.Is(err, store.ErrExists) {
		t.Errorf("CreateOrg(existing) = %v, want ErrExists", err)
	}
	if err := s.CreateOrg(ctx, &store.Org{Name: "no id"}); err == nil {
		t.Error("CreateOrg without an id succeeded")
	}
	if err := s.CreateOrg(ctx, &store.Org{ID: "gamma", Name: "bad\x00"}); !errors.Is(err, store.ErrInvalidText) {
		t.Errorf("CreateOrg(NUL name) = %v, want ErrInvalidText", err)
	}

	got, err := s.GetOrg(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "Beta team" || got.Budget != 500 || got.BudgetPeriod != "day" || got.BudgetCost != 7_000_000_000 || got.RatePerMinute != 30 || got.Disabled ||
		!got.CreatedAt.Equal(newClock().Now()) || !got.UpdatedAt.Equal(got.CreatedAt) ||
		!reflect.DeepEqual(got.Providers, b.Providers) || !reflect.DeepEqual(got.Loudness, b.Loudness) ||
		!reflect.DeepEqual(got.FailoverWindowMs, b.FailoverWindowMs) || got.Provenance != b.Provenance {
		t.Errorf("GetOrg = %+v, want %+v", got, b)
	}
	if a, err := s.GetOrg(ctx, "alpha"); err != nil || a.Providers == nil || len(a.Providers) != 0 || a.Loudness != nil || a.FailoverWindowMs != nil || a.Provenance != (store.OrgProvenance{}) {
		t.Errorf("GetOrg(alpha) = %+v, %v; want empty, non-nil providers", a, err)
	}
	if _, err := s.GetOrg(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetOrg(unknown) = %v, want ErrNotFound", err)
	}

	clk.Advance(time.Minute)
	upd := store.CloneOrg(got)
	upd.Name, upd.Disabled, upd.Budget, upd.Providers, upd.Loudness = "Beta", true, 0, map[string]store.OrgProvider{}, nil
	upd.FailoverWindowMs = nil
	upd.Provenance = store.OrgProvenance{ConsentOptional: true}
	upd.CreatedAt, upd.UpdatedAt = time.Time{}, time.Time{}
	mustDo(t, s.UpdateOrg(ctx, upd))
	after, err := s.GetOrg(ctx, "beta")
	if err != nil || after.Name != "Beta" || !after.Disabled || after.Budget != 0 || len(after.Providers) != 0 || after.Loudness != nil || after.FailoverWindowMs != nil ||
		after.Provenance != (store.OrgProvenance{ConsentOptional: true}) ||
		!after.CreatedAt.Equal(got.CreatedAt) || !after.UpdatedAt.Equal(clk.Now()) {
		t.Errorf("after UpdateOrg, GetOrg = %+v, %v", after, err)
	}
	if err := s.UpdateOrg(ctx, &store.Org{ID: "nope", Name: "x"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UpdateOrg(unknown) = %v, want ErrNotFound", err)
	}

	list, err := s.ListOrgs(ctx)
	if err != nil || len(list) != 2 || list[0].ID != "alpha" || list[1].ID != "beta" || !list[1].Disabled {
		t.Errorf("ListOrgs = %+v, %v; want alpha, beta (disabled)", list, err)
	}
}

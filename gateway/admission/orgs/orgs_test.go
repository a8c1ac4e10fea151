package orgs_test

import (
	"context"
	"testing"

	"github.com/voxgate/voxgate/gateway/admission/orgs"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/memory"
)

// TestMerge: the file's and the store's organizations in one list, the
// file winning an id both have, a reload of either side keeping the other.
func TestMerge(t *testing.T) {
	ctx := context.Background()
	st := memory.New(store.Options{})
	for _, o := range []*store.Org{{ID: "beta", Name: "Beta", RatePerMinute: 120}, {ID: "acme", Name: "stored acme"}} {
		if err := st.CreateOrg(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	d := orgs.New([]orgs.File{{ID: "acme"}})
	if err := d.Reload(ctx, st); err != nil {
		t.Fatal(err)
	}
	a, _ := d.Get("acme")
	b, ok := d.Get("beta")
	if a.ManagedBy != orgs.ManagedByFile || !ok || b.ManagedBy != orgs.ManagedByAPI || b.Synthesis.Rate != 2 || b.Synthesis.Burst != 120 {
		t.Fatalf("acme %+v, beta %+v", a, b)
	}
	if ids := ids(d.List()); ids != "acme,beta" {
		t.Errorf("List = %s", ids)
	}
	// A reload of the file that drops acme uncovers the stored one.
	d.SetFile([]orgs.File{{ID: "gamma"}})
	if a, _ := d.Get("acme"); a == nil || a.ManagedBy != orgs.ManagedByAPI {
		t.Errorf("after the file dropped acme: %+v", a)
	}
	if ids := ids(d.List()); ids != "acme,beta,gamma" {
		t.Errorf("List = %s", ids)
	}
	// Put applies a local write; a disabled organization stays listed.
	d.Put(&store.Org{ID: "beta", Name: "Beta", Disabled: true})
	if b, _ := d.Get("beta"); !b.Disabled || !b.Synthesis.Unlimited() {
		t.Errorf("after Put: %+v", b)
	}
	if _, ok := d.Get("nope"); ok {
		t.Error("an unknown organization was found")
	}
}

func ids(os []*orgs.Org) string {
	s := ""
	for i, o := range os {
		if i > 0 {
			s += ","
		}
		s += o.ID
	}
	return s
}

// BenchmarkGet is the request path's lookup: no allocation.
func BenchmarkGet(b *testing.B) {
	d := orgs.New([]orgs.File{{ID: "acme"}})
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := d.Get("acme"); !ok {
			b.Fatal("acme")
		}
	}
}

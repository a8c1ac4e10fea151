package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
)

// The cases of what docs/compatibility.md added to the contract: one log
// row by request id, pronunciation dictionaries and their rules, voice
// updates.

func testGetLog(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := newClock()
	s := openWith(t, open, clk)
	old := store.LogRow{RequestID: "req-old", OrgID: "o", TS: clk.Now().Add(-29 * 24 * time.Hour), Status: 200, Provider: "espeak"}
	parent := store.LogRow{RequestID: "conv", OrgID: "o", TS: clk.Now().Add(-time.Minute), Status: 200, Provider: "mixed", CreditsUsed: 3}
	child := store.LogRow{RequestID: "turn-0", ParentRequestID: "conv", OrgID: "o", TS: clk.Now().Add(-time.Minute), Status: 200, Provider: "espeak"}
	other := store.LogRow{RequestID: "theirs", OrgID: "o2", TS: clk.Now(), Status: 500, ErrorCode: "internal_error"}
	mustDo(t, s.AppendLogs(ctx, []store.LogRow{old, parent, child, other}))
	// The same id written twice (a client reusing its X-Request-Id): the
	// newest row is the one returned.
	again := store.LogRow{RequestID: "conv", OrgID: "o", TS: clk.Now(), Status: 429, ErrorCode: "rate_limited"}
	mustDo(t, s.AppendLogs(ctx, []store.LogRow{again}))

	for _, want := range []store.LogRow{old, child, again} {
		got, err := s.GetLog(ctx, "o", want.RequestID)
		if err != nil {
			t.Fatalf("GetLog(%s): %v", want.RequestID, err)
		}
		want.TS = want.TS.UTC()
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("GetLog(%s):\n got %+v\nwant %+v", want.RequestID, *got, want)
		}
	}
	for _, tc := range []struct{ org, id string }{
		{"o", "theirs"},  // another organization's row
		{"o2", "conv"},   // and the other way round
		{"o", "missing"}, // no such request
		{"o", ""},        // no id at all
		{"nobody", "conv"},
	} {
		if _, err := s.GetLog(ctx, tc.org, tc.id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetLog(%q, %q) = %v, want ErrNotFound", tc.org, tc.id, err)
		}
	}
	// Past the retention window a row is gone for GetLog as for ListLogs,
	// purged or not.
	clk.Advance(2 * 24 * time.Hour)
	if _, err := s.GetLog(ctx, "o", "req-old"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a row past the retention: %v, want ErrNotFound", err)
	}
	if _, err := s.PurgeLogs(ctx, clk.Now().Add(-30*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetLog(ctx, "o", "req-old"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a purged row: %v, want ErrNotFound", err)
	}
	if got, err := s.GetLog(ctx, "o", "turn-0"); err != nil || got.ParentRequestID != "conv" {
		t.Errorf("a kept row after the purge: %+v, %v", got, err)
	}
}

package bolt_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
)

// logFixture is a set of rows appended in a known order, with the oracle
// that says what ListLogs must return for a filter.
type logFixture struct {
	now  time.Time
	rows []store.LogRow // in append order
}

// buildLogFixture appends n rows of org "o1" (and some decoys of org "o2")
// with timestamps spread over the last 35 days in random order, many
// sharing a timestamp, in batches of uneven size.
func buildLogFixture(t *testing.T, s *bolt.Store, clk *clock, n int) *logFixture {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	f := &logFixture{now: clk.Now()}
	providers := []string{"", "espeak", "openai", "eleven"}
	statuses := []int{200, 200, 200, 400, 422, 502}
	parents := []string{"", "", "", "conv-1", "conv-2"}
	var batch []store.LogRow
	for i := range n {
		// Whole minutes so that equal timestamps are common.
		ts := f.now.Add(-time.Duration(rng.IntN(35*24*60)) * time.Minute)
		r := store.LogRow{
			RequestID:       fmt.Sprintf("req-%05d", i),
			ParentRequestID: parents[rng.IntN(len(parents))],
			OrgID:           "o1",
			TS:              ts,
			Path:            "/v1/audio/speech",
			Status:          statuses[rng.IntN(len(statuses))],
			Provider:        providers[rng.IntN(len(providers))],
			Model:           "m",
			CharCount:       i,
		}
		f.rows = append(f.rows, r)
		batch = append(batch, r)
		if decoy := r; i%7 == 0 {
			decoy.OrgID, decoy.RequestID = "o2", "decoy-"+r.RequestID
			batch = append(batch, decoy)
		}
		if len(batch) >= 1+rng.IntN(120) {
			mustDo(t, s.AppendLogs(context.Background(), batch))
			batch = batch[:0]
		}
	}
	mustDo(t, s.AppendLogs(context.Background(), batch))
	return f
}

// want returns the request ids ListLogs must return for f, newest first
// (ties: later appended first).
func (lf *logFixture) want(f store.LogFilter) []string {
	floor := lf.now.Add(-store.DefaultLogRetention)
	type hit struct {
		ts  time.Time
		idx int
		id  string
	}
	var hits []hit
	for i, r := range lf.rows {
		switch {
		case r.TS.Before(floor),
			!f.Since.IsZero() && r.TS.Before(f.Since),
			!f.Until.IsZero() && !r.TS.Before(f.Until),
			f.Provider != "" && r.Provider != f.Provider,
			f.Status != 0 && r.Status != f.Status,
			f.ParentRequestID != "" && r.ParentRequestID != f.ParentRequestID:
			continue
		}
		hits = append(hits, hit{r.TS, i, r.RequestID})
	}
	sort.Slice(hits, func(i, j int) bool {
		if !hits[i].ts.Equal(hits[j].ts) {
			return hits[i].ts.After(hits[j].ts)
		}
		return hits[i].idx > hits[j].idx
	})
	var ids []string
	for _, h := range hits {
		ids = append(ids, h.id)
	}
	return ids
}

// pageAll lists every row for f with page size limit and checks the page
// invariants along the way. between runs before every page but the first.
func pageAll(t *testing.T, s *bolt.Store, org string, f store.LogFilter, limit int, between func()) []string {
	t.Helper()
	var ids []string
	var after []byte
	for page := 0; ; page++ {
		if page > 0 && between != nil {
			between()
		}
		rows, next, more, err := s.ListLogs(context.Background(), org, f, limit, after)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		if len(rows) > limit || (more && len(rows) != limit) {
			t.Fatalf("page %d: %d rows, has_more=%v, limit %d", page, len(rows), more, limit)
		}
		for _, r := range rows {
			if r.OrgID != org {
				t.Fatalf("row %s has org %q, want %q", r.RequestID, r.OrgID, org)
			}
			ids = append(ids, r.RequestID)
		}
		if !more {
			return ids
		}
		if next == nil {
			t.Fatalf("page %d: has_more without a next position", page)
		}
		after = next
		if page > 100000 {
			t.Fatal("pagination does not terminate")
		}
	}
}

func TestListLogsFilters(t *testing.T) {
	clk := newClock()
	s := openStore(t, clk)
	fx := buildLogFixture(t, s, clk, 3000)
	// Boundary timestamps taken from actual rows, to test inclusivity.
	tsA := fx.rows[10].TS
	tsB := fx.rows[20].TS
	if tsB.Before(tsA) {
		tsA, tsB = tsB, tsA
	}
	floor := fx.now.Add(-store.DefaultLogRetention)

	filters := []struct {
		name string
		f    store.LogFilter
	}{
		{"none", store.LogFilter{}},
		{"provider", store.LogFilter{Provider: "espeak"}},
		{"unknown provider", store.LogFilter{Provider: "nobody"}},
		{"status", store.LogFilter{Status: 502}},
		{"unused status", store.LogFilter{Status: 204}},
		{"provider+status", store.LogFilter{Provider: "openai", Status: 422}},
		{"parent", store.LogFilter{ParentRequestID: "conv-1"}},
		{"parent+provider", store.LogFilter{ParentRequestID: "conv-2", Provider: "eleven"}},
		{"parent+status", store.LogFilter{ParentRequestID: "conv-1", Status: 200}},
		{"since inclusive", store.LogFilter{Since: tsA}},
		{"until exclusive", store.LogFilter{Until: tsB}},
		{"since+until", store.LogFilter{Since: tsA, Until: tsB}},
		{"since == until", store.LogFilter{Since: tsA, Until: tsA}},
		{"until before since", store.LogFilter{Since: tsB, Until: tsA}},
		{"since before retention is clamped", store.LogFilter{Since: floor.Add(-72 * time.Hour)}},
		{"until before retention", store.LogFilter{Until: floor.Add(-time.Hour)}},
		{"provider+status+since+until", store.LogFilter{Provider: "espeak", Status: 200, Since: tsA, Until: tsB}},
		{"status+since", store.LogFilter{Status: 400, Since: fx.now.Add(-10 * 24 * time.Hour)}},
		{"parent+until", store.LogFilter{ParentRequestID: "conv-2", Until: tsB}},
	}
	for _, c := range filters {
		want := fx.want(c.f)
		for _, limit := range []int{1, 3, 50, 200} {
			if limit == 1 && len(want) > 400 {
				continue // Covered by the other sizes; keeps the test quick.
			}
			t.Run(fmt.Sprintf("%s/limit=%d", c.name, limit), func(t *testing.T) {
				got := pageAll(t, s, "o1", c.f, limit, nil)
				if !equalStrings(got, want) {
					t.Errorf("got %d ids, want %d\ngot  %v\nwant %v", len(got), len(want), head(got), head(want))
				}
			})
		}
	}
	// The boundary filters must actually hit their boundary rows.
	if ids := fx.want(store.LogFilter{Since: tsA, Until: tsA.Add(time.Nanosecond)}); len(ids) == 0 {
		t.Fatal("fixture has no row at the since boundary")
	}
	if other := pageAll(t, s, "o2", store.LogFilter{}, 200, nil); len(other) == 0 {
		t.Fatal("decoy org has no rows")
	} else {
		for _, id := range other {
			if id[:6] != "decoy-" {
				t.Fatalf("org o2 sees %s", id)
			}
		}
	}
	if got := pageAll(t, s, "o3", store.LogFilter{}, 50, nil); len(got) != 0 {
		t.Errorf("empty org lists %v", got)
	}
}

// TestListLogsPagingWhileAppending adds newer rows between pages: they
// belong on a fresh first page, not in the remaining pages.
func TestListLogsPagingWhileAppending(t *testing.T) {
	for _, f := range []store.LogFilter{{}, {Provider: "espeak"}, {Status: 200}, {Provider: "espeak", Status: 200}, {ParentRequestID: "conv-1"}} {
		t.Run(fmt.Sprintf("%+v", f), func(t *testing.T) {
			clk := newClock()
			s := openStore(t, clk)
			fx := buildLogFixture(t, s, clk, 600)
			want := fx.want(f)
			n := 0
			got := pageAll(t, s, "o1", f, 7, func() {
				n++
				mustDo(t, s.AppendLogs(context.Background(), []store.LogRow{{
					RequestID: fmt.Sprintf("late-%d", n), OrgID: "o1", TS: clk.Advance(time.Second),
					Provider: "espeak", Status: 200, ParentRequestID: "conv-1",
				}}))
			})
			if !equalStrings(got, want) {
				t.Errorf("got %d ids, want %d", len(got), len(want))
			}
		})
	}
}

func TestListLogsRetentionWindowMoves(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := openStore(t, clk)
	now := clk.Now()
	mustDo(t, s.AppendLogs(ctx, []store.LogRow{
		{RequestID: "old", OrgID: "o", TS: now.Add(-store.DefaultLogRetention - time.Millisecond)},
		{RequestID: "edge", OrgID: "o", TS: now.Add(-store.DefaultLogRetention)},
		{RequestID: "new", OrgID: "o", TS: now},
	}))
	for _, c := range []struct {
		advance time.Duration
		want    []string
	}{
		{0, []string{"new", "edge"}},
		{time.Millisecond, []string{"new"}},
		{store.DefaultLogRetention, nil},
	} {
		clk.Advance(c.advance)
		for _, f := range []store.LogFilter{{}, {Since: now.Add(-100 * 24 * time.Hour)}} {
			if got := pageAll(t, s, "o", f, 10, nil); !equalStrings(got, c.want) {
				t.Errorf("after +%v with %+v: got %v, want %v", c.advance, f, got, c.want)
			}
		}
	}
}

func TestLogRowRoundTrip(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := openStore(t, clk)
	full := store.LogRow{
		RequestID: "r1", ParentRequestID: "p1", OrgID: "o", TS: clk.Now().Add(-1234567 * time.Nanosecond),
		Path: "/v1/audio/speech", Status: 422, Provider: "openai", Model: "gpt-4o-mini-tts", VoiceID: "alloy",
		VoiceRef: "6f1c", CharCount: 1234, CreditsUsed: 7, LatencyMS: 321, ErrorCode: "text_too_long",
		ErrorDetail: "ünïcode ✓ detail", ProviderOptions: `{"a":1}`, ModerationDecision: "block",
		ModerationReasonType: "rule", ModerationReasonDetail: "slur", ModerationConfidence: 0.875, ModerationLatencyMS: 3,
	}
	negative := store.LogRow{RequestID: "r2", OrgID: "o", TS: clk.Now(), Status: -1, LatencyMS: -5, ModerationConfidence: -0.5}
	defaulted := store.LogRow{RequestID: "r3", OrgID: "o"} // zero TS: "now"
	mustDo(t, s.AppendLogs(ctx, []store.LogRow{full, negative}))
	clk.Advance(time.Second)
	mustDo(t, s.AppendLogs(ctx, []store.LogRow{defaulted}))
	defaulted.TS = clk.Now()

	rows, next, more, err := s.ListLogs(ctx, "o", store.LogFilter{}, 10, nil)
	if err != nil || more || next == nil {
		t.Fatalf("ListLogs: more=%v next=%x err=%v", more, next, err)
	}
	want := []store.LogRow{defaulted, negative, full}
	if len(rows) != len(want) {
		t.Fatalf("got %d rows", len(rows))
	}
	for i := range want {
		w := want[i]
		w.TS = w.TS.UTC()
		if !reflect.DeepEqual(rows[i], w) {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, rows[i], w)
		}
	}
}

func TestAppendLogsValidation(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, nil)
	err := s.AppendLogs(ctx, []store.LogRow{{RequestID: "ok", OrgID: "o", TS: time.Now()}, {RequestID: "orphan"}})
	if err == nil {
		t.Fatal("row without org accepted")
	}
	if got := pageAll(t, s, "o", store.LogFilter{}, 10, nil); len(got) != 0 {
		t.Errorf("a rejected batch wrote %v", got)
	}
	mustDo(t, s.AppendLogs(ctx, nil))
	if _, _, _, err := s.ListLogs(ctx, "o", store.LogFilter{}, 10, []byte("short")); !errors.Is(err, store.ErrInvalidPosition) {
		t.Errorf("bad position: %v, want ErrInvalidPosition", err)
	}
	if _, _, _, err := s.ListLogs(ctx, "o", store.LogFilter{}, 0, nil); err == nil {
		t.Error("limit 0 accepted")
	}
}

func TestPurgeLogs(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := openStore(t, clk)
	fx := buildLogFixture(t, s, clk, 5000) // > purgeBatch rows to purge: several transactions
	cutoff := fx.now.Add(-20 * 24 * time.Hour)
	wantPurged := 0
	for _, r := range fx.rows {
		if r.TS.Before(cutoff) {
			wantPurged++
		}
	}
	wantDecoys := len(pageAll(t, s, "o2", store.LogFilter{Until: cutoff}, 200, nil))
	// Decoys older than the retention window are purged too but not listed.
	n, err := s.PurgeLogs(ctx, cutoff)
	if err != nil {
		t.Fatal(err)
	}
	if n < wantPurged+wantDecoys {
		t.Errorf("PurgeLogs deleted %d rows, want at least %d", n, wantPurged+wantDecoys)
	}
	kept := fx.rows[:0:0]
	for _, r := range fx.rows {
		if !r.TS.Before(cutoff) {
			kept = append(kept, r)
		}
	}
	after := &logFixture{now: fx.now, rows: kept}
	for _, f := range []store.LogFilter{{}, {Provider: "openai"}, {Status: 502}, {Provider: "espeak", Status: 200}, {ParentRequestID: "conv-1"}} {
		if got, want := pageAll(t, s, "o1", f, 200, nil), after.want(f); !equalStrings(got, want) {
			t.Errorf("after purge %+v: got %d ids, want %d", f, len(got), len(want))
		}
	}
	if got := pageAll(t, s, "o2", store.LogFilter{Until: cutoff}, 200, nil); len(got) != 0 {
		t.Errorf("org o2 still has %d purged rows", len(got))
	}
	if n, err := s.PurgeLogs(ctx, cutoff); err != nil || n != 0 {
		t.Errorf("second purge = %d, %v; want 0", n, err)
	}
}

func head(ids []string) []string {
	if len(ids) > 12 {
		return ids[:12]
	}
	return ids
}

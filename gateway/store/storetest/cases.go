package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
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
func buildLogFixture(t *testing.T, s store.Backend, clk *clock, n int) *logFixture {
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
func pageAll(t *testing.T, s store.Backend, org string, f store.LogFilter, limit int, between func()) []string {
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

func testListLogsFilters(t *testing.T, open Opener) {
	clk := newClock()
	s := openWith(t, open, clk)
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
func testListLogsPagingWhileAppending(t *testing.T, open Opener) {
	for _, f := range []store.LogFilter{{}, {Provider: "espeak"}, {Status: 200}, {Provider: "espeak", Status: 200}, {ParentRequestID: "conv-1"}} {
		t.Run(fmt.Sprintf("%+v", f), func(t *testing.T) {
			clk := newClock()
			s := openWith(t, open, clk)
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

func testListLogsRetentionWindowMoves(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := newClock()
	s := openWith(t, open, clk)
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

func testLogRowRoundTrip(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := newClock()
	s := openWith(t, open, clk)
	full := store.LogRow{
		RequestID: "r1", ParentRequestID: "p1", OrgID: "o", TS: clk.Now().Add(-1234567 * time.Nanosecond),
		Path: "/v1/audio/speech", Status: 422, Provider: "openai", Model: "gpt-4o-mini-tts", VoiceID: "alloy",
		VoiceRef: "6f1c", CharCount: 1234, CreditsUsed: 7, LatencyMS: 321, ErrorCode: "text_too_long",
		ErrorDetail: "ünïcode ✓ detail", ProviderOptions: `{"a":1}`, ModerationDecision: "block",
		ModerationReasonType: "rule", ModerationReasonDetail: "slur", ModerationConfidence: 0.875, ModerationLatencyMS: 3,
		TimeToFirstAudioMS: 42, TextWaitMS: 17, KeyID: "key-1", AudioMS: 2500, Cache: "hit",
		Transcoded: "pcm_24000->mp3_24000_96", Sanitized: true,
		Provenance: `{"record":{"request_id":"r1"},"signature":"c2ln"}`,
		Cost:       1_234_567_890_123, Currency: "USD", CostEstimate: 1_234_000_000_000,
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
		// GetLog reads the same fields as ListLogs.
		if got, err := s.GetLog(ctx, "o", w.RequestID); err != nil || !reflect.DeepEqual(*got, w) {
			t.Errorf("GetLog(%s):\n got %+v, %v\nwant %+v", w.RequestID, got, err, w)
		}
	}
}

func testAppendLogsValidation(t *testing.T, open Opener) {
	ctx := context.Background()
	s := openWith(t, open, nil)
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

func testPurgeLogs(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := newClock()
	s := openWith(t, open, clk)
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

func testVoiceCRUD(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := newClock()
	s := openWith(t, open, clk)
	full := &store.Voice{
		ID: "v1", OrgID: "o1", Title: "Narrator", Provider: "espeak", Model: "espeak-ng", VoiceID: "en-us",
		Tags: []string{"calm"}, Gender: "female", Description: "d", MediaID: "m1",
		ProviderOptions: map[string]any{"pitch": 50.0, "nested": map[string]any{"a": true}},
		Fallbacks:       []store.VoiceTarget{{Provider: "openai", Model: "tts-1", VoiceID: "alloy"}, {Provider: "elevenlabs", Model: "eleven_v2", VoiceID: "x1"}},
		CreatedAt:       clk.Now(),
	}
	mustDo(t, s.CreateVoice(ctx, full))
	if !full.UpdatedAt.Equal(full.CreatedAt) {
		t.Errorf("UpdatedAt defaulted to %v, want CreatedAt", full.UpdatedAt)
	}
	bare := &store.Voice{ID: "v2", OrgID: "o1"}
	mustDo(t, s.CreateVoice(ctx, bare))
	if !bare.CreatedAt.Equal(clk.Now()) {
		t.Errorf("CreatedAt defaulted to %v, want now", bare.CreatedAt)
	}

	cases := []struct {
		name, org, id string
		want          *store.Voice
		err           error
	}{
		{"full", "o1", "v1", full, nil},
		{"nil collections come back empty", "o1", "v2", &store.Voice{ID: "v2", OrgID: "o1", Tags: []string{},
			ProviderOptions: map[string]any{}, Fallbacks: []store.VoiceTarget{}, CreatedAt: clk.Now(), UpdatedAt: clk.Now()}, nil},
		{"other org", "o2", "v1", nil, store.ErrNotFound},
		{"unknown id", "o1", "v9", nil, store.ErrNotFound},
		{"empty id", "o1", "", nil, store.ErrNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.GetVoice(ctx, c.org, c.id)
			if !errors.Is(err, c.err) {
				t.Fatalf("GetVoice = %v, want %v", err, c.err)
			}
			if c.want != nil && !reflect.DeepEqual(got, c.want) {
				t.Errorf("GetVoice = %+v, want %+v", got, c.want)
			}
		})
	}

	for _, c := range []struct {
		name string
		v    *store.Voice
		err  error
	}{
		{"duplicate id", &store.Voice{ID: "v1", OrgID: "o1"}, store.ErrExists},
		{"nil", nil, nil},
		{"no id", &store.Voice{OrgID: "o1"}, nil},
		{"no org", &store.Voice{ID: "v3"}, nil},
	} {
		err := s.CreateVoice(ctx, c.v)
		if err == nil || (c.err != nil && !errors.Is(err, c.err)) {
			t.Errorf("CreateVoice %s = %v, want error %v", c.name, err, c.err)
		}
	}
	// Same id in another org is a different voice.
	mustDo(t, s.CreateVoice(ctx, &store.Voice{ID: "v1", OrgID: "o2", Title: "theirs"}))

	if err := s.DeleteVoice(ctx, "o2", "v2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteVoice of other org's voice = %v, want ErrNotFound", err)
	}
	mustDo(t, s.DeleteVoice(ctx, "o1", "v1"))
	if _, err := s.GetVoice(ctx, "o1", "v1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetVoice after delete = %v", err)
	}
	if err := s.DeleteVoice(ctx, "o1", "v1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second DeleteVoice = %v", err)
	}
	if v, err := s.GetVoice(ctx, "o2", "v1"); err != nil || v.Title != "theirs" {
		t.Errorf("other org's v1 after delete = %+v, %v", v, err)
	}
	page, _, _, err := s.ListVoices(ctx, "o1", 10, nil)
	if err != nil || len(page) != 1 || page[0].ID != "v2" {
		t.Errorf("ListVoices after delete = %+v, %v", page, err)
	}
}

func testListVoicesOrgIsolation(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := newClock()
	s := openWith(t, open, clk)
	for i := range 5 {
		clk.Advance(time.Second)
		mustDo(t, s.CreateVoice(ctx, &store.Voice{ID: fmt.Sprintf("a%d", i), OrgID: "A"}))
		mustDo(t, s.CreateVoice(ctx, &store.Voice{ID: fmt.Sprintf("b%d", i), OrgID: "B"}))
	}
	for _, c := range []struct {
		org  string
		want []string
	}{
		{"A", []string{"a4", "a3", "a2", "a1", "a0"}},
		{"B", []string{"b4", "b3", "b2", "b1", "b0"}},
		{"C", nil},
	} {
		page, _, more, err := s.ListVoices(ctx, c.org, 50, nil)
		if err != nil || more {
			t.Fatalf("ListVoices(%s) err=%v more=%v", c.org, err, more)
		}
		if got := voiceIDs(page); !equalStrings(got, c.want) {
			t.Errorf("ListVoices(%s) = %v, want %v", c.org, got, c.want)
		}
	}
}

// TestListVoicesPagination pages through an organization's voices while new
// voices keep being created between pages: the pages must hold exactly the
// voices that existed at the first page, newest first, each once.
func testListVoicesPagination(t *testing.T, open Opener) {
	for _, c := range []struct {
		name      string
		n, limit  int
		sameTime  bool // all voices share one created_at: ids break the tie
		newBefore int  // voices created before each page after the first
	}{
		{name: "limit 1", n: 9, limit: 1, newBefore: 1},
		{name: "limit 7", n: 100, limit: 7, newBefore: 3},
		{name: "exact multiple", n: 40, limit: 10, newBefore: 2},
		{name: "one page", n: 50, limit: 50},
		{name: "max page", n: 450, limit: 200, newBefore: 5},
		{name: "same created_at", n: 33, limit: 4, sameTime: true, newBefore: 1},
		{name: "empty org", n: 0, limit: 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			clk := newClock()
			s := openWith(t, open, clk)
			var want []string // newest first
			created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			for i := range c.n {
				id := fmt.Sprintf("v%04d", i)
				at := created
				if !c.sameTime {
					at = created.Add(time.Duration(i) * time.Millisecond)
				}
				mustDo(t, s.CreateVoice(ctx, &store.Voice{ID: id, OrgID: "o", CreatedAt: at}))
				want = append([]string{id}, want...)
			}
			var got []string
			var after []byte
			for page := 0; ; page++ {
				if page > 0 {
					for j := range c.newBefore {
						// Created "now", after every pre-existing voice.
						mustDo(t, s.CreateVoice(ctx, &store.Voice{ID: fmt.Sprintf("new-%d-%d", page, j), OrgID: "o", CreatedAt: clk.Advance(time.Second)}))
					}
				}
				voices, next, more, err := s.ListVoices(ctx, "o", c.limit, after)
				if err != nil {
					t.Fatal(err)
				}
				if len(voices) > c.limit {
					t.Fatalf("page %d has %d voices, limit %d", page, len(voices), c.limit)
				}
				if more && len(voices) != c.limit {
					t.Fatalf("page %d: has_more with a short page (%d)", page, len(voices))
				}
				got = append(got, voiceIDs(voices)...)
				if !more {
					break
				}
				if next == nil {
					t.Fatalf("page %d: has_more without a next position", page)
				}
				after = next
				if page > c.n+1 {
					t.Fatal("pagination does not terminate")
				}
			}
			if !equalStrings(got, want) {
				t.Errorf("paged ids = %v\nwant %v", got, want)
			}
		})
	}
}

func testListVoicesRejectsBadInput(t *testing.T, open Opener) {
	s := openWith(t, open, nil)
	ctx := context.Background()
	if _, _, _, err := s.ListVoices(ctx, "o", 0, nil); err == nil {
		t.Error("limit 0 accepted")
	}
	if _, _, _, err := s.ListVoices(ctx, "o", 10, []byte{1, 2}); !errors.Is(err, store.ErrInvalidPosition) {
		t.Errorf("short position: %v, want ErrInvalidPosition", err)
	}
}

func voiceIDs(vs []store.Voice) []string {
	var ids []string
	for _, v := range vs {
		ids = append(ids, v.ID)
	}
	return ids
}

func testCanceledContext(t *testing.T, open Opener) {
	s := openWith(t, open, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.CreateVoice(ctx, &store.Voice{ID: "v", OrgID: "o"}); !errors.Is(err, context.Canceled) {
		t.Errorf("CreateVoice with canceled ctx = %v", err)
	}
	if _, err := s.GetVoice(ctx, "o", "v"); !errors.Is(err, context.Canceled) {
		t.Errorf("GetVoice with canceled ctx = %v", err)
	}
	if _, _, _, err := s.ListLogs(ctx, "o", store.LogFilter{}, 1, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("ListLogs with canceled ctx = %v", err)
	}
}

func testKeys(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := newClock()
	s := openWith(t, open, clk)
	k1 := &store.APIKey{ID: "k1", OrgID: "o1", Name: "ci", Prefix: "vx_ab", Hash: []byte("hash-1")}
	k2 := &store.APIKey{ID: "k2", OrgID: "o2", Hash: []byte("hash-2"), CreatedAt: clk.Now().Add(time.Second)}
	mustDo(t, s.CreateKey(ctx, k1))
	mustDo(t, s.CreateKey(ctx, k2))

	for _, c := range []struct {
		name string
		key  *store.APIKey
		want error
	}{
		{"duplicate id", &store.APIKey{ID: "k1", OrgID: "o1", Hash: []byte("other")}, store.ErrExists},
		{"duplicate hash", &store.APIKey{ID: "k3", OrgID: "o1", Hash: []byte("hash-1")}, store.ErrExists},
	} {
		if err := s.CreateKey(ctx, c.key); !errors.Is(err, c.want) {
			t.Errorf("%s: CreateKey = %v, want %v", c.name, err, c.want)
		}
	}
	for _, bad := range []*store.APIKey{nil, {OrgID: "o"}, {ID: "x"}, {ID: "x", OrgID: "o"}} {
		if err := s.CreateKey(ctx, bad); err == nil {
			t.Errorf("CreateKey(%+v) succeeded", bad)
		}
	}

	got, err := s.KeyByHash(ctx, []byte("hash-1"))
	if err != nil || got.ID != "k1" || got.OrgID != "o1" || got.Name != "ci" || got.Prefix != "vx_ab" || !got.Active() {
		t.Errorf("KeyByHash = %+v, %v", got, err)
	}
	if _, err := s.KeyByHash(ctx, []byte("nope")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("KeyByHash(unknown) = %v, want ErrNotFound", err)
	}

	for _, c := range []struct {
		org  string
		want []string
	}{{"o1", []string{"k1"}}, {"o2", []string{"k2"}}, {"", []string{"k1", "k2"}}, {"o3", nil}} {
		keys, err := s.ListKeys(ctx, c.org)
		if err != nil {
			t.Fatal(err)
		}
		if ids := keyIDs(keys); !equalStrings(ids, c.want) {
			t.Errorf("ListKeys(%q) = %v, want %v", c.org, ids, c.want)
		}
	}

	clk.Advance(time.Minute)
	revoked, err := s.RevokeKey(ctx, "k1")
	if err != nil || revoked.Active() || !revoked.RevokedAt.Equal(clk.Now()) {
		t.Fatalf("RevokeKey = %+v, %v", revoked, err)
	}
	clk.Advance(time.Minute)
	again, err := s.RevokeKey(ctx, "k1")
	if err != nil || !again.RevokedAt.Equal(revoked.RevokedAt) {
		t.Errorf("second RevokeKey = %+v, %v; want first revocation time kept", again, err)
	}
	if got, err := s.KeyByHash(ctx, []byte("hash-1")); err != nil || got.Active() {
		t.Errorf("KeyByHash of revoked key = %+v, %v; want revoked", got, err)
	}
	if _, err := s.RevokeKey(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RevokeKey(unknown) = %v, want ErrNotFound", err)
	}
	all, err := s.ListKeys(ctx, "")
	if err != nil || len(all) != 2 || all[0].Active() || !all[1].Active() {
		t.Errorf("AllKeys = %+v, %v", all, err)
	}

	// A key's scope comes back as it went in, by hash and in lists; a key
	// without one has the zero scope.
	scope := store.KeyScope{ExpiresAt: clk.Now().Add(48 * time.Hour), Providers: []string{"espeak", "openai"},
		Models: []string{"openai/tts-1"}, Budget: 500, BudgetPeriod: "day"}
	mustDo(t, s.CreateKey(ctx, &store.APIKey{ID: "k3", OrgID: "o3", Hash: []byte("hash-3"), Scope: scope}))
	byHash, err := s.KeyByHash(ctx, []byte("hash-3"))
	if err != nil || !sameScope(byHash.Scope, scope) {
		t.Errorf("KeyByHash scope = %+v, %v; want %+v", byHash.Scope, err, scope)
	}
	listed, err := s.ListKeys(ctx, "o3")
	if err != nil || len(listed) != 1 || !sameScope(listed[0].Scope, scope) {
		t.Errorf("ListKeys scope = %+v, %v", listed, err)
	}
	if got, _ := s.KeyByHash(ctx, []byte("hash-2")); !sameScope(got.Scope, store.KeyScope{}) {
		t.Errorf("a key created without a scope has %+v", got.Scope)
	}
}

func sameScope(a, b store.KeyScope) bool {
	return a.ExpiresAt.Equal(b.ExpiresAt) && equalStrings(a.Providers, b.Providers) && equalStrings(a.Models, b.Models) &&
		a.Budget == b.Budget && a.BudgetPeriod == b.BudgetPeriod && a.RatePerMinute == b.RatePerMinute && a.BudgetCost == b.BudgetCost
}

// testSealFingerprint: no fingerprint and no secrets in a new store; the
// first fingerprint recorded stays (a second writer gets it back); a
// secret anywhere counts, and deleting the last one counts too.
func testSealFingerprint(t *testing.T, open Opener) {
	ctx := context.Background()
	s := openWith(t, open, nil)
	fp, has, err := s.SealFingerprint(ctx)
	if err != nil || fp != nil || has {
		t.Fatalf("new store: fingerprint %x, has secrets %v, err %v", fp, has, err)
	}
	first := []byte("fingerprint-one-0123456789abcdef")
	got, err := s.RecordSealFingerprint(ctx, first)
	if err != nil || string(got) != string(first) {
		t.Fatalf("RecordSealFingerprint = %q, %v", got, err)
	}
	first[0] = 'X' // the store must not alias the caller's buffer
	got, err = s.RecordSealFingerprint(ctx, []byte("fingerprint-two"))
	if err != nil || string(got) != "fingerprint-one-0123456789abcdef" {
		t.Fatalf("second RecordSealFingerprint = %q, %v: the first must stay", got, err)
	}
	mustDo(t, s.PutSecret(ctx, "o2", "byok:openai", []byte("sealed")))
	fp, has, err = s.SealFingerprint(ctx)
	if err != nil || string(fp) != "fingerprint-one-0123456789abcdef" || !has {
		t.Fatalf("after a secret: fingerprint %q, has secrets %v, err %v", fp, has, err)
	}
	mustDo(t, s.DeleteSecret(ctx, "o2", "byok:openai"))
	if _, has, err = s.SealFingerprint(ctx); err != nil || has {
		t.Errorf("after deleting the only secret: has secrets %v, err %v", has, err)
	}
}

func testSecrets(t *testing.T, open Opener) {
	ctx := context.Background()
	s := openWith(t, open, nil)
	buf := []byte("cipher-1")
	mustDo(t, s.PutSecret(ctx, "o1", "openai", buf))
	buf[0] = 'X' // The store must not alias the caller's buffer.
	mustDo(t, s.PutSecret(ctx, "o1", "elevenlabs", []byte("cipher-2")))
	mustDo(t, s.PutSecret(ctx, "o2", "openai", []byte("other-org")))

	got, err := s.GetSecret(ctx, "o1", "openai")
	if err != nil || string(got) != "cipher-1" {
		t.Errorf("GetSecret = %q, %v", got, err)
	}
	mustDo(t, s.PutSecret(ctx, "o1", "openai", []byte("cipher-3")))
	if got, _ := s.GetSecret(ctx, "o1", "openai"); string(got) != "cipher-3" {
		t.Errorf("GetSecret after replace = %q", got)
	}
	names, err := s.ListSecretNames(ctx, "o1")
	if err != nil || !equalStrings(names, []string{"elevenlabs", "openai"}) {
		t.Errorf("ListSecretNames = %v, %v", names, err)
	}
	mustDo(t, s.DeleteSecret(ctx, "o1", "openai"))
	for _, c := range []struct{ org, name string }{{"o1", "openai"}, {"o3", "openai"}, {"o1", ""}} {
		if _, err := s.GetSecret(ctx, c.org, c.name); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetSecret(%q, %q) = %v, want ErrNotFound", c.org, c.name, err)
		}
	}
	if err := s.DeleteSecret(ctx, "o1", "openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second DeleteSecret = %v, want ErrNotFound", err)
	}
	if got, _ := s.GetSecret(ctx, "o2", "openai"); string(got) != "other-org" {
		t.Errorf("other org's secret = %q", got)
	}
	if names, _ := s.ListSecretNames(ctx, "o3"); len(names) != 0 {
		t.Errorf("ListSecretNames of empty org = %v", names)
	}
}

func testMedia(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := newClock()
	s := openWith(t, open, clk)
	data := []byte("RIFF....WAVEfmt ")
	m := &store.Media{ID: "m1", OrgID: "o1", Filename: "me.wav", MediaType: "audio/wav", DurationMS: 1500}
	mustDo(t, s.PutMedia(ctx, m, data))
	if err := s.PutMedia(ctx, &store.Media{ID: "m1", OrgID: "o1"}, nil); !errors.Is(err, store.ErrExists) {
		t.Errorf("duplicate PutMedia = %v, want ErrExists", err)
	}
	mustDo(t, s.PutMedia(ctx, &store.Media{ID: "empty", OrgID: "o1"}, nil))

	got, err := s.GetMedia(ctx, "o1", "m1")
	if err != nil {
		t.Fatal(err)
	}
	want := store.Media{ID: "m1", OrgID: "o1", Filename: "me.wav", MediaType: "audio/wav", Bytes: int64(len(data)),
		DurationMS: 1500, SHA256: sha256Hex(data), CreatedAt: clk.Now()}
	if *got != want {
		t.Errorf("GetMedia = %+v, want %+v", *got, want)
	}
	d, err := s.MediaData(ctx, "o1", "m1")
	if err != nil || string(d) != string(data) {
		t.Fatalf("MediaData = %q, %v", d, err)
	}
	d[0] = 'X'
	if d2, _ := s.MediaData(ctx, "o1", "m1"); string(d2) != string(data) {
		t.Error("MediaData returned memory shared with the database")
	}
	if d, err := s.MediaData(ctx, "o1", "empty"); err != nil || d == nil || len(d) != 0 {
		t.Errorf("MediaData(empty) = %v, %v; want empty non-nil", d, err)
	}
	for _, c := range []struct{ org, id string }{{"o2", "m1"}, {"o1", "m2"}, {"o1", ""}} {
		if _, err := s.GetMedia(ctx, c.org, c.id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetMedia(%q, %q) = %v, want ErrNotFound", c.org, c.id, err)
		}
		if _, err := s.MediaData(ctx, c.org, c.id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("MediaData(%q, %q) = %v, want ErrNotFound", c.org, c.id, err)
		}
	}
	mustDo(t, s.DeleteMedia(ctx, "o1", "m1"))
	if _, err := s.MediaData(ctx, "o1", "m1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("MediaData after delete = %v", err)
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func mustDo(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func keyIDs(keys []store.APIKey) []string {
	var ids []string
	for _, k := range keys {
		ids = append(ids, k.ID)
	}
	return ids
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func testListLogsConfiguredRetention(t *testing.T, open Opener) {
	clk := newClock()
	s := open(t, store.Options{Now: clk.Now, LogRetention: 2 * 24 * time.Hour})
	ctx := context.Background()
	now := clk.Now()
	mustDo(t, s.AppendLogs(ctx, []store.LogRow{
		{OrgID: "o1", RequestID: "old", TS: now.Add(-3 * 24 * time.Hour)},
		{OrgID: "o1", RequestID: "edge", TS: now.Add(-47 * time.Hour)},
		{OrgID: "o1", RequestID: "new", TS: now.Add(-time.Hour)},
	}))
	got := pageAll(t, s, "o1", store.LogFilter{}, 10, nil)
	if !equalStrings(got, []string{"new", "edge"}) {
		t.Fatalf("with 2-day retention listed %v, want [new edge]", got)
	}
	// A Since older than the retention does not widen it.
	got = pageAll(t, s, "o1", store.LogFilter{Since: now.Add(-10 * 24 * time.Hour)}, 10, nil)
	if !equalStrings(got, []string{"new", "edge"}) {
		t.Fatalf("Since before the retention listed %v", got)
	}
}

// testConcurrentWriters appends log batches and creates voices from many
// goroutines at once: every row and voice must be there exactly once.
func testConcurrentWriters(t *testing.T, open Opener) {
	s := openWith(t, open, nil)
	ctx := context.Background()
	const writers, batches, rowsPer, voicesPer = 8, 5, 20, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers*2)
	for w := range writers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for b := range batches {
				rows := make([]store.LogRow, rowsPer)
				for i := range rows {
					rows[i] = store.LogRow{OrgID: "o1", RequestID: fmt.Sprintf("w%d-b%d-r%d", w, b, i), Status: 200}
				}
				if err := s.AppendLogs(ctx, rows); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for v := range voicesPer {
				if err := s.CreateVoice(ctx, &store.Voice{ID: fmt.Sprintf("v-%d-%d", w, v), OrgID: "o1"}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	ids := pageAll(t, s, "o1", store.LogFilter{}, 37, nil)
	seen := map[string]int{}
	for _, id := range ids {
		seen[id]++
	}
	if len(ids) != writers*batches*rowsPer || len(seen) != len(ids) {
		t.Fatalf("%d rows listed, %d distinct; want %d", len(ids), len(seen), writers*batches*rowsPer)
	}
	// Concurrent batches add to the same rollup row: none may be lost.
	day := store.UsageDayOf(time.Now())
	usage, err := s.Usage(ctx, "o1", day.Add(-store.UsageDay), day.Add(2*store.UsageDay))
	if err != nil {
		t.Fatal(err)
	}
	var requests int64
	for _, u := range usage {
		requests += u.Requests
	}
	if requests != writers*batches*rowsPer {
		t.Fatalf("usage counts %d requests, want %d", requests, writers*batches*rowsPer)
	}
	var after store.Position
	voices := map[string]bool{}
	for {
		vs, next, more, err := s.ListVoices(ctx, "o1", 7, after)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			if voices[v.ID] {
				t.Fatalf("voice %s listed twice", v.ID)
			}
			voices[v.ID] = true
		}
		if !more {
			break
		}
		after = next
	}
	if len(voices) != writers*voicesPer {
		t.Fatalf("%d voices listed, want %d", len(voices), writers*voicesPer)
	}
}

func testSecret(t *testing.T, open Opener) {
	s := openWith(t, open, nil)
	a := s.Secret()
	if len(a) != 32 {
		t.Fatalf("Secret() is %d bytes, want 32", len(a))
	}
	a[0] ^= 0xFF // A copy: changing it must not change the backend's.
	if b := s.Secret(); string(b) == string(a) || len(b) != 32 {
		t.Fatal("Secret() is not stable, or returns the backend's own memory")
	}
	if strings.Count(string(s.Secret()), "\x00") == 32 {
		t.Fatal("Secret() is all zeros")
	}
}

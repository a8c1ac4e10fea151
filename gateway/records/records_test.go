package records_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/admission/auth"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/records"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
)

// open returns a bbolt store in a temporary directory.
func open(t *testing.T) *bolt.Store {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "v.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestLog: one row of the caller's organization; another's is not found,
// like a missing one.
func TestLog(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	if err := st.AppendLogs(ctx, []store.LogRow{{RequestID: "r1", OrgID: "acme", TS: time.Now(), Path: "/v1/audio/speech", Status: 200}}); err != nil {
		t.Fatal(err)
	}
	s := records.New(st)
	tests := []struct {
		org, id string
		found   bool
	}{
		{"acme", "r1", true},
		{"initech", "r1", false},
		{"acme", "r2", false},
	}
	for _, tt := range tests {
		row, err := s.Log(ctx, tt.org, tt.id)
		var pe *problem.Error
		switch {
		case tt.found && (err != nil || row.RequestID != tt.id):
			t.Errorf("%s %s: %+v %v", tt.org, tt.id, row, err)
		case !tt.found && (!errors.As(err, &pe) || pe.Code != problem.NotFound):
			t.Errorf("%s %s: got %v, want not_found", tt.org, tt.id, err)
		}
	}
}

// TestUsage: the rollup's rows merged into the groups asked for, sorted,
// with the keys' names, and only the caller's organization's.
func TestUsage(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	_, k1, err := auth.CreateKey(ctx, st, "acme", "backend")
	if err != nil {
		t.Fatal(err)
	}
	day := store.UsageDayOf(time.Now())
	at := func(d int) time.Time { return day.Add(time.Duration(d)*store.UsageDay + time.Hour) }
	rows := []store.LogRow{
		{RequestID: "a", OrgID: "acme", TS: at(-1), Status: 200, Provider: "espeak", Model: "espeak-ng", CharCount: 10, KeyID: k1.ID},
		{RequestID: "b", OrgID: "acme", TS: at(0), Status: 200, Provider: "espeak", Model: "espeak-ng", CharCount: 5, KeyID: k1.ID},
		{RequestID: "c", OrgID: "acme", TS: at(0), Status: 502, Provider: "openai", Model: "tts-1", CharCount: 7, KeyID: "zz-gone"},
		{RequestID: "d", OrgID: "initech", TS: at(0), Status: 200, Provider: "espeak", Model: "espeak-ng", CharCount: 100},
	}
	if err := st.AppendLogs(ctx, rows); err != nil {
		t.Fatal(err)
	}
	s := records.New(st)
	window := records.UsageQuery{Since: day.Add(-2 * store.UsageDay), Until: day.Add(store.UsageDay)}
	type group struct {
		provider, key, name string
		day                 time.Time
		requests, chars     int64
	}
	tests := []struct {
		name string
		by   func(q *records.UsageQuery)
		want []group
	}{
		{name: "total only", by: func(*records.UsageQuery) {}},
		{name: "by provider", by: func(q *records.UsageQuery) { q.ByProvider = true }, want: []group{
			{provider: "espeak", requests: 2, chars: 15}, {provider: "openai", requests: 1, chars: 7}}},
		{name: "by day", by: func(q *records.UsageQuery) { q.ByDay = true }, want: []group{
			{day: day.Add(-store.UsageDay), requests: 1, chars: 10}, {day: day, requests: 2, chars: 12}}},
		{name: "by key, named", by: func(q *records.UsageQuery) { q.ByKey = true }, want: []group{
			{key: k1.ID, name: "backend", requests: 2, chars: 15}, {key: "zz-gone", requests: 1, chars: 7}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := window
			tt.by(&q)
			u, err := s.Usage(ctx, "acme", q)
			if err != nil {
				t.Fatal(err)
			}
			if u.Total.Requests != 3 || u.Total.Characters != 22 || u.Total.Errors != 1 {
				t.Errorf("total %+v", u.Total)
			}
			if tt.want == nil {
				tt.want = []group{{requests: 3, chars: 22}}
			}
			if len(u.Groups) != len(tt.want) {
				t.Fatalf("%d groups, want %d: %+v", len(u.Groups), len(tt.want), u.Groups)
			}
			for i, w := range tt.want {
				g := u.Groups[i]
				if g.Key.Provider != w.provider || g.Key.KeyID != w.key || g.KeyName != w.name || !g.Key.Day.Equal(w.day) ||
					g.Counts.Requests != w.requests || g.Counts.Characters != w.chars {
					t.Errorf("group %d: %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

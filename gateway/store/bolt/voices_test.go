package bolt_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
)

func TestVoiceCRUD(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := openStore(t, clk)
	full := &store.Voice{
		ID: "v1", OrgID: "o1", Title: "Narrator", Provider: "espeak", Model: "espeak-ng", VoiceID: "en-us",
		Tags: []string{"calm"}, Gender: "female", Description: "d", MediaID: "m1",
		ProviderOptions: map[string]any{"pitch": 50.0, "nested": map[string]any{"a": true}},
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
			ProviderOptions: map[string]any{}, CreatedAt: clk.Now(), UpdatedAt: clk.Now()}, nil},
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

func TestListVoicesOrgIsolation(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := openStore(t, clk)
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
func TestListVoicesPagination(t *testing.T) {
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
			s := openStore(t, clk)
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

func TestListVoicesRejectsBadInput(t *testing.T) {
	s := openStore(t, nil)
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

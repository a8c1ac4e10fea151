package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
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

func testUpdateVoice(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := newClock()
	s := openWith(t, open, clk)
	created := clk.Now()
	mustDo(t, s.CreateVoice(ctx, &store.Voice{ID: "v1", OrgID: "o", Title: "Old", Provider: "espeak", Model: "m", VoiceID: "en", CreatedAt: created}))
	mustDo(t, s.CreateVoice(ctx, &store.Voice{ID: "v2", OrgID: "o", Title: "Other", CreatedAt: created.Add(time.Second)}))
	clk.Advance(time.Hour)
	upd := &store.Voice{ID: "v1", OrgID: "o", Title: "New", Provider: "testkit", Model: "test", VoiceID: "alpha",
		Tags: []string{"t"}, Gender: "male", Description: "d", ProviderOptions: map[string]any{"k": "v"}, CreatedAt: clk.Now(),
		Fallbacks: []store.VoiceTarget{{Provider: "espeak", Model: "espeak-ng", VoiceID: "en"}}}
	mustDo(t, s.UpdateVoice(ctx, upd))
	want := *upd
	want.CreatedAt, want.UpdatedAt = created.UTC(), clk.Now().UTC()
	got, err := s.GetVoice(ctx, "o", "v1")
	if err != nil || !reflect.DeepEqual(*got, want) {
		t.Errorf("after update:\n got %+v, %v\nwant %+v", got, err, want)
	}
	// Nil collections come back empty; the list order (creation) holds.
	mustDo(t, s.UpdateVoice(ctx, &store.Voice{ID: "v1", OrgID: "o", Title: "Bare"}))
	if got, _ := s.GetVoice(ctx, "o", "v1"); got.Tags == nil || got.ProviderOptions == nil || got.Fallbacks == nil || len(got.Fallbacks) != 0 || !got.CreatedAt.Equal(created) {
		t.Errorf("bare update: %+v", got)
	}
	page, _, _, err := s.ListVoices(ctx, "o", 10, nil)
	if err != nil || len(page) != 2 || page[0].ID != "v2" || page[1].Title != "Bare" {
		t.Errorf("list after update: %+v %v", page, err)
	}
	for _, v := range []*store.Voice{{ID: "v1", OrgID: "other"}, {ID: "v9", OrgID: "o"}} {
		if err := s.UpdateVoice(ctx, v); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("UpdateVoice(%s, %s) = %v, want ErrNotFound", v.OrgID, v.ID, err)
		}
	}
}

func testDictionaries(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := newClock()
	s := openWith(t, open, clk)
	d := &store.Dictionary{ID: "d1", OrgID: "o", Name: "Brand terms", Description: "names", IsDefault: true, RuleCount: 9}
	mustDo(t, s.CreateDictionary(ctx, d, 3))
	if d.IsDefault || d.RuleCount != 0 || !d.CreatedAt.Equal(clk.Now()) || !d.UpdatedAt.Equal(d.CreatedAt) {
		t.Errorf("created %+v: not default, no rules, times defaulted", d)
	}
	got, err := s.GetDictionary(ctx, "o", "d1")
	if want := *d; err != nil || !reflect.DeepEqual(*got, want) {
		t.Errorf("GetDictionary = %+v, %v; want %+v", got, err, want)
	}
	for _, c := range []struct {
		name string
		d    *store.Dictionary
		err  error
	}{
		{"taken name, other case", &store.Dictionary{ID: "d2", OrgID: "o", Name: "BRAND TERMS"}, store.ErrConflict},
		{"taken id", &store.Dictionary{ID: "d1", OrgID: "o", Name: "x"}, store.ErrExists},
		{"nil", nil, nil},
		{"no id", &store.Dictionary{OrgID: "o", Name: "y"}, nil},
	} {
		if err := s.CreateDictionary(ctx, c.d, 3); err == nil || (c.err != nil && !errors.Is(err, c.err)) {
			t.Errorf("CreateDictionary %s = %v, want %v", c.name, err, c.err)
		}
	}
	// The same name and id in another organization are another dictionary.
	mustDo(t, s.CreateDictionary(ctx, &store.Dictionary{ID: "d1", OrgID: "o2", Name: "Brand terms"}, 3))
	mustDo(t, s.CreateDictionary(ctx, &store.Dictionary{ID: "d2", OrgID: "o", Name: "Acronyms"}, 3))
	mustDo(t, s.CreateDictionary(ctx, &store.Dictionary{ID: "d3", OrgID: "o", Name: "Names"}, 3))
	if err := s.CreateDictionary(ctx, &store.Dictionary{ID: "d4", OrgID: "o", Name: "One too many"}, 3); !errors.Is(err, store.ErrLimit) {
		t.Errorf("a fourth dictionary with max 3 = %v, want ErrLimit", err)
	}

	// Update: rename (a taken name conflicts), description.
	clk.Advance(time.Minute)
	if err := s.UpdateDictionary(ctx, &store.Dictionary{ID: "d2", OrgID: "o", Name: "names"}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("rename to a taken name = %v, want ErrConflict", err)
	}
	up := &store.Dictionary{ID: "d2", OrgID: "o", Name: "Acronyms & initialisms", Description: "new"}
	mustDo(t, s.UpdateDictionary(ctx, up))
	if up.Name != "Acronyms & initialisms" || up.Description != "new" || !up.UpdatedAt.Equal(clk.Now()) || up.CreatedAt.Equal(up.UpdatedAt) {
		t.Errorf("updated %+v", up)
	}
	// The old name is free again, the new one taken.
	mustDo(t, s.CreateDictionary(ctx, &store.Dictionary{ID: "d5", OrgID: "o2", Name: "Acronyms"}, 3))
	if err := s.UpdateDictionary(ctx, &store.Dictionary{ID: "d3", OrgID: "o", Name: "ACRONYMS & INITIALISMS"}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("rename onto the new name = %v, want ErrConflict", err)
	}
	mustDo(t, s.UpdateDictionary(ctx, &store.Dictionary{ID: "d3", OrgID: "o", Name: "Acronyms"}))
	for _, c := range []struct{ org, id string }{{"o2", "d2"}, {"o", "d9"}} {
		if err := s.UpdateDictionary(ctx, &store.Dictionary{ID: c.id, OrgID: c.org, Name: "z"}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("UpdateDictionary(%s, %s) = %v, want ErrNotFound", c.org, c.id, err)
		}
		if _, err := s.GetDictionary(ctx, c.org, c.id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetDictionary(%s, %s) = %v, want ErrNotFound", c.org, c.id, err)
		}
		if err := s.DeleteDictionary(ctx, c.org, c.id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("DeleteDictionary(%s, %s) = %v, want ErrNotFound", c.org, c.id, err)
		}
	}

	// Delete frees the name and a place under the bound.
	mustDo(t, s.DeleteDictionary(ctx, "o", "d1"))
	if _, err := s.GetDictionary(ctx, "o", "d1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetDictionary after delete = %v", err)
	}
	mustDo(t, s.CreateDictionary(ctx, &store.Dictionary{ID: "d6", OrgID: "o", Name: "brand terms"}, 3))
	if got, err := s.GetDictionary(ctx, "o2", "d1"); err != nil || got.Name != "Brand terms" {
		t.Errorf("the other organization's d1 = %+v, %v", got, err)
	}
}

func testDefaultDictionary(t *testing.T, open Opener) {
	ctx := context.Background()
	s := openWith(t, open, nil)
	if _, err := s.GetDictionary(ctx, "o", "def-1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a default before first use: %v", err)
	}
	// Concurrent first uses create one default.
	var wg sync.WaitGroup
	got := make([]*store.Dictionary, 8)
	errs := make([]error, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = s.DefaultDictionary(ctx, "o", &store.Dictionary{ID: fmt.Sprintf("def-%d", i), Name: store.DefaultDictionaryName})
		}()
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil || got[i].ID != got[0].ID || !got[i].IsDefault || got[i].OrgID != "o" || got[i].Name != store.DefaultDictionaryName {
			t.Fatalf("DefaultDictionary #%d = %+v, %v; #0 = %+v", i, got[i], errs[i], got[0])
		}
	}
	page, _, _, err := s.ListDictionaries(ctx, "o", 10, nil)
	if err != nil || len(page) != 1 || !page[0].IsDefault {
		t.Errorf("dictionaries after concurrent first uses: %+v, %v", page, err)
	}
	// A later call returns it whatever it is given; another org gets its own.
	again, err := s.DefaultDictionary(ctx, "o", &store.Dictionary{ID: "ignored", Name: store.DefaultDictionaryName})
	if err != nil || again.ID != got[0].ID {
		t.Errorf("second DefaultDictionary = %+v, %v", again, err)
	}
	other, err := s.DefaultDictionary(ctx, "o2", &store.Dictionary{ID: got[0].ID, Name: store.DefaultDictionaryName})
	if err != nil || other.OrgID != "o2" || !other.IsDefault {
		t.Errorf("o2's default = %+v, %v", other, err)
	}
	// Its rules are what DictionaryRules returns as the defaults.
	mustDo(t, s.CreateRule(ctx, &store.PronunciationRule{ID: "r1", OrgID: "o", DictionaryID: got[0].ID, Word: "AWS", Replacement: "A W S"}, 10))
	defs, _, err := s.DictionaryRules(ctx, "o", nil)
	if err != nil || len(defs) != 1 || defs[0].Word != "AWS" {
		t.Errorf("default rules %+v, %v", defs, err)
	}
	if defs, _, err := s.DictionaryRules(ctx, "o2", nil); err != nil || len(defs) != 0 {
		t.Errorf("o2's default rules %+v, %v", defs, err)
	}
}

func testRules(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := newClock()
	s := openWith(t, open, clk)
	mustDo(t, s.CreateDictionary(ctx, &store.Dictionary{ID: "d", OrgID: "o", Name: "D"}, 10))
	mustDo(t, s.CreateDictionary(ctx, &store.Dictionary{ID: "e", OrgID: "o", Name: "E"}, 10))
	clk.Advance(time.Second)
	r := &store.PronunciationRule{ID: "r1", OrgID: "o", DictionaryID: "d", Word: "Speechbase", Replacement: "speech base", CaseSensitive: true}
	mustDo(t, s.CreateRule(ctx, r, 2))
	if !r.CreatedAt.Equal(clk.Now()) || !r.UpdatedAt.Equal(r.CreatedAt) {
		t.Errorf("rule times %+v", r)
	}
	got, err := s.GetRule(ctx, "o", "d", "r1")
	if err != nil || !reflect.DeepEqual(*got, *r) {
		t.Errorf("GetRule = %+v, %v; want %+v", got, err, *r)
	}
	if d, _ := s.GetDictionary(ctx, "o", "d"); d.RuleCount != 1 || !d.UpdatedAt.Equal(r.CreatedAt) {
		t.Errorf("dictionary after a rule: %+v", d)
	}
	for _, c := range []struct {
		name string
		r    *store.PronunciationRule
		err  error
	}{
		{"same word, other case", &store.PronunciationRule{ID: "r2", OrgID: "o", DictionaryID: "d", Word: "SPEECHBASE", Replacement: "x"}, store.ErrConflict},
		{"taken id", &store.PronunciationRule{ID: "r1", OrgID: "o", DictionaryID: "d", Word: "other", Replacement: "x"}, store.ErrExists},
		{"missing dictionary", &store.PronunciationRule{ID: "r3", OrgID: "o", DictionaryID: "nope", Word: "w", Replacement: "x"}, store.ErrNotFound},
		{"another org's dictionary", &store.PronunciationRule{ID: "r3", OrgID: "o2", DictionaryID: "d", Word: "w", Replacement: "x"}, store.ErrNotFound},
		{"nil", nil, nil},
	} {
		if err := s.CreateRule(ctx, c.r, 2); err == nil || (c.err != nil && !errors.Is(err, c.err)) {
			t.Errorf("CreateRule %s = %v, want %v", c.name, err, c.err)
		}
	}
	// The same word in another dictionary is another rule.
	mustDo(t, s.CreateRule(ctx, &store.PronunciationRule{ID: "r4", OrgID: "o", DictionaryID: "e", Word: "speechbase", Replacement: "x"}, 2))
	mustDo(t, s.CreateRule(ctx, &store.PronunciationRule{ID: "r5", OrgID: "o", DictionaryID: "d", Word: "AGI", Replacement: "A G I"}, 2))
	if err := s.CreateRule(ctx, &store.PronunciationRule{ID: "r6", OrgID: "o", DictionaryID: "d", Word: "jq", Replacement: "jay cue"}, 2); !errors.Is(err, store.ErrLimit) {
		t.Errorf("a third rule with max 2 = %v, want ErrLimit", err)
	}
	// A rule is found only through its own dictionary and organization.
	for _, c := range []struct{ org, dict, id string }{{"o", "e", "r1"}, {"o2", "d", "r1"}, {"o", "d", "r9"}} {
		if _, err := s.GetRule(ctx, c.org, c.dict, c.id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetRule(%v) = %v, want ErrNotFound", c, err)
		}
		if err := s.DeleteRule(ctx, c.org, c.dict, c.id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("DeleteRule(%v) = %v, want ErrNotFound", c, err)
		}
		if err := s.UpdateRule(ctx, &store.PronunciationRule{ID: c.id, OrgID: c.org, DictionaryID: c.dict, Word: "q", Replacement: "q"}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("UpdateRule(%v) = %v, want ErrNotFound", c, err)
		}
	}

	// Update: a word of another rule conflicts; the rule's own word in
	// another case does not.
	clk.Advance(time.Second)
	if err := s.UpdateRule(ctx, &store.PronunciationRule{ID: "r1", OrgID: "o", DictionaryID: "d", Word: "agi", Replacement: "x"}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("update onto a taken word = %v, want ErrConflict", err)
	}
	up := &store.PronunciationRule{ID: "r1", OrgID: "o", DictionaryID: "d", Word: "SPEECHBASE", Replacement: "speech-base"}
	mustDo(t, s.UpdateRule(ctx, up))
	if up.Word != "SPEECHBASE" || up.CaseSensitive || !up.UpdatedAt.Equal(clk.Now()) || up.CreatedAt.Equal(up.UpdatedAt) {
		t.Errorf("updated rule %+v", up)
	}
	mustDo(t, s.UpdateRule(ctx, &store.PronunciationRule{ID: "r5", OrgID: "o", DictionaryID: "d", Word: "A.G.I.", Replacement: "A G I"}))
	mustDo(t, s.CreateRule(ctx, &store.PronunciationRule{ID: "r7", OrgID: "o", DictionaryID: "e", Word: "AGI", Replacement: "a gee eye"}, 2))

	// Delete frees a place and the word.
	mustDo(t, s.DeleteRule(ctx, "o", "d", "r5"))
	if d, _ := s.GetDictionary(ctx, "o", "d"); d.RuleCount != 1 {
		t.Errorf("rule count after a delete: %d", d.RuleCount)
	}
	mustDo(t, s.CreateRule(ctx, &store.PronunciationRule{ID: "r8", OrgID: "o", DictionaryID: "d", Word: "a.g.i.", Replacement: "x"}, 2))

	// Deleting a dictionary deletes its rules, and only its own.
	mustDo(t, s.DeleteDictionary(ctx, "o", "d"))
	for _, id := range []string{"r1", "r8"} {
		if _, err := s.GetRule(ctx, "o", "d", id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("rule %s after its dictionary's delete: %v", id, err)
		}
	}
	if _, _, _, err := s.ListRules(ctx, "o", "d", 10, nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ListRules of a deleted dictionary = %v, want ErrNotFound", err)
	}
	rules, _, _, err := s.ListRules(ctx, "o", "e", 10, nil)
	if err != nil || len(rules) != 2 {
		t.Errorf("the other dictionary's rules: %+v, %v", rules, err)
	}
	// A phoneme rule keeps its kind, alphabet and phoneme through a
	// create, a read, an update and the synthesis read.
	ph := &store.PronunciationRule{ID: "p1", OrgID: "o", DictionaryID: "e", Word: "Nguyen", Kind: store.RulePhoneme, Alphabet: "ipa", Phoneme: "ŋwɪn", Replacement: "win"}
	mustDo(t, s.CreateRule(ctx, ph, 10))
	if got, err := s.GetRule(ctx, "o", "e", "p1"); err != nil || !reflect.DeepEqual(*got, *ph) {
		t.Errorf("GetRule of a phoneme rule = %+v, %v; want %+v", got, err, *ph)
	}
	ph.Alphabet, ph.Phoneme = "cmu", "W IH1 N"
	want := *ph
	mustDo(t, s.UpdateRule(ctx, ph))
	if !reflect.DeepEqual(*ph, want) {
		t.Errorf("UpdateRule of a phoneme rule left %+v, want %+v", *ph, want)
	}
	if _, byID, err := s.DictionaryRules(ctx, "o", []string{"e"}); err != nil || !hasRule(byID[0], want) {
		t.Errorf("DictionaryRules after a phoneme rule's update = %+v, %v; want it to hold %+v", byID, err, want)
	}
	mustDo(t, s.DeleteRule(ctx, "o", "e", "p1"))
	// A new dictionary of the same id starts empty, with ids free again.
	mustDo(t, s.CreateDictionary(ctx, &store.Dictionary{ID: "d", OrgID: "o", Name: "D again"}, 10))
	mustDo(t, s.CreateRule(ctx, &store.PronunciationRule{ID: "r1", OrgID: "o", DictionaryID: "d", Word: "Speechbase", Replacement: "x"}, 2))
	if rules, _, _, err := s.ListRules(ctx, "o", "d", 10, nil); err != nil || len(rules) != 1 {
		t.Errorf("rules of the new d: %+v, %v", rules, err)
	}
}

func testDictionaryPaging(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := newClock()
	s := openWith(t, open, clk)
	var wantDicts, wantRules []string
	for i := range 7 {
		id := fmt.Sprintf("d%d", i)
		mustDo(t, s.CreateDictionary(ctx, &store.Dictionary{ID: id, OrgID: "o", Name: id}, 100))
		wantDicts = append([]string{id}, wantDicts...)
		clk.Advance(time.Millisecond)
	}
	for i := range 11 {
		id := fmt.Sprintf("r%02d", i)
		mustDo(t, s.CreateRule(ctx, &store.PronunciationRule{ID: id, OrgID: "o", DictionaryID: "d3", Word: id, Replacement: "x"}, 100))
		wantRules = append([]string{id}, wantRules...)
		if i%2 == 0 {
			clk.Advance(time.Millisecond) // some rules share a creation time
		}
	}
	// Decoys: rules of other dictionaries and organizations.
	mustDo(t, s.CreateRule(ctx, &store.PronunciationRule{ID: "x1", OrgID: "o", DictionaryID: "d4", Word: "w", Replacement: "x"}, 100))
	mustDo(t, s.CreateDictionary(ctx, &store.Dictionary{ID: "d3", OrgID: "o2", Name: "d3"}, 100))
	mustDo(t, s.CreateRule(ctx, &store.PronunciationRule{ID: "x2", OrgID: "o2", DictionaryID: "d3", Word: "w", Replacement: "x"}, 100))

	var gotDicts []string
	var after store.Position
	for {
		page, next, more, err := s.ListDictionaries(ctx, "o", 3, after)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range page {
			gotDicts = append(gotDicts, d.ID)
		}
		if !more {
			break
		}
		after = next
	}
	if !equalStrings(gotDicts, wantDicts) {
		t.Errorf("dictionaries %v, want %v", gotDicts, wantDicts)
	}
	var gotRules []string
	after = nil
	pages := 0
	for {
		page, next, more, err := s.ListRules(ctx, "o", "d3", 4, after)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, r := range page {
			gotRules = append(gotRules, r.ID)
		}
		if !more {
			break
		}
		after = next
	}
	if pages != 3 {
		t.Errorf("%d pages of 4 for 11 rules", pages)
	}
	// Newest first; rules created in the same nanosecond by id, descending.
	if len(gotRules) != 11 || !equalStrings(sortedCopy(gotRules), sortedCopy(wantRules)) || gotRules[0] != "r10" || gotRules[10] != "r00" {
		t.Errorf("rules %v", gotRules)
	}
	for _, bad := range []store.Position{{1}, []byte("x")} {
		if _, _, _, err := s.ListRules(ctx, "o", "d3", 4, bad); !errors.Is(err, store.ErrInvalidPosition) {
			t.Errorf("ListRules after %q = %v, want ErrInvalidPosition", bad, err)
		}
		if _, _, _, err := s.ListDictionaries(ctx, "o", 4, bad); !errors.Is(err, store.ErrInvalidPosition) {
			t.Errorf("ListDictionaries after %q = %v, want ErrInvalidPosition", bad, err)
		}
	}
	if page, _, more, err := s.ListDictionaries(ctx, "nobody", 5, nil); err != nil || len(page) != 0 || more {
		t.Errorf("an organization without dictionaries: %v %v %v", page, more, err)
	}
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}

func testDictionaryRules(t *testing.T, open Opener) {
	ctx := context.Background()
	s := openWith(t, open, nil)
	// No default yet, no ids: nothing.
	defs, byID, err := s.DictionaryRules(ctx, "o", nil)
	if err != nil || len(defs) != 0 || len(byID) != 0 {
		t.Fatalf("empty organization: %v %v %v", defs, byID, err)
	}
	def, err := s.DefaultDictionary(ctx, "o", &store.Dictionary{ID: "def", Name: store.DefaultDictionaryName})
	if err != nil {
		t.Fatal(err)
	}
	rule := func(id, dict, word string) {
		mustDo(t, s.CreateRule(ctx, &store.PronunciationRule{ID: id, OrgID: "o", DictionaryID: dict, Word: word, Replacement: word + "!"}, 100))
	}
	mustDo(t, s.CreateDictionary(ctx, &store.Dictionary{ID: "a", OrgID: "o", Name: "A"}, 100))
	mustDo(t, s.CreateDictionary(ctx, &store.Dictionary{ID: "b", OrgID: "o", Name: "B"}, 100))
	mustDo(t, s.CreateDictionary(ctx, &store.Dictionary{ID: "empty", OrgID: "o", Name: "Empty"}, 100))
	mustDo(t, s.CreateDictionary(ctx, &store.Dictionary{ID: "theirs", OrgID: "o2", Name: "T"}, 100))
	rule("1", def.ID, "default-word")
	rule("2", "a", "alpha")
	rule("3", "a", "beta")
	rule("4", "b", "gamma")
	words := func(rs []store.PronunciationRule) []string {
		out := []string{}
		for _, r := range rs {
			out = append(out, r.Word)
		}
		sort.Strings(out)
		return out
	}
	defs, byID, err = s.DictionaryRules(ctx, "o", []string{"b", "a", "empty", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if !equalStrings(words(defs), []string{"default-word"}) || len(byID) != 4 ||
		!equalStrings(words(byID[0]), []string{"gamma"}) || !equalStrings(words(byID[1]), []string{"alpha", "beta"}) ||
		len(byID[2]) != 0 || !equalStrings(words(byID[3]), []string{"gamma"}) {
		t.Errorf("DictionaryRules = %v %v", defs, byID)
	}
	// The default listed by id as well is returned both ways.
	if defs, byID, err := s.DictionaryRules(ctx, "o", []string{def.ID}); err != nil || len(defs) != 1 || len(byID[0]) != 1 {
		t.Errorf("the default by id: %v %v %v", defs, byID, err)
	}
	for _, ids := range [][]string{{"a", "nope"}, {"theirs"}, {""}} {
		_, _, err := s.DictionaryRules(ctx, "o", ids)
		var missing *store.MissingDictionaryError
		if !errors.Is(err, store.ErrNotFound) || !errors.As(err, &missing) || missing.ID != ids[len(ids)-1] {
			t.Errorf("DictionaryRules(%v) = %v, want a MissingDictionaryError for %q", ids, err, ids[len(ids)-1])
		}
	}
	// Another organization sees none of o's rules, default included.
	if defs, _, err := s.DictionaryRules(ctx, "o2", []string{"theirs"}); err != nil || len(defs) != 0 {
		t.Errorf("o2: %v %v", defs, err)
	}
}

// testDictionaryBoundsConcurrent: writers racing for the last places never
// pass a bound, whichever instance they write through.
func testDictionaryBoundsConcurrent(t *testing.T, open Opener) {
	ctx := context.Background()
	s := openWith(t, open, nil)
	const writers, maxDicts, maxRules = 12, 5, 7
	var wg sync.WaitGroup
	var ok sync.Map
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.CreateDictionary(ctx, &store.Dictionary{ID: fmt.Sprintf("d%d", i), OrgID: "o", Name: fmt.Sprintf("n%d", i)}, maxDicts)
			switch {
			case err == nil:
				ok.Store(i, true)
			case !errors.Is(err, store.ErrLimit):
				t.Errorf("writer %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	page, _, _, err := s.ListDictionaries(ctx, "o", 100, nil)
	if err != nil || len(page) != maxDicts {
		t.Fatalf("%d dictionaries with max %d (%v)", len(page), maxDicts, err)
	}
	dict := page[0].ID
	for i := range writers * 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.CreateRule(ctx, &store.PronunciationRule{ID: fmt.Sprintf("r%d", i), OrgID: "o", DictionaryID: dict, Word: fmt.Sprintf("w%d", i), Replacement: "x"}, maxRules)
			if err != nil && !errors.Is(err, store.ErrLimit) {
				t.Errorf("rule writer %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	rules, _, _, err := s.ListRules(ctx, "o", dict, 100, nil)
	d, derr := s.GetDictionary(ctx, "o", dict)
	if err != nil || derr != nil || len(rules) != maxRules || d.RuleCount != maxRules {
		t.Errorf("%d rules, count %d, with max %d (%v %v)", len(rules), d.RuleCount, maxRules, err, derr)
	}
}

// hasRule reports whether rs holds r with the same fields (times compared
// as instants).
func hasRule(rs []store.PronunciationRule, r store.PronunciationRule) bool {
	for _, x := range rs {
		if x.ID == r.ID && x.Word == r.Word && x.Kind == r.Kind && x.Alphabet == r.Alphabet && x.Phoneme == r.Phoneme &&
			x.Replacement == r.Replacement && x.UpdatedAt.Equal(r.UpdatedAt) {
			return true
		}
	}
	return false
}

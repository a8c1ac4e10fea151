package resources

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/store"
)

// TestDictionaries: an organization's dictionaries beside its default one,
// which always exists, keeps its name and cannot be deleted.
func TestDictionaries(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	now := time.Now().UTC()
	str := func(s string) *string { return &s }
	d, err := f.s.CreateDictionary(ctx, "acme", DictionarySpec{Name: str(" Brands "), Description: str("ours")}, now)
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "Brands" {
		t.Errorf("name %q: the spaces around it are kept", d.Name)
	}
	def, err := f.s.Dictionary(ctx, "acme", DefaultDictionaryID)
	if err != nil || !def.IsDefault {
		t.Fatalf("default dictionary: %+v %v", def, err)
	}
	tests := []struct {
		name string
		op   func() error
		code problem.Code
	}{
		{"name required", func() error { _, err := f.s.CreateDictionary(ctx, "acme", DictionarySpec{}, now); return err }, problem.ValidationFailed},
		{"name taken", func() error {
			_, err := f.s.CreateDictionary(ctx, "acme", DictionarySpec{Name: str("brands")}, now)
			return err
		}, problem.Conflict},
		{"default's name", func() error {
			_, err := f.s.CreateDictionary(ctx, "acme", DictionarySpec{Name: str(store.DefaultDictionaryName)}, now)
			return err
		}, problem.Conflict},
		{"default keeps its name", func() error {
			_, err := f.s.UpdateDictionary(ctx, "acme", DefaultDictionaryID, DictionarySpec{Name: str("Other")}, now)
			return err
		}, problem.Conflict},
		{"default stays", func() error { return f.s.DeleteDictionary(ctx, "acme", DefaultDictionaryID) }, problem.Conflict},
		{"not a uuid", func() error { _, err := f.s.Dictionary(ctx, "acme", "brands"); return err }, problem.DictionaryNotFound},
		{"another organization's", func() error { _, err := f.s.Dictionary(ctx, "initech", d.ID); return err }, problem.DictionaryNotFound},
		{"another organization deletes", func() error { return f.s.DeleteDictionary(ctx, "initech", d.ID) }, problem.DictionaryNotFound},
		{"another organization lists rules", func() error {
			_, _, _, err := f.s.ListRules(ctx, "initech", d.ID, 10, nil)
			return err
		}, problem.DictionaryNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantCode(t, tt.op(), tt.code) })
	}
	list, _, _, err := f.s.ListDictionaries(ctx, "acme", 10, nil)
	if err != nil || len(list) != 2 {
		t.Errorf("acme lists %d dictionaries (%v), want its own and the default", len(list), err)
	}
}

// TestRules: a rule is checked as the pipeline reads words, a word is
// one rule per dictionary, and rules go with their dictionary.
func TestRules(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	now := time.Now().UTC()
	str := func(s string) *string { return &s }
	d, err := f.s.CreateDictionary(ctx, "acme", DictionarySpec{Name: str("Brands")}, now)
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.s.CreateRule(ctx, "acme", d.ID, RuleSpec{Word: str("AWS"), Replacement: str("A W S")}, now)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		spec RuleSpec
		dict string
		code problem.Code
		// field is where a validation problem points.
		field string
	}{
		{name: "into the default", dict: DefaultDictionaryID, spec: RuleSpec{Word: str("jq"), Replacement: str("jay cue")}},
		{name: "case sensitive", dict: d.ID, spec: RuleSpec{Word: str("GIF"), Replacement: str("jif"), CaseSensitive: new(true)}},
		{name: "no word", dict: d.ID, spec: RuleSpec{Replacement: str("x")}, code: problem.ValidationFailed, field: "word"},
		{name: "no letters", dict: d.ID, spec: RuleSpec{Word: str("!!!"), Replacement: str("x")}, code: problem.ValidationFailed, field: "word"},
		{name: "empty replacement", dict: d.ID, spec: RuleSpec{Word: str("k8s"), Replacement: str(" ")}, code: problem.ValidationFailed, field: "replacement"},
		{name: "same word", dict: d.ID, spec: RuleSpec{Word: str("aws"), Replacement: str("amazon")}, code: problem.Conflict},
		{name: "another organization's dictionary", dict: "", spec: RuleSpec{Word: str("x"), Replacement: str("y")}, code: problem.DictionaryNotFound},
		{name: "phoneme ipa", dict: d.ID, spec: RuleSpec{Word: str("Nguyen"), Kind: str("phoneme"), Alphabet: str("ipa"), Phoneme: str("ŋwɪn")}},
		{name: "phoneme cmu with a stand-in", dict: d.ID, spec: RuleSpec{Word: str("tomato"), Kind: str("phoneme"), Alphabet: str("cmu"), Phoneme: str("T AH0 M EY1 T OW2"), Replacement: str("tomayto")}},
		{name: "phoneme without alphabet", dict: d.ID, spec: RuleSpec{Word: str("a1"), Kind: str("phoneme"), Phoneme: str("ə")}, code: problem.ValidationFailed, field: "alphabet"},
		{name: "phoneme not ipa", dict: d.ID, spec: RuleSpec{Word: str("a2"), Kind: str("phoneme"), Alphabet: str("ipa"), Phoneme: str("t@m&")}, code: problem.ValidationFailed, field: "phoneme"},
		{name: "cmu stress on a consonant", dict: d.ID, spec: RuleSpec{Word: str("a3"), Kind: str("phoneme"), Alphabet: str("cmu"), Phoneme: str("T1 AH0")}, code: problem.ValidationFailed, field: "phoneme"},
		{name: "unknown kind", dict: d.ID, spec: RuleSpec{Word: str("a4"), Kind: str("respell"), Replacement: str("x")}, code: problem.ValidationFailed, field: "kind"},
		{name: "alias with a phoneme", dict: d.ID, spec: RuleSpec{Word: str("a5"), Replacement: str("x"), Phoneme: str("ə")}, code: problem.ValidationFailed, field: "kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			org, dict := "acme", tt.dict
			if dict == "" {
				org, dict = "initech", d.ID
			}
			_, err := f.s.CreateRule(ctx, org, dict, tt.spec, now)
			pe := wantCode(t, err, tt.code)
			if tt.field != "" && (len(pe.Validation) == 0 || strings.Join(pe.Validation[0].Path, "/") != tt.field) {
				t.Errorf("validation %+v, want an entry at %s", pe.Validation, tt.field)
			}
		})
	}
	if _, err := f.s.UpdateRule(ctx, "acme", d.ID, r.ID, RuleSpec{Replacement: str("")}, now); err == nil {
		t.Error("a rule was changed to an empty replacement")
	}
	if got, err := f.s.Rule(ctx, "acme", d.ID, r.ID); err != nil || got.Replacement != "A W S" {
		t.Errorf("after a refused change: %+v %v", got, err)
	}
	// An alias becomes a phoneme rule and back; the way back drops the
	// pronunciation.
	ph, err := f.s.UpdateRule(ctx, "acme", d.ID, r.ID, RuleSpec{Kind: str("phoneme"), Alphabet: str("cmu"), Phoneme: str("EY1 D AH1 B AH0 L Y UW0 EH1 S")}, now)
	if err != nil || ph.Kind != "phoneme" || ph.Replacement != "A W S" {
		t.Fatalf("to a phoneme rule: %+v %v", ph, err)
	}
	back, err := f.s.UpdateRule(ctx, "acme", d.ID, r.ID, RuleSpec{Kind: str("alias")}, now)
	if err != nil || back.Kind != "alias" || back.Phoneme != "" || back.Alphabet != "" {
		t.Fatalf("back to an alias: %+v %v", back, err)
	}
	wantCode(t, f.s.DeleteRule(ctx, "initech", d.ID, r.ID), problem.DictionaryNotFound)
	if err := f.s.DeleteDictionary(ctx, "acme", d.ID); err != nil {
		t.Fatal(err)
	}
	_, err = f.s.Rule(ctx, "acme", d.ID, r.ID)
	wantCode(t, err, problem.DictionaryNotFound)
}

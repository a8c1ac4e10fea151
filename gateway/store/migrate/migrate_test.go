package migrate_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
	"github.com/voxgate/voxgate/gateway/store/migrate"
	"github.com/voxgate/voxgate/gateway/store/postgres"
	"github.com/voxgate/voxgate/internal/pgtest"
)

// TestMigrateDictionaries copies pronunciation dictionaries and their
// rules, ids and all, into a PostgreSQL database whose gateway already
// made a default dictionary of its own; a second run changes nothing.
func TestMigrateDictionaries(t *testing.T) {
	ctx := context.Background()
	src, err := bolt.Open(filepath.Join(t.TempDir(), "v.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	def, err := src.DefaultDictionary(ctx, "acme", &store.Dictionary{ID: "11111111-1111-4111-8111-111111111111", Name: store.DefaultDictionaryName})
	must(err)
	must(src.CreateDictionary(ctx, &store.Dictionary{ID: "22222222-2222-4222-8222-222222222222", OrgID: "acme", Name: "Brands", Description: "d"}, 10))
	must(src.CreateRule(ctx, &store.PronunciationRule{ID: "r1", OrgID: "acme", DictionaryID: def.ID, Word: "AWS", Replacement: "a w s"}, 10))
	must(src.CreateRule(ctx, &store.PronunciationRule{ID: "r2", OrgID: "acme", DictionaryID: def.ID, Word: "jq", Replacement: "jay cue"}, 10))
	must(src.CreateRule(ctx, &store.PronunciationRule{ID: "r3", OrgID: "acme", DictionaryID: "22222222-2222-4222-8222-222222222222", Word: "Voxgate", Replacement: "vox gate", CaseSensitive: true}, 10))

	pg := pgtest.StartT(t)
	dst, err := postgres.Open(ctx, pg.NewDatabaseT(t), postgres.Options{})
	must(err)
	defer dst.Close()
	// The PostgreSQL gateway ran before: its own default, with "jq".
	theirs, err := dst.DefaultDictionary(ctx, "acme", &store.Dictionary{ID: "33333333-3333-4333-8333-333333333333", Name: store.DefaultDictionaryName})
	must(err)
	must(dst.CreateRule(ctx, &store.PronunciationRule{ID: "r9", OrgID: "acme", DictionaryID: theirs.ID, Word: "JQ", Replacement: "jquery"}, 10))

	for run := range 2 {
		rep, err := migrate.Run(ctx, src, dst, nil)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		for _, c := range rep.Counts {
			if (c.Kind == "dictionaries" && (c.Source != 2 || c.Verified != 2)) || (c.Kind == "rules" && (c.Source != 3 || c.Verified != 3)) {
				t.Errorf("run %d: %+v", run, c)
			}
		}
	}
	brands, err := dst.GetDictionary(ctx, "acme", "22222222-2222-4222-8222-222222222222")
	if err != nil || brands.Name != "Brands" || brands.Description != "d" || brands.RuleCount != 1 {
		t.Fatalf("Brands in PostgreSQL: %+v, %v", brands, err)
	}
	defs, byID, err := dst.DictionaryRules(ctx, "acme", []string{brands.ID})
	if err != nil {
		t.Fatal(err)
	}
	words := map[string]string{}
	for _, r := range defs {
		words[r.Word] = r.Replacement
	}
	// The destination's default kept its own "JQ" and gained "AWS".
	if len(defs) != 2 || words["AWS"] != "a w s" || words["JQ"] != "jquery" {
		t.Errorf("default rules after migration: %+v", defs)
	}
	if len(byID[0]) != 1 || byID[0][0].ID != "r3" || !byID[0][0].CaseSensitive {
		t.Errorf("Brands' rules: %+v", byID[0])
	}
}

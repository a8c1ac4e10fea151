package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
)

// Text the store cannot hold (store.ValidText): every backend refuses a
// write that carries it with an error matching store.ErrInvalidText (a
// *store.TextError naming the field) and writes nothing; PostgreSQL
// cannot hold U+0000 in text, so no backend may accept it. Every other
// valid UTF-8, control characters included, round-trips byte for byte.

// unstorable are strings no backend may accept.
var unstorable = map[string]string{
	"NUL":          "en\x00x",
	"NUL alone":    "\x00",
	"invalid UTF8": "caf\xe9",
	"lone byte":    "\xff",
}

// unusual is valid text that must come back exactly as written.
const unusual = "tab\there\nnew line \x01\x1f\x7f del, \ufffd replacement, \u2028 separator, e\u0301, 🎙️"

// wantTextError checks that err matches store.ErrInvalidText as a
// *store.TextError naming field ("" accepts any field).
func wantTextError(t *testing.T, what string, err error, field string) {
	t.Helper()
	var te *store.TextError
	switch {
	case !errors.Is(err, store.ErrInvalidText):
		t.Errorf("%s = %v, want an error matching store.ErrInvalidText", what, err)
	case !errors.As(err, &te):
		t.Errorf("%s = %v, want a *store.TextError", what, err)
	case field != "" && te.Field != field:
		t.Errorf("%s names field %q, want %q", what, te.Field, field)
	}
}

func testLogRowInvalidText(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := newClock()
	s := openWith(t, open, clk)
	good := store.LogRow{RequestID: "good", OrgID: "o2", TS: clk.Now(), Path: "/v1/audio/speech", Status: 200, Provider: "espeak", Model: "m"}
	fields := map[string]func(r *store.LogRow, v string){
		"request_id":               func(r *store.LogRow, v string) { r.RequestID = v },
		"parent_request_id":        func(r *store.LogRow, v string) { r.ParentRequestID = v },
		"path":                     func(r *store.LogRow, v string) { r.Path = v },
		"provider":                 func(r *store.LogRow, v string) { r.Provider = v },
		"model":                    func(r *store.LogRow, v string) { r.Model = v },
		"voice_id":                 func(r *store.LogRow, v string) { r.VoiceID = v },
		"voice_ref":                func(r *store.LogRow, v string) { r.VoiceRef = v },
		"error_code":               func(r *store.LogRow, v string) { r.ErrorCode = v },
		"error_detail":             func(r *store.LogRow, v string) { r.ErrorDetail = v },
		"provider_options":         func(r *store.LogRow, v string) { r.ProviderOptions = v },
		"moderation_decision":      func(r *store.LogRow, v string) { r.ModerationDecision = v },
		"moderation_reason_type":   func(r *store.LogRow, v string) { r.ModerationReasonType = v },
		"moderation_reason_detail": func(r *store.LogRow, v string) { r.ModerationReasonDetail = v },
		"key_id":                   func(r *store.LogRow, v string) { r.KeyID = v },
		"cache":                    func(r *store.LogRow, v string) { r.Cache = v },
		"transcoded":               func(r *store.LogRow, v string) { r.Transcoded = v },
		"provenance":               func(r *store.LogRow, v string) { r.Provenance = v },
		"currency":                 func(r *store.LogRow, v string) { r.Currency = v },
	}
	for field, set := range fields {
		for kind, v := range unstorable {
			bad := store.LogRow{RequestID: "bad", OrgID: "o1", TS: clk.Now(), Status: 200, Provider: "espeak", Model: "m"}
			set(&bad, v)
			wantTextError(t, "AppendLogs with "+kind+" in "+field, s.AppendLogs(ctx, []store.LogRow{good, bad}), field)
		}
	}
	// Nothing of a refused batch is written: not the good row of another
	// organization, not a usage count.
	for _, org := range []string{"o1", "o2"} {
		if got := pageAll(t, s, org, store.LogFilter{}, 10, nil); len(got) != 0 {
			t.Errorf("refused batches wrote rows of %s: %v", org, got)
		}
		day := clk.Now().Truncate(24 * time.Hour)
		u, err := s.Usage(ctx, org, day, day.Add(24*time.Hour))
		if err != nil || len(u) != 0 {
			t.Errorf("refused batches counted usage of %s: %+v, %v", org, u, err)
		}
	}

	// A row sanitized by the caller is storable and keeps its mark.
	bad := store.LogRow{RequestID: "sanitized", OrgID: "o1", TS: clk.Now(), Status: 422, VoiceID: "en\x00x", ErrorDetail: "caf\xe9"}
	if !bad.Sanitize() || !bad.Sanitized {
		t.Fatal("Sanitize changed nothing")
	}
	mustDo(t, s.AppendLogs(ctx, []store.LogRow{good, bad}))
	got, err := s.GetLog(ctx, "o1", "sanitized")
	if err != nil || got.VoiceID != "en\ufffdx" || got.ErrorDetail != "caf\ufffd" || !got.Sanitized {
		t.Errorf("the sanitized row read back = %+v, %v", got, err)
	}

	// Lookups by text no record can hold find nothing, or fail with the
	// typed error: never a raw driver error.
	if _, err := s.GetLog(ctx, "o1", "r\x00"); !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrInvalidText) {
		t.Errorf("GetLog by a NUL id = %v, want ErrNotFound or ErrInvalidText", err)
	}
	for _, f := range []store.LogFilter{{Provider: "e\x00"}, {ParentRequestID: "\xff"}} {
		if rows, _, _, err := s.ListLogs(ctx, "o1", f, 10, nil); len(rows) != 0 || (err != nil && !errors.Is(err, store.ErrInvalidText)) {
			t.Errorf("ListLogs(%+q) = %d rows, %v; want none", f.Provider+f.ParentRequestID, len(rows), err)
		}
	}
}

func testVoiceInvalidText(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := newClock()
	s := openWith(t, open, clk)
	base := func() *store.Voice {
		return &store.Voice{
			ID: "v1", OrgID: "o", Title: "Narrator", Provider: "espeak", Model: "espeak-ng", VoiceID: "en-us",
			Tags: []string{"calm", "warm"}, Gender: "female", Description: "d",
			ProviderOptions: map[string]any{"pitch": 50.0, "nested": map[string]any{"list": []any{"a", "b"}}},
			Fallbacks:       []store.VoiceTarget{{Provider: "openai", Model: "tts-1", VoiceID: "alloy"}},
		}
	}
	for _, c := range []struct {
		field string
		set   func(v *store.Voice, s string)
	}{
		{"title", func(v *store.Voice, s string) { v.Title = s }},
		{"provider", func(v *store.Voice, s string) { v.Provider = s }},
		{"model", func(v *store.Voice, s string) { v.Model = s }},
		{"voice_id", func(v *store.Voice, s string) { v.VoiceID = s }},
		{"tags.1", func(v *store.Voice, s string) { v.Tags[1] = s }},
		{"gender", func(v *store.Voice, s string) { v.Gender = s }},
		{"description", func(v *store.Voice, s string) { v.Description = s }},
		{"fallbacks.0.voice_id", func(v *store.Voice, s string) { v.Fallbacks[0].VoiceID = s }},
		{"provider_options.nested.list.1", func(v *store.Voice, s string) {
			v.ProviderOptions["nested"].(map[string]any)["list"].([]any)[1] = s
		}},
		{"", func(v *store.Voice, s string) { v.ProviderOptions["k"+s] = "key with it" }},
	} {
		for kind, bad := range unstorable {
			v := base()
			c.set(v, bad)
			wantTextError(t, "CreateVoice with "+kind+" in "+c.field, s.CreateVoice(ctx, v), c.field)
		}
	}
	if _, err := s.GetVoice(ctx, "o", "v1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused voice was stored: %v", err)
	}

	// An update carrying such text changes nothing.
	v := base()
	mustDo(t, s.CreateVoice(ctx, v))
	before, err := s.GetVoice(ctx, "o", "v1")
	mustDo(t, err)
	up := *before
	up.Title, up.UpdatedAt = "new\x00title", clk.Advance(time.Minute)
	wantTextError(t, "UpdateVoice with NUL in title", s.UpdateVoice(ctx, &up), "title")
	if after, err := s.GetVoice(ctx, "o", "v1"); err != nil || !reflect.DeepEqual(after, before) {
		t.Errorf("the voice after a refused update = %+v, %v; want %+v", after, err, before)
	}
	if _, err := s.GetVoice(ctx, "o", "v1\x00"); !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrInvalidText) {
		t.Errorf("GetVoice by a NUL id = %v, want ErrNotFound or ErrInvalidText", err)
	}
}

func testRecordsInvalidText(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := newClock()
	s := openWith(t, open, clk)

	// Dictionaries and rules.
	wantTextError(t, "CreateDictionary with NUL in name", s.CreateDictionary(ctx, &store.Dictionary{ID: "d1", OrgID: "o", Name: "Brand\x00"}, 10), "name")
	wantTextError(t, "CreateDictionary with invalid UTF-8 in description", s.CreateDictionary(ctx, &store.Dictionary{ID: "d1", OrgID: "o", Name: "Brand", Description: "\xff"}, 10), "description")
	if _, err := s.GetDictionary(ctx, "o", "d1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused dictionary was stored: %v", err)
	}
	if _, err := s.DefaultDictionary(ctx, "o", &store.Dictionary{ID: "dd", Name: "Default\x00"}); !errors.Is(err, store.ErrInvalidText) {
		t.Errorf("DefaultDictionary with NUL in its name = %v, want ErrInvalidText", err)
	}
	d := &store.Dictionary{ID: "d1", OrgID: "o", Name: "Brand", Description: "names"}
	mustDo(t, s.CreateDictionary(ctx, d, 10))
	wantTextError(t, "UpdateDictionary with NUL in name", s.UpdateDictionary(ctx, &store.Dictionary{ID: "d1", OrgID: "o", Name: "x\x00"}), "name")
	if got, err := s.GetDictionary(ctx, "o", "d1"); err != nil || got.Name != "Brand" {
		t.Errorf("the dictionary after a refused update = %+v, %v", got, err)
	}
	wantTextError(t, "CreateRule with NUL in word", s.CreateRule(ctx, &store.PronunciationRule{ID: "r1", OrgID: "o", DictionaryID: "d1", Word: "a\x00", Replacement: "b"}, 10), "word")
	wantTextError(t, "CreateRule with NUL in replacement", s.CreateRule(ctx, &store.PronunciationRule{ID: "r1", OrgID: "o", DictionaryID: "d1", Word: "a", Replacement: "\x00"}, 10), "replacement")
	if rules, _, _, err := s.ListRules(ctx, "o", "d1", 10, nil); err != nil || len(rules) != 0 {
		t.Errorf("refused rules were stored: %+v, %v", rules, err)
	}
	mustDo(t, s.CreateRule(ctx, &store.PronunciationRule{ID: "r1", OrgID: "o", DictionaryID: "d1", Word: "a", Replacement: "b"}, 10))
	wantTextError(t, "UpdateRule with invalid UTF-8 in replacement", s.UpdateRule(ctx, &store.PronunciationRule{ID: "r1", OrgID: "o", DictionaryID: "d1", Word: "a", Replacement: "\xc3"}), "replacement")
	if got, err := s.GetRule(ctx, "o", "d1", "r1"); err != nil || got.Replacement != "b" {
		t.Errorf("the rule after a refused update = %+v, %v", got, err)
	}

	// Keys, media, secrets.
	wantTextError(t, "CreateKey with NUL in name", s.CreateKey(ctx, &store.APIKey{ID: "k1", OrgID: "o", Name: "ci\x00", Prefix: "vxk_1", Hash: []byte("h1")}), "name")
	wantTextError(t, "CreateKey with NUL in a scope model", s.CreateKey(ctx, &store.APIKey{ID: "k1", OrgID: "o", Name: "ci", Prefix: "vxk_1", Hash: []byte("h1"),
		Scope: store.KeyScope{Models: []string{"espeak/espeak-ng", "x\x00"}}}), "scope.models.1")
	if _, err := s.KeyByHash(ctx, []byte("h1")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused key was stored: %v", err)
	}
	wantTextError(t, "PutMedia with NUL in filename", s.PutMedia(ctx, &store.Media{ID: "m1", OrgID: "o", Filename: "a\x00.wav", MediaType: "audio/wav"}, []byte("RIFF")), "filename")
	if _, err := s.GetMedia(ctx, "o", "m1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused media object was stored: %v", err)
	}
	wantTextError(t, "PutSecret with NUL in its name", s.PutSecret(ctx, "o", "openai\x00", []byte("c")), "name")
	if names, err := s.ListSecretNames(ctx, "o"); err != nil || len(names) != 0 {
		t.Errorf("a refused secret was stored: %v, %v", names, err)
	}
}

// testUnusualTextRoundTrips writes valid text that is not plain (control
// characters, U+FFFD, separators, combining marks, emoji) into every kind
// of record and reads it back unchanged: the rule refuses only what a
// backend cannot hold.
func testUnusualTextRoundTrips(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := newClock()
	s := openWith(t, open, clk)
	row := store.LogRow{RequestID: "r1", OrgID: "o", TS: clk.Now(), Path: unusual, Status: 200, Provider: unusual, Model: unusual,
		VoiceID: unusual, VoiceRef: unusual, ErrorCode: unusual, ErrorDetail: unusual, ProviderOptions: unusual,
		ModerationDecision: unusual, ModerationReasonType: unusual, ModerationReasonDetail: unusual, KeyID: unusual,
		Cache: unusual, Transcoded: unusual, Provenance: unusual, Currency: unusual}
	mustDo(t, s.AppendLogs(ctx, []store.LogRow{row}))
	if got, err := s.GetLog(ctx, "o", "r1"); err != nil || !reflect.DeepEqual(*got, row) {
		t.Errorf("log row:\n got %+v, %v\nwant %+v", got, err, row)
	}
	v := &store.Voice{ID: "v1", OrgID: "o", Title: unusual, Provider: "p", Model: "m", VoiceID: unusual, Tags: []string{unusual},
		Gender: unusual, Description: unusual, ProviderOptions: map[string]any{unusual: unusual}, Fallbacks: []store.VoiceTarget{},
		CreatedAt: clk.Now()}
	mustDo(t, s.CreateVoice(ctx, v))
	if got, err := s.GetVoice(ctx, "o", "v1"); err != nil || !reflect.DeepEqual(got, v) {
		t.Errorf("voice:\n got %+v, %v\nwant %+v", got, err, v)
	}
	mustDo(t, s.CreateDictionary(ctx, &store.Dictionary{ID: "d1", OrgID: "o", Name: unusual, Description: unusual}, 10))
	mustDo(t, s.CreateRule(ctx, &store.PronunciationRule{ID: "r1", OrgID: "o", DictionaryID: "d1", Word: unusual, Replacement: unusual}, 10))
	if d, err := s.GetDictionary(ctx, "o", "d1"); err != nil || d.Name != unusual || d.Description != unusual {
		t.Errorf("dictionary = %+v, %v", d, err)
	}
	if r, err := s.GetRule(ctx, "o", "d1", "r1"); err != nil || r.Word != unusual || r.Replacement != unusual {
		t.Errorf("rule = %+v, %v", r, err)
	}
}

package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
)

// testVoiceConsentRoundTrip checks a cloned voice's consent attestation
// is read back as written by get, list and an update that does not
// change it, that a voice without one reads back nil, and that
// unstorable text in it is refused.
func testVoiceConsentRoundTrip(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := newClock()
	s := openWith(t, open, clk)
	at := clk.Now().Add(-time.Hour).Round(time.Microsecond)
	consent := &store.VoiceConsent{AttestedBy: "Ana Díaz", Relation: "self", Statement: "I agree that my voice is cloned ✓", Time: at}
	v := &store.Voice{ID: "v1", OrgID: "o", Title: "Ana", Provider: "p", Model: "m", VoiceID: "x", MediaID: "m1", Consent: consent}
	mustDo(t, s.CreateVoice(ctx, v))
	plain := &store.Voice{ID: "v2", OrgID: "o", Title: "Plain", Provider: "p", Model: "m", VoiceID: "y"}
	mustDo(t, s.CreateVoice(ctx, plain))
	want := *consent
	want.Time = at.UTC()
	got, err := s.GetVoice(ctx, "o", "v1")
	if err != nil || got.Consent == nil || !reflect.DeepEqual(*got.Consent, want) {
		t.Fatalf("GetVoice consent = %+v, %v; want %+v", got.Consent, err, want)
	}
	if got, err := s.GetVoice(ctx, "o", "v2"); err != nil || got.Consent != nil {
		t.Errorf("a voice without consent reads back %+v, %v", got.Consent, err)
	}
	list, _, _, err := s.ListVoices(ctx, "o", 10, nil)
	if err != nil || len(list) != 2 {
		t.Fatalf("ListVoices: %d, %v", len(list), err)
	}
	for _, l := range list {
		if (l.ID == "v1") != (l.Consent != nil) || (l.Consent != nil && !reflect.DeepEqual(*l.Consent, want)) {
			t.Errorf("listed %s with consent %+v", l.ID, l.Consent)
		}
	}
	got.Title = "Ana D."
	mustDo(t, s.UpdateVoice(ctx, got))
	if again, err := s.GetVoice(ctx, "o", "v1"); err != nil || again.Consent == nil || !reflect.DeepEqual(*again.Consent, want) {
		t.Errorf("after an update, consent = %+v, %v", again.Consent, err)
	}
	bad := &store.Voice{ID: "v3", OrgID: "o", Title: "Bad", Provider: "p", Model: "m", VoiceID: "z",
		Consent: &store.VoiceConsent{AttestedBy: "nul\x00", Relation: "self", Statement: "s", Time: at}}
	if err := s.CreateVoice(ctx, bad); !errors.Is(err, store.ErrInvalidText) {
		t.Errorf("consent with NUL: %v, want ErrInvalidText", err)
	}
	if _, err := s.GetVoice(ctx, "o", "v3"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused voice was written: %v", err)
	}
}

// testFingerprints checks the fingerprint index every driver implements:
// candidates are the organization's fingerprints sharing keys, the most
// shared first, read back whole; a replaced fingerprint's old keys find
// it no more; another organization's are never returned.
func testFingerprints(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := newClock()
	s := openWith(t, open, clk)
	fs, ok := s.(store.FingerprintStore)
	if !ok {
		t.Fatalf("%T does not implement store.FingerprintStore", s)
	}
	at := clk.Now().Add(-time.Minute)
	a := store.Fingerprint{OrgID: "o", RequestID: "a", TS: at, Values: []uint32{0xdeadbeef, 1, 2, 0xffffffff}, Keys: []uint32{1, 2, 3}}
	b := store.Fingerprint{OrgID: "o", RequestID: "b", TS: at.Add(time.Second), Values: []uint32{7, 8}, Keys: []uint32{3, 4}}
	other := store.Fingerprint{OrgID: "p", RequestID: "c", TS: at, Values: []uint32{9}, Keys: []uint32{1, 2, 3, 4}}
	for _, f := range []store.Fingerprint{a, b, other} {
		mustDo(t, fs.PutFingerprint(ctx, &f))
	}
	got, err := fs.MatchFingerprints(ctx, "o", []uint32{1, 2, 3, 99}, 10)
	if err != nil || len(got) != 2 || got[0].RequestID != "a" || got[1].RequestID != "b" {
		t.Fatalf("match: %+v, %v", got, err)
	}
	want := a
	want.TS = at.UTC()
	if !reflect.DeepEqual(got[0], want) {
		t.Errorf("read back\n got %+v\nwant %+v", got[0], want)
	}
	// Ties: the newest first; limit.
	if got, err := fs.MatchFingerprints(ctx, "o", []uint32{3}, 1); err != nil || len(got) != 1 || got[0].RequestID != "b" {
		t.Errorf("tie, limit 1: %+v, %v", got, err)
	}
	if got, err := fs.MatchFingerprints(ctx, "o", []uint32{42}, 10); err != nil || len(got) != 0 {
		t.Errorf("no shared key: %+v, %v", got, err)
	}
	if got, err := fs.MatchFingerprints(ctx, "nobody", []uint32{1}, 10); err != nil || len(got) != 0 {
		t.Errorf("an organization without fingerprints: %+v, %v", got, err)
	}
	// Replacing a fingerprint drops its old keys.
	a2 := store.Fingerprint{OrgID: "o", RequestID: "a", TS: at, Values: []uint32{5}, Keys: []uint32{50}}
	mustDo(t, fs.PutFingerprint(ctx, &a2))
	if got, err := fs.MatchFingerprints(ctx, "o", []uint32{1, 2}, 10); err != nil || len(got) != 0 {
		t.Errorf("old keys still match: %+v, %v", got, err)
	}
	if got, err := fs.MatchFingerprints(ctx, "o", []uint32{50}, 10); err != nil || len(got) != 1 || !reflect.DeepEqual(got[0].Values, []uint32{5}) {
		t.Errorf("replaced: %+v, %v", got, err)
	}
}

// testFingerprintsPurged checks fingerprints go with the log rows: a
// purge deletes those older than its cutoff (keys included, in every
// organization), ForEachFingerprint lists the rest whole, and
// DeleteFingerprint drops one (a deleted job's file).
func testFingerprintsPurged(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := newClock()
	s := openWith(t, open, clk)
	fs := s.(store.FingerprintStore)
	now := clk.Now()
	for _, f := range []store.Fingerprint{
		{OrgID: "o", RequestID: "old", TS: now.Add(-48 * time.Hour), Values: []uint32{1}, Keys: []uint32{1, 2}},
		{OrgID: "p", RequestID: "old-p", TS: now.Add(-48 * time.Hour), Values: []uint32{1}, Keys: []uint32{1}},
		{OrgID: "o", RequestID: "new", TS: now.Add(-time.Hour), Values: []uint32{2, 3}, Keys: []uint32{2}},
		{OrgID: "o", RequestID: "job", TS: now.Add(-time.Hour), Values: []uint32{4}, Keys: []uint32{4}},
	} {
		mustDo(t, fs.PutFingerprint(ctx, &f))
	}
	if _, err := s.PurgeLogs(ctx, now.Add(-24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	for org, keys := range map[string][]uint32{"o": {1, 2}, "p": {1}} {
		got, err := fs.MatchFingerprints(ctx, org, keys, 10)
		for _, f := range got {
			if f.RequestID == "old" || f.RequestID == "old-p" {
				t.Errorf("%s's purged fingerprint %s still matches (%v)", org, f.RequestID, err)
			}
		}
	}
	mustDo(t, fs.DeleteFingerprint(ctx, "o", "job"))
	mustDo(t, fs.DeleteFingerprint(ctx, "o", "never-was"))
	if got, err := fs.MatchFingerprints(ctx, "o", []uint32{4}, 10); err != nil || len(got) != 0 {
		t.Errorf("deleted fingerprint matches: %+v, %v", got, err)
	}
	var listed []store.Fingerprint
	mustDo(t, fs.ForEachFingerprint(ctx, func(f *store.Fingerprint) error {
		listed = append(listed, *f)
		return nil
	}))
	want := []store.Fingerprint{{OrgID: "o", RequestID: "new", TS: now.Add(-time.Hour).UTC(), Values: []uint32{2, 3}, Keys: []uint32{2}}}
	if !reflect.DeepEqual(listed, want) {
		t.Errorf("ForEachFingerprint after the purge:\n got %+v\nwant %+v", listed, want)
	}
}

// testSigningKey checks the signing key's fingerprint: the first recorded
// stays against another, replace swaps it.
func testSigningKey(t *testing.T, open Opener) {
	ctx := context.Background()
	s := openWith(t, open, newClock())
	ks, ok := s.(store.SigningKeyStore)
	if !ok {
		t.Fatalf("%T does not implement store.SigningKeyStore", s)
	}
	if got, err := ks.RecordSigningKey(ctx, []byte("key-one"), false); err != nil || string(got) != "key-one" {
		t.Fatalf("first RecordSigningKey = %q, %v", got, err)
	}
	if got, err := ks.RecordSigningKey(ctx, []byte("key-two"), false); err != nil || string(got) != "key-one" {
		t.Errorf("second RecordSigningKey = %q, %v: the first must stay", got, err)
	}
	if got, err := ks.RecordSigningKey(ctx, []byte("key-two"), true); err != nil || string(got) != "key-two" {
		t.Errorf("RecordSigningKey(replace) = %q, %v", got, err)
	}
	if got, err := ks.RecordSigningKey(ctx, []byte("key-three"), false); err != nil || string(got) != "key-two" {
		t.Errorf("after the rotation RecordSigningKey = %q, %v", got, err)
	}
}

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

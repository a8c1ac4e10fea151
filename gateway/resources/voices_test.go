package resources

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/store"
)

// TestCreateVoice: a voice is saved only when its provider voice exists
// (or was just cloned from the organization's own media), and a refused
// voice leaves nothing behind.
func TestCreateVoice(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	media := func(org string) string {
		m, err := f.s.UploadMedia(ctx, org, Upload{Data: wav(t), Filename: "me.wav", Declared: "audio/wav"}, now)
		if err != nil {
			t.Fatal(err)
		}
		return m.ID
	}
	acmeMedia, initechMedia := media("acme"), media("initech")
	tests := []struct {
		name string
		org  string
		spec VoiceSpec
		// code is the problem expected; "" saves the voice.
		code problem.Code
		// voiceID is the provider voice id saved; inPath the validation
		// entry's path.
		voiceID, inPath string
	}{
		{name: "provider voice", org: "acme", spec: VoiceSpec{Title: "A", Provider: "testkit", Model: "test", VoiceID: "alpha"}, voiceID: "alpha"},
		{name: "clone from media", org: "acme", spec: VoiceSpec{Title: "Mine", Provider: "testkit", Model: "test", MediaIDs: []string{acmeMedia}}, voiceID: "clone-Mine"},
		{name: "fallback checked too", org: "acme", spec: VoiceSpec{Title: "F", Provider: "testkit", Model: "test", VoiceID: "beta",
			Fallbacks: []store.VoiceTarget{{Provider: "testkit", Model: "basic", VoiceID: "alpha"}}}, voiceID: "beta"},
		{name: "unknown provider", org: "acme", spec: VoiceSpec{Title: "A", Provider: "nope", Model: "test", VoiceID: "alpha"}, code: problem.UnknownProvider},
		{name: "unknown model", org: "acme", spec: VoiceSpec{Title: "A", Provider: "testkit", Model: "nope", VoiceID: "alpha"}, code: problem.UnknownModel},
		{name: "not the provider's voice", org: "acme", spec: VoiceSpec{Title: "A", Provider: "testkit", Model: "test", VoiceID: "alpah"},
			code: problem.UnknownVoice, inPath: "voice_id"},
		{name: "provider disabled", org: "globex", spec: VoiceSpec{Title: "A", Provider: "testkit", Model: "test", VoiceID: "alpha"}, code: problem.ProviderDisabled},
		{name: "model cannot clone", org: "acme", spec: VoiceSpec{Title: "B", Provider: "testkit", Model: "basic", MediaIDs: []string{acmeMedia}},
			code: problem.CloningUnsupported},
		{name: "another organization's media", org: "acme", spec: VoiceSpec{Title: "C", Provider: "testkit", Model: "test", MediaIDs: []string{initechMedia}},
			code: problem.MediaNotFound},
		{name: "bad fallback", org: "acme", spec: VoiceSpec{Title: "F", Provider: "testkit", Model: "test", VoiceID: "beta",
			Fallbacks: []store.VoiceTarget{{Provider: "testkit", Model: "basic", VoiceID: "gamma"}}}, code: problem.UnknownVoice, inPath: "fallbacks/0/voice_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := uuid.NewString()
			clones := f.count(t, "clone")
			v, err := f.s.CreateVoice(ctx, tt.org, tt.spec, id, now)
			pe := wantCode(t, err, tt.code)
			stored, gerr := f.s.Voice(ctx, tt.org, id)
			if tt.code != "" {
				// Nothing saved, and no clone made upstream for a refused
				// request.
				wantCode(t, gerr, problem.VoiceNotFound)
				if tt.spec.VoiceID == "" && f.count(t, "clone") != clones {
					t.Errorf("a refused voice cloned upstream")
				}
				if tt.inPath != "" {
					if len(pe.Validation) != 1 || strings.Join(pe.Validation[0].Path, "/") != tt.inPath {
						t.Errorf("validation %+v, want one entry at %s", pe.Validation, tt.inPath)
					}
				}
				return
			}
			if gerr != nil {
				t.Fatal(gerr)
			}
			if v.VoiceID != tt.voiceID || stored.VoiceID != tt.voiceID {
				t.Errorf("provider voice %q (stored %q), want %q", v.VoiceID, stored.VoiceID, tt.voiceID)
			}
			if !reflect.DeepEqual(stored.Fallbacks, v.Fallbacks) || stored.Title != tt.spec.Title || !stored.CreatedAt.Equal(now) {
				t.Errorf("stored %+v, answered %+v", stored, v)
			}
			if len(tt.spec.MediaIDs) > 0 && stored.MediaID != tt.spec.MediaIDs[0] {
				t.Errorf("media %q, want %q", stored.MediaID, tt.spec.MediaIDs[0])
			}
		})
	}
}

// TestUnknownVoiceSuggests: an unknown provider voice id is answered with
// the provider's close matches, for the caller to fix.
func TestUnknownVoiceSuggests(t *testing.T) {
	f := newFixture(t)
	_, err := f.s.CreateVoice(context.Background(), "acme", VoiceSpec{Title: "A", Provider: "testkit", Model: "test", VoiceID: "Alpha"}, uuid.NewString(), time.Now())
	pe := wantCode(t, err, problem.UnknownVoice)
	if !strings.Contains(pe.Detail, "close matches: alpha") {
		t.Errorf("detail %q names no close match", pe.Detail)
	}
}

// TestNoProviders: a gateway that runs no provider saves no voice, and
// says why.
func TestNoProviders(t *testing.T) {
	f := newFixture(t)
	s := New(Deps{Store: f.store, CheckRule: f.s.checkRule})
	_, err := s.CreateVoice(context.Background(), "acme", VoiceSpec{Title: "A", Provider: "testkit", Model: "test", VoiceID: "alpha"}, uuid.NewString(), time.Now())
	if pe := wantCode(t, err, problem.UnknownProvider); !strings.Contains(pe.Detail, "not configured") {
		t.Errorf("detail %q", pe.Detail)
	}
}

// TestVoicesStayInTheirOrganization: another organization's voice is not
// found, whatever is done with it, and lists hold the caller's only.
func TestVoicesStayInTheirOrganization(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	v, err := f.s.CreateVoice(ctx, "acme", VoiceSpec{Title: "A", Provider: "testkit", Model: "test", VoiceID: "alpha"}, uuid.NewString(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	title := "stolen"
	for name, op := range map[string]func() error{
		"get": func() error { _, err := f.s.Voice(ctx, "initech", v.ID); return err },
		"update": func() error {
			_, err := f.s.UpdateVoice(ctx, "initech", v.ID, VoiceUpdate{Title: &title}, time.Now())
			return err
		},
		"delete": func() error { return f.s.DeleteVoice(ctx, "initech", v.ID) },
	} {
		t.Run(name, func(t *testing.T) { wantCode(t, op(), problem.VoiceNotFound) })
	}
	list, _, _, err := f.s.ListVoices(ctx, "initech", 10, nil)
	if err != nil || len(list) != 0 {
		t.Errorf("initech lists %d voices (%v)", len(list), err)
	}
	got, err := f.s.Voice(ctx, "acme", v.ID)
	if err != nil || got.Title != "A" {
		t.Errorf("acme's voice after the others tried: %+v %v", got, err)
	}
	if err := f.s.DeleteVoice(ctx, "acme", v.ID); err != nil {
		t.Fatal(err)
	}
	wantCode(t, f.s.DeleteVoice(ctx, "acme", v.ID), problem.VoiceNotFound)
}

// TestUpdateVoice: only the given fields change; what the voice speaks
// with is checked again against the provider when it changes, and a
// refused change leaves the voice as it was.
func TestUpdateVoice(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v, err := f.s.CreateVoice(ctx, "acme", VoiceSpec{Title: "A", Provider: "testkit", Model: "test", VoiceID: "alpha", Tags: []string{"x"}}, uuid.NewString(), created)
	if err != nil {
		t.Fatal(err)
	}
	str := func(s string) *string { return &s }
	tests := []struct {
		name string
		u    VoiceUpdate
		code problem.Code
		// lists says whether the provider's voices are asked for.
		lists bool
		want  func(v *store.Voice) bool
	}{
		{name: "title only", u: VoiceUpdate{Title: str("B")}, want: func(v *store.Voice) bool { return v.Title == "B" && v.VoiceID == "alpha" }},
		{name: "voice", u: VoiceUpdate{VoiceID: str("beta")}, lists: true, want: func(v *store.Voice) bool { return v.VoiceID == "beta" && v.Title == "B" }},
		{name: "unknown voice", u: VoiceUpdate{VoiceID: str("gamma")}, code: problem.UnknownVoice, lists: true},
		{name: "unknown model", u: VoiceUpdate{Model: str("nope")}, code: problem.UnknownModel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, err := f.s.Voice(ctx, "acme", v.ID)
			if err != nil {
				t.Fatal(err)
			}
			listed := f.count(t, "voices")
			at := created.Add(time.Hour)
			_, err = f.s.UpdateVoice(ctx, "acme", v.ID, tt.u, at)
			wantCode(t, err, tt.code)
			if got := f.count(t, "voices") > listed; got != tt.lists {
				t.Errorf("provider's voices listed: %v, want %v", got, tt.lists)
			}
			after, err := f.s.Voice(ctx, "acme", v.ID)
			if err != nil {
				t.Fatal(err)
			}
			if tt.code != "" {
				if !reflect.DeepEqual(after, before) {
					t.Errorf("a refused update changed the voice: %+v -> %+v", before, after)
				}
				return
			}
			if !tt.want(after) || !after.UpdatedAt.Equal(at) || !after.CreatedAt.Equal(created) || !reflect.DeepEqual(after.Tags, []string{"x"}) {
				t.Errorf("after the update: %+v", after)
			}
		})
	}
}

// TestProviderVoices: the provider's own list, sorted, for the caller's
// organization; an unknown provider is not found.
func TestProviderVoices(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	voices, err := f.s.ProviderVoices(ctx, "acme", "testkit", "")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, v := range voices {
		ids = append(ids, v.ID)
	}
	if !reflect.DeepEqual(ids, []string{"alpha", "beta"}) {
		t.Errorf("voices %v", ids)
	}
	_, err = f.s.ProviderVoices(ctx, "acme", "nope", "")
	wantCode(t, err, problem.NotFound)
	_, err = f.s.ProviderVoices(ctx, "globex", "testkit", "")
	wantCode(t, err, problem.ProviderDisabled)
}

package memory_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/memory"
)

// TestSharesNoMemory: what a caller passes in or gets back is its own;
// changing it changes nothing stored. (The suite checks this of media
// bytes, secrets and the shared secret; these are the records with
// slices and maps of their own.)
func TestSharesNoMemory(t *testing.T) {
	ctx := context.Background()
	s := memory.New(store.Options{})
	t.Cleanup(func() { s.Close() })

	v := &store.Voice{ID: "v", OrgID: "o", Tags: []string{"calm"}, ProviderOptions: map[string]any{"nested": map[string]any{"list": []any{"a"}}},
		Fallbacks: []store.VoiceTarget{{Provider: "p", Model: "m", VoiceID: "x"}}}
	if err := s.CreateVoice(ctx, v); err != nil {
		t.Fatal(err)
	}
	want, _ := s.GetVoice(ctx, "o", "v")
	mutateVoice(v)
	got, _ := s.GetVoice(ctx, "o", "v")
	mutateVoice(got)
	listed, _, _, _ := s.ListVoices(ctx, "o", 10, nil)
	mutateVoice(&listed[0])
	if again, _ := s.GetVoice(ctx, "o", "v"); !reflect.DeepEqual(again, want) {
		t.Errorf("the stored voice changed with a caller's copy:\n got %+v\nwant %+v", again, want)
	}
	up := *want
	up.Tags = []string{"new"}
	if err := s.UpdateVoice(ctx, &up); err != nil {
		t.Fatal(err)
	}
	up.Tags[0] = "changed after the update"
	if again, _ := s.GetVoice(ctx, "o", "v"); again.Tags[0] != "new" {
		t.Errorf("the updated voice's tags are %v", again.Tags)
	}

	k := &store.APIKey{ID: "k", OrgID: "o", Hash: []byte("hash"), Scope: store.KeyScope{Providers: []string{"espeak"}, Models: []string{"espeak/m"}}}
	if err := s.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	k.Hash[0], k.Scope.Providers[0], k.Scope.Models[0] = 'X', "x", "x"
	got1, err := s.KeyByHash(ctx, []byte("hash"))
	if err != nil || got1.Scope.Providers[0] != "espeak" || got1.Scope.Models[0] != "espeak/m" {
		t.Fatalf("the key after the caller changed its own: %+v, %v", got1, err)
	}
	got1.Hash[0], got1.Scope.Providers[0] = 'Y', "y"
	if keys, _ := s.ListKeys(ctx, "o"); string(keys[0].Hash) != "hash" || keys[0].Scope.Providers[0] != "espeak" {
		t.Errorf("the stored key changed with a caller's copy: %+v", keys[0])
	}
}

func mutateVoice(v *store.Voice) {
	v.Title = "changed"
	v.Tags[0] = "changed"
	v.Fallbacks[0].VoiceID = "changed"
	v.ProviderOptions["added"] = true
	v.ProviderOptions["nested"].(map[string]any)["list"].([]any)[0] = "changed"
}

// TestProviderOptionsAsJSON: provider options come back as the other
// backends give them, as JSON decodes them; a value JSON cannot hold is
// refused.
func TestProviderOptionsAsJSON(t *testing.T) {
	ctx := context.Background()
	s := memory.New(store.Options{})
	t.Cleanup(func() { s.Close() })
	v := &store.Voice{ID: "v", OrgID: "o", ProviderOptions: map[string]any{"speed": 2, "list": []string{"a"}, "when": time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}
	if err := s.CreateVoice(ctx, v); err != nil {
		t.Fatal(err)
	}
	got, _ := s.GetVoice(ctx, "o", "v")
	want := map[string]any{"speed": 2.0, "list": []any{"a"}, "when": "2026-01-02T03:04:05Z"}
	if !reflect.DeepEqual(got.ProviderOptions, want) {
		t.Errorf("provider options %#v, want %#v", got.ProviderOptions, want)
	}
	if err := s.CreateVoice(ctx, &store.Voice{ID: "w", OrgID: "o", ProviderOptions: map[string]any{"f": func() {}}}); err == nil {
		t.Error("a voice whose options JSON cannot hold was stored")
	}
	if _, err := s.GetVoice(ctx, "o", "w"); err == nil {
		t.Error("the refused voice is there")
	}
}

// TestTimesInUTC: times given in another zone come back as the same
// instant in UTC, as PostgreSQL's timestamptz and bbolt's keys give them.
func TestTimesInUTC(t *testing.T) {
	ctx := context.Background()
	s := memory.New(store.Options{})
	t.Cleanup(func() { s.Close() })
	at := time.Date(2026, 3, 1, 14, 0, 0, 0, time.FixedZone("CET", 3600))
	if err := s.CreateVoice(ctx, &store.Voice{ID: "v", OrgID: "o", CreatedAt: at}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendLogs(ctx, []store.LogRow{{RequestID: "r", OrgID: "o", TS: time.Now().In(time.FixedZone("X", -7200))}}); err != nil {
		t.Fatal(err)
	}
	v, _ := s.GetVoice(ctx, "o", "v")
	r, _ := s.GetLog(ctx, "o", "r")
	for what, got := range map[string]time.Time{"created_at": v.CreatedAt, "updated_at": v.UpdatedAt, "ts": r.TS} {
		if got.Location() != time.UTC {
			t.Errorf("%s in %v, want UTC", what, got.Location())
		}
	}
	if !v.CreatedAt.Equal(at) {
		t.Errorf("created_at %v, want %v", v.CreatedAt, at)
	}
}

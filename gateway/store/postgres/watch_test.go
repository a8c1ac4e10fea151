package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/internal/pgtest"
)

// watch starts s's Watch and returns its changes.
func watch(t *testing.T, s store.Watcher) <-chan store.Change {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	changes := make(chan store.Change, 256)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Watch(ctx, func(c store.Change) { changes <- c })
	}()
	t.Cleanup(func() { cancel(); <-done })
	return changes
}

// next returns the next change that is not a key's, failing after 10 s.
func next(t *testing.T, changes <-chan store.Change) store.Change {
	t.Helper()
	select {
	case c := <-changes:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no change announced within 10 s")
	}
	return store.Change{}
}

// TestChangesReachOtherInstances: every write a synthesis request's reads
// depend on is announced to another instance, with its kind, organization
// and id, whoever makes it (here the store of instance A, and plain SQL).
func TestChangesReachOtherInstances(t *testing.T) {
	dsn := server.NewDatabaseT(t)
	a, b := open(t, dsn, store.Options{}), open(t, dsn, store.Options{})
	ctx := context.Background()
	changes := watch(t, b)
	if c := next(t, changes); c.Kind != store.ChangeResync {
		t.Fatalf("first change %+v, want a resync", c)
	}
	d := &store.Dictionary{ID: "d1", OrgID: "acme", Name: "Brand"}
	r := &store.PronunciationRule{ID: "r1", OrgID: "acme", DictionaryID: "d1", Word: "AWS", Replacement: "amazon"}
	steps := []struct {
		name  string
		write func() error
		want  store.Change
	}{
		{"create voice", func() error { return a.CreateVoice(ctx, &store.Voice{ID: "v1", OrgID: "acme", Title: "t"}) },
			store.Change{Kind: store.ChangeVoice, OrgID: "acme", ID: "v1"}},
		{"update voice", func() error { return a.UpdateVoice(ctx, &store.Voice{ID: "v1", OrgID: "acme", Title: "u"}) },
			store.Change{Kind: store.ChangeVoice, OrgID: "acme", ID: "v1"}},
		{"delete voice", func() error { return a.DeleteVoice(ctx, "acme", "v1") },
			store.Change{Kind: store.ChangeVoice, OrgID: "acme", ID: "v1"}},
		{"create dictionary", func() error { return a.CreateDictionary(ctx, d, 10) },
			store.Change{Kind: store.ChangeDictionary, OrgID: "acme", ID: "d1"}},
		{"create rule", func() error { return a.CreateRule(ctx, r, 10) }, // two rows, one notification
			store.Change{Kind: store.ChangeDictionary, OrgID: "acme", ID: "d1"}},
		{"update rule", func() error { r.Replacement = "a w s"; return a.UpdateRule(ctx, r) },
			store.Change{Kind: store.ChangeDictionary, OrgID: "acme", ID: "d1"}},
		{"delete rule", func() error { return a.DeleteRule(ctx, "acme", "d1", "r1") },
			store.Change{Kind: store.ChangeDictionary, OrgID: "acme", ID: "d1"}},
		{"delete dictionary", func() error { return a.DeleteDictionary(ctx, "acme", "d1") },
			store.Change{Kind: store.ChangeDictionary, OrgID: "acme", ID: "d1"}},
		{"put secret", func() error { return a.PutSecret(ctx, "globex", "byok:openai", []byte{1}) },
			store.Change{Kind: store.ChangeSecret, OrgID: "globex", ID: "byok:openai"}},
		{"replace secret", func() error { return a.PutSecret(ctx, "globex", "byok:openai", []byte{2}) },
			store.Change{Kind: store.ChangeSecret, OrgID: "globex", ID: "byok:openai"}},
		{"delete secret", func() error { return a.DeleteSecret(ctx, "globex", "byok:openai") },
			store.Change{Kind: store.ChangeSecret, OrgID: "globex", ID: "byok:openai"}},
		{"an operator's SQL", func() error {
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				return err
			}
			defer conn.Close(ctx)
			_, err = conn.Exec(ctx, `INSERT INTO voices (org_id, id, title, provider, model, voice_id, tags, gender, description, provider_options, media_id, created_ns, updated_ns, fallbacks)
				VALUES ('acme', 'by-hand', '', '', '', '', '[]', '', '', '{}', '', 1, 1, '[]')`)
			return err
		}, store.Change{Kind: store.ChangeVoice, OrgID: "acme", ID: "by-hand"}},
	}
	for _, s := range steps {
		if err := s.write(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if c := next(t, changes); c != s.want {
			t.Fatalf("%s announced %+v, want %+v", s.name, c, s.want)
		}
	}
	// Keys keep their own channel, on the same watch.
	if err := a.CreateKey(ctx, &store.APIKey{ID: "k1", OrgID: "acme", Hash: []byte("h1")}); err != nil {
		t.Fatal(err)
	}
	if c := next(t, changes); c != (store.Change{Kind: store.ChangeKey, ID: "k1"}) {
		t.Fatalf("key creation announced %+v", c)
	}
	select {
	case c := <-changes:
		t.Fatalf("an extra change %+v", c)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestWatchSaysWhenItLosesTheServer: a stopped server is announced as
// ChangeDisconnected, and its return as ChangeResync, with no polling by
// the caller.
func TestWatchSaysWhenItLosesTheServer(t *testing.T) {
	srv := pgtest.StartT(t) // a server of its own: this test stops it
	s := open(t, srv.NewDatabaseT(t), store.Options{})
	changes := watch(t, s)
	if c := next(t, changes); c.Kind != store.ChangeResync {
		t.Fatalf("first change %+v, want a resync", c)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if c := next(t, changes); c.Kind != store.ChangeDisconnected {
		t.Fatalf("after the server stopped: %+v, want disconnected", c)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	// Failed reconnections are not announced again: the next change is
	// the resync once the server is back.
	if c := next(t, changes); c.Kind != store.ChangeResync {
		t.Fatalf("after the server came back: %+v, want a resync", c)
	}
}

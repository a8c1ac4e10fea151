package bolt_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
)

// clock is a settable time source for Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward and returns the new time.
func (c *clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// openStore opens a store on a fresh file that is closed when the test ends.
func openStore(t testing.TB, clk *clock) *bolt.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "voxgate.db")
	return openAt(t, path, clk)
}

func openAt(t testing.TB, path string, clk *clock) *bolt.Store {
	t.Helper()
	var opts store.Options
	if clk != nil {
		opts.Now = clk.Now
	}
	s, err := bolt.Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestOpenCreatesPrivateDirsAndFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "voxgate.db")
	s := openAt(t, path, nil)
	if s.Path() != path {
		t.Errorf("Path() = %q, want %q", s.Path(), path)
	}
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{
		{path, 0o600},
		{filepath.Dir(path), 0o700},
		{filepath.Dir(filepath.Dir(path)), 0o700},
	} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != c.mode {
			t.Errorf("mode of %s = %o, want %o", c.path, got, c.mode)
		}
	}
	if len(s.Secret()) != 32 {
		t.Errorf("Secret() has %d bytes, want 32", len(s.Secret()))
	}
}

func TestOpenEmptyPath(t *testing.T) {
	if _, err := bolt.Open("", store.Options{}); err == nil {
		t.Fatal("Open(\"\") succeeded")
	}
}

func TestSecondOpenIsLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "voxgate.db")
	openAt(t, path, nil)
	s2, err := bolt.Open(path, store.Options{})
	if err == nil {
		_ = s2.Close()
		t.Fatal("second Open of an open database succeeded")
	}
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("second Open error = %v, want ErrLocked", err)
	}
}

func TestReopenKeepsData(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	path := filepath.Join(t.TempDir(), "voxgate.db")
	s, err := bolt.Open(path, store.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	secret := s.Secret()
	mustDo(t, s.CreateVoice(ctx, &store.Voice{ID: "v1", OrgID: "o1", Title: "Narrator"}))
	mustDo(t, s.CreateKey(ctx, &store.APIKey{ID: "k1", OrgID: "o1", Hash: []byte("h1")}))
	mustDo(t, s.PutSecret(ctx, "o1", "openai", []byte("ct")))
	mustDo(t, s.PutMedia(ctx, &store.Media{ID: "m1", OrgID: "o1"}, []byte("RIFF")))
	mustDo(t, s.AppendLogs(ctx, []store.LogRow{{RequestID: "r1", OrgID: "o1", TS: clk.Now(), Status: 200}}))
	mustDo(t, s.Close())

	s = openAt(t, path, clk)
	if got := s.Secret(); string(got) != string(secret) {
		t.Error("Secret changed across reopen")
	}
	if v, err := s.GetVoice(ctx, "o1", "v1"); err != nil || v.Title != "Narrator" {
		t.Errorf("GetVoice after reopen = %+v, %v", v, err)
	}
	if k, err := s.KeyByHash(ctx, []byte("h1")); err != nil || k.ID != "k1" {
		t.Errorf("KeyByHash after reopen = %+v, %v", k, err)
	}
	if ct, err := s.GetSecret(ctx, "o1", "openai"); err != nil || string(ct) != "ct" {
		t.Errorf("GetSecret after reopen = %q, %v", ct, err)
	}
	if d, err := s.MediaData(ctx, "o1", "m1"); err != nil || string(d) != "RIFF" {
		t.Errorf("MediaData after reopen = %q, %v", d, err)
	}
	rows, _, _, err := s.ListLogs(ctx, "o1", store.LogFilter{}, 10, nil)
	if err != nil || len(rows) != 1 || rows[0].RequestID != "r1" {
		t.Errorf("ListLogs after reopen = %+v, %v", rows, err)
	}
}

func TestCanceledContext(t *testing.T) {
	s := openStore(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.CreateVoice(ctx, &store.Voice{ID: "v", OrgID: "o"}); !errors.Is(err, context.Canceled) {
		t.Errorf("CreateVoice with canceled ctx = %v", err)
	}
	if _, err := s.GetVoice(ctx, "o", "v"); !errors.Is(err, context.Canceled) {
		t.Errorf("GetVoice with canceled ctx = %v", err)
	}
	if _, _, _, err := s.ListLogs(ctx, "o", store.LogFilter{}, 1, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("ListLogs with canceled ctx = %v", err)
	}
}

func TestKeys(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := openStore(t, clk)
	k1 := &store.APIKey{ID: "k1", OrgID: "o1", Name: "ci", Prefix: "vx_ab", Hash: []byte("hash-1")}
	k2 := &store.APIKey{ID: "k2", OrgID: "o2", Hash: []byte("hash-2"), CreatedAt: clk.Now().Add(time.Second)}
	mustDo(t, s.CreateKey(ctx, k1))
	mustDo(t, s.CreateKey(ctx, k2))

	for _, c := range []struct {
		name string
		key  *store.APIKey
		want error
	}{
		{"duplicate id", &store.APIKey{ID: "k1", OrgID: "o1", Hash: []byte("other")}, store.ErrExists},
		{"duplicate hash", &store.APIKey{ID: "k3", OrgID: "o1", Hash: []byte("hash-1")}, store.ErrExists},
	} {
		if err := s.CreateKey(ctx, c.key); !errors.Is(err, c.want) {
			t.Errorf("%s: CreateKey = %v, want %v", c.name, err, c.want)
		}
	}
	for _, bad := range []*store.APIKey{nil, {OrgID: "o"}, {ID: "x"}, {ID: "x", OrgID: "o"}} {
		if err := s.CreateKey(ctx, bad); err == nil {
			t.Errorf("CreateKey(%+v) succeeded", bad)
		}
	}

	got, err := s.KeyByHash(ctx, []byte("hash-1"))
	if err != nil || got.ID != "k1" || got.OrgID != "o1" || got.Name != "ci" || got.Prefix != "vx_ab" || !got.Active() {
		t.Errorf("KeyByHash = %+v, %v", got, err)
	}
	if _, err := s.KeyByHash(ctx, []byte("nope")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("KeyByHash(unknown) = %v, want ErrNotFound", err)
	}

	for _, c := range []struct {
		org  string
		want []string
	}{{"o1", []string{"k1"}}, {"o2", []string{"k2"}}, {"", []string{"k1", "k2"}}, {"o3", nil}} {
		keys, err := s.ListKeys(ctx, c.org)
		if err != nil {
			t.Fatal(err)
		}
		if ids := keyIDs(keys); !equalStrings(ids, c.want) {
			t.Errorf("ListKeys(%q) = %v, want %v", c.org, ids, c.want)
		}
	}

	clk.Advance(time.Minute)
	revoked, err := s.RevokeKey(ctx, "k1")
	if err != nil || revoked.Active() || !revoked.RevokedAt.Equal(clk.Now()) {
		t.Fatalf("RevokeKey = %+v, %v", revoked, err)
	}
	clk.Advance(time.Minute)
	again, err := s.RevokeKey(ctx, "k1")
	if err != nil || !again.RevokedAt.Equal(revoked.RevokedAt) {
		t.Errorf("second RevokeKey = %+v, %v; want first revocation time kept", again, err)
	}
	if got, err := s.KeyByHash(ctx, []byte("hash-1")); err != nil || got.Active() {
		t.Errorf("KeyByHash of revoked key = %+v, %v; want revoked", got, err)
	}
	if _, err := s.RevokeKey(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RevokeKey(unknown) = %v, want ErrNotFound", err)
	}
	all, err := s.AllKeys(ctx)
	if err != nil || len(all) != 2 || all[0].Active() || !all[1].Active() {
		t.Errorf("AllKeys = %+v, %v", all, err)
	}
}

func TestSecrets(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, nil)
	buf := []byte("cipher-1")
	mustDo(t, s.PutSecret(ctx, "o1", "openai", buf))
	buf[0] = 'X' // The store must not alias the caller's buffer.
	mustDo(t, s.PutSecret(ctx, "o1", "elevenlabs", []byte("cipher-2")))
	mustDo(t, s.PutSecret(ctx, "o2", "openai", []byte("other-org")))

	got, err := s.GetSecret(ctx, "o1", "openai")
	if err != nil || string(got) != "cipher-1" {
		t.Errorf("GetSecret = %q, %v", got, err)
	}
	mustDo(t, s.PutSecret(ctx, "o1", "openai", []byte("cipher-3")))
	if got, _ := s.GetSecret(ctx, "o1", "openai"); string(got) != "cipher-3" {
		t.Errorf("GetSecret after replace = %q", got)
	}
	names, err := s.ListSecretNames(ctx, "o1")
	if err != nil || !equalStrings(names, []string{"elevenlabs", "openai"}) {
		t.Errorf("ListSecretNames = %v, %v", names, err)
	}
	mustDo(t, s.DeleteSecret(ctx, "o1", "openai"))
	for _, c := range []struct{ org, name string }{{"o1", "openai"}, {"o3", "openai"}, {"o1", ""}} {
		if _, err := s.GetSecret(ctx, c.org, c.name); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetSecret(%q, %q) = %v, want ErrNotFound", c.org, c.name, err)
		}
	}
	if err := s.DeleteSecret(ctx, "o1", "openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second DeleteSecret = %v, want ErrNotFound", err)
	}
	if got, _ := s.GetSecret(ctx, "o2", "openai"); string(got) != "other-org" {
		t.Errorf("other org's secret = %q", got)
	}
	if names, _ := s.ListSecretNames(ctx, "o3"); len(names) != 0 {
		t.Errorf("ListSecretNames of empty org = %v", names)
	}
}

func TestMedia(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := openStore(t, clk)
	data := []byte("RIFF....WAVEfmt ")
	m := &store.Media{ID: "m1", OrgID: "o1", Filename: "me.wav", MediaType: "audio/wav", DurationMS: 1500}
	mustDo(t, s.PutMedia(ctx, m, data))
	if err := s.PutMedia(ctx, &store.Media{ID: "m1", OrgID: "o1"}, nil); !errors.Is(err, store.ErrExists) {
		t.Errorf("duplicate PutMedia = %v, want ErrExists", err)
	}
	mustDo(t, s.PutMedia(ctx, &store.Media{ID: "empty", OrgID: "o1"}, nil))

	got, err := s.GetMedia(ctx, "o1", "m1")
	if err != nil {
		t.Fatal(err)
	}
	want := store.Media{ID: "m1", OrgID: "o1", Filename: "me.wav", MediaType: "audio/wav", Bytes: int64(len(data)),
		DurationMS: 1500, SHA256: sha256Hex(data), CreatedAt: clk.Now()}
	if *got != want {
		t.Errorf("GetMedia = %+v, want %+v", *got, want)
	}
	d, err := s.MediaData(ctx, "o1", "m1")
	if err != nil || string(d) != string(data) {
		t.Fatalf("MediaData = %q, %v", d, err)
	}
	d[0] = 'X'
	if d2, _ := s.MediaData(ctx, "o1", "m1"); string(d2) != string(data) {
		t.Error("MediaData returned memory shared with the database")
	}
	if d, err := s.MediaData(ctx, "o1", "empty"); err != nil || d == nil || len(d) != 0 {
		t.Errorf("MediaData(empty) = %v, %v; want empty non-nil", d, err)
	}
	for _, c := range []struct{ org, id string }{{"o2", "m1"}, {"o1", "m2"}, {"o1", ""}} {
		if _, err := s.GetMedia(ctx, c.org, c.id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetMedia(%q, %q) = %v, want ErrNotFound", c.org, c.id, err)
		}
		if _, err := s.MediaData(ctx, c.org, c.id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("MediaData(%q, %q) = %v, want ErrNotFound", c.org, c.id, err)
		}
	}
	mustDo(t, s.DeleteMedia(ctx, "o1", "m1"))
	if _, err := s.MediaData(ctx, "o1", "m1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("MediaData after delete = %v", err)
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func mustDo(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func keyIDs(keys []store.APIKey) []string {
	var ids []string
	for _, k := range keys {
		ids = append(ids, k.ID)
	}
	return ids
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

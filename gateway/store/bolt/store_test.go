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

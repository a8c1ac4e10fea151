package respcache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/redistest"
)

// stores are the implementations every test runs against.
func stores(t *testing.T) map[string]Store {
	d, err := OpenDisk(t.TempDir(), 1<<20, 256<<10)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRedis(redistest.StartT(t).URL(), 256<<10)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return map[string]Store{"disk": d, "redis": r}
}

func TestStores(t *testing.T) {
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			k := Key("openai", "tts-1", "alloy", "hello")
			if _, ok, err := s.Get(ctx, k); ok || err != nil {
				t.Fatalf("empty store: %v %v", ok, err)
			}
			e := Entry{Data: bytes.Repeat([]byte{1, 2, 3}, 1000), Meta: []byte(`{"mediaType":"audio/wav"}`)}
			if err := s.Put(ctx, k, e, time.Hour); err != nil {
				t.Fatal(err)
			}
			got, ok, err := s.Get(ctx, k)
			if !ok || err != nil || !bytes.Equal(got.Data, e.Data) || !bytes.Equal(got.Meta, e.Meta) {
				t.Fatalf("Get = %v %v, %d bytes", ok, err, len(got.Data))
			}
			// Overwrite.
			e2 := Entry{Data: []byte("new"), Meta: nil}
			if err := s.Put(ctx, k, e2, time.Hour); err != nil {
				t.Fatal(err)
			}
			if got, _, _ := s.Get(ctx, k); string(got.Data) != "new" || len(got.Meta) != 0 {
				t.Errorf("after overwrite: %q %q", got.Data, got.Meta)
			}
			// Too large.
			if err := s.Put(ctx, Key("big"), Entry{Data: make([]byte, 300<<10)}, time.Hour); !errors.Is(err, ErrTooLarge) {
				t.Errorf("Put of an entry over the limit: %v", err)
			}
			// Expiry.
			short := Key("short")
			if err := s.Put(ctx, short, Entry{Data: []byte("x")}, 1100*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1200 * time.Millisecond)
			if _, ok, _ := s.Get(ctx, short); ok {
				t.Error("an expired entry was returned")
			}
			// Concurrent readers and writers.
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := range 20 {
						k := Key(fmt.Sprint(i % 3))
						_ = s.Put(ctx, k, Entry{Data: bytes.Repeat([]byte{byte(i)}, 1000+j)}, time.Hour)
						if got, ok, err := s.Get(ctx, k); err != nil || (ok && len(got.Data) < 1000) {
							t.Errorf("concurrent Get: %v, %d bytes", err, len(got.Data))
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}

func TestDiskEvictsLeastRecentlyUsedAndReindexes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d, err := OpenDisk(dir, 10_000, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	entry := Entry{Data: make([]byte, 3000)}
	a, b, c, e := Key("a"), Key("b"), Key("c"), Key("e")
	for _, k := range []string{a, b, c} {
		if err := d.Put(ctx, k, entry, time.Hour); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, ok, _ := d.Get(ctx, a); !ok { // a is now the most recently used
		t.Fatal("a missing")
	}
	if err := d.Put(ctx, e, entry, time.Hour); err != nil { // 4 x 3012 > 10,000: b goes
		t.Fatal(err)
	}
	for k, want := range map[string]bool{a: true, b: false, c: true, e: true} {
		if _, ok, _ := d.Get(ctx, k); ok != want {
			t.Errorf("entry %s present = %v, want %v", k[:6], ok, want)
		}
	}
	if n, size := d.Size(); n != 3 || size > 10_000 {
		t.Errorf("size %d entries, %d bytes", n, size)
	}
	// A stray temporary file and a corrupt entry are cleaned at start;
	// the rest is found again.
	os.WriteFile(filepath.Join(dir, c[:2], ".put-123"), []byte("partial"), 0o600)
	os.WriteFile(filepath.Join(dir, e[:2], e+".entry"), []byte("xx"), 0o600)
	d2, err := OpenDisk(dir, 10_000, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := d2.Size(); n != 2 {
		t.Errorf("reopened with %d entries, want 2", n)
	}
	if _, ok, _ := d2.Get(ctx, a); !ok {
		t.Error("a was lost across a reopen")
	}
	if _, err := os.Stat(filepath.Join(dir, c[:2], ".put-123")); !errors.Is(err, os.ErrNotExist) {
		t.Error("the temporary file was left")
	}
}

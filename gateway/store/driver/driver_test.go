package driver_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/driver"
)

func TestOpen(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		cfg       driver.Config
		ephemeral bool
		describe  string
	}{
		{"bolt", driver.Config{Driver: driver.Bolt, Path: filepath.Join(t.TempDir(), "v.db")}, false, "bolt "},
		{"default is bolt", driver.Config{Path: filepath.Join(t.TempDir(), "v.db")}, false, "bolt "},
		{"memory", driver.Config{Driver: driver.Memory}, true, "nothing is kept"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := driver.Open(ctx, c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// A working backend: a voice written reads back.
			if err := s.CreateVoice(ctx, &store.Voice{ID: "v", OrgID: "o"}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.GetVoice(ctx, "o", "v"); err != nil {
				t.Fatal(err)
			}
			if got := driver.Ephemeral(c.cfg); got != c.ephemeral {
				t.Errorf("Ephemeral = %v, want %v", got, c.ephemeral)
			}
			if d := driver.Describe(c.cfg); !strings.Contains(d, c.describe) {
				t.Errorf("Describe = %q, want it to say %q", d, c.describe)
			}
		})
	}
	// Each memory store is its own: nothing of one is in the next.
	a, _ := driver.Open(ctx, driver.Config{Driver: driver.Memory})
	b, _ := driver.Open(ctx, driver.Config{Driver: driver.Memory})
	if err := a.CreateVoice(ctx, &store.Voice{ID: "v", OrgID: "o"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetVoice(ctx, "o", "v"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a second memory store sees the first's voice: %v", err)
	}
	if _, err := driver.Open(ctx, driver.Config{Driver: "sqlite"}); err == nil || !strings.Contains(err.Error(), `"memory"`) {
		t.Errorf("unknown driver: %v, want an error listing the drivers", err)
	}
}

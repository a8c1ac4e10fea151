package bolt_test

import (
	"path/filepath"
	"testing"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
	"github.com/voxgate/voxgate/gateway/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts store.Options) store.Backend {
		s, err := bolt.Open(filepath.Join(t.TempDir(), "voxgate.db"), opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

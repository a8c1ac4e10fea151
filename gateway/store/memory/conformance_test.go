package memory_test

import (
	"testing"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/memory"
	"github.com/voxgate/voxgate/gateway/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts store.Options) store.Backend {
		s := memory.New(opts)
		t.Cleanup(func() { s.Close() })
		return s
	})
}

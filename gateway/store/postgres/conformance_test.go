package postgres_test

import (
	"testing"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts store.Options) store.Backend {
		return open(t, server.NewDatabaseT(t), opts)
	})
}

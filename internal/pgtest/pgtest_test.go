package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/voxgate/voxgate/internal/pgtest"
)

func TestStartStopStart(t *testing.T) {
	s := pgtest.StartT(t)
	dsn := s.NewDatabaseT(t)
	ctx := context.Background()
	ping := func() error {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		return c.Ping(ctx)
	}
	if err := ping(); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := ping(); err == nil {
		t.Fatal("a stopped server answered")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := ping(); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}

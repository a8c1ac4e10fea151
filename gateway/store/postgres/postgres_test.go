package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/postgres"
	"github.com/voxgate/voxgate/internal/pgtest"
)

// server is the package's one PostgreSQL server; each test gets a fresh
// database on it.
var server *pgtest.Server

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &server)) }

func open(t testing.TB, dsn string, opts store.Options) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn, postgres.Options{Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestOpenErrorsNameTheServerNeverThePassword(t *testing.T) {
	ctx := context.Background()
	for _, dsn := range []string{
		"postgres://voxgate:hunter2-secret@127.0.0.1:1/voxgate?connect_timeout=2",                // nothing listens
		fmt.Sprintf("postgres://nobody-here:hunter2-secret@127.0.0.1:%d/voxgate", server.Port()), // wrong role
		fmt.Sprintf("postgres://voxgate:hunter2-secret@127.0.0.1:%d/no_such_db", server.Port()),  // wrong database
		"postgres://voxgate:hunter2-secret@127.0.0.1:notaport/x",                                 // malformed
	} {
		_, err := postgres.Open(ctx, dsn, postgres.Options{})
		if err == nil {
			t.Fatalf("%s: opened", postgres.Describe(dsn))
		}
		msg := err.Error()
		if strings.Contains(msg, "hunter2") {
			t.Errorf("error leaks the password: %s", msg)
		}
		if !strings.Contains(msg, "127.0.0.1") && !strings.Contains(msg, "DSN") {
			t.Errorf("error does not name the server: %s", msg)
		}
	}
}

func TestMigrationsAreIdempotentAndRefuseNewerSchemas(t *testing.T) {
	dsn := server.NewDatabaseT(t)
	a := open(t, dsn, store.Options{})
	b := open(t, dsn, store.Options{}) // a second instance: no second migration
	if string(a.Secret()) != string(b.Secret()) || len(a.Secret()) != 32 {
		t.Fatal("instances of one database disagree on the deployment secret")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Each migration is recorded once, however many instances started.
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migrations: %v %v", files, err)
	}
	var versions int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM voxgate_schema_version").Scan(&versions); err != nil || versions != len(files) {
		t.Fatalf("schema versions recorded: %d (%v), want %d", versions, err, len(files))
	}
	if _, err := conn.Exec(ctx, "INSERT INTO voxgate_schema_version (version) VALUES (999)"); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.Open(ctx, dsn, postgres.Options{}); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("a database newer than the binary opened: %v", err)
	}
}

func TestConcurrentFirstStartsMigrateOnce(t *testing.T) {
	dsn := server.NewDatabaseT(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := postgres.Open(context.Background(), dsn, postgres.Options{})
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestPurgeDropsWholeDayPartitions(t *testing.T) {
	dsn := server.NewDatabaseT(t)
	now := time.Date(2026, 5, 20, 12, 0, 0, 0, time.UTC)
	s := open(t, dsn, store.Options{Now: func() time.Time { return now }})
	ctx := context.Background()
	var rows []store.LogRow
	for d := range 10 {
		for i := range 3 {
			rows = append(rows, store.LogRow{OrgID: "acme", RequestID: fmt.Sprintf("d%d-%d", d, i), TS: now.Add(-time.Duration(d)*24*time.Hour - time.Duration(i)*time.Hour)})
		}
	}
	if err := s.AppendLogs(ctx, rows); err != nil {
		t.Fatal(err)
	}
	partitions := func() int {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_inherits WHERE inhparent = 'request_logs'::regclass").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := partitions()
	if before != 10 {
		t.Fatalf("partitions = %d, want one per day (10)", before)
	}
	// Cut in the middle of a day: older days go whole, that day loses its
	// older rows only.
	cut := now.Add(-5*24*time.Hour - 90*time.Minute)
	n, err := s.PurgeLogs(ctx, cut)
	if err != nil {
		t.Fatal(err)
	}
	if n != 13 { // days 6..9 whole (12 rows), and day 5's row at -2h
		t.Errorf("purged %d rows, want 13", n)
	}
	got, _, _, err := s.ListLogs(ctx, "acme", store.LogFilter{Since: now.Add(-30 * 24 * time.Hour)}, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range got {
		if r.TS.Before(cut) {
			t.Errorf("row %s at %s survived a purge to %s", r.RequestID, r.TS, cut)
		}
	}
	if len(got)+n != len(rows) {
		t.Errorf("%d listed + %d purged != %d written", len(got), n, len(rows))
	}
	if after := partitions(); after >= before {
		t.Errorf("partitions %d -> %d: old days were not dropped", before, after)
	}
	// A purged day gets its partition back when rows for it arrive.
	if err := s.AppendLogs(ctx, []store.LogRow{{OrgID: "acme", RequestID: "late", TS: now.Add(-8 * 24 * time.Hour)}}); err != nil {
		t.Fatalf("append into a dropped day: %v", err)
	}
}

func TestKeyChangesReachOtherInstances(t *testing.T) {
	dsn := server.NewDatabaseT(t)
	a, b := open(t, dsn, store.Options{}), open(t, dsn, store.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan store.KeyEvent, 16)
	go b.WatchKeys(ctx, func(e store.KeyEvent) { events <- e })
	// The first event of a session is the resync.
	select {
	case e := <-events:
		if e.ID != "" {
			t.Fatalf("first event %+v, want a resync", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no resync event")
	}
	if err := a.CreateKey(ctx, &store.APIKey{ID: "k1", OrgID: "acme", Hash: []byte("h1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.RevokeKey(ctx, "k1"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"k1", "k1"} {
		select {
		case e := <-events:
			if e.ID != want {
				t.Fatalf("event %+v, want %s", e, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("instance B did not hear of a key change within 10 s")
		}
	}
}

func TestServerGoingAwayIsUnavailableAndRecovers(t *testing.T) {
	srv := pgtest.StartT(t) // a server of its own: this test stops it
	dsn := srv.NewDatabaseT(t)
	s := open(t, dsn, store.Options{})
	ctx := context.Background()
	if err := s.CreateVoice(ctx, &store.Voice{ID: "v1", OrgID: "acme"}); err != nil {
		t.Fatal(err)
	}
	events := make(chan store.KeyEvent, 16)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.WatchKeys(wctx, func(e store.KeyEvent) { events <- e })
	<-events
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := s.GetVoice(ctx, "acme", "v1")
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("GetVoice with the server down: %v, want ErrUnavailable", err)
	}
	if err := s.CreateVoice(ctx, &store.Voice{ID: "v2", OrgID: "acme"}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("CreateVoice with the server down: %v, want ErrUnavailable", err)
	}
	t.Logf("failing with the server down took %s", time.Since(start))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := s.GetVoice(ctx, "acme", "v1")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery after the server came back: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := s.GetVoice(ctx, "acme", "v2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the failed create left something behind: %v", err)
	}
	// The watch reconnects and resynchronizes.
	select {
	case e := <-events:
		if e.ID != "" {
			t.Fatalf("first event after the outage %+v, want a resync", e)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the key watch did not reconnect")
	}
}

// TestPeekSigningKey: what `config check` reads of the provenance
// signing key, from a database voxgate never used (nothing, and nothing
// made) and from one that records a key, without changing either.
func TestPeekSigningKey(t *testing.T) {
	ctx := context.Background()
	dsn := server.NewDatabaseT(t)
	if fp, err := postgres.PeekSigningKey(ctx, dsn); err != nil || fp != nil {
		t.Fatalf("a new database: %x, %v; want none", fp, err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var made bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('voxgate_meta') IS NOT NULL").Scan(&made); err != nil || made {
		t.Fatalf("peeking made voxgate_meta (%v)", err)
	}
	s := open(t, dsn, store.Options{})
	if fp, err := postgres.PeekSigningKey(ctx, dsn); err != nil || fp != nil {
		t.Fatalf("a database with no key recorded: %x, %v; want none", fp, err)
	}
	want := []byte("0123456789abcdef0123456789abcdef")
	if _, err := s.RecordSigningKey(ctx, want, false); err != nil {
		t.Fatal(err)
	}
	if fp, err := postgres.PeekSigningKey(ctx, dsn); err != nil || string(fp) != string(want) {
		t.Fatalf("the recorded key: %x, %v; want %x", fp, err, want)
	}
}

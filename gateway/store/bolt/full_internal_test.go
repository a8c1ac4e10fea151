package bolt

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/internal/testenv"
)

// TestFullDiskRollsBack fills the file system under a database until a
// batch of log rows cannot be committed, and checks what the storage
// contract promises: the failure is store.ErrFull (and
// store.ErrUnavailable, so the request-log writer holds the rows), the
// file stays consistent (bbolt's own check) with every committed row and
// none of the failed batch, and once space is freed the same batch
// commits without a reopen. It needs root to mount an 8 MiB tmpfs (see
// testenv.SmallFS).
func TestFullDiskRollsBack(t *testing.T) {
	dir := testenv.SmallFS(t, 8<<20)
	ctx := context.Background()
	path := filepath.Join(dir, "voxgate.db")
	s, err := Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustDo := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	mustDo(s.CreateVoice(ctx, &store.Voice{ID: "v1", OrgID: "acme", Title: "before"}))
	free := testenv.Fill(t, dir, 512<<10) // room for a few batches, then full

	detail := strings.Repeat("a provider's long error message ", 64)
	batch := func(n int) []store.LogRow {
		rows := make([]store.LogRow, 64)
		for i := range rows {
			rows[i] = store.LogRow{RequestID: fmt.Sprintf("b%d-%d", n, i), OrgID: []string{"acme", "globex"}[i%2],
				TS: time.Now(), Status: 502, Provider: "openai", ErrorDetail: detail}
		}
		return rows
	}
	committed := 0
	var failed []store.LogRow
	for n := 0; failed == nil; n++ {
		if n == 1000 {
			t.Fatal("64,000 rows fit on a full 8 MiB file system")
		}
		rows := batch(n)
		switch err := s.AppendLogs(ctx, rows); {
		case err == nil:
			committed += len(rows)
		case errors.Is(err, store.ErrFull) && errors.Is(err, store.ErrUnavailable):
			failed = rows
		default:
			t.Fatalf("batch %d on a full disk: %v, want ErrFull and ErrUnavailable", n, err)
		}
	}
	all := func() map[string]bool {
		t.Helper()
		ids := map[string]bool{}
		for _, org := range []string{"acme", "globex"} {
			var after store.Position
			for {
				rows, next, more, err := s.ListLogs(ctx, org, store.LogFilter{}, 200, after)
				mustDo(err)
				for _, r := range rows {
					ids[r.RequestID] = true
				}
				if !more {
					break
				}
				after = next
			}
		}
		return ids
	}
	check := func(when string, wantFailed bool) {
		t.Helper()
		err := s.db.View(func(tx *bbolt.Tx) error {
			for err := range tx.Check() {
				return err
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: bbolt's consistency check: %v", when, err)
		}
		ids := all()
		if len(ids) != committed {
			t.Errorf("%s: %d rows listed, want the %d committed", when, len(ids), committed)
		}
		for _, r := range failed {
			if ids[r.RequestID] != wantFailed {
				t.Fatalf("%s: row %s of the failed batch listed: %v", when, r.RequestID, ids[r.RequestID])
			}
		}
		if v, err := s.GetVoice(ctx, "acme", "v1"); err != nil || v.Title != "before" {
			t.Fatalf("%s: the voice = %+v, %v", when, v, err)
		}
	}
	if committed == 0 {
		t.Fatal("the first batch found the disk full: the test shows nothing about a database with rows")
	}
	t.Logf("%d rows committed before a batch found the disk full", committed)
	check("after the failed commit", false)
	// Reads still work and a write still fails while the disk is full.
	if err := s.AppendLogs(ctx, failed); !errors.Is(err, store.ErrFull) {
		t.Fatalf("the batch again on the full disk: %v", err)
	}

	free()
	mustDo(s.AppendLogs(ctx, failed))
	committed += len(failed)
	check("after space came back", true)
	mustDo(s.CreateVoice(ctx, &store.Voice{ID: "v2", OrgID: "acme", Title: "after"}))
	mustDo(s.Close())

	s, err = Open(path, store.Options{})
	mustDo(err)
	got := len(all())
	if got != committed {
		t.Errorf("reopened: %d rows, want the %d committed", got, committed)
	}
}

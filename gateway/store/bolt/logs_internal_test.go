package bolt

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
	"go.etcd.io/bbolt"
)

// TestPurgeLeavesNoIndexEntries checks the invariant the public tests
// cannot see: after a purge every index entry points at an existing row and
// every remaining row has exactly its index entries.
func TestPurgeLeavesNoIndexEntries(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	s, err := Open(filepath.Join(t.TempDir(), "db"), store.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var rows []store.LogRow
	for i := range 3 * purgeBatch {
		rows = append(rows, store.LogRow{
			RequestID: fmt.Sprintf("r%d", i), OrgID: "o", TS: now.Add(-time.Duration(i) * time.Minute),
			Provider: []string{"a", "b", ""}[i%3], Status: []int{200, 500, 0}[i%3], ParentRequestID: []string{"", "p"}[i%2],
		})
	}
	if err := s.AppendLogs(ctx, rows); err != nil {
		t.Fatal(err)
	}
	cutoff := now.Add(-time.Duration(len(rows)/2) * time.Minute)
	n, err := s.PurgeLogs(ctx, cutoff)
	if err != nil {
		t.Fatal(err)
	}
	wantKept := 0
	wantIdx := map[string]int{}
	for _, r := range rows {
		if r.TS.Before(cutoff) {
			continue
		}
		wantKept++
		if r.ParentRequestID != "" {
			wantIdx[bucketLogsParent]++
		}
		if r.Provider != "" {
			wantIdx[bucketLogsProvider]++
			if r.Status != 0 {
				wantIdx[bucketLogsProviderStatus]++
			}
		}
		if r.Status != 0 {
			wantIdx[bucketLogsStatus]++
		}
	}
	if n != len(rows)-wantKept {
		t.Errorf("purged %d, want %d", n, len(rows)-wantKept)
	}
	err = s.db.View(func(tx *bbolt.Tx) error {
		primary := orgBucket(tx, "o", bucketLogs)
		if got := primary.Stats().KeyN; got != wantKept {
			t.Errorf("primary has %d rows, want %d", got, wantKept)
		}
		for _, name := range []string{bucketLogsParent, bucketLogsProvider, bucketLogsProviderStatus, bucketLogsStatus} {
			count := 0
			err := orgBucket(tx, "o", name).ForEach(func(k, _ []byte) error {
				count++
				if primary.Get(k[len(k)-logKeyLen:]) == nil {
					return fmt.Errorf("%s entry %x has no row", name, k)
				}
				return nil
			})
			if err != nil {
				return err
			}
			if count != wantIdx[name] {
				t.Errorf("%s has %d entries, want %d", name, count, wantIdx[name])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

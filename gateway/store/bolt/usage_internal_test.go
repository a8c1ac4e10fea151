package bolt

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/voxgate/voxgate/gateway/store"
)

// TestVersion1FileGetsItsUsageRollup opens a file as version 1 left it
// (log rows, no usage buckets) and checks that the upgrade builds the
// rollup from the rows, once.
func TestVersion1FileGetsItsUsageRollup(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(path, store.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	var rows []store.LogRow
	for i := range 500 {
		rows = append(rows, store.LogRow{
			RequestID: fmt.Sprintf("r%d", i), OrgID: []string{"a", "b"}[i%2], TS: now.Add(-time.Duration(i) * 17 * time.Minute),
			Provider: []string{"espeak", "openai"}[i%3%2], Model: "m", Status: []int{200, 502, 422}[i%3],
			CharCount: i, CreditsUsed: i % 4, LatencyMS: int64(i * 13), ParentRequestID: []string{"", "", "", "p"}[i%4],
		})
	}
	if err := s.AppendLogs(ctx, rows); err != nil {
		t.Fatal(err)
	}
	since, until := now.Truncate(store.UsageDay).Add(-10*store.UsageDay), now.Truncate(store.UsageDay).Add(store.UsageDay)
	want := map[string][]store.UsageRow{}
	for _, org := range []string{"a", "b"} {
		if want[org], err = s.Usage(ctx, org, since, until); err != nil || len(want[org]) == 0 {
			t.Fatalf("usage of %s: %d rows, %v", org, len(want[org]), err)
		}
	}
	// Make it a version-1 file: no usage buckets, schema 1.
	err = s.db.Update(func(tx *bbolt.Tx) error {
		for _, org := range orgNames(tx) {
			if err := tx.Bucket([]byte(bucketOrgs)).Bucket(org).DeleteBucket([]byte(bucketUsage)); err != nil {
				return err
			}
		}
		return tx.Bucket([]byte(bucketMeta)).Put([]byte(metaSchema), binary.BigEndian.AppendUint64(nil, 1))
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	for range 2 { // the second open must not count the rows again
		s, err = Open(path, store.Options{Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		for _, org := range []string{"a", "b"} {
			got, err := s.Usage(ctx, org, since, until)
			if err != nil || !reflect.DeepEqual(got, want[org]) {
				t.Fatalf("usage of %s after the upgrade (%v):\n got %+v\nwant %+v", org, err, got, want[org])
			}
		}
		s.Close()
	}
}

package bolt

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/voxgate/voxgate/gateway/store"
)

// TestUpgradeIndexesRequestIDs opens a schema-1 file (logs written without
// the logs_by_request index) and finds every row by its request id
// afterwards: more rows than one upgrade transaction takes, in two
// organizations.
func TestUpgradeIndexesRequestIDs(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	s, err := Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	n := upgradeBatch + 7
	rows := make([]store.LogRow, 0, n)
	for i := range n {
		org := "a"
		if i%3 == 0 {
			org = "b"
		}
		rows = append(rows, store.LogRow{RequestID: fmt.Sprintf("req-%d", i), OrgID: org, TS: now.Add(-time.Duration(n-i) * time.Second), Status: 200})
	}
	if err := s.AppendLogs(ctx, rows); err != nil {
		t.Fatal(err)
	}
	// Make it a schema-1 file: no request index, version 1.
	if err := s.db.Update(func(tx *bbolt.Tx) error {
		for _, org := range []string{"a", "b"} {
			if err := tx.Bucket([]byte(bucketOrgs)).Bucket([]byte(org)).DeleteBucket([]byte(bucketLogsRequest)); err != nil {
				return err
			}
		}
		return tx.Bucket([]byte(bucketMeta)).Put([]byte(metaSchema), binary.BigEndian.AppendUint64(nil, 1))
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetLog(ctx, "a", "req-1"); err == nil {
		t.Fatal("the simulated schema-1 file still has its index")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, r := range rows {
		got, err := s.GetLog(ctx, r.OrgID, r.RequestID)
		if err != nil || got.RequestID != r.RequestID {
			t.Fatalf("row %d after the upgrade: %+v, %v", i, got, err)
		}
	}
	var version uint64
	_ = s.db.View(func(tx *bbolt.Tx) error {
		version = binary.BigEndian.Uint64(tx.Bucket([]byte(bucketMeta)).Get([]byte(metaSchema)))
		return nil
	})
	if version != schemaVersion {
		t.Errorf("schema version %d after the upgrade, want %d", version, schemaVersion)
	}
}

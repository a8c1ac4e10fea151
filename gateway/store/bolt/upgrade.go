package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/voxgate/voxgate/gateway/store"
)

// upgradeBatch bounds the log rows one upgrade transaction indexes, so an
// upgrade of a large log never holds one huge transaction in memory.
const upgradeBatch = 5000

// upgrade brings a file of an older schema version to the current one,
// recording each version as its step completes. A step either commits
// with its version (version 2) or is idempotent (version 3), so an upgrade
// that stops half-way (a crash, a full disk) runs again on the next Open
// without counting anything twice.
//
// Version 2 adds the usage rollup, built from the existing log rows in one
// transaction (backfillUsage). Version 3 adds the logs_by_request index
// (GET /v1/logs/{requestId}), upgradeBatch rows per transaction. Version 4
// adds the jobs_finished index (the retention sweeper's ExpiredJobs),
// upgradeBatch jobs per transaction; an older binary refuses a version-4
// file, so no job finishes without its entry.
func (s *Store) upgrade() error {
	if s.upgradeFrom == 0 {
		return nil
	}
	setVersion := func(tx *bbolt.Tx, v uint64) error {
		return tx.Bucket([]byte(bucketMeta)).Put([]byte(metaSchema), binary.BigEndian.AppendUint64(nil, v))
	}
	if s.upgradeFrom < 2 {
		if err := s.db.Update(func(tx *bbolt.Tx) error {
			if err := backfillUsage(tx); err != nil {
				return err
			}
			return setVersion(tx, 2)
		}); err != nil {
			return fmt.Errorf("build the usage rollup from the request log: %w", err)
		}
	}
	if s.upgradeFrom < 3 {
		if err := s.indexRequestIDs(); err != nil {
			return fmt.Errorf("index request ids: %w", err)
		}
	}
	if s.upgradeFrom < 4 {
		if err := s.indexFinishedJobs(); err != nil {
			return fmt.Errorf("index finished jobs: %w", err)
		}
	}
	return s.db.Update(func(tx *bbolt.Tx) error { return setVersion(tx, schemaVersion) })
}

// indexRequestIDs adds every organization's log rows to logs_by_request,
// upgradeBatch rows per transaction.
func (s *Store) indexRequestIDs() error {
	var orgs [][]byte
	if err := s.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte(bucketOrgs)).ForEachBucket(func(k []byte) error {
			orgs = append(orgs, bytes.Clone(k))
			return nil
		})
	}); err != nil {
		return err
	}
	for _, org := range orgs {
		var after []byte
		for {
			var err error
			if after, err = s.indexRequestIDBatch(string(org), after); err != nil {
				return fmt.Errorf("org %q: %w", org, err)
			}
			if after == nil {
				break
			}
		}
	}
	return nil
}

// indexRequestIDBatch indexes up to upgradeBatch rows of org after primary
// key after (nil: from the start) and returns the last key indexed, nil
// when the organization's log is done.
func (s *Store) indexRequestIDBatch(org string, after []byte) (last []byte, err error) {
	err = s.db.Update(func(tx *bbolt.Tx) error {
		rows := orgBucket(tx, org, bucketLogs)
		if rows == nil {
			return nil
		}
		idx, err := orgBucketCreate(tx, org, bucketLogsRequest)
		if err != nil {
			return err
		}
		idx.FillPercent = s.logFill
		c := rows.Cursor()
		k, v := c.First()
		if after != nil {
			if k, v = c.Seek(after); k != nil && bytes.Equal(k, after) {
				k, v = c.Next()
			}
		}
		n := 0
		var r store.LogRow
		for ; k != nil; k, v = c.Next() {
			if n == upgradeBatch {
				return nil
			}
			if len(k) != logKeyLen {
				continue
			}
			if err := decodeLogRow(&r, org, k, v); err != nil {
				return fmt.Errorf("row %x: %w", k, err)
			}
			if indexable(r.RequestID) {
				if err := idx.Put(append(strPrefix(r.RequestID), k...), []byte{}); err != nil {
					return err
				}
			}
			last = bytes.Clone(k)
			n++
		}
		last = nil // the walk reached the end
		return nil
	})
	return last, err
}

// indexFinishedJobs adds every final job to jobs_finished, upgradeBatch
// jobs per transaction (a put of an entry already there changes nothing).
func (s *Store) indexFinishedJobs() error {
	var after []byte
	for {
		err := s.db.Update(func(tx *bbolt.Tx) error {
			done := tx.Bucket([]byte(bucketJobsDone))
			c := tx.Bucket([]byte(bucketJobs)).Cursor()
			k, v := c.First()
			if after != nil {
				if k, v = c.Seek(after); k != nil && bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			for n := 0; k != nil; k, v = c.Next() {
				if n == upgradeBatch {
					return nil
				}
				j, err := decodeJob(v)
				if err != nil {
					return fmt.Errorf("job %q: %w", k, err)
				}
				if jobFinished(j) {
					if err := done.Put(finishedKey(j), nil); err != nil {
						return err
					}
				}
				after = bytes.Clone(k)
				n++
			}
			after = nil // the walk reached the end
			return nil
		})
		if err != nil || after == nil {
			return err
		}
	}
}

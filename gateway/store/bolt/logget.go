package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/voxgate/voxgate/gateway/store"
)

// GetLog returns orgID's row of request requestID, or store.ErrNotFound.
// It is one seek in the logs_by_request index (its keys for one request id
// are contiguous and end in the primary key, so the last is the newest)
// and one read of the row. Rows older than LogRetention are not found.
func (s *Store) GetLog(ctx context.Context, orgID, requestID string) (*store.LogRow, error) {
	if !indexable(requestID) {
		return nil, fmt.Errorf("store: get log %q: %w", requestID, store.ErrNotFound)
	}
	lo := unixNanos(s.now().Add(-s.retention))
	prefix := strPrefix(requestID)
	upper := append(bytes.Clone(prefix), bytes.Repeat([]byte{0xFF}, logKeyLen+1)...)
	var row *store.LogRow
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		index := orgBucket(tx, orgID, bucketLogsRequest)
		primary := orgBucket(tx, orgID, bucketLogs)
		if index == nil || primary == nil {
			return store.ErrNotFound
		}
		k, _ := seekBefore(index.Cursor(), upper)
		if k == nil || len(k) != len(prefix)+logKeyLen || !bytes.HasPrefix(k, prefix) {
			return store.ErrNotFound
		}
		pk := k[len(prefix):]
		if binary.BigEndian.Uint64(pk) < lo {
			return store.ErrNotFound // older than the retention window
		}
		v := primary.Get(pk)
		if v == nil {
			return store.ErrNotFound
		}
		row = &store.LogRow{}
		return decodeLogRow(row, orgID, pk, v)
	})
	if err != nil {
		return nil, fmt.Errorf("store: get log %q: %w", requestID, err)
	}
	return row, nil
}

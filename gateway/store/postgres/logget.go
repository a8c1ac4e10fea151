package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/voxgate/voxgate/gateway/store"
)

// GetLog implements store.LogStore: one probe of the request_logs_request
// index (migration 0002), newest row first.
func (s *Store) GetLog(ctx context.Context, orgID, requestID string) (*store.LogRow, error) {
	since := s.now().Add(-s.retention)
	ctx, cancel := s.op(ctx)
	defer cancel()
	var r store.LogRow
	_, _, err := scanLogRow(s.pool.QueryRow(ctx, logSelect+" WHERE org_id = $1 AND request_id = $2 AND ts >= $3 ORDER BY ts DESC, seq DESC LIMIT 1",
		orgID, requestID, nanos(since)), &r, orgID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("store: get log %q: %w", requestID, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get log %q: %w", requestID, classify(err))
	}
	return &r, nil
}

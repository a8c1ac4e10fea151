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
	var ts, seq int64
	var status, chars, credits int32
	err := s.pool.QueryRow(ctx, logSelect+" WHERE org_id = $1 AND request_id = $2 AND ts >= $3 ORDER BY ts DESC, seq DESC LIMIT 1",
		orgID, requestID, nanos(since)).Scan(&ts, &seq, &r.RequestID, &r.ParentRequestID, &r.Path, &status, &r.Provider, &r.Model,
		&r.VoiceID, &r.VoiceRef, &chars, &credits, &r.LatencyMS, &r.ErrorCode, &r.ErrorDetail,
		&r.ProviderOptions, &r.ModerationDecision, &r.ModerationReasonType, &r.ModerationReasonDetail,
		&r.ModerationConfidence, &r.ModerationLatencyMS)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("store: get log %q: %w", requestID, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get log %q: %w", requestID, classify(err))
	}
	r.OrgID, r.TS = orgID, fromNanos(ts)
	r.Status, r.CharCount, r.CreditsUsed = int(status), int(chars), int(credits)
	return &r, nil
}

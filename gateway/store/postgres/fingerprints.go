package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/voxgate/voxgate/gateway/store"
)

// PutFingerprint implements store.FingerprintStore
// (migrations/0012_fingerprints.sql): the fingerprint and its key rows
// in one transaction.
func (s *Store) PutFingerprint(ctx context.Context, f *store.Fingerprint) error {
	if f == nil || f.OrgID == "" || f.RequestID == "" {
		return errors.New("store: put fingerprint: org and request ids are required")
	}
	if err := store.CheckText("request_id", f.RequestID); err != nil {
		return fmt.Errorf("store: put fingerprint: %w", err)
	}
	ts := f.TS
	if ts.IsZero() {
		ts = s.now()
	}
	values := make([]byte, 0, 4*len(f.Values))
	for _, v := range f.Values {
		values = binary.LittleEndian.AppendUint32(values, v)
	}
	keys := make([]int64, len(f.Keys))
	for i, k := range f.Keys {
		keys[i] = int64(k)
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM fingerprint_keys WHERE org_id = $1 AND request_id = $2`, f.OrgID, f.RequestID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO fingerprints (org_id, request_id, ts, fp_values, fp_keys) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (org_id, request_id) DO UPDATE SET ts = EXCLUDED.ts, fp_values = EXCLUDED.fp_values, fp_keys = EXCLUDED.fp_keys`,
			f.OrgID, f.RequestID, nanos(ts), values, keys); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO fingerprint_keys (org_id, key, request_id)
			SELECT $1, k, $2 FROM unnest($3::bigint[]) AS k ON CONFLICT DO NOTHING`, f.OrgID, f.RequestID, keys)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: put fingerprint %s: %w", f.RequestID, classify(err))
	}
	return nil
}

// MatchFingerprints implements store.FingerprintStore: the key rows of
// the organization's (org_id, key) ranges, counted per request.
func (s *Store) MatchFingerprints(ctx context.Context, orgID string, keys []uint32, limit int) ([]store.Fingerprint, error) {
	k := make([]int64, len(keys))
	for i, v := range keys {
		k[i] = int64(v)
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT f.request_id, f.ts, f.fp_values, f.fp_keys FROM fingerprints f
		JOIN (SELECT request_id, count(*) AS hits FROM fingerprint_keys WHERE org_id = $1 AND key = ANY($2::bigint[]) GROUP BY request_id) m
		ON f.request_id = m.request_id WHERE f.org_id = $1 ORDER BY m.hits DESC, f.ts DESC LIMIT $3`, orgID, k, limit)
	if err != nil {
		return nil, fmt.Errorf("store: match fingerprints: %w", classify(err))
	}
	defer rows.Close()
	out := []store.Fingerprint{}
	for rows.Next() {
		var f store.Fingerprint
		var ts int64
		var values []byte
		var fkeys []int64
		if err := rows.Scan(&f.RequestID, &ts, &values, &fkeys); err != nil {
			return nil, fmt.Errorf("store: match fingerprints: %w", err)
		}
		f.OrgID, f.TS = orgID, fromNanos(ts)
		f.Values = make([]uint32, len(values)/4)
		for i := range f.Values {
			f.Values[i] = binary.LittleEndian.Uint32(values[4*i:])
		}
		f.Keys = make([]uint32, len(fkeys))
		for i, v := range fkeys {
			f.Keys[i] = uint32(v)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: match fingerprints: %w", classify(err))
	}
	return out, nil
}

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

// DeleteFingerprint implements store.FingerprintStore.
func (s *Store) DeleteFingerprint(ctx context.Context, orgID, requestID string) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM fingerprint_keys WHERE org_id = $1 AND request_id = $2`, orgID, requestID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM fingerprints WHERE org_id = $1 AND request_id = $2`, orgID, requestID)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: delete fingerprint %s: %w", requestID, classify(err))
	}
	return nil
}

// purgeFingerprints deletes the fingerprints made before cutoff (unix ns)
// and their key rows, in one transaction (fingerprints_ts, schema 17,
// finds them).
func (s *Store) purgeFingerprints(ctx context.Context, cutoff int64) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM fingerprint_keys k USING fingerprints f
			WHERE f.ts < $1 AND k.org_id = f.org_id AND k.request_id = f.request_id`, cutoff); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM fingerprints WHERE ts < $1`, cutoff)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: purge fingerprints: %w", classify(err))
	}
	return nil
}

// ForEachFingerprint implements store.FingerprintStore, by organization
// and request id, a page of 500 at a time.
func (s *Store) ForEachFingerprint(ctx context.Context, fn func(*store.Fingerprint) error) error {
	var lastOrg, lastID string
	for {
		page, err := s.fingerprintPage(ctx, lastOrg, lastID, 500)
		if err != nil {
			return err
		}
		for i := range page {
			if err := fn(&page[i]); err != nil {
				return err
			}
		}
		if len(page) < 500 {
			return nil
		}
		lastOrg, lastID = page[len(page)-1].OrgID, page[len(page)-1].RequestID
	}
}

func (s *Store) fingerprintPage(ctx context.Context, afterOrg, afterID string, n int) ([]store.Fingerprint, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT org_id, request_id, ts, fp_values, fp_keys FROM fingerprints
		WHERE (org_id, request_id) > ($1, $2) ORDER BY org_id, request_id LIMIT $3`, afterOrg, afterID, n)
	if err != nil {
		return nil, fmt.Errorf("store: list fingerprints: %w", classify(err))
	}
	defer rows.Close()
	var out []store.Fingerprint
	for rows.Next() {
		var f store.Fingerprint
		var ts int64
		var values []byte
		var fkeys []int64
		if err := rows.Scan(&f.OrgID, &f.RequestID, &ts, &values, &fkeys); err != nil {
			return nil, fmt.Errorf("store: list fingerprints: %w", err)
		}
		f.TS = fromNanos(ts)
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
		return nil, fmt.Errorf("store: list fingerprints: %w", classify(err))
	}
	return out, nil
}

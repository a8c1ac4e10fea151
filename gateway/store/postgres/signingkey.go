package postgres

import (
	"context"
	"fmt"
)

// RecordSigningKey implements store.SigningKeyStore: a row of
// voxgate_meta beside the secrets key's; ON CONFLICT DO NOTHING lets the
// first instance win, unless replace.
func (s *Store) RecordSigningKey(ctx context.Context, fingerprint []byte, replace bool) ([]byte, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	q := "INSERT INTO voxgate_meta (name, value) VALUES ('signing_key_fingerprint', $1) ON CONFLICT (name) DO NOTHING"
	if replace {
		q = "INSERT INTO voxgate_meta (name, value) VALUES ('signing_key_fingerprint', $1) ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value"
	}
	if _, err := s.pool.Exec(ctx, q, fingerprint); err != nil {
		return nil, fmt.Errorf("store: record signing key: %w", classify(err))
	}
	var fp []byte
	if err := s.pool.QueryRow(ctx, "SELECT value FROM voxgate_meta WHERE name = 'signing_key_fingerprint'").Scan(&fp); err != nil {
		return nil, fmt.Errorf("store: record signing key: %w", classify(err))
	}
	return fp, nil
}

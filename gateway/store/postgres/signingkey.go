package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
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

// PeekSigningKey reads the recorded signing key fingerprint over one
// connection to dsn without migrating or changing anything, for `voxgate
// config check`; a database voxgate never used records none (nil).
func PeekSigningKey(ctx context.Context, dsn string) ([]byte, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("store: connect: %w", classify(err))
	}
	defer conn.Close(context.Background())
	var meta bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('voxgate_meta') IS NOT NULL").Scan(&meta); err != nil {
		return nil, fmt.Errorf("store: signing key: %w", classify(err))
	}
	if !meta {
		return nil, nil
	}
	var fp []byte
	err = conn.QueryRow(ctx, "SELECT value FROM voxgate_meta WHERE name = 'signing_key_fingerprint'").Scan(&fp)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("store: signing key: %w", classify(err))
	}
	return fp, nil
}

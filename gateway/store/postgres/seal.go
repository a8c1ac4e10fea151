package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// SealFingerprint implements store.SecretStore: the fingerprint is a row
// of voxgate_meta, next to the deployment secret.
func (s *Store) SealFingerprint(ctx context.Context) ([]byte, bool, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var fp []byte
	err := s.pool.QueryRow(ctx, "SELECT value FROM voxgate_meta WHERE name = 'seal_fingerprint'").Scan(&fp)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, false, fmt.Errorf("store: seal fingerprint: %w", classify(err))
	}
	var has bool
	if err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM secrets)").Scan(&has); err != nil {
		return nil, false, fmt.Errorf("store: seal fingerprint: %w", classify(err))
	}
	return fp, has, nil
}

// RecordSealFingerprint implements store.SecretStore: ON CONFLICT DO
// NOTHING lets the first writer win across instances.
func (s *Store) RecordSealFingerprint(ctx context.Context, fingerprint []byte) ([]byte, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	if _, err := s.pool.Exec(ctx, "INSERT INTO voxgate_meta (name, value) VALUES ('seal_fingerprint', $1) ON CONFLICT (name) DO NOTHING", fingerprint); err != nil {
		return nil, fmt.Errorf("store: record seal fingerprint: %w", classify(err))
	}
	var fp []byte
	if err := s.pool.QueryRow(ctx, "SELECT value FROM voxgate_meta WHERE name = 'seal_fingerprint'").Scan(&fp); err != nil {
		return nil, fmt.Errorf("store: record seal fingerprint: %w", classify(err))
	}
	return fp, nil
}

// PeekSealFingerprint reads SealFingerprint over one connection to dsn
// without migrating or changing anything, for `voxgate config check`. A
// database voxgate never used has neither.
func PeekSealFingerprint(ctx context.Context, dsn string) (fingerprint []byte, hasSecrets bool, err error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, false, fmt.Errorf("store: connect: %w", classify(err))
	}
	defer conn.Close(context.Background())
	var meta, secrets bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('voxgate_meta') IS NOT NULL, to_regclass('secrets') IS NOT NULL").Scan(&meta, &secrets); err != nil {
		return nil, false, fmt.Errorf("store: seal fingerprint: %w", classify(err))
	}
	if meta {
		err := conn.QueryRow(ctx, "SELECT value FROM voxgate_meta WHERE name = 'seal_fingerprint'").Scan(&fingerprint)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, false, fmt.Errorf("store: seal fingerprint: %w", classify(err))
		}
	}
	if secrets {
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM secrets)").Scan(&hasSecrets); err != nil {
			return nil, false, fmt.Errorf("store: seal fingerprint: %w", classify(err))
		}
	}
	return fingerprint, hasSecrets, nil
}

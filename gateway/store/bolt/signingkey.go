package bolt

import (
	"bytes"
	"context"
	"fmt"

	"go.etcd.io/bbolt"
)

// metaSigningKey is the provenance signing key's fingerprint in the meta
// bucket (RecordSigningKey).
const metaSigningKey = "signing_key_fingerprint"

// RecordSigningKey implements store.SigningKeyStore in one write
// transaction.
func (s *Store) RecordSigningKey(ctx context.Context, fingerprint []byte, replace bool) ([]byte, error) {
	var out []byte
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		meta := tx.Bucket([]byte(bucketMeta))
		if v := meta.Get([]byte(metaSigningKey)); v != nil && !replace {
			out = bytes.Clone(v)
			return nil
		}
		out = bytes.Clone(fingerprint)
		return meta.Put([]byte(metaSigningKey), bytes.Clone(fingerprint))
	})
	if err != nil {
		return nil, fmt.Errorf("store: record signing key: %w", err)
	}
	return out, nil
}

// SigningKey returns the recorded signing key fingerprint without
// recording one (nil when none is recorded): what `voxgate migrate`
// copies.
func (s *Store) SigningKey(ctx context.Context) (fingerprint []byte, err error) {
	err = s.view(ctx, func(tx *bbolt.Tx) error {
		fingerprint = bytes.Clone(tx.Bucket([]byte(bucketMeta)).Get([]byte(metaSigningKey)))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: signing key: %w", err)
	}
	return fingerprint, nil
}

// PeekSigningKey reads the recorded signing key fingerprint from the file
// at path without changing it, for `voxgate config check` (nil when none
// is recorded or the file does not exist); a file held by a running
// gateway fails with store.ErrLocked after a short wait.
func PeekSigningKey(path string) (fingerprint []byte, err error) {
	err = peek(path, func(s *Store) error {
		return s.view(context.Background(), func(tx *bbolt.Tx) error {
			fingerprint = bytes.Clone(tx.Bucket([]byte(bucketMeta)).Get([]byte(metaSigningKey)))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: signing key: %w", err)
	}
	return fingerprint, nil
}

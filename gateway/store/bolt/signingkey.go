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

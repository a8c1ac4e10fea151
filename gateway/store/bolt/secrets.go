package bolt

import (
	"bytes"
	"context"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/voxgate/voxgate/gateway/store"
)

// PutSecret stores (or replaces) the named secret of orgID, committed to
// disk before it returns. The store keeps the bytes as given: callers
// encrypt BYOK provider keys before they get here and decrypt after
// GetSecret, so plaintext never reaches the file.
func (s *Store) PutSecret(ctx context.Context, orgID, name string, ciphertext []byte) error {
	if err := requireIDs("org id", orgID, "secret name", name); err != nil {
		return err
	}
	if err := store.CheckText("org_id", orgID); err != nil {
		return fmt.Errorf("store: put secret: %w", err)
	}
	if err := store.CheckText("name", name); err != nil {
		return fmt.Errorf("store: put secret: %w", err)
	}
	value := append([]byte{}, ciphertext...) // Callers may reuse their buffer; bbolt holds it until commit.
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		b, err := orgBucketCreate(tx, orgID, bucketSecrets)
		if err != nil {
			return err
		}
		return b.Put([]byte(name), value)
	})
	if err != nil {
		return fmt.Errorf("store: put secret %q: %w", name, err)
	}
	return nil
}

// GetSecret returns a copy of the named secret of orgID, or store.ErrNotFound.
func (s *Store) GetSecret(ctx context.Context, orgID, name string) ([]byte, error) {
	var out []byte
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		v := getOrg(tx, orgID, bucketSecrets, name)
		if v == nil {
			return store.ErrNotFound
		}
		out = bytes.Clone(v)
		if out == nil {
			out = []byte{}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: get secret %q: %w", name, err)
	}
	return out, nil
}

// DeleteSecret removes the named secret of orgID, or fails with store.ErrNotFound.
func (s *Store) DeleteSecret(ctx context.Context, orgID, name string) error {
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		if getOrg(tx, orgID, bucketSecrets, name) == nil {
			return store.ErrNotFound
		}
		return orgBucket(tx, orgID, bucketSecrets).Delete([]byte(name))
	})
	if err != nil {
		return fmt.Errorf("store: delete secret %q: %w", name, err)
	}
	return nil
}

// ListSecretNames returns the names of orgID's secrets in byte order
// (never the values).
func (s *Store) ListSecretNames(ctx context.Context, orgID string) ([]string, error) {
	names := []string{}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		b := orgBucket(tx, orgID, bucketSecrets)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			names = append(names, string(k))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: list secrets: %w", err)
	}
	return names, nil
}

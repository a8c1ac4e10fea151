package bolt

import (
	"context"
	"fmt"
	"sort"

	"go.etcd.io/bbolt"

	"github.com/voxgate/voxgate/gateway/store"
)

// CreateKey stores a new API key, committed to disk before it returns. Zero
// CreatedAt means now. A taken ID or hash fails with store.ErrExists.
func (s *Store) CreateKey(ctx context.Context, k *store.APIKey) error {
	if k == nil {
		return fmt.Errorf("store: nil api key")
	}
	if err := requireIDs("key id", k.ID, "key org id", k.OrgID); err != nil {
		return err
	}
	if len(k.Hash) == 0 {
		return fmt.Errorf("store: key hash is required")
	}
	if err := k.CheckText(); err != nil {
		return fmt.Errorf("store: create key: %w", err)
	}
	if k.CreatedAt.IsZero() {
		k.CreatedAt = s.now().UTC()
	}
	data, err := encodeKey(k)
	if err != nil {
		return fmt.Errorf("store: encode key %s: %w", k.ID, err)
	}
	hash := append([]byte{}, k.Hash...)
	err = s.update(ctx, func(tx *bbolt.Tx) error {
		keys, hashes := tx.Bucket([]byte(bucketKeys)), tx.Bucket([]byte(bucketKeyHashes))
		if keys.Get([]byte(k.ID)) != nil {
			return fmt.Errorf("key %s: %w", k.ID, store.ErrExists)
		}
		if hashes.Get(hash) != nil {
			return fmt.Errorf("key hash: %w", store.ErrExists)
		}
		if err := keys.Put([]byte(k.ID), data); err != nil {
			return err
		}
		return hashes.Put(hash, []byte(k.ID))
	})
	if err != nil {
		return fmt.Errorf("store: create key: %w", err)
	}
	return nil
}

// KeyByHash returns the key whose sha256 is hash, revoked or not (the
// caller checks Active), or store.ErrNotFound. It is one lookup in the hash index
// and one in the key bucket.
func (s *Store) KeyByHash(ctx context.Context, hash []byte) (*store.APIKey, error) {
	var k *store.APIKey
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		if len(hash) == 0 {
			return store.ErrNotFound
		}
		id := tx.Bucket([]byte(bucketKeyHashes)).Get(hash)
		if id == nil {
			return store.ErrNotFound
		}
		var err error
		k, err = getKey(tx, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: key by hash: %w", err)
	}
	return k, nil
}

// ListKeys returns the keys of orgID ("" for every organization), oldest
// first. Key counts are small (operators issue them by hand), so this scans.
func (s *Store) ListKeys(ctx context.Context, orgID string) ([]store.APIKey, error) {
	out := []store.APIKey{}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte(bucketKeys)).ForEach(func(_, v []byte) error {
			k, err := decodeKey(v)
			if err != nil {
				return fmt.Errorf("decode key: %w", err)
			}
			if orgID == "" || k.OrgID == orgID {
				out = append(out, *k)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: list keys: %w", err)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// AllKeys returns every key of every organization, for loading the
// in-memory authentication cache at start.
func (s *Store) AllKeys(ctx context.Context) ([]store.APIKey, error) {
	return s.ListKeys(ctx, "")
}

// RevokeKey marks key id revoked (now) and returns it. Revoking a revoked
// key keeps its first revocation time. An unknown id fails with store.ErrNotFound.
// The hash index entry stays, so authentication can tell a revoked key from
// an unknown one in its logs.
func (s *Store) RevokeKey(ctx context.Context, id string) (*store.APIKey, error) {
	var k *store.APIKey
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		var err error
		if k, err = getKey(tx, []byte(id)); err != nil {
			return err
		}
		if !k.RevokedAt.IsZero() {
			return nil
		}
		k.RevokedAt = s.now().UTC()
		data, err := encodeKey(k)
		if err != nil {
			return err
		}
		return tx.Bucket([]byte(bucketKeys)).Put([]byte(id), data)
	})
	if err != nil {
		return nil, fmt.Errorf("store: revoke key %s: %w", id, err)
	}
	return k, nil
}

// getKey decodes key id from the key bucket.
func getKey(tx *bbolt.Tx, id []byte) (*store.APIKey, error) {
	if len(id) == 0 {
		return nil, store.ErrNotFound
	}
	v := tx.Bucket([]byte(bucketKeys)).Get(id)
	if v == nil {
		return nil, store.ErrNotFound
	}
	k, err := decodeKey(v)
	if err != nil {
		return nil, fmt.Errorf("decode key: %w", err)
	}
	return k, nil
}

// UpdateKey implements store.KeyStore: k's Name and Scope replace the
// stored key's.
func (s *Store) UpdateKey(ctx context.Context, k *store.APIKey) (*store.APIKey, error) {
	if k == nil {
		return nil, fmt.Errorf("store: nil api key")
	}
	if err := k.CheckText(); err != nil {
		return nil, fmt.Errorf("store: update key: %w", err)
	}
	var out *store.APIKey
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		cur, err := getKey(tx, []byte(k.ID))
		if err != nil {
			return err
		}
		cur.Name, cur.Scope = k.Name, k.Scope
		data, err := encodeKey(cur)
		if err != nil {
			return err
		}
		out = cur
		return tx.Bucket([]byte(bucketKeys)).Put([]byte(k.ID), data)
	})
	if err != nil {
		return nil, fmt.Errorf("store: update key %s: %w", k.ID, err)
	}
	return out, nil
}

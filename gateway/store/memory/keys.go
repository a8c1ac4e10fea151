package memory

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/voxgate/voxgate/gateway/store"
)

// CreateKey implements store.KeyStore. Zero CreatedAt means now; a taken
// ID or hash fails with store.ErrExists.
func (s *Store) CreateKey(ctx context.Context, k *store.APIKey) error {
	if err := s.enter(ctx, mCreateKey); err != nil {
		return err
	}
	if k == nil {
		return fmt.Errorf("memory store: nil api key")
	}
	if err := requireIDs("key id", k.ID, "key org id", k.OrgID); err != nil {
		return err
	}
	if len(k.Hash) == 0 {
		return fmt.Errorf("memory store: key hash is required")
	}
	if err := k.CheckText(); err != nil {
		return fmt.Errorf("memory store: create key: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys[k.ID] != nil {
		return fmt.Errorf("memory store: create key %s: %w", k.ID, store.ErrExists)
	}
	if _, ok := s.keyHashes[string(k.Hash)]; ok {
		return fmt.Errorf("memory store: create key: key hash: %w", store.ErrExists)
	}
	if k.CreatedAt.IsZero() {
		k.CreatedAt = s.utcNow()
	}
	s.keys[k.ID] = cloneKey(k)
	s.keyHashes[string(k.Hash)] = k.ID
	return nil
}

// KeyByHash implements store.KeyStore: one map lookup.
func (s *Store) KeyByHash(ctx context.Context, hash []byte) (*store.APIKey, error) {
	if err := s.enter(ctx, mKeyByHash); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if id, ok := s.keyHashes[string(hash)]; ok && len(hash) > 0 {
		return cloneKey(s.keys[id]), nil
	}
	return nil, fmt.Errorf("memory store: key by hash: %w", store.ErrNotFound)
}

// ListKeys implements store.KeyStore: the keys of orgID ("" for all),
// oldest first, ids breaking ties.
func (s *Store) ListKeys(ctx context.Context, orgID string) ([]store.APIKey, error) {
	if err := s.enter(ctx, mListKeys); err != nil {
		return nil, err
	}
	s.mu.RLock()
	out := []store.APIKey{}
	for _, k := range s.keys {
		if orgID == "" || k.OrgID == orgID {
			out = append(out, *cloneKey(k))
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b store.APIKey) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// RevokeKey implements store.KeyStore. The hash stays known, so that
// authentication can tell a revoked key from an unknown one.
func (s *Store) RevokeKey(ctx context.Context, id string) (*store.APIKey, error) {
	if err := s.enter(ctx, mRevokeKey); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.keys[id]
	if k == nil {
		return nil, fmt.Errorf("memory store: revoke key %s: %w", id, store.ErrNotFound)
	}
	if k.RevokedAt.IsZero() {
		k.RevokedAt = s.utcNow()
	}
	return cloneKey(k), nil
}

// cloneKey copies k, sharing no memory with it, its times in UTC.
func cloneKey(k *store.APIKey) *store.APIKey {
	c := *k
	c.Hash = bytes.Clone(k.Hash)
	c.CreatedAt, c.RevokedAt = utc(k.CreatedAt), utc(k.RevokedAt)
	c.Scope.ExpiresAt = utc(k.Scope.ExpiresAt)
	c.Scope.Providers = slices.Clone(k.Scope.Providers)
	c.Scope.Models = slices.Clone(k.Scope.Models)
	return &c
}

// UpdateKey implements store.KeyStore: k's Name and Scope replace the
// stored key's.
func (s *Store) UpdateKey(ctx context.Context, k *store.APIKey) (*store.APIKey, error) {
	if err := s.enter(ctx, mUpdateKey); err != nil {
		return nil, err
	}
	if k == nil {
		return nil, fmt.Errorf("memory store: nil api key")
	}
	if err := k.CheckText(); err != nil {
		return nil, fmt.Errorf("memory store: update key: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.keys[k.ID]
	if cur == nil {
		return nil, fmt.Errorf("memory store: update key %s: %w", k.ID, store.ErrNotFound)
	}
	upd := cloneKey(cur)
	c := cloneKey(k)
	upd.Name, upd.Scope = c.Name, c.Scope
	s.keys[k.ID] = upd
	return cloneKey(upd), nil
}

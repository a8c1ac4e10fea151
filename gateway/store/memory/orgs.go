package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/voxgate/voxgate/gateway/store"
)

// CreateOrg implements store.OrgStore.
func (s *Store) CreateOrg(ctx context.Context, o *store.Org) error {
	if err := s.enter(ctx, mCreateOrg); err != nil {
		return err
	}
	if o == nil {
		return fmt.Errorf("memory store: nil org")
	}
	if err := requireIDs("org id", o.ID); err != nil {
		return err
	}
	if err := o.CheckText(); err != nil {
		return fmt.Errorf("memory store: create org: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.orgRecords[o.ID] != nil {
		return fmt.Errorf("memory store: create org %s: %w", o.ID, store.ErrExists)
	}
	if o.CreatedAt.IsZero() {
		o.CreatedAt = s.utcNow()
	}
	if o.UpdatedAt.IsZero() {
		o.UpdatedAt = o.CreatedAt
	}
	s.orgRecords[o.ID] = cloneOrg(o)
	return nil
}

// GetOrg implements store.OrgStore.
func (s *Store) GetOrg(ctx context.Context, id string) (*store.Org, error) {
	if err := s.enter(ctx, mGetOrg); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	o := s.orgRecords[id]
	if o == nil {
		return nil, fmt.Errorf("memory store: get org %s: %w", id, store.ErrNotFound)
	}
	return cloneOrg(o), nil
}

// UpdateOrg implements store.OrgStore.
func (s *Store) UpdateOrg(ctx context.Context, o *store.Org) error {
	if err := s.enter(ctx, mUpdateOrg); err != nil {
		return err
	}
	if o == nil {
		return fmt.Errorf("memory store: nil org")
	}
	if err := o.CheckText(); err != nil {
		return fmt.Errorf("memory store: update org: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.orgRecords[o.ID]
	if cur == nil {
		return fmt.Errorf("memory store: update org %s: %w", o.ID, store.ErrNotFound)
	}
	if o.UpdatedAt.IsZero() {
		o.UpdatedAt = s.utcNow()
	}
	o.CreatedAt = cur.CreatedAt
	s.orgRecords[o.ID] = cloneOrg(o)
	return nil
}

// ListOrgs implements store.OrgStore.
func (s *Store) ListOrgs(ctx context.Context) ([]store.Org, error) {
	if err := s.enter(ctx, mListOrgs); err != nil {
		return nil, err
	}
	s.mu.RLock()
	out := make([]store.Org, 0, len(s.orgRecords))
	for _, o := range s.orgRecords {
		out = append(out, *cloneOrg(o))
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b store.Org) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// cloneOrg copies o, sharing no memory with it, its times in UTC.
func cloneOrg(o *store.Org) *store.Org {
	c := store.CloneOrg(o)
	c.CreatedAt, c.UpdatedAt = utc(o.CreatedAt), utc(o.UpdatedAt)
	return c
}

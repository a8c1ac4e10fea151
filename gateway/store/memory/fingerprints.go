package memory

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/voxgate/voxgate/gateway/store"
)

// fingerprints holds an organization's fingerprints and their key index.
type fingerprints struct {
	byID  map[string]*store.Fingerprint
	byKey map[uint32]map[string]struct{}
}

// PutFingerprint implements store.FingerprintStore.
func (s *Store) PutFingerprint(ctx context.Context, f *store.Fingerprint) error {
	if f == nil || f.OrgID == "" || f.RequestID == "" {
		return fmt.Errorf("store: put fingerprint: org and request ids are required")
	}
	if err := store.CheckText("request_id", f.RequestID); err != nil {
		return fmt.Errorf("store: put fingerprint: %w", err)
	}
	c := *f
	c.Values, c.Keys = slices.Clone(f.Values), slices.Clone(f.Keys)
	if c.TS.IsZero() {
		c.TS = s.now()
	}
	c.TS = c.TS.UTC()
	s.fpMu.Lock()
	defer s.fpMu.Unlock()
	if s.fps == nil {
		s.fps = map[string]*fingerprints{}
	}
	o := s.fps[c.OrgID]
	if o == nil {
		o = &fingerprints{byID: map[string]*store.Fingerprint{}, byKey: map[uint32]map[string]struct{}{}}
		s.fps[c.OrgID] = o
	}
	if old := o.byID[c.RequestID]; old != nil {
		for _, k := range old.Keys {
			delete(o.byKey[k], c.RequestID)
		}
	}
	o.byID[c.RequestID] = &c
	for _, k := range c.Keys {
		if o.byKey[k] == nil {
			o.byKey[k] = map[string]struct{}{}
		}
		o.byKey[k][c.RequestID] = struct{}{}
	}
	return nil
}

// DeleteFingerprint implements store.FingerprintStore.
func (s *Store) DeleteFingerprint(ctx context.Context, orgID, requestID string) error {
	s.fpMu.Lock()
	defer s.fpMu.Unlock()
	if o := s.fps[orgID]; o != nil {
		o.remove(requestID)
	}
	return nil
}

// remove drops one fingerprint and its keys; the caller holds fpMu.
func (o *fingerprints) remove(id string) {
	old := o.byID[id]
	if old == nil {
		return
	}
	for _, k := range old.Keys {
		delete(o.byKey[k], id)
		if len(o.byKey[k]) == 0 {
			delete(o.byKey, k)
		}
	}
	delete(o.byID, id)
}

// purgeFingerprints drops the fingerprints older than cutoff (unix ns).
func (s *Store) purgeFingerprints(cutoff int64) {
	s.fpMu.Lock()
	defer s.fpMu.Unlock()
	for _, o := range s.fps {
		for id, f := range o.byID {
			if unixNanos(f.TS) < cutoff {
				o.remove(id)
			}
		}
	}
}

// ForEachFingerprint implements store.FingerprintStore.
func (s *Store) ForEachFingerprint(ctx context.Context, fn func(*store.Fingerprint) error) error {
	s.fpMu.Lock()
	var all []store.Fingerprint
	for _, org := range slices.Sorted(maps.Keys(s.fps)) {
		o := s.fps[org]
		for _, id := range slices.Sorted(maps.Keys(o.byID)) {
			f := *o.byID[id]
			f.Values, f.Keys = slices.Clone(f.Values), slices.Clone(f.Keys)
			all = append(all, f)
		}
	}
	s.fpMu.Unlock()
	for i := range all {
		if err := fn(&all[i]); err != nil {
			return err
		}
	}
	return nil
}

// MatchFingerprints implements store.FingerprintStore.
func (s *Store) MatchFingerprints(ctx context.Context, orgID string, keys []uint32, limit int) ([]store.Fingerprint, error) {
	s.fpMu.Lock()
	defer s.fpMu.Unlock()
	o := s.fps[orgID]
	if o == nil {
		return []store.Fingerprint{}, nil
	}
	hits := map[string]int{}
	for _, k := range keys {
		for id := range o.byKey[k] {
			hits[id]++
		}
	}
	out := make([]store.Fingerprint, 0, len(hits))
	for id := range hits {
		f := *o.byID[id]
		f.Values, f.Keys = slices.Clone(f.Values), slices.Clone(f.Keys)
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b store.Fingerprint) int {
		if d := hits[b.RequestID] - hits[a.RequestID]; d != 0 {
			return d
		}
		return b.TS.Compare(a.TS)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

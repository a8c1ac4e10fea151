package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/voxgate/voxgate/gateway/store"
)

// CreateVoice implements store.VoiceStore. Zero CreatedAt means now and
// zero UpdatedAt means CreatedAt; an ID already used in the organization
// fails with store.ErrExists.
func (s *Store) CreateVoice(ctx context.Context, v *store.Voice) error {
	if err := s.enter(ctx, mCreateVoice); err != nil {
		return err
	}
	if v == nil {
		return fmt.Errorf("memory store: nil voice")
	}
	if err := requireIDs("voice id", v.ID, "voice org id", v.OrgID); err != nil {
		return err
	}
	if err := v.CheckText(); err != nil {
		return fmt.Errorf("memory store: create voice: %w", err)
	}
	s.defaultTimes(&v.CreatedAt, &v.UpdatedAt)
	stored, err := storedVoice(v)
	if err != nil {
		return fmt.Errorf("memory store: create voice %s: %w", v.ID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if o := s.org(v.OrgID); o != nil && o.voices[v.ID] != nil {
		return fmt.Errorf("memory store: create voice %s: %w", v.ID, store.ErrExists)
	}
	o := s.orgForWrite(v.OrgID)
	o.voices[v.ID] = stored
	o.voiceOrder.insert(keyOf(stored.CreatedAt, stored.ID))
	return nil
}

// GetVoice implements store.VoiceStore: a map lookup and a copy. It is on
// the path of a synthesis request that names a saved voice the read cache
// does not hold (BenchmarkGetVoice).
func (s *Store) GetVoice(ctx context.Context, orgID, id string) (*store.Voice, error) {
	if err := s.enter(ctx, mGetVoice); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if o := s.org(orgID); o != nil {
		if v := o.voices[id]; v != nil {
			return cloneVoice(v), nil
		}
	}
	return nil, fmt.Errorf("memory store: get voice %s: %w", id, store.ErrNotFound)
}

// DeleteVoice implements store.VoiceStore.
func (s *Store) DeleteVoice(ctx context.Context, orgID, id string) error {
	if err := s.enter(ctx, mDeleteVoice); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.org(orgID)
	if o == nil || o.voices[id] == nil {
		return fmt.Errorf("memory store: delete voice %s: %w", id, store.ErrNotFound)
	}
	v := o.voices[id]
	o.voiceOrder.remove(keyOf(v.CreatedAt, v.ID))
	delete(o.voices, id)
	return nil
}

// UpdateVoice implements store.VoiceStore. The voice keeps its creation
// time, hence its place in the list and any client's list position.
func (s *Store) UpdateVoice(ctx context.Context, v *store.Voice) error {
	if err := s.enter(ctx, mUpdateVoice); err != nil {
		return err
	}
	if v == nil {
		return fmt.Errorf("memory store: nil voice")
	}
	if err := v.CheckText(); err != nil {
		return fmt.Errorf("memory store: update voice: %w", err)
	}
	if v.UpdatedAt.IsZero() {
		v.UpdatedAt = s.utcNow()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.org(v.OrgID)
	if o == nil || o.voices[v.ID] == nil {
		return fmt.Errorf("memory store: update voice %s: %w", v.ID, store.ErrNotFound)
	}
	next := *v
	next.CreatedAt = o.voices[v.ID].CreatedAt
	stored, err := storedVoice(&next)
	if err != nil {
		return fmt.Errorf("memory store: update voice %s: %w", v.ID, err)
	}
	o.voices[v.ID] = stored
	*v = *cloneVoice(stored)
	return nil
}

// ListVoices implements store.VoiceStore; it reads only the page.
func (s *Store) ListVoices(ctx context.Context, orgID string, limit int, after store.Position) (voices []store.Voice, next store.Position, hasMore bool, err error) {
	if err := s.enter(ctx, mListVoices); err != nil {
		return nil, nil, false, err
	}
	if err := checkPage(limit, after); err != nil {
		return nil, nil, false, fmt.Errorf("memory store: list voices: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	o := s.org(orgID)
	if o == nil {
		return nil, nil, false, nil
	}
	keys, next, hasMore := o.voiceOrder.newest(limit, after)
	for _, k := range keys {
		voices = append(voices, *cloneVoice(o.voices[k.id]))
	}
	return voices, next, hasMore, nil
}

// checkPage checks a list's limit and a creation-ordered position.
func checkPage(limit int, after store.Position) error {
	if limit < 1 {
		return fmt.Errorf("limit %d must be positive", limit)
	}
	if _, ok := parseCreatedPosition(after); after != nil && !ok {
		return store.ErrInvalidPosition
	}
	return nil
}

// storedVoice is the form a voice is kept in: a copy sharing nothing with
// v, its times in UTC, no nil collections, and its provider options as
// JSON decodes them, which is what the other backends (a JSON document, a
// jsonb column) give back: numbers are float64, and a value JSON cannot
// hold is refused.
func storedVoice(v *store.Voice) (*store.Voice, error) {
	c := *v
	c.CreatedAt, c.UpdatedAt = utc(v.CreatedAt), utc(v.UpdatedAt)
	if v.Consent != nil {
		consent := *v.Consent
		consent.Time = utc(consent.Time)
		c.Consent = &consent
	}
	c.Tags = slices.Clone(v.Tags)
	if c.Tags == nil {
		c.Tags = []string{}
	}
	c.Fallbacks = slices.Clone(v.Fallbacks)
	if c.Fallbacks == nil {
		c.Fallbacks = []store.VoiceTarget{}
	}
	c.ProviderOptions = map[string]any{}
	if len(v.ProviderOptions) > 0 {
		data, err := json.Marshal(v.ProviderOptions)
		if err != nil {
			return nil, fmt.Errorf("provider options: %w", err)
		}
		if err := json.Unmarshal(data, &c.ProviderOptions); err != nil {
			return nil, fmt.Errorf("provider options: %w", err)
		}
	}
	return &c, nil
}

// cloneVoice copies a stored voice for a caller, who may change it.
func cloneVoice(v *store.Voice) *store.Voice {
	c := *v
	c.Tags = slices.Clone(v.Tags)
	c.Fallbacks = slices.Clone(v.Fallbacks)
	c.ProviderOptions = cloneJSON(v.ProviderOptions).(map[string]any)
	if v.Consent != nil {
		consent := *v.Consent
		c.Consent = &consent
	}
	return &c
}

// cloneJSON deep-copies a value as encoding/json decodes one: maps and
// slices are copied, the rest (strings, float64, bools, nil) are values.
func cloneJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(x))
		for k, e := range x {
			c[k] = cloneJSON(e)
		}
		return c
	case []any:
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = cloneJSON(e)
		}
		return c
	}
	return v
}

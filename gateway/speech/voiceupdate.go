package speech

import (
	"context"
	"errors"
	"time"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/store"
)

// VoiceUpdate is a partial change of a saved voice: nil fields keep their
// value.
type VoiceUpdate struct {
	Title, Provider, Model, VoiceID, Gender, Description *string
	Tags                                                 *[]string
	ProviderOptions                                      *map[string]any
}

// VoiceUpdater is the storage a voice update needs.
type VoiceUpdater interface {
	UpdateVoice(ctx context.Context, v *store.Voice) error
}

// UpdateVoice changes the given fields of voice id of org (PUT
// /v1/voices/{voiceId}): a changed provider, model or voice_id is resolved
// against the catalog and the provider's voices like a new voice's, so a
// saved voice always names a model the gateway runs and a voice the
// provider has. Another organization's voice is not found.
func (s *Service) UpdateVoice(ctx context.Context, org, id string, u VoiceUpdate, now time.Time) (*store.Voice, error) {
	v, err := s.store.GetVoice(ctx, org, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, problem.New(problem.VoiceNotFound, "no voice %s in this organization", id)
	}
	if err != nil {
		return nil, err
	}
	// The store may share its voices with other readers (a cache): change
	// a copy.
	cp := *v
	v = &cp
	set := func(dst *string, src *string) {
		if src != nil {
			*dst = *src
		}
	}
	set(&v.Title, u.Title)
	set(&v.Provider, u.Provider)
	set(&v.Model, u.Model)
	set(&v.VoiceID, u.VoiceID)
	set(&v.Gender, u.Gender)
	set(&v.Description, u.Description)
	if u.Tags != nil {
		v.Tags = *u.Tags
	}
	if u.ProviderOptions != nil {
		v.ProviderOptions = *u.ProviderOptions
	}
	if u.Provider != nil || u.Model != nil || u.VoiceID != nil {
		// What the voice speaks with changed: check it as a new voice's
		// (CreateVoice), so that a voice is never saved unchecked.
		p, m, err := s.cat.Resolve(v.Provider, v.Model)
		if err != nil {
			return nil, err
		}
		v.Model = m.ID
		if err := s.checkVoiceID(ctx, org, p, m, v.VoiceID); err != nil {
			return nil, err
		}
	}
	v.UpdatedAt = now
	up, ok := s.store.(VoiceUpdater)
	if !ok {
		return nil, errors.New("the store cannot update voices")
	}
	if err := up.UpdateVoice(ctx, v); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, problem.New(problem.VoiceNotFound, "no voice %s in this organization", id)
		}
		return nil, err
	}
	return v, nil
}

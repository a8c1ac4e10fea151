package resources

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/store"
)

// Saved voices: a provider, model and provider voice id under a title of
// the organization's, with options and fallbacks. A voice is saved only
// once its provider voice is known to exist (checkVoiceID) or has just
// been cloned (clone.go), so that a voice saved with 201 can speak.

// VoiceSpec is a voice to save, as the caller gave it.
type VoiceSpec struct {
	Title, Provider, Model, VoiceID, Gender, Description string
	// MediaIDs are the uploaded samples to clone from (the voice records
	// the first); a provider that needs several gets them all.
	MediaIDs        []string
	Tags            []string
	ProviderOptions map[string]any
	// CloneOptions are passed to the clone call only, over
	// ProviderOptions; they are not saved.
	CloneOptions map[string]any
	// Fallbacks are equivalent voices on other providers, in order.
	Fallbacks []store.VoiceTarget
	// Consent is the attestation that the speaker of the media agreed
	// (the edge requires one for a clone unless the organization made it
	// optional); stored with the voice.
	Consent *store.VoiceConsent
}

// CreateVoice saves a voice for org: it resolves the provider and model,
// checks the media it names, checks a given provider voice id against the
// provider's voice list (checkVoiceID), asks the provider to clone a voice
// from the media when no provider voice id is given, and stores the voice.
// A clone that succeeded upstream but could not be stored is reported,
// never silently half-done: the error says so.
func (s *Service) CreateVoice(ctx context.Context, org string, spec VoiceSpec, id string, now time.Time) (*store.Voice, error) {
	p, m, err := s.resolve(spec.Provider, spec.Model)
	if err != nil {
		return nil, err
	}
	v := &store.Voice{
		ID: id, OrgID: org, Title: spec.Title, Provider: spec.Provider, Model: m.ID,
		VoiceID: spec.VoiceID, Tags: spec.Tags, Gender: spec.Gender, Description: spec.Description,
		ProviderOptions: spec.ProviderOptions, CreatedAt: now, UpdatedAt: now, Consent: spec.Consent,
	}
	if len(spec.MediaIDs) > 0 {
		v.MediaID = spec.MediaIDs[0]
	}
	if v.Tags == nil {
		v.Tags = []string{}
	}
	if v.ProviderOptions == nil {
		v.ProviderOptions = map[string]any{}
	}
	for _, id := range spec.MediaIDs {
		if _, err := s.store.GetMedia(ctx, org, id); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, problem.New(problem.MediaNotFound, "no media %s in this organization", id)
			}
			return nil, err
		}
	}
	if len(spec.MediaIDs) > 0 && spec.VoiceID == "" {
		if v.VoiceID, err = s.clone(ctx, org, v, spec.MediaIDs, spec.CloneOptions); err != nil {
			return nil, err
		}
	}
	if spec.VoiceID != "" {
		if err := s.checkVoiceID(ctx, org, p, m, spec.VoiceID); err != nil {
			return nil, err
		}
	}
	if v.Fallbacks, err = s.checkFallbacks(ctx, org, spec.Fallbacks); err != nil {
		return nil, err
	}
	if err := s.store.CreateVoice(ctx, v); err != nil {
		return nil, err
	}
	return v, nil
}

// Voice returns voice id of org. Another organization's voice is not
// found, like a missing one, so ids never leak across organizations.
func (s *Service) Voice(ctx context.Context, org, id string) (*store.Voice, error) {
	v, err := s.store.GetVoice(ctx, org, id)
	if err != nil {
		return nil, voiceErr(err, id)
	}
	return v, nil
}

// ListVoices returns a page of org's saved voices, newest created first:
// at most limit after position after, the position to go on from, and
// whether more follow.
func (s *Service) ListVoices(ctx context.Context, org string, limit int, after store.Position) ([]store.Voice, store.Position, bool, error) {
	return s.store.ListVoices(ctx, org, limit, after)
}

// DeleteVoice deletes voice id of org. The provider's voice (a clone)
// stays with the provider.
func (s *Service) DeleteVoice(ctx context.Context, org, id string) error {
	return voiceErr(s.store.DeleteVoice(ctx, org, id), id)
}

// voiceErr maps a store miss to voice_not_found.
func voiceErr(err error, id string) error {
	if errors.Is(err, store.ErrNotFound) {
		return problem.New(problem.VoiceNotFound, "no voice %s in this organization", id)
	}
	return err
}

// VoiceUpdate is a partial change of a saved voice: nil fields keep their
// value.
type VoiceUpdate struct {
	Title, Provider, Model, VoiceID, Gender, Description *string
	Tags                                                 *[]string
	ProviderOptions                                      *map[string]any
}

// UpdateVoice changes the given fields of voice id of org (PUT
// /v1/voices/{voiceId}): a changed provider, model or voice_id is resolved
// against the catalog and the provider's voices like a new voice's, so a
// saved voice always names a model the gateway runs and a voice the
// provider has. Another organization's voice is not found.
func (s *Service) UpdateVoice(ctx context.Context, org, id string, u VoiceUpdate, now time.Time) (*store.Voice, error) {
	v, err := s.Voice(ctx, org, id)
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
		p, m, err := s.resolve(v.Provider, v.Model)
		if err != nil {
			return nil, err
		}
		v.Model = m.ID
		if err := s.checkVoiceID(ctx, org, p, m, v.VoiceID); err != nil {
			return nil, err
		}
	}
	v.UpdatedAt = now
	if err := s.store.UpdateVoice(ctx, v); err != nil {
		return nil, voiceErr(err, id)
	}
	return v, nil
}

// checkFallbacks resolves a saved voice's fallbacks (the model's id as
// the catalog names it) and checks each voice against its provider's
// list, as the voice's own. Problems name the fallback's index.
func (s *Service) checkFallbacks(ctx context.Context, org string, fbs []store.VoiceTarget) ([]store.VoiceTarget, error) {
	out := make([]store.VoiceTarget, 0, len(fbs))
	for i, f := range fbs {
		p, m, err := s.resolve(f.Provider, f.Model)
		if err == nil {
			err = s.checkVoiceID(ctx, org, p, m, f.VoiceID)
		}
		if err != nil {
			pe := problem.From(err, f.Provider)
			c := *pe
			c.Detail = fmt.Sprintf("fallback %d: %s", i, pe.Detail)
			c.Validation = make([]problem.FieldError, len(pe.Validation))
			for k, v := range pe.Validation {
				c.Validation[k] = problem.FieldError{Path: append([]string{"fallbacks", strconv.Itoa(i)}, v.Path...), Message: v.Message}
			}
			return nil, &c
		}
		out = append(out, store.VoiceTarget{Provider: p.ID, Model: m.ID, VoiceID: f.VoiceID})
	}
	return out, nil
}

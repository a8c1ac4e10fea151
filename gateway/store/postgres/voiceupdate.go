package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/voxgate/voxgate/gateway/store"
)

// UpdateVoice implements store.VoiceStore.
func (s *Store) UpdateVoice(ctx context.Context, v *store.Voice) error {
	if v == nil {
		return errors.New("store: nil voice")
	}
	if err := v.CheckText(); err != nil {
		return fmt.Errorf("store: update voice: %w", err)
	}
	if v.UpdatedAt.IsZero() {
		v.UpdatedAt = s.now().UTC()
	}
	tj, oj, fj, err := voiceJSON(v)
	if err != nil {
		return err
	}
	cj, err := consentJSON(v.Consent)
	if err != nil {
		return err
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	out, err := scanVoice(s.pool.QueryRow(ctx, `UPDATE voices SET title = $3, provider = $4, model = $5, voice_id = $6, tags = $7, gender = $8,
		description = $9, provider_options = $10, media_id = $11, updated_ns = $12, fallbacks = $13, consent = $14 WHERE org_id = $1 AND id = $2 RETURNING `+voiceColumns,
		v.OrgID, v.ID, v.Title, v.Provider, v.Model, v.VoiceID, tj, v.Gender, v.Description, oj, v.MediaID, nanos(v.UpdatedAt), fj, cj))
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("store: update voice %s: %w", v.ID, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: update voice %s: %w", v.ID, classify(err))
	}
	*v = *out
	return nil
}

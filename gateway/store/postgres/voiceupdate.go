package postgres

import (
	"context"
	"encoding/json"
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
	if v.UpdatedAt.IsZero() {
		v.UpdatedAt = s.now().UTC()
	}
	tags, opts := v.Tags, v.ProviderOptions
	if tags == nil {
		tags = []string{}
	}
	if opts == nil {
		opts = map[string]any{}
	}
	tj, err := json.Marshal(tags)
	if err != nil {
		return fmt.Errorf("store: encode voice tags: %w", err)
	}
	oj, err := json.Marshal(opts)
	if err != nil {
		return fmt.Errorf("store: encode voice provider options: %w", err)
	}
	fb := v.Fallbacks
	if fb == nil {
		fb = []store.VoiceTarget{}
	}
	fj, err := json.Marshal(fb)
	if err != nil {
		return fmt.Errorf("store: encode voice fallbacks: %w", err)
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	out, err := scanVoice(s.pool.QueryRow(ctx, `UPDATE voices SET title = $3, provider = $4, model = $5, voice_id = $6, tags = $7, gender = $8,
		description = $9, provider_options = $10, media_id = $11, updated_ns = $12, fallbacks = $13 WHERE org_id = $1 AND id = $2 RETURNING `+voiceColumns,
		v.OrgID, v.ID, v.Title, v.Provider, v.Model, v.VoiceID, tj, v.Gender, v.Description, oj, v.MediaID, nanos(v.UpdatedAt), fj))
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("store: update voice %s: %w", v.ID, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: update voice %s: %w", v.ID, classify(err))
	}
	*v = *out
	return nil
}

package bolt

import (
	"bytes"
	"context"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/voxgate/voxgate/gateway/store"
)

// UpdateVoice implements store.VoiceStore. The voice keeps its key (it
// depends only on the creation time and id), so the list order and any
// client's list position are unaffected.
func (s *Store) UpdateVoice(ctx context.Context, v *store.Voice) error {
	if v == nil {
		return fmt.Errorf("store: nil voice")
	}
	if err := v.CheckText(); err != nil {
		return fmt.Errorf("store: update voice: %w", err)
	}
	if v.UpdatedAt.IsZero() {
		v.UpdatedAt = s.now().UTC()
	}
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		key := bytes.Clone(voiceKeyByID(tx, v.OrgID, v.ID)) // bbolt holds Put's key until commit
		if key == nil {
			return fmt.Errorf("voice %s: %w", v.ID, store.ErrNotFound)
		}
		voices := orgBucket(tx, v.OrgID, bucketVoices)
		cur, err := decodeVoice(voices.Get(key))
		if err != nil {
			return err
		}
		next := *v
		next.CreatedAt = cur.CreatedAt
		if next.Tags == nil {
			next.Tags = []string{}
		}
		if next.ProviderOptions == nil {
			next.ProviderOptions = map[string]any{}
		}
		if next.Fallbacks == nil {
			next.Fallbacks = []store.VoiceTarget{}
		}
		data, err := encodeVoice(&next)
		if err != nil {
			return err
		}
		*v = next
		return voices.Put(key, data)
	})
	if err != nil {
		return fmt.Errorf("store: update voice: %w", err)
	}
	return nil
}

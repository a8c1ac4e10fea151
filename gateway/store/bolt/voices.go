package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/voxgate/voxgate/gateway/store"
)

// voiceKey is the primary key of a voice: created_at nanoseconds (8 bytes,
// big-endian) then the id, so a bucket cursor walks voices in creation order
// and the id breaks ties between voices created in the same nanosecond.
func voiceKey(created time.Time, id string) []byte {
	k := make([]byte, 8, 8+len(id))
	binary.BigEndian.PutUint64(k, unixNanos(created))
	return append(k, id...)
}

// CreateVoice stores a new voice. The caller sets ID and OrgID (and
// normally CreatedAt; zero means now). UpdatedAt defaults to CreatedAt. The
// voice is committed to disk before CreateVoice returns. An ID already used
// in the organization fails with store.ErrExists.
func (s *Store) CreateVoice(ctx context.Context, v *store.Voice) error {
	if v == nil {
		return fmt.Errorf("store: nil voice")
	}
	if err := requireIDs("voice id", v.ID, "voice org id", v.OrgID); err != nil {
		return err
	}
	if err := v.CheckText(); err != nil {
		return fmt.Errorf("store: create voice: %w", err)
	}
	if v.CreatedAt.IsZero() {
		v.CreatedAt = s.now().UTC()
	}
	if v.UpdatedAt.IsZero() {
		v.UpdatedAt = v.CreatedAt
	}
	data, err := encodeVoice(v)
	if err != nil {
		return fmt.Errorf("store: encode voice %s: %w", v.ID, err)
	}
	key := voiceKey(v.CreatedAt, v.ID)
	err = s.update(ctx, func(tx *bbolt.Tx) error {
		ids, err := orgBucketCreate(tx, v.OrgID, bucketVoiceIDs)
		if err != nil {
			return err
		}
		voices, err := orgBucketCreate(tx, v.OrgID, bucketVoices)
		if err != nil {
			return err
		}
		if ids.Get([]byte(v.ID)) != nil {
			return fmt.Errorf("voice %s: %w", v.ID, store.ErrExists)
		}
		if err := voices.Put(key, data); err != nil {
			return err
		}
		return ids.Put([]byte(v.ID), key)
	})
	if err != nil {
		return fmt.Errorf("store: create voice: %w", err)
	}
	return nil
}

// GetVoice returns the voice id of organization orgID, or an error wrapping
// store.ErrNotFound (also when the id belongs to another organization).
func (s *Store) GetVoice(ctx context.Context, orgID, id string) (*store.Voice, error) {
	var v *store.Voice
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		key := voiceKeyByID(tx, orgID, id)
		if key == nil {
			return fmt.Errorf("voice %s: %w", id, store.ErrNotFound)
		}
		data := orgBucket(tx, orgID, bucketVoices).Get(key)
		if data == nil {
			return fmt.Errorf("voice %s: index points at a missing record: %w", id, store.ErrNotFound)
		}
		var err error
		v, err = decodeVoice(data)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: get voice: %w", err)
	}
	return v, nil
}

// DeleteVoice removes the voice id of organization orgID, or fails with
// store.ErrNotFound. It is committed to disk before it returns.
func (s *Store) DeleteVoice(ctx context.Context, orgID, id string) error {
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		key := voiceKeyByID(tx, orgID, id)
		if key == nil {
			return fmt.Errorf("voice %s: %w", id, store.ErrNotFound)
		}
		key = bytes.Clone(key) // Deleting from the index invalidates its memory.
		if err := orgBucket(tx, orgID, bucketVoiceIDs).Delete([]byte(id)); err != nil {
			return err
		}
		return orgBucket(tx, orgID, bucketVoices).Delete(key)
	})
	if err != nil {
		return fmt.Errorf("store: delete voice: %w", err)
	}
	return nil
}

// ListVoices returns up to limit voices of orgID, newest created first,
// starting strictly after position after (nil starts at the newest). next
// is the position of the last returned voice (nil when none is returned) and
// hasMore reports whether older voices remain.
//
// It reads only the page it returns (plus one key to learn hasMore): a
// cursor seek and a backwards walk in the creation-ordered bucket. Voices
// created after a position sort newer than it, so paging never repeats or
// skips a voice while others are being added.
func (s *Store) ListVoices(ctx context.Context, orgID string, limit int, after store.Position) (voices []store.Voice, next store.Position, hasMore bool, err error) {
	return listNewest(s, ctx, orgID, bucketVoices, "voices", limit, after, decodeVoice)
}

// listNewest pages the creation-ordered bucket of orgID backwards: up to
// limit records, newest first, strictly after position after (nil: from
// the newest). Keys are a creation time (8 bytes) and an id, so a valid
// position is longer than 8 bytes. It reads only the page (plus one key
// to learn hasMore). what names the records in errors.
func listNewest[T any](s *Store, ctx context.Context, orgID, bucket, what string, limit int, after store.Position, decode func([]byte) (*T, error)) (page []T, next store.Position, hasMore bool, err error) {
	if limit < 1 {
		return nil, nil, false, fmt.Errorf("store: list %s: limit %d must be positive", what, limit)
	}
	if after != nil && len(after) <= 8 {
		return nil, nil, false, fmt.Errorf("store: list %s: %w", what, store.ErrInvalidPosition)
	}
	err = s.view(ctx, func(tx *bbolt.Tx) error {
		b := orgBucket(tx, orgID, bucket)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		var k, data []byte
		if after == nil {
			k, data = c.Last()
		} else {
			k, data = seekBefore(c, after)
		}
		var last []byte
		for ; k != nil; k, data = c.Prev() {
			if len(page) == limit {
				hasMore = true
				break
			}
			v, err := decode(data)
			if err != nil {
				return err
			}
			page = append(page, *v)
			last = k
		}
		next = bytes.Clone(last)
		return nil
	})
	if err != nil {
		return nil, nil, false, fmt.Errorf("store: list %s: %w", what, err)
	}
	return page, next, hasMore, nil
}

// voiceKeyByID looks a voice's primary key up in the id index.
func voiceKeyByID(tx *bbolt.Tx, orgID, id string) []byte {
	if id == "" {
		return nil
	}
	ids := orgBucket(tx, orgID, bucketVoiceIDs)
	if ids == nil {
		return nil
	}
	return ids.Get([]byte(id))
}

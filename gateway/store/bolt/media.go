package bolt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/voxgate/voxgate/gateway/store"
)

// PutMedia stores a new media object and its data, committed to disk before
// it returns. Zero CreatedAt means now; zero Bytes and empty SHA256 are
// filled in from data. An ID already used in the organization fails with
// store.ErrExists.
func (s *Store) PutMedia(ctx context.Context, m *store.Media, data []byte) error {
	if m == nil {
		return fmt.Errorf("store: nil media")
	}
	if err := requireIDs("media id", m.ID, "media org id", m.OrgID); err != nil {
		return err
	}
	if err := m.CheckText(); err != nil {
		return fmt.Errorf("store: put media: %w", err)
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = s.now().UTC()
	}
	if m.Bytes == 0 {
		m.Bytes = int64(len(data))
	}
	if m.SHA256 == "" {
		sum := sha256.Sum256(data)
		m.SHA256 = hex.EncodeToString(sum[:])
	}
	meta, err := encodeMedia(m)
	if err != nil {
		return fmt.Errorf("store: encode media %s: %w", m.ID, err)
	}
	err = s.update(ctx, func(tx *bbolt.Tx) error {
		mb, err := orgBucketCreate(tx, m.OrgID, bucketMedia)
		if err != nil {
			return err
		}
		db, err := orgBucketCreate(tx, m.OrgID, bucketMediaData)
		if err != nil {
			return err
		}
		if mb.Get([]byte(m.ID)) != nil {
			return fmt.Errorf("media %s: %w", m.ID, store.ErrExists)
		}
		if err := mb.Put([]byte(m.ID), meta); err != nil {
			return err
		}
		// bbolt needs a non-nil value; an empty upload stores zero bytes.
		return db.Put([]byte(m.ID), append([]byte{}, data...))
	})
	if err != nil {
		return fmt.Errorf("store: put media: %w", err)
	}
	return nil
}

// GetMedia returns the metadata of media id of orgID, or store.ErrNotFound.
func (s *Store) GetMedia(ctx context.Context, orgID, id string) (*store.Media, error) {
	var m *store.Media
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		data := getOrg(tx, orgID, bucketMedia, id)
		if data == nil {
			return fmt.Errorf("media %s: %w", id, store.ErrNotFound)
		}
		var err error
		m, err = decodeMedia(data)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: get media: %w", err)
	}
	return m, nil
}

// MediaData returns a copy of the bytes of media id of orgID, or store.ErrNotFound.
func (s *Store) MediaData(ctx context.Context, orgID, id string) ([]byte, error) {
	var out []byte
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		data := getOrg(tx, orgID, bucketMediaData, id)
		if data == nil {
			return fmt.Errorf("media %s: %w", id, store.ErrNotFound)
		}
		out = bytes.Clone(data)
		if out == nil {
			out = []byte{}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: media data: %w", err)
	}
	return out, nil
}

// DeleteMedia removes media id of orgID and its data, or fails with
// store.ErrNotFound.
func (s *Store) DeleteMedia(ctx context.Context, orgID, id string) error {
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		if getOrg(tx, orgID, bucketMedia, id) == nil {
			return fmt.Errorf("media %s: %w", id, store.ErrNotFound)
		}
		if err := orgBucket(tx, orgID, bucketMedia).Delete([]byte(id)); err != nil {
			return err
		}
		if b := orgBucket(tx, orgID, bucketMediaData); b != nil {
			return b.Delete([]byte(id))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: delete media: %w", err)
	}
	return nil
}

// getOrg reads key from orgID's sub-bucket name; nil if any part is missing.
func getOrg(tx *bbolt.Tx, orgID, name, key string) []byte {
	if key == "" {
		return nil
	}
	b := orgBucket(tx, orgID, name)
	if b == nil {
		return nil
	}
	return b.Get([]byte(key))
}

package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"go.etcd.io/bbolt"
)

// Media is the metadata of an uploaded audio file (for voice cloning). The
// bytes themselves live in a separate bucket so metadata reads stay small.
type Media struct {
	// ID is the media id (uuid).
	ID string `json:"id"`
	// OrgID is the owning organization.
	OrgID string `json:"org_id"`
	// Filename is the client's file name, if it sent one.
	Filename string `json:"filename"`
	// MediaType is the Content-Type of the upload.
	MediaType string `json:"media_type"`
	// Bytes is the size of the data.
	Bytes int64 `json:"bytes"`
	// DurationMS is the audio duration, if known.
	DurationMS int64 `json:"duration_ms"`
	// SHA256 is the lowercase hex digest of the data.
	SHA256 string `json:"sha256"`
	// CreatedAt is the upload time.
	CreatedAt time.Time `json:"created_at"`
}

// PutMedia stores a new media object and its data, committed to disk before
// it returns. Zero CreatedAt means now; zero Bytes and empty SHA256 are
// filled in from data. An ID already used in the organization fails with
// ErrExists.
func (s *Store) PutMedia(ctx context.Context, m *Media, data []byte) error {
	if m == nil {
		return fmt.Errorf("store: nil media")
	}
	if err := requireIDs("media id", m.ID, "media org id", m.OrgID); err != nil {
		return err
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
	meta, err := json.Marshal(m)
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
			return fmt.Errorf("media %s: %w", m.ID, ErrExists)
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

// GetMedia returns the metadata of media id of orgID, or ErrNotFound.
func (s *Store) GetMedia(ctx context.Context, orgID, id string) (*Media, error) {
	var m Media
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		data := getOrg(tx, orgID, bucketMedia, id)
		if data == nil {
			return fmt.Errorf("media %s: %w", id, ErrNotFound)
		}
		return json.Unmarshal(data, &m)
	})
	if err != nil {
		return nil, fmt.Errorf("store: get media: %w", err)
	}
	return &m, nil
}

// MediaData returns a copy of the bytes of media id of orgID, or ErrNotFound.
func (s *Store) MediaData(ctx context.Context, orgID, id string) ([]byte, error) {
	var out []byte
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		data := getOrg(tx, orgID, bucketMediaData, id)
		if data == nil {
			return fmt.Errorf("media %s: %w", id, ErrNotFound)
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
// ErrNotFound.
func (s *Store) DeleteMedia(ctx context.Context, orgID, id string) error {
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		if getOrg(tx, orgID, bucketMedia, id) == nil {
			return fmt.Errorf("media %s: %w", id, ErrNotFound)
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

package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/voxgate/voxgate/gateway/store"
)

// mediaEntry is a media object and its bytes.
type mediaEntry struct {
	meta store.Media
	data []byte
}

// PutMedia implements store.MediaStore. Zero CreatedAt means now; zero
// Bytes and empty SHA256 are filled in from data.
func (s *Store) PutMedia(ctx context.Context, m *store.Media, data []byte) error {
	if err := s.enter(ctx, mPutMedia); err != nil {
		return err
	}
	if m == nil {
		return fmt.Errorf("memory store: nil media")
	}
	if err := requireIDs("media id", m.ID, "media org id", m.OrgID); err != nil {
		return err
	}
	if err := m.CheckText(); err != nil {
		return fmt.Errorf("memory store: put media: %w", err)
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = s.utcNow()
	}
	if m.Bytes == 0 {
		m.Bytes = int64(len(data))
	}
	if m.SHA256 == "" {
		sum := sha256.Sum256(data)
		m.SHA256 = hex.EncodeToString(sum[:])
	}
	e := &mediaEntry{meta: *m, data: append([]byte{}, data...)}
	e.meta.CreatedAt = utc(m.CreatedAt)
	s.mu.Lock()
	defer s.mu.Unlock()
	if o := s.org(m.OrgID); o != nil && o.media[m.ID] != nil {
		return fmt.Errorf("memory store: put media %s: %w", m.ID, store.ErrExists)
	}
	s.orgForWrite(m.OrgID).media[m.ID] = e
	return nil
}

// media returns media id of orgID, or nil. Callers hold mu.
func (s *Store) media(orgID, id string) *mediaEntry {
	if o := s.org(orgID); o != nil {
		return o.media[id]
	}
	return nil
}

// GetMedia implements store.MediaStore.
func (s *Store) GetMedia(ctx context.Context, orgID, id string) (*store.Media, error) {
	if err := s.enter(ctx, mGetMedia); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.media(orgID, id)
	if e == nil {
		return nil, fmt.Errorf("memory store: get media %s: %w", id, store.ErrNotFound)
	}
	m := e.meta
	return &m, nil
}

// MediaData implements store.MediaStore: a copy of the bytes (empty, not
// nil, for an empty upload).
func (s *Store) MediaData(ctx context.Context, orgID, id string) ([]byte, error) {
	if err := s.enter(ctx, mMediaData); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.media(orgID, id)
	if e == nil {
		return nil, fmt.Errorf("memory store: media data %s: %w", id, store.ErrNotFound)
	}
	return append([]byte{}, e.data...), nil
}

// DeleteMedia implements store.MediaStore.
func (s *Store) DeleteMedia(ctx context.Context, orgID, id string) error {
	if err := s.enter(ctx, mDeleteMedia); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.media(orgID, id) == nil {
		return fmt.Errorf("memory store: delete media %s: %w", id, store.ErrNotFound)
	}
	delete(s.org(orgID).media, id)
	return nil
}

// PutSecret implements store.SecretStore. The bytes are kept as given
// (the caller has sealed them) and copied.
func (s *Store) PutSecret(ctx context.Context, orgID, name string, ciphertext []byte) error {
	if err := s.enter(ctx, mPutSecret); err != nil {
		return err
	}
	if err := requireIDs("org id", orgID, "secret name", name); err != nil {
		return err
	}
	if err := store.CheckText("org_id", orgID); err != nil {
		return fmt.Errorf("memory store: put secret: %w", err)
	}
	if err := store.CheckText("name", name); err != nil {
		return fmt.Errorf("memory store: put secret: %w", err)
	}
	value := append([]byte{}, ciphertext...)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.orgForWrite(orgID).secrets[name] = value
	return nil
}

// GetSecret implements store.SecretStore: a copy of the bytes.
func (s *Store) GetSecret(ctx context.Context, orgID, name string) ([]byte, error) {
	if err := s.enter(ctx, mGetSecret); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if o := s.org(orgID); o != nil {
		if v, ok := o.secrets[name]; ok {
			return append([]byte{}, v...), nil
		}
	}
	return nil, fmt.Errorf("memory store: get secret %q: %w", name, store.ErrNotFound)
}

// DeleteSecret implements store.SecretStore.
func (s *Store) DeleteSecret(ctx context.Context, orgID, name string) error {
	if err := s.enter(ctx, mDeleteSecret); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.org(orgID)
	if o == nil {
		return fmt.Errorf("memory store: delete secret %q: %w", name, store.ErrNotFound)
	}
	if _, ok := o.secrets[name]; !ok {
		return fmt.Errorf("memory store: delete secret %q: %w", name, store.ErrNotFound)
	}
	delete(o.secrets, name)
	return nil
}

// ListSecretNames implements store.SecretStore: the names in byte order,
// never the values.
func (s *Store) ListSecretNames(ctx context.Context, orgID string) ([]string, error) {
	if err := s.enter(ctx, mListSecretNames); err != nil {
		return nil, err
	}
	s.mu.RLock()
	names := []string{}
	if o := s.org(orgID); o != nil {
		for name := range o.secrets {
			names = append(names, name)
		}
	}
	s.mu.RUnlock()
	slices.Sort(names)
	return names, nil
}

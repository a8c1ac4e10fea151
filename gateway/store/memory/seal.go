package memory

import (
	"bytes"
	"context"
)

// SealFingerprint implements store.SecretStore.
func (s *Store) SealFingerprint(ctx context.Context) ([]byte, bool, error) {
	if err := s.enter(ctx, mSealFingerprint); err != nil {
		return nil, false, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	has := false
	for _, o := range s.orgs {
		if len(o.secrets) > 0 {
			has = true
			break
		}
	}
	return bytes.Clone(s.sealFingerprint), has, nil
}

// RecordSealFingerprint implements store.SecretStore.
func (s *Store) RecordSealFingerprint(ctx context.Context, fingerprint []byte) ([]byte, error) {
	if err := s.enter(ctx, mRecordSealFingerprint); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sealFingerprint == nil {
		s.sealFingerprint = bytes.Clone(fingerprint)
	}
	return bytes.Clone(s.sealFingerprint), nil
}

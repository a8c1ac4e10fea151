package memory

import (
	"bytes"
	"context"
)

// RecordSigningKey implements store.SigningKeyStore.
func (s *Store) RecordSigningKey(ctx context.Context, fingerprint []byte, replace bool) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.signingKey == nil || replace {
		s.signingKey = bytes.Clone(fingerprint)
	}
	return bytes.Clone(s.signingKey), nil
}

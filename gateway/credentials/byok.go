package credentials

import (
	"context"
	"errors"
	"fmt"

	"github.com/voxgate/voxgate/gateway/store"
)

// Secrets is the storage BYOK keys live in, declared by its user.
type Secrets interface {
	PutSecret(ctx context.Context, orgID, name string, ciphertext []byte) error
	GetSecret(ctx context.Context, orgID, name string) ([]byte, error)
	DeleteSecret(ctx context.Context, orgID, name string) error
	ListSecretNames(ctx context.Context, orgID string) ([]string, error)
}

// SecretName is the store name of an org's key for provider.
func SecretName(provider string) string { return "byok:" + provider }

func aad(org, provider string) []byte { return []byte(org + "/" + provider) }

// StoreBYOK encrypts and stores org's own key for provider. The org and
// provider must exist in the policy.
func StoreBYOK(ctx context.Context, st Secrets, s *Sealer, p *Policy, org, provider, value string) error {
	if err := p.Exists(org, provider); err != nil {
		return err
	}
	ct, err := s.Seal([]byte(value), aad(org, provider))
	if err != nil {
		return err
	}
	return st.PutSecret(ctx, org, SecretName(provider), ct)
}

// LoadBYOK returns org's stored key for provider, "" when none is stored.
func LoadBYOK(ctx context.Context, st Secrets, s *Sealer, org, provider string) (string, error) {
	ct, err := st.GetSecret(ctx, org, SecretName(provider))
	if err != nil {
		if isNotFound(err) {
			return "", nil
		}
		return "", err
	}
	pt, err := s.Open(ct, aad(org, provider))
	if err != nil {
		return "", fmt.Errorf("byok key of %s/%s: %w", org, provider, err)
	}
	return string(pt), nil
}

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

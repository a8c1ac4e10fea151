package credentials

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

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

// metaName is the store name of what the API may show of org's key for
// provider (its last four characters and when it was stored), sealed
// like the key but apart from it, so that listing keys never opens one.
// The prefix differs from SecretName's, so OwnKeys never counts it.
func metaName(provider string) string { return "byok-meta:" + provider }

func metaAAD(org, provider string) []byte { return []byte("meta/" + org + "/" + provider) }

// KeyInfo is what the API shows of a stored provider key: never the key.
type KeyInfo struct {
	Provider string
	LastFour string
	// UpdatedAt is when the key was stored; zero for a key stored before
	// voxgate kept it.
	UpdatedAt time.Time
}

// keyMeta is KeyInfo's sealed form.
type keyMeta struct {
	LastFour  string    `json:"last_four"`
	UpdatedAt time.Time `json:"updated_at"`
}

// storeKey seals and stores org's key for provider and then its KeyInfo.
// The key goes first: a failure between the two leaves a usable key whose
// facts listKeys then derives from the key itself.
func storeKey(ctx context.Context, st Secrets, s *Sealer, org, provider, value string, now time.Time) error {
	if err := s.guard(ctx, st); err != nil {
		return err
	}
	ct, err := s.Seal([]byte(value), aad(org, provider))
	if err != nil {
		return err
	}
	if err := st.PutSecret(ctx, org, SecretName(provider), ct); err != nil {
		return err
	}
	meta, err := json.Marshal(keyMeta{LastFour: LastFour(value), UpdatedAt: now.UTC()})
	if err != nil {
		return err
	}
	mct, err := s.Seal(meta, metaAAD(org, provider))
	if err != nil {
		return err
	}
	return st.PutSecret(ctx, org, metaName(provider), mct)
}

// keyInfo returns what may be shown of org's stored key for provider.
func keyInfo(ctx context.Context, st Secrets, s *Sealer, org, provider string) (KeyInfo, error) {
	info := KeyInfo{Provider: provider}
	mct, err := st.GetSecret(ctx, org, metaName(provider))
	if err == nil {
		var m keyMeta
		pt, err := s.Open(mct, metaAAD(org, provider))
		if err == nil && json.Unmarshal(pt, &m) == nil {
			info.LastFour, info.UpdatedAt = m.LastFour, m.UpdatedAt
			return info, nil
		}
	} else if !isNotFound(err) {
		return info, err
	}
	// A key stored before its facts were kept (or whose facts could not
	// be written): its last four come from the key, opened here and
	// dropped at once.
	key, err := LoadBYOK(ctx, st, s, org, provider)
	if err != nil {
		return info, err
	}
	info.LastFour = LastFour(key)
	return info, nil
}

// StoreBYOK encrypts and stores org's own key for provider. The org and
// provider must exist in the policy, and the org must be allowed to
// bring its own key, by the API's rule (Policy.AllowOwnKey).
func StoreBYOK(ctx context.Context, st Secrets, s *Sealer, p *Policy, org, provider, value string) error {
	if err := p.Exists(org, provider); err != nil {
		return err
	}
	if err := p.AllowOwnKey(org, provider); err != nil {
		return err
	}
	return storeKey(ctx, st, s, org, provider, value, time.Now())
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

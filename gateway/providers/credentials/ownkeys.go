package credentials

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/store"
)

// The organization-facing side of BYOK keys (PUT and DELETE
// /v1/api-keys/{providerId}): what may be stored, storing it, removing it,
// and which providers have a key. A stored key is never read back out of
// this package except into a provider call's credentials.

// AllowOwnKey reports, as a problem, why org may not store its own key for
// provider: see Policy.AllowOwnKey.
func (r *Resolver) AllowOwnKey(org, provider string) error {
	return r.policy.AllowOwnKey(org, provider)
}

// AllowOwnKey reports, as a problem, why org may not store its own key for
// provider: 404 for a provider the gateway does not run, 403
// provider_disabled when the org may not use it, 403 byok_not_allowed when
// the org's configuration does not let it bring its own key, 409 conflict
// when the configuration holds the org's key itself (either way a key
// stored anyway would never be used). The API's PUT /v1/api-keys and
// `voxgate secrets set` (StoreBYOK) both apply it.
func (p *Policy) AllowOwnKey(org, provider string) error {
	if _, ok := p.providers[provider]; !ok {
		return problem.New(problem.NotFound, "no provider %q", provider)
	}
	op, _ := p.orgProvider(org, provider) // the file's, or the admin API's
	if !op.flags.Enabled {
		return problem.New(problem.ProviderDisabled, "provider %s is not enabled for this organization", provider)
	}
	if !op.flags.BYOK {
		if _, inFile := p.orgs[org]; !inFile {
			return problem.New(problem.BYOKNotAllowed, "this organization does not bring its own %s key (its providers.%s.byok is false; an administrator sets it with PATCH /v1/admin/orgs/%s)", provider, provider, org)
		}
		return problem.New(problem.BYOKNotAllowed, "this organization does not bring its own %s key (orgs.%s.providers.%s.byok is false in gateway.yaml)", provider, org, provider)
	}
	if op.ownKey != "" {
		// The configured key wins over a stored one (Resolver.For): a key
		// stored now would never be used.
		return problem.New(problem.Conflict, "this organization's %s key is set in gateway.yaml (orgs.%s.providers.%s.api_key), which takes precedence; remove it there to manage the key over the API", provider, org, provider)
	}
	return nil
}

// StoreOwnKey encrypts and stores org's key for provider, replacing any
// earlier one. Call AllowOwnKey first.
func (r *Resolver) StoreOwnKey(ctx context.Context, org, provider, key string, now time.Time) error {
	return storeKey(ctx, r.store, r.sealer, org, provider, key, now)
}

// DeleteOwnKey removes org's stored key for provider: 404 not_found when
// none is stored.
func (r *Resolver) DeleteOwnKey(ctx context.Context, org, provider string) error {
	err := DeleteBYOK(ctx, r.store, org, provider)
	if errors.Is(err, store.ErrNotFound) {
		return problem.New(problem.NotFound, "no %s key is stored for this organization", provider)
	}
	return err
}

// DeleteBYOK removes org's stored key for provider and what the API shows
// of it (its byok-meta record), leaving nothing behind; none stored is
// store.ErrNotFound (a facts record left by an earlier delete goes all
// the same). The API's DELETE and `voxgate secrets delete` both use it.
func DeleteBYOK(ctx context.Context, st Secrets, org, provider string) error {
	keyErr := st.DeleteSecret(ctx, org, SecretName(provider))
	if keyErr != nil && !errors.Is(keyErr, store.ErrNotFound) {
		return fmt.Errorf("delete %s key: %w", provider, keyErr)
	}
	if err := st.DeleteSecret(ctx, org, metaName(provider)); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("delete %s key: %w", provider, err)
	}
	return keyErr
}

// SetSecret stores org's own key for provider on the operator's word
// (`voxgate secrets set`, through the admin socket) under the API's rule
// (AllowOwnKey); the key is stored as given, unlike the API's PUT, which
// also tries it with a call.
func (r *Resolver) SetSecret(ctx context.Context, org, provider, value string) error {
	return StoreBYOK(ctx, r.store, r.sealer, r.policy, org, provider, value)
}

// DeleteSecret removes org's stored key for provider on the operator's
// word (`voxgate secrets delete`), with its byok-meta record
// (DeleteBYOK); none stored is store.ErrNotFound.
func (r *Resolver) DeleteSecret(ctx context.Context, org, provider string) error {
	return DeleteBYOK(ctx, r.store, org, provider)
}

// ListOwnKeys returns what may be shown of org's stored provider keys, in
// provider order, at most limit of them after the provider named by after
// (nil: from the start), and whether more follow. Keys set in the
// configuration are not listed: the API neither stores nor removes them.
func (r *Resolver) ListOwnKeys(ctx context.Context, org string, limit int, after string) ([]KeyInfo, bool, error) {
	names, err := r.store.ListSecretNames(ctx, org)
	if err != nil {
		return nil, false, fmt.Errorf("list stored keys: %w", err)
	}
	var out []KeyInfo
	for _, n := range names { // byte order, so provider order
		p, ok := strings.CutPrefix(n, SecretName(""))
		if !ok || p <= after {
			continue
		}
		if len(out) == limit {
			return out, true, nil
		}
		info, err := keyInfo(ctx, r.store, r.sealer, org, p)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted since the names were read
		}
		if err != nil {
			return nil, false, fmt.Errorf("read the %s key: %w", p, err)
		}
		out = append(out, info)
	}
	return out, false, nil
}

// OwnKeys returns the providers for which org has a key of its own, stored
// or in the configuration: the documented `byok` flag of GET
// /v1/audio/providers. One read of the secret names, never of a secret.
func (r *Resolver) OwnKeys(ctx context.Context, org string) (map[string]bool, error) {
	out := map[string]bool{}
	for id, op := range r.policy.orgs[org] {
		if op.ownKey != "" {
			out[id] = true
		}
	}
	names, err := r.store.ListSecretNames(ctx, org)
	if err != nil {
		return nil, fmt.Errorf("list stored keys: %w", err)
	}
	for _, n := range names {
		if p, ok := strings.CutPrefix(n, SecretName("")); ok {
			out[p] = true
		}
	}
	return out, nil
}

// LastFour returns the last four characters of a key, the only part of it
// the API ever shows (and only in the answer that stored it).
func LastFour(key string) string {
	r := []rune(key)
	if len(r) <= 4 {
		return string(r)
	}
	return string(r[len(r)-4:])
}

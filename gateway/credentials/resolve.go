package credentials

import (
	"context"
	"fmt"

	"github.com/voxgate/voxgate/config"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/sdk"
)

// Policy is the typed view of the configuration's credential rules, built
// once at start: which providers each organization may use and how.
type Policy struct {
	orgs      map[string]map[string]orgProvider
	providers map[string]providerKeys
}

type orgProvider struct {
	flags  Flags
	ownKey string // the org's own key given in the config, if any
}

type providerKeys struct {
	managed    bool
	managedKey string
}

// PolicyFrom builds the Policy of cfg.
func PolicyFrom(cfg *config.Config) *Policy {
	p := &Policy{orgs: map[string]map[string]orgProvider{}, providers: map[string]providerKeys{}}
	for id, pc := range cfg.Providers {
		p.providers[id] = providerKeys{managed: pc.Managed, managedKey: pc.APIKey.Value()}
	}
	for org, o := range cfg.Orgs {
		m := map[string]orgProvider{}
		for id, pc := range cfg.Providers {
			op := o.Providers[id]
			if op == nil {
				m[id] = orgProvider{flags: Flags{Managed: pc.Managed}}
				continue
			}
			managed := pc.Managed
			if op.Managed != nil {
				managed = *op.Managed && pc.Managed
			}
			m[id] = orgProvider{flags: Flags{Enabled: op.Enabled, BYOK: op.BYOK, Managed: managed}, ownKey: op.APIKey.Value()}
		}
		p.orgs[org] = m
	}
	return p
}

// Exists reports whether org and provider are both configured.
func (p *Policy) Exists(org, provider string) error {
	if p.orgs[org] == nil {
		return fmt.Errorf("organization %q is not in the config", org)
	}
	if _, ok := p.providers[provider]; !ok {
		return fmt.Errorf("provider %q is not in the config", provider)
	}
	return nil
}

// Resolver picks the credentials of a provider call for an organization.
type Resolver struct {
	policy *Policy
	store  Secrets
	sealer *Sealer
}

// NewResolver returns a Resolver over the credential policy, the stored
// BYOK keys and the sealer that decrypts them.
func NewResolver(p *Policy, st Secrets, s *Sealer) *Resolver {
	return &Resolver{policy: p, store: st, sealer: s}
}

// Flags are an org's effective flags for a provider, as the catalog shows.
type Flags struct {
	Enabled bool `json:"enabled"`
	BYOK    bool `json:"byok"`
	Managed bool `json:"managed"`
}

// Flags returns org's flags for provider.
func (r *Resolver) Flags(org, provider string) Flags {
	return r.policy.orgs[org][provider].flags
}

// For returns the credentials for org's call to provider: the org's own key
// when it brings one (config or stored with `voxgate secrets set`), else the
// gateway's managed key when the org may use it. A provider that is
// disabled for the org is 403 provider_disabled; one with no usable key is
// 403 no_api_key (formerly 422 provider_credentials_missing).
func (r *Resolver) For(ctx context.Context, org, provider string) (sdk.Credentials, error) {
	f := r.Flags(org, provider)
	if !f.Enabled {
		return sdk.Credentials{}, problem.New(problem.ProviderDisabled, "provider %s is not enabled for this organization", provider)
	}
	if f.BYOK {
		if k := r.policy.orgs[org][provider].ownKey; k != "" {
			return sdk.Credentials{APIKey: k, BYOK: true}, nil
		}
		k, err := LoadBYOK(ctx, r.store, r.sealer, org, provider)
		if err != nil {
			return sdk.Credentials{}, err
		}
		if k != "" {
			return sdk.Credentials{APIKey: k, BYOK: true}, nil
		}
	}
	if f.Managed {
		return sdk.Credentials{APIKey: r.policy.providers[provider].managedKey}, nil
	}
	if !f.BYOK && r.policy.providers[provider].managedKey == "" {
		// A keyless provider (a local engine) that is neither managed nor
		// BYOK still needs no credentials.
		return sdk.Credentials{}, nil
	}
	return sdk.Credentials{}, problem.New(problem.NoAPIKey,
		"no usable %s key: this organization brings its own key (byok) but none is stored; store one with PUT /v1/api-keys/%s or `voxgate secrets set --org %s --provider %s`", provider, provider, org, provider)
}

package credentials

import (
	"context"

	"github.com/voxgate/voxgate/config"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/sdk"
)

// Resolver picks the credentials of a provider call for an organization.
type Resolver struct {
	cfg    *config.Config
	store  Secrets
	sealer *Sealer
}

// NewResolver returns a Resolver over the config, the stored BYOK keys and
// the sealer that decrypts them.
func NewResolver(cfg *config.Config, st Secrets, s *Sealer) *Resolver {
	return &Resolver{cfg: cfg, store: st, sealer: s}
}

// Flags are an org's effective flags for a provider, as the catalog shows.
type Flags struct {
	Enabled bool `json:"enabled"`
	BYOK    bool `json:"byok"`
	Managed bool `json:"managed"`
}

// Flags returns org's flags for provider.
func (r *Resolver) Flags(org, provider string) Flags {
	o := r.cfg.Orgs[org]
	p := r.cfg.Providers[provider]
	if o == nil || p == nil {
		return Flags{}
	}
	op := o.Providers[provider]
	if op == nil {
		return Flags{Managed: p.Managed}
	}
	managed := p.Managed
	if op.Managed != nil {
		managed = *op.Managed && p.Managed
	}
	return Flags{Enabled: op.Enabled, BYOK: op.BYOK, Managed: managed}
}

// For returns the credentials for org's call to provider: the org's own key
// when it brings one (config or stored with `voxgate secrets set`), else the
// gateway's managed key when the org may use it. A provider that is
// disabled for the org is 403 provider_disabled; one with no usable key is
// 422 provider_credentials_missing.
func (r *Resolver) For(ctx context.Context, org, provider string) (sdk.Credentials, error) {
	f := r.Flags(org, provider)
	if !f.Enabled {
		return sdk.Credentials{}, problem.New(problem.ProviderDisabled, "provider %s is not enabled for this organization", provider)
	}
	if f.BYOK {
		if k := r.cfg.Orgs[org].Providers[provider].APIKey.Value(); k != "" {
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
		return sdk.Credentials{APIKey: r.cfg.Providers[provider].APIKey.Value()}, nil
	}
	if !f.BYOK && r.cfg.Providers[provider].APIKey == "" {
		// A keyless provider (a local engine) that is neither managed nor
		// BYOK still needs no credentials.
		return sdk.Credentials{}, nil
	}
	return sdk.Credentials{}, problem.New(problem.NoCredentials,
		"no usable %s key: this organization brings its own key (byok) but none is stored; run `voxgate secrets set --org %s --provider %s`", provider, org, provider)
}

package credentials

import (
	"context"
	"fmt"
	"sync"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/sdk"
)

// Policy is the typed view of the configuration's credential rules, built
// once at start: which providers each organization may use and how.
type Policy struct {
	orgs      map[string]map[string]orgProvider
	providers map[string]providerKeys
	// more looks up organizations that are not in the configuration
	// (made through the admin API); nil when there are none.
	more OrgLookup
}

// OrgLookup returns an organization's access to a provider when the
// organization exists outside the configuration; known is false when it
// does not. It is called on the request path: it must not allocate.
type OrgLookup func(org, provider string) (access OrgAccess, known bool)

// WithOrgs makes the policy consult more for organizations the
// configuration does not declare (those made through the admin API). The
// configuration's declarations win. Call it before the policy is used.
func (p *Policy) WithOrgs(more OrgLookup) { p.more = more }

// orgProvider returns org's settings for provider, from the
// configuration or, for an organization it does not declare, the lookup.
func (p *Policy) orgProvider(org, provider string) (orgProvider, bool) {
	if m, ok := p.orgs[org]; ok {
		return m[provider], true
	}
	if p.more == nil {
		return orgProvider{}, false
	}
	a, ok := p.more(org, provider)
	if !ok {
		return orgProvider{}, false
	}
	pc, known := p.providers[provider]
	if !known {
		return orgProvider{}, true
	}
	managed := pc.managed
	if a.Managed != nil {
		managed = *a.Managed && pc.managed
	}
	return orgProvider{flags: Flags{Enabled: a.Enabled, BYOK: a.BYOK, Managed: managed}}, true
}

type orgProvider struct {
	flags  Flags
	ownKey string // the org's own key given in the config, if any
}

type providerKeys struct {
	managed    bool
	managedKey string
}

// Provider is how the deployment offers one provider's managed
// credential.
type Provider struct {
	// Managed says organizations may use the gateway's own key without
	// bringing theirs.
	Managed bool
	// ManagedKey is the gateway's own key ("" for a provider that needs
	// none, such as a local engine).
	ManagedKey string
}

// OrgAccess is one organization's configured access to one provider.
type OrgAccess struct {
	Enabled bool
	// BYOK says the organization brings its own key: OwnKey, or one
	// stored with the API or `voxgate secrets set`.
	BYOK bool
	// Managed, when set, narrows the provider's Managed for this
	// organization: it can turn the managed key off, never on.
	Managed *bool
	// OwnKey is the organization's own key given in the configuration.
	OwnKey string
}

// NewPolicy builds the Policy of the configured providers and
// organizations. orgs maps every organization to its access by provider;
// a provider an organization does not list is not enabled for it, and
// its managed flag is the provider's.
func NewPolicy(providers map[string]Provider, orgs map[string]map[string]OrgAccess) *Policy {
	p := &Policy{orgs: map[string]map[string]orgProvider{}, providers: map[string]providerKeys{}}
	for id, pc := range providers {
		p.providers[id] = providerKeys{managed: pc.Managed, managedKey: pc.ManagedKey}
	}
	for org, access := range orgs {
		m := map[string]orgProvider{}
		for id, pc := range providers {
			op, ok := access[id]
			if !ok {
				m[id] = orgProvider{flags: Flags{Managed: pc.Managed}}
				continue
			}
			managed := pc.Managed
			if op.Managed != nil {
				managed = *op.Managed && pc.Managed
			}
			m[id] = orgProvider{flags: Flags{Enabled: op.Enabled, BYOK: op.BYOK, Managed: managed}, ownKey: op.OwnKey}
		}
		p.orgs[org] = m
	}
	return p
}

// Exists reports whether org and provider are both configured.
func (p *Policy) Exists(org, provider string) error {
	if _, ok := p.orgProvider(org, provider); !ok {
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
	// names are SecretName of each configured provider, made once: the
	// request path looks keys up without building strings.
	names map[string]string

	// opened keeps, per organization and provider, the key last opened
	// and the sealed bytes it was opened from. The gateway's store keeps
	// sealed keys in memory and hands back the same bytes until the key
	// changes (gateway/store/readcache), so a request that finds them
	// reuses the key instead of decrypting (and allocating) again. Bounded
	// by the configured organizations and providers; a deleted key's
	// entry goes with it.
	mu     sync.RWMutex
	opened map[[2]string]openedKey
}

type openedKey struct {
	sealed []byte
	key    string
}

// NewResolver returns a Resolver over the credential policy, the stored
// BYOK keys and the sealer that decrypts them.
func NewResolver(p *Policy, st Secrets, s *Sealer) *Resolver {
	r := &Resolver{policy: p, store: st, sealer: s, names: map[string]string{}, opened: map[[2]string]openedKey{}}
	for id := range p.providers {
		r.names[id] = SecretName(id)
	}
	return r
}

// storedKey returns org's stored key for provider, "" when none is
// stored. Hot path for organizations that bring their own key: with the
// sealed key in memory, a map read and a comparison of two pointers.
func (r *Resolver) storedKey(ctx context.Context, org, provider string) (string, error) {
	name, ok := r.names[provider]
	if !ok {
		name = SecretName(provider)
	}
	ct, err := r.store.GetSecret(ctx, org, name)
	k := [2]string{org, provider}
	if isNotFound(err) {
		r.mu.RLock()
		_, had := r.opened[k]
		r.mu.RUnlock()
		if had {
			r.mu.Lock()
			delete(r.opened, k)
			r.mu.Unlock()
		}
		return "", nil
	}
	if err != nil {
		return "", err
	}
	r.mu.RLock()
	o, ok := r.opened[k]
	r.mu.RUnlock()
	if ok && len(ct) > 0 && len(o.sealed) == len(ct) && &o.sealed[0] == &ct[0] {
		return o.key, nil
	}
	pt, err := r.sealer.Open(ct, aad(org, provider))
	if err != nil {
		return "", fmt.Errorf("byok key of %s/%s: %w", org, provider, err)
	}
	key := string(pt)
	clear(pt)
	r.mu.Lock()
	// The entry holds the sealed bytes it matched, so their address is
	// not reused for other bytes while it stands.
	r.opened[k] = openedKey{sealed: ct, key: key}
	r.mu.Unlock()
	return key, nil
}

// Flags are an org's effective flags for a provider, as the catalog shows
// them (the edge gives them their JSON form).
type Flags struct {
	Enabled bool
	BYOK    bool
	Managed bool
}

// Flags returns org's flags for provider.
func (r *Resolver) Flags(org, provider string) Flags {
	op, _ := r.policy.orgProvider(org, provider)
	return op.flags
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
		if op, _ := r.policy.orgProvider(org, provider); op.ownKey != "" {
			k := op.ownKey
			return sdk.Credentials{APIKey: k, BYOK: true}, nil
		}
		k, err := r.storedKey(ctx, org, provider)
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
	if f.BYOK {
		return sdk.Credentials{}, problem.New(problem.NoAPIKey,
			"no usable %s key: this organization brings its own key (byok) but none is stored; store one with PUT /v1/api-keys/%s or `voxgate secrets set --org %s --provider %s`", provider, provider, org, provider)
	}
	return sdk.Credentials{}, problem.New(problem.NoAPIKey,
		"no usable %s key: this organization does not bring its own key (orgs.%s.providers.%s.byok is false) and may not use the gateway's managed key (providers.%s.managed, or orgs.%s.providers.%s.managed, is false in gateway.yaml)", provider, org, provider, provider, org, provider)
}

// Package manage is the admin API's service: organizations and API keys
// made, changed and revoked over HTTP by admin keys. It writes the store
// and applies each change to this instance's memory at once (the
// organization directory, the key table); other instances sharing the
// store apply it when the store announces it (store.Watcher), within a
// second.
//
// Organizations declared in gateway.yaml are listed but never changed
// here: the file stays their source, and a request to change one is
// refused naming the file.
package manage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/voxgate/voxgate/config"
	"github.com/voxgate/voxgate/gateway/admission/auth"
	"github.com/voxgate/voxgate/gateway/admission/orgs"
	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/store"
)

// Store is the storage the service writes.
type Store interface {
	store.OrgStore
	ListKeys(ctx context.Context, orgID string) ([]store.APIKey, error)
}

// Service serves the admin API.
type Service struct {
	st   Store
	dir  *orgs.Directory
	auth *auth.Authenticator
	// providers reports whether a provider id is configured.
	providers func(string) bool
}

// New returns the service. providers reports whether a provider id is in
// the configuration (nil: any).
func New(st Store, dir *orgs.Directory, a *auth.Authenticator, providers func(string) bool) *Service {
	return &Service{st: st, dir: dir, auth: a, providers: providers}
}

// Directory is the organizations the service writes into.
func (s *Service) Directory() *orgs.Directory { return s.dir }

// ValidOrgID reports whether id may name an organization: 1 to 64
// lower-case letters, digits, - or _ (as in gateway.yaml).
func ValidOrgID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// MaxNameLen bounds the names of organizations and keys.
const MaxNameLen = 200

// OrgSettings are the fields of an organization the API sets; nil
// pointers are left as they are (on create: the defaults).
type OrgSettings struct {
	Name          *string
	Disabled      *bool
	Budget        *Budget
	RatePerMinute *int
	Providers     map[string]store.OrgProvider
	// SetProviders says Providers was given (an empty map then clears).
	SetProviders bool
	// Loudness is the default loudness target; SetLoudness says it was
	// given (nil then clears it).
	Loudness    *audio.LoudnessParams
	SetLoudness bool
	// FailoverWindowMs is the realtime failover window in milliseconds;
	// SetFailoverWindow says it was given (nil then clears it: the
	// gateway's default).
	FailoverWindowMs  *int
	SetFailoverWindow bool
	// Provenance changes the provenance settings it gives; nil leaves
	// them (on create: marked, consent required, records signed).
	Provenance *Provenance
}

// Provenance is the provenance settings a request gives; nil fields are
// left as they are.
type Provenance struct {
	// Mark turns the in-file mark on or off.
	Mark *bool
	// Consent is "required" or "optional" (for cloning a voice).
	Consent *string
	// Records turns the signed record on or off.
	Records *bool
}

// Consent values of Provenance.
const (
	ConsentRequired = "required"
	ConsentOptional = "optional"
)

// Budget is a budget per Period ("day" or "month"): Credits, Cost (in
// nano-units of the gateway's currency), or both; 0 is none.
type Budget struct {
	Credits int64
	Cost    int64
	Period  string
}

// check validates the settings, naming each bad field.
func (s *Service) check(o OrgSettings) error {
	var fe []problem.FieldError
	if o.Name != nil && (len(*o.Name) > MaxNameLen) {
		fe = append(fe, problem.Field(fmt.Sprintf("at most %d bytes", MaxNameLen), "name"))
	}
	if o.Budget != nil {
		fe = append(fe, checkBudget(*o.Budget, "budget")...)
	}
	if o.RatePerMinute != nil && (*o.RatePerMinute < 0 || *o.RatePerMinute > 1_000_000) {
		fe = append(fe, problem.Field("0 (no limit) to 1000000 requests a minute", "rate_limit", "per_minute"))
	}
	if o.Loudness != nil {
		for _, e := range o.Loudness.Validate("loudness") {
			fe = append(fe, problem.FieldError{Path: e.Path, Message: e.Message})
		}
	}
	if w := o.FailoverWindowMs; w != nil && (*w < 0 || *w > config.MaxFailoverWindowMs) {
		fe = append(fe, problem.Field(fmt.Sprintf("0 to %d milliseconds", config.MaxFailoverWindowMs), "failover_window_ms"))
	}
	if p := o.Provenance; p != nil && p.Consent != nil && *p.Consent != ConsentRequired && *p.Consent != ConsentOptional {
		fe = append(fe, problem.Field(fmt.Sprintf("%q or %q", ConsentRequired, ConsentOptional), "provenance", "consent"))
	}
	for id := range o.Providers {
		if s.providers != nil && !s.providers(id) {
			fe = append(fe, problem.Field("not a provider of this gateway", "providers", id))
		}
	}
	if len(fe) > 0 {
		slices.SortFunc(fe, func(a, b problem.FieldError) int { return slices.Compare(a.Path, b.Path) })
		return problem.Validation(fe...)
	}
	return nil
}

func checkBudget(b Budget, field string) []problem.FieldError {
	switch {
	case b.Credits < 0:
		return []problem.FieldError{problem.Field("0 (none) or more credits", field, "credits")}
	case b.Cost < 0:
		return []problem.FieldError{problem.Field("0 (none) or more, in the gateway's currency", field, "cost")}
	case (b.Credits > 0 || b.Cost > 0) && !slices.Contains(auth.BudgetPeriods, b.Period):
		return []problem.FieldError{problem.Field("day or month", field, "period")}
	}
	return nil
}

// apply writes the settings into o.
func (o OrgSettings) apply(r *store.Org) {
	if o.Name != nil {
		r.Name = *o.Name
	}
	if o.Disabled != nil {
		r.Disabled = *o.Disabled
	}
	if o.Budget != nil {
		r.Budget, r.BudgetCost, r.BudgetPeriod = o.Budget.Credits, o.Budget.Cost, o.Budget.Period
		if r.Budget == 0 && r.BudgetCost == 0 {
			r.BudgetPeriod = ""
		}
	}
	if o.RatePerMinute != nil {
		r.RatePerMinute = *o.RatePerMinute
	}
	if o.SetLoudness {
		r.Loudness = nil
		if o.Loudness != nil {
			t := o.Loudness.Target()
			r.Loudness = &store.OrgLoudness{Integrated: t.Integrated, TruePeak: t.TruePeak}
		}
	}
	if o.SetFailoverWindow {
		r.FailoverWindowMs = nil
		if o.FailoverWindowMs != nil {
			w := *o.FailoverWindowMs
			r.FailoverWindowMs = &w
		}
	}
	if p := o.Provenance; p != nil {
		if p.Mark != nil {
			r.Provenance.Unmarked = !*p.Mark
		}
		if p.Consent != nil {
			r.Provenance.ConsentOptional = *p.Consent == ConsentOptional
		}
		if p.Records != nil {
			r.Provenance.NoRecords = !*p.Records
		}
	}
	if o.SetProviders {
		r.Providers = map[string]store.OrgProvider{}
		for id, p := range o.Providers {
			r.Providers[id] = p
		}
	}
}

// fileOwned is the answer to a change of an organization of gateway.yaml.
func fileOwned(id string) error {
	return problem.New(problem.Conflict, "organization %q is declared in gateway.yaml and managed there (managedBy: file); change it in the file and reload", id)
}

// CreateOrg makes organization id. A taken id, the file's included, is
// 409 conflict.
func (s *Service) CreateOrg(ctx context.Context, id string, set OrgSettings) (*orgs.Org, error) {
	var fe []problem.FieldError
	if !ValidOrgID(id) {
		fe = append(fe, problem.Field("1 to 64 lower-case letters, digits, - or _", "id"))
	}
	if set.Name == nil || *set.Name == "" {
		fe = append(fe, problem.Field("required", "name"))
	}
	if len(fe) > 0 {
		return nil, problem.Validation(fe...)
	}
	if err := s.check(set); err != nil {
		return nil, err
	}
	if s.dir.InFile(id) {
		return nil, problem.New(problem.Conflict, "organization %q already exists: gateway.yaml declares it", id)
	}
	r := &store.Org{ID: id, Providers: map[string]store.OrgProvider{}}
	set.apply(r)
	if err := s.st.CreateOrg(ctx, r); err != nil {
		if errors.Is(err, store.ErrExists) {
			return nil, problem.New(problem.Conflict, "organization %q already exists", id)
		}
		return nil, err
	}
	s.dir.Put(r)
	o, _ := s.dir.Get(id)
	return o, nil
}

// GetOrg returns organization id, the file's included, or 404.
func (s *Service) GetOrg(id string) (*orgs.Org, error) {
	o, ok := s.dir.Get(id)
	if !ok {
		return nil, problem.New(problem.NotFound, "no organization %q", id)
	}
	return o, nil
}

// ListOrgs returns every organization by id, the file's included.
func (s *Service) ListOrgs() []*orgs.Org { return s.dir.List() }

// UpdateOrg changes the given settings of an organization made through
// the API; one of gateway.yaml is 409, an unknown one 404.
func (s *Service) UpdateOrg(ctx context.Context, id string, set OrgSettings) (*orgs.Org, error) {
	if set.Name != nil && *set.Name == "" {
		return nil, problem.Validation(problem.Field("must not be empty", "name"))
	}
	if err := s.check(set); err != nil {
		return nil, err
	}
	if s.dir.InFile(id) {
		return nil, fileOwned(id)
	}
	// Read from the store, not memory: another instance may have changed
	// it a moment ago, and a partial update merges over the latest.
	r, err := s.st.GetOrg(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, problem.New(problem.NotFound, "no organization %q", id)
	}
	if err != nil {
		return nil, err
	}
	set.apply(r)
	r.UpdatedAt = time.Time{}
	if err := s.st.UpdateOrg(ctx, r); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, problem.New(problem.NotFound, "no organization %q", id)
		}
		return nil, err
	}
	s.dir.Put(r)
	o, _ := s.dir.Get(id)
	return o, nil
}

// KeySettings are the fields of a key the API sets; nil pointers are left
// as they are.
type KeySettings struct {
	Name          *string
	Scope         *Scope
	Budget        *Budget
	RatePerMinute *int
	// ExpiresAt: set (SetExpiry) to a time, or to zero for never.
	ExpiresAt time.Time
	SetExpiry bool
}

// Scope is the providers and models a key may use; empty lists allow any.
type Scope struct {
	Providers []string
	Models    []string
}

func (k KeySettings) check(now time.Time) error {
	var fe []problem.FieldError
	if k.Name != nil && len(*k.Name) > MaxNameLen {
		fe = append(fe, problem.Field(fmt.Sprintf("at most %d bytes", MaxNameLen), "name"))
	}
	if k.Budget != nil {
		fe = append(fe, checkBudget(*k.Budget, "budget")...)
	}
	if k.RatePerMinute != nil && (*k.RatePerMinute < 0 || *k.RatePerMinute > 1_000_000) {
		fe = append(fe, problem.Field("0 (no limit) to 1000000 requests a minute", "rate_limit", "per_minute"))
	}
	if k.SetExpiry && !k.ExpiresAt.IsZero() && !k.ExpiresAt.After(now) {
		fe = append(fe, problem.Field("must be in the future", "expires_at"))
	}
	if k.Scope != nil {
		for i, m := range k.Scope.Models {
			if err := auth.ValidateScope(store.KeyScope{Models: []string{m}}); err != nil {
				fe = append(fe, problem.Field("not provider/model", "scope", "models", fmt.Sprint(i)))
			}
		}
	}
	if len(fe) > 0 {
		return problem.Validation(fe...)
	}
	return nil
}

func (k KeySettings) apply(key *store.APIKey) {
	if k.Name != nil {
		key.Name = *k.Name
	}
	if k.Scope != nil {
		key.Scope.Providers, key.Scope.Models = k.Scope.Providers, k.Scope.Models
	}
	if k.Budget != nil {
		key.Scope.Budget, key.Scope.BudgetCost, key.Scope.BudgetPeriod = k.Budget.Credits, k.Budget.Cost, k.Budget.Period
		if key.Scope.Budget == 0 && key.Scope.BudgetCost == 0 {
			key.Scope.BudgetPeriod = ""
		}
	}
	if k.RatePerMinute != nil {
		key.Scope.RatePerMinute = *k.RatePerMinute
	}
	if k.SetExpiry {
		key.Scope.ExpiresAt = k.ExpiresAt.UTC()
	}
}

// CreateKey makes a key of org and returns it with its plaintext, shown
// once. The organization must exist (422 otherwise).
func (s *Service) CreateKey(ctx context.Context, org string, set KeySettings) (string, *store.APIKey, error) {
	if org == "" {
		return "", nil, problem.Validation(problem.Field("required", "org"))
	}
	if err := set.check(time.Now()); err != nil {
		return "", nil, err
	}
	if _, ok := s.dir.Get(org); !ok {
		return "", nil, problem.Validation(problem.Field(fmt.Sprintf("no organization %q", org), "org"))
	}
	var k store.APIKey
	set.apply(&k)
	return s.auth.CreateWith(ctx, org, k.Name, k.Scope)
}

// ListKeys returns org's keys (every organization's for ""), oldest
// first, revoked ones included. Admin keys are not listed.
func (s *Service) ListKeys(ctx context.Context, org string) ([]store.APIKey, error) {
	keys, err := s.st.ListKeys(ctx, org)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(keys, func(k store.APIKey) bool { return k.Admin }), nil
}

// GetKey returns key id (not an admin key), or 404.
func (s *Service) GetKey(ctx context.Context, id string) (*store.APIKey, error) {
	keys, err := s.st.ListKeys(ctx, "")
	if err != nil {
		return nil, err
	}
	for i := range keys {
		if keys[i].ID == id && !keys[i].Admin {
			return &keys[i], nil
		}
	}
	return nil, problem.New(problem.NotFound, "no API key %q", id)
}

// UpdateKey changes the given settings of key id.
func (s *Service) UpdateKey(ctx context.Context, id string, set KeySettings) (*store.APIKey, error) {
	if err := set.check(time.Now()); err != nil {
		return nil, err
	}
	k, err := s.GetKey(ctx, id)
	if err != nil {
		return nil, err
	}
	set.apply(k)
	out, err := s.auth.Update(ctx, k)
	if errors.Is(err, store.ErrNotFound) {
		return nil, problem.New(problem.NotFound, "no API key %q", id)
	}
	return out, err
}

// RevokeKey revokes key id at once, everywhere within a second.
func (s *Service) RevokeKey(ctx context.Context, id string) (*store.APIKey, error) {
	if _, err := s.GetKey(ctx, id); err != nil {
		return nil, err
	}
	return s.auth.Revoke(ctx, id)
}

package edge

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/admission/manage"
	"github.com/voxgate/voxgate/gateway/admission/orgs"
	"github.com/voxgate/voxgate/gateway/pricing"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/store"
)

// The admin API (/v1/admin/): organizations and API keys, for admin keys
// only (kindAllowed). Handlers decode, call the manage service, encode.

// registerAdmin adds the admin API's routes.
func (rt *routes) registerAdmin() {
	s := rt.s
	rt.GET("/v1/admin/orgs", "admin.orgs.list", s.adminListOrgs)
	rt.POST("/v1/admin/orgs", "admin.orgs.create", s.adminCreateOrg)
	rt.GET("/v1/admin/orgs/{id}", "admin.orgs.get", s.adminGetOrg)
	rt.PATCH("/v1/admin/orgs/{id}", "admin.orgs.update", s.adminUpdateOrg)
	rt.DELETE("/v1/admin/orgs/{id}", "admin.orgs.disable", s.adminDisableOrg)
	rt.GET("/v1/admin/orgs/{id}/usage", "admin.orgs.usage", s.adminOrgUsage)
	rt.GET("/v1/admin/keys", "admin.keys.list", s.adminListKeys)
	rt.POST("/v1/admin/keys", "admin.keys.create", s.adminCreateKey)
	rt.GET("/v1/admin/keys/{id}", "admin.keys.get", s.adminGetKey)
	rt.PATCH("/v1/admin/keys/{id}", "admin.keys.update", s.adminUpdateKey)
	rt.DELETE("/v1/admin/keys/{id}", "admin.keys.revoke", s.adminRevokeKey)
}

// optional is a JSON field that tells absent (Set false) from null (Set,
// Null) from a value.
type optional[T any] struct {
	Set, Null bool
	V         T
}

// UnmarshalJSON implements json.Unmarshaler; it runs only for a field
// that is present.
func (o *optional[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Null = true
		return nil
	}
	// As strict as the body's own decoder: an unknown member inside a
	// field's object is refused, not dropped.
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(&o.V)
}

// budgetJSON is a budget on the wire: credits, cost (a decimal amount of
// the gateway's currency, 12.5 for 12.50 USD), or both.
type budgetJSON struct {
	Credits int64        `json:"credits"`
	Cost    *json.Number `json:"cost,omitempty"`
	Period  string       `json:"period"`
}

// domain is b for package manage: cost in nano-units (an unreadable cost
// becomes -1, which manage refuses with the field's name).
func (b budgetJSON) domain() *manage.Budget {
	out := &manage.Budget{Credits: b.Credits, Period: b.Period}
	if b.Cost != nil {
		f, err := b.Cost.Float64()
		switch {
		case err != nil || f < 0 || f > 1e9:
			out.Cost = -1
		default:
			out.Cost = pricing.FromFloat(f)
		}
	}
	return out
}

// budgetOut is a stored budget on the wire; nil when it has none.
func budgetOut(credits, cost int64, period string) *budgetJSON {
	if credits <= 0 && cost <= 0 {
		return nil
	}
	out := &budgetJSON{Credits: credits, Period: period}
	if cost > 0 {
		c := money(cost)
		out.Cost = &c
	}
	return out
}

// rateLimitJSON is a rate limit on the wire.
type rateLimitJSON struct {
	PerMinute int `json:"per_minute"`
}

type orgProviderJSON struct {
	Enabled bool  `json:"enabled"`
	BYOK    bool  `json:"byok"`
	Managed *bool `json:"managed,omitempty"`
}

// orgRequestJSON is the body of POST and PATCH /v1/admin/orgs.
type orgRequestJSON struct {
	ID        string                               `json:"id"`
	Name      optional[string]                     `json:"name"`
	Disabled  optional[bool]                       `json:"disabled"`
	Budget    optional[budgetJSON]                 `json:"budget"`
	RateLimit optional[rateLimitJSON]              `json:"rate_limit"`
	Providers optional[map[string]orgProviderJSON] `json:"providers"`
	Loudness  optional[loudnessJSON]               `json:"loudness"`
	// FailoverWindowMs is the realtime failover window (null: the
	// gateway's default).
	FailoverWindowMs optional[int] `json:"failover_window_ms"`
	// Provenance is a plain pointer, not optional: its members' type
	// errors then name their whole path (provenance.mark).
	Provenance *provenanceRequestJSON `json:"provenance"`
}

// provenanceRequestJSON is an organization's provenance settings as a
// request gives them; a member left out is left as it is.
type provenanceRequestJSON struct {
	Mark    *bool   `json:"mark"`
	Consent *string `json:"consent"`
	Records *bool   `json:"records"`
}

// provenanceJSON is an organization's provenance settings on the wire.
type provenanceJSON struct {
	Mark    bool   `json:"mark"`
	Consent string `json:"consent"`
	Records bool   `json:"records"`
}

func provenanceOut(p store.OrgProvenance) *provenanceJSON {
	out := &provenanceJSON{Mark: !p.Unmarked, Consent: manage.ConsentRequired, Records: !p.NoRecords}
	if p.ConsentOptional {
		out.Consent = manage.ConsentOptional
	}
	return out
}

func (r *orgRequestJSON) settings() manage.OrgSettings {
	var set manage.OrgSettings
	if r.Name.Set && !r.Name.Null {
		set.Name = &r.Name.V
	}
	if r.Disabled.Set && !r.Disabled.Null {
		set.Disabled = &r.Disabled.V
	}
	if r.Budget.Set {
		set.Budget = r.Budget.V.domain()
	}
	if r.RateLimit.Set {
		set.RatePerMinute = &r.RateLimit.V.PerMinute
	}
	if r.FailoverWindowMs.Set {
		set.SetFailoverWindow = true
		if !r.FailoverWindowMs.Null {
			w := r.FailoverWindowMs.V
			set.FailoverWindowMs = &w
		}
	}
	if r.Loudness.Set {
		set.SetLoudness = true
		if !r.Loudness.Null {
			set.Loudness = r.Loudness.V.domain()
		}
	}
	if p := r.Provenance; p != nil {
		set.Provenance = &manage.Provenance{Mark: p.Mark, Consent: p.Consent, Records: p.Records}
	}
	if r.Providers.Set {
		set.SetProviders = true
		set.Providers = make(map[string]store.OrgProvider, len(r.Providers.V))
		for id, p := range r.Providers.V {
			set.Providers[id] = store.OrgProvider{Enabled: p.Enabled, BYOK: p.BYOK, Managed: p.Managed}
		}
	}
	return set
}

// orgJSON is an organization on the wire.
type orgJSON struct {
	ID        string                     `json:"id"`
	Name      string                     `json:"name"`
	ManagedBy string                     `json:"managedBy"`
	Disabled  bool                       `json:"disabled"`
	Budget    *budgetJSON                `json:"budget"`
	RateLimit *rateLimitJSON             `json:"rate_limit"`
	Providers map[string]orgProviderJSON `json:"providers,omitempty"`
	Loudness  *loudnessJSON              `json:"loudness,omitempty"`
	// FailoverWindowMs is the realtime failover window; absent: the
	// gateway's default.
	FailoverWindowMs *int `json:"failover_window_ms,omitempty"`
	// Provenance is always given: the file's organizations have theirs
	// too (orgs.<id>.provenance).
	Provenance *provenanceJSON `json:"provenance"`
	CreatedAt  *time.Time      `json:"created_at,omitempty"`
	UpdatedAt  *time.Time      `json:"updated_at,omitempty"`
}

func orgOut(o *orgs.Org) orgJSON {
	out := orgJSON{ID: o.ID, Name: o.Name, ManagedBy: o.ManagedBy, Disabled: o.Disabled, Provenance: provenanceOut(o.Provenance)}
	out.Budget = budgetOut(o.Budget.Credits, o.Budget.Cost, string(o.Budget.Period))
	if !o.Synthesis.Unlimited() {
		out.RateLimit = &rateLimitJSON{PerMinute: int(o.Synthesis.Rate*60 + 0.5)}
	}
	if w := o.FailoverWindow; w != nil {
		ms := int(w.Milliseconds())
		out.FailoverWindowMs = &ms
	}
	if l := o.Loudness; l != nil {
		out.Loudness = &loudnessJSON{Integrated: &l.Integrated, TruePeak: &l.TruePeak}
	}
	if o.Stored != nil {
		out.Providers = make(map[string]orgProviderJSON, len(o.Stored.Providers))
		for id, p := range o.Stored.Providers {
			out.Providers[id] = orgProviderJSON{Enabled: p.Enabled, BYOK: p.BYOK, Managed: p.Managed}
		}
		c, u := o.Times()
		out.CreatedAt, out.UpdatedAt = &c, &u
	}
	return out
}

func (s *Server) adminCreateOrg(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	var req orgRequestJSON
	if err := s.decodeJSON(ctx, &req); err != nil {
		return err
	}
	o, err := s.admin.CreateOrg(c.ctx, req.ID, req.settings())
	if err != nil {
		return err
	}
	ctx.Response.Header.Set(fasthttp.HeaderLocation, "/v1/admin/orgs/"+o.ID)
	return s.writeJSON(ctx, fasthttp.StatusCreated, envelope[orgJSON]{orgOut(o)})
}

func (s *Server) adminGetOrg(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	o, err := s.admin.GetOrg(userValue(ctx, "id"))
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, envelope[orgJSON]{orgOut(o)})
}

func (s *Server) adminUpdateOrg(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	var req orgRequestJSON
	if err := s.decodeJSON(ctx, &req); err != nil {
		return err
	}
	id := userValue(ctx, "id")
	if req.ID != "" && req.ID != id {
		return problem.Validation(problem.Field("an organization's id cannot change", "id"))
	}
	o, err := s.admin.UpdateOrg(c.ctx, id, req.settings())
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, envelope[orgJSON]{orgOut(o)})
}

// adminDisableOrg serves DELETE /v1/admin/orgs/{id}: organizations are
// disabled, never deleted (their logs and usage stay, and an id is never
// reused for another team).
func (s *Server) adminDisableOrg(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	off := true
	o, err := s.admin.UpdateOrg(c.ctx, userValue(ctx, "id"), manage.OrgSettings{Disabled: &off})
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, envelope[orgJSON]{orgOut(o)})
}

// adminListOrgs serves GET /v1/admin/orgs: every organization by id, the
// file's with managedBy "file", paged with signed cursors like every list.
func (s *Server) adminListOrgs(ctx *fasthttp.RequestCtx, c *exchange) error {
	q, limit, err := pageQuery(ctx)
	if err != nil {
		return err
	}
	all := s.admin.ListOrgs()
	return servePage(s, ctx, c, q, limit, "admin-orgs", func(after store.Position) ([]*orgs.Org, store.Position, bool, error) {
		return pageAfter(all, after, limit, func(o *orgs.Org) string { return o.ID })
	}, func(o **orgs.Org) orgJSON { return orgOut(*o) })
}

// pageAfter pages a list sorted by a unique key: the records after the
// one whose key is after (nil: from the start). The position is the last
// record's key; a position naming no record of the list is refused.
func pageAfter[R any](all []R, after store.Position, limit int, key func(R) string) ([]R, store.Position, bool, error) {
	start := 0
	if after != nil {
		i := slices.IndexFunc(all, func(r R) bool { return key(r) == string(after) })
		if i < 0 {
			return nil, nil, false, store.ErrInvalidPosition
		}
		start = i + 1
	}
	end := min(len(all), start+limit)
	out := all[start:end]
	var next store.Position
	if len(out) > 0 {
		next = store.Position(key(out[len(out)-1]))
	}
	return out, next, end < len(all), nil
}

// keyRequestJSON is the body of POST and PATCH /v1/admin/keys.
type keyRequestJSON struct {
	Org       string                  `json:"org"`
	Name      optional[string]        `json:"name"`
	Scope     optional[keyScopeJSON]  `json:"scope"`
	Budget    optional[budgetJSON]    `json:"budget"`
	RateLimit optional[rateLimitJSON] `json:"rate_limit"`
	ExpiresAt optional[time.Time]     `json:"expires_at"`
}

type keyScopeJSON struct {
	Providers []string `json:"providers"`
	Models    []string `json:"models"`
}

func (r *keyRequestJSON) settings() manage.KeySettings {
	var set manage.KeySettings
	if r.Name.Set && !r.Name.Null {
		set.Name = &r.Name.V
	}
	if r.Scope.Set {
		set.Scope = &manage.Scope{Providers: r.Scope.V.Providers, Models: r.Scope.V.Models}
	}
	if r.Budget.Set {
		set.Budget = r.Budget.V.domain()
	}
	if r.RateLimit.Set {
		set.RatePerMinute = &r.RateLimit.V.PerMinute
	}
	if r.ExpiresAt.Set {
		set.SetExpiry, set.ExpiresAt = true, r.ExpiresAt.V
	}
	return set
}

// adminKeyJSON is an API key on the admin API's wire (never its hash).
type adminKeyJSON struct {
	ID        string         `json:"id"`
	Key       string         `json:"key,omitempty"`
	Org       string         `json:"org"`
	Name      string         `json:"name"`
	Prefix    string         `json:"prefix"`
	Status    string         `json:"status"`
	Scope     keyScopeJSON   `json:"scope"`
	Budget    *budgetJSON    `json:"budget"`
	RateLimit *rateLimitJSON `json:"rate_limit"`
	ExpiresAt *time.Time     `json:"expires_at"`
	CreatedAt time.Time      `json:"created_at"`
	RevokedAt *time.Time     `json:"revoked_at,omitempty"`
}

func adminKeyOut(k *store.APIKey) adminKeyJSON {
	out := adminKeyJSON{ID: k.ID, Org: k.OrgID, Name: k.Name, Prefix: k.Prefix, CreatedAt: k.CreatedAt,
		Scope: keyScopeJSON{Providers: nonNil(k.Scope.Providers), Models: nonNil(k.Scope.Models)}}
	switch {
	case !k.RevokedAt.IsZero():
		out.Status = "revoked"
		r := k.RevokedAt
		out.RevokedAt = &r
	case k.Scope.Expired(time.Now()):
		out.Status = "expired"
	default:
		out.Status = "active"
	}
	out.Budget = budgetOut(k.Scope.Budget, k.Scope.BudgetCost, k.Scope.BudgetPeriod)
	if k.Scope.RatePerMinute > 0 {
		out.RateLimit = &rateLimitJSON{PerMinute: k.Scope.RatePerMinute}
	}
	if !k.Scope.ExpiresAt.IsZero() {
		e := k.Scope.ExpiresAt
		out.ExpiresAt = &e
	}
	return out
}

func (s *Server) adminCreateKey(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	var req keyRequestJSON
	if err := s.decodeJSON(ctx, &req); err != nil {
		return err
	}
	plain, k, err := s.admin.CreateKey(c.ctx, req.Org, req.settings())
	if err != nil {
		return err
	}
	out := adminKeyOut(k)
	out.Key = plain
	ctx.Response.Header.Set(fasthttp.HeaderLocation, "/v1/admin/keys/"+k.ID)
	// The key is in this answer only: no cache may keep it.
	ctx.Response.Header.Set(fasthttp.HeaderCacheControl, "no-store")
	return s.writeJSON(ctx, fasthttp.StatusCreated, envelope[adminKeyJSON]{out})
}

func (s *Server) adminGetKey(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	k, err := s.admin.GetKey(c.ctx, userValue(ctx, "id"))
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, envelope[adminKeyJSON]{adminKeyOut(k)})
}

func (s *Server) adminUpdateKey(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	var req keyRequestJSON
	if err := s.decodeJSON(ctx, &req); err != nil {
		return err
	}
	if req.Org != "" {
		return problem.Validation(problem.Field("a key's organization cannot change; make a new key", "org"))
	}
	k, err := s.admin.UpdateKey(c.ctx, userValue(ctx, "id"), req.settings())
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, envelope[adminKeyJSON]{adminKeyOut(k)})
}

// adminRevokeKey serves DELETE /v1/admin/keys/{id}: the key stops
// authenticating at once here and within a second everywhere; the answer
// is the revoked key.
func (s *Server) adminRevokeKey(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	k, err := s.admin.RevokeKey(c.ctx, userValue(ctx, "id"))
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, envelope[adminKeyJSON]{adminKeyOut(k)})
}

// adminListKeys serves GET /v1/admin/keys?org=: the keys of one
// organization, or of all, oldest first, paged with signed cursors.
func (s *Server) adminListKeys(ctx *fasthttp.RequestCtx, c *exchange) error {
	q, err := parseQuery(ctx, "limit", "cursor", "org")
	if err != nil {
		return err
	}
	limit, err := q.limit()
	if err != nil {
		return err
	}
	org := q["org"]
	keys, err := s.admin.ListKeys(c.ctx, org)
	if err != nil {
		return err
	}
	// The cursor is bound to the org filter: one made for another
	// organization's list does not resume this one.
	return servePage(s, ctx, c, q, limit, "admin-keys:"+org, func(after store.Position) ([]store.APIKey, store.Position, bool, error) {
		return pageAfter(keys, after, limit, func(k store.APIKey) string { return k.ID })
	}, adminKeyOut)
}

// userValue is a path parameter as a string.
func userValue(ctx *fasthttp.RequestCtx, name string) string {
	v, _ := ctx.UserValue(name).(string)
	return strings.TrimSpace(v)
}

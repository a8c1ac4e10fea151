package edge

import (
	"fmt"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/records"
	"github.com/voxgate/voxgate/gateway/store"
)

// GET /v1/usage: the organization's usage from the rollup the store keeps
// beside the request log (store.UsageStore), grouped as asked
// (records.Usage merges the rollup's rows into the groups).

// Usage windows: whole UTC days, at most the rollup's retention.
const (
	defaultUsageDays = 30
	maxUsageWindow   = store.UsageRetention
)

// usageGroups are the group_by values, in the order groups sort by.
var usageGroups = []string{"day", "provider", "model", "key"}

// usageQuery is a validated GET /v1/usage query.
type usageQuery struct {
	since, until time.Time
	groupBy      []string
	by           map[string]bool
}

func parseUsageQuery(q query, now time.Time) (usageQuery, error) {
	var uq usageQuery
	var fe []problem.FieldError
	day := func(name string) (time.Time, bool) {
		v, ok := q[name]
		if !ok {
			return time.Time{}, false
		}
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			t, err = time.Parse(time.RFC3339Nano, v)
			t = t.UTC()
		}
		if err != nil || !t.Equal(store.UsageDayOf(t)) {
			fe = append(fe, problem.Field("must be a UTC day: 2026-01-02, or 2026-01-02T00:00:00Z (usage is kept per day)", name))
			return time.Time{}, false
		}
		return t, true
	}
	var okS, okU bool
	uq.since, okS = day("since")
	uq.until, okU = day("until")
	if !okU {
		uq.until = store.UsageDayOf(now).Add(store.UsageDay) // today included
		if okS && uq.since.After(uq.until) {
			uq.until = uq.since.Add(store.UsageDay)
		}
	}
	if !okS {
		uq.since = uq.until.Add(-defaultUsageDays * store.UsageDay)
	}
	if len(fe) == 0 {
		switch {
		case !uq.until.After(uq.since):
			fe = append(fe, problem.Field("must be after since", "until"))
		case uq.until.Sub(uq.since) > maxUsageWindow:
			fe = append(fe, problem.Field(fmt.Sprintf("the window may span at most %d days", int(maxUsageWindow/store.UsageDay)), "until"))
		}
	}
	uq.by = map[string]bool{}
	if v, ok := q["group_by"]; ok && v != "" {
		for _, g := range strings.Split(v, ",") {
			g = strings.TrimSpace(g)
			switch {
			case !contains(usageGroups, g):
				fe = append(fe, problem.Field(fmt.Sprintf("unknown group %q (allowed: provider, model, day, key)", g), "group_by"))
			case uq.by[g]:
				fe = append(fe, problem.Field(fmt.Sprintf("%q is given more than once", g), "group_by"))
			}
			uq.by[g] = true
		}
	}
	// A model id means something only with its provider.
	if uq.by["model"] {
		uq.by["provider"] = true
	}
	for _, g := range usageGroups {
		if uq.by[g] {
			uq.groupBy = append(uq.groupBy, g)
		}
	}
	if len(fe) > 0 {
		return uq, problem.Validation(fe...)
	}
	return uq, nil
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func (s *Server) usage(ctx *fasthttp.RequestCtx, c *exchange) error {
	return s.usageOf(ctx, c, c.p.OrgID)
}

// adminOrgUsage serves GET /v1/admin/orgs/{id}/usage: an organization's
// usage as it sees it in GET /v1/usage (the dashboard's admin view shows
// each key's spend from it).
func (s *Server) adminOrgUsage(ctx *fasthttp.RequestCtx, c *exchange) error {
	o, err := s.admin.GetOrg(userValue(ctx, "id"))
	if err != nil {
		return err
	}
	return s.usageOf(ctx, c, o.ID)
}

// usageOf answers org's usage for the request's query.
func (s *Server) usageOf(ctx *fasthttp.RequestCtx, c *exchange, org string) error {
	q, err := parseQuery(ctx, "since", "until", "group_by")
	if err != nil {
		return err
	}
	uq, err := parseUsageQuery(q, time.Now())
	if err != nil {
		return err
	}
	u, err := s.records.Usage(c.ctx, org, records.UsageQuery{Since: uq.since, Until: uq.until,
		ByDay: uq.by["day"], ByProvider: uq.by["provider"], ByModel: uq.by["model"], ByKey: uq.by["key"]})
	if err != nil {
		return err
	}
	out := usageJSON{
		Since: uq.since.Format(time.DateOnly), Until: uq.until.Format(time.DateOnly),
		GroupBy: uq.groupBy, Data: make([]usageGroupJSON, 0, len(u.Groups)), Total: figures(&u.Total),
		Currency: s.opts.Currency,
	}
	if out.GroupBy == nil {
		out.GroupBy = []string{}
	}
	for i := range u.Groups {
		g := &u.Groups[i]
		gj := usageGroupJSON{Provider: g.Key.Provider, Model: g.Key.Model, KeyID: g.Key.KeyID, KeyName: g.KeyName, KeyPrefix: g.KeyPrefix,
			usageFiguresJSON: figures(&g.Counts)}
		if uq.by["day"] {
			gj.Day = g.Key.Day.Format(time.DateOnly)
		}
		out.Data = append(out.Data, gj)
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, out)
}

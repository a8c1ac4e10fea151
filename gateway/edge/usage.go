package edge

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/store"
)

// GET /v1/usage: the organization's usage from the rollup the store keeps
// beside the request log (store.UsageStore), grouped as asked. The store
// returns one row per day, provider, model and key in the window; this
// handler merges them into the requested groups, so the answer costs
// O(rollup rows in the window), never a scan of the log.

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
	q, err := parseQuery(ctx, "since", "until", "group_by")
	if err != nil {
		return err
	}
	uq, err := parseUsageQuery(q, time.Now())
	if err != nil {
		return err
	}
	rows, err := s.store.Usage(c.ctx, c.p.OrgID, uq.since, uq.until)
	if err != nil {
		return fmt.Errorf("usage: %w", err)
	}
	type group struct {
		key store.UsageKey
		c   store.UsageCounts
	}
	var total store.UsageCounts
	idx := map[store.UsageKey]int{}
	var groups []group
	for i := range rows {
		r := &rows[i]
		total.Add(&r.UsageCounts)
		var k store.UsageKey
		if uq.by["day"] {
			k.Day = r.Day
		}
		if uq.by["provider"] {
			k.Provider = r.Provider
		}
		if uq.by["model"] {
			k.Model = r.Model
		}
		if uq.by["key"] {
			k.KeyID = r.KeyID
		}
		j, ok := idx[k]
		if !ok {
			j = len(groups)
			idx[k] = j
			groups = append(groups, group{key: k})
		}
		groups[j].c.Add(&r.UsageCounts)
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].key.Less(&groups[j].key) })

	var keys map[string]store.APIKey
	if uq.by["key"] && len(groups) > 0 {
		list, err := s.store.ListKeys(c.ctx, c.p.OrgID)
		if err != nil {
			return fmt.Errorf("usage: key names: %w", err)
		}
		keys = make(map[string]store.APIKey, len(list))
		for _, k := range list {
			keys[k.ID] = k
		}
	}
	out := usageJSON{
		Since: uq.since.Format(time.DateOnly), Until: uq.until.Format(time.DateOnly),
		GroupBy: uq.groupBy, Data: make([]usageGroupJSON, 0, len(groups)), Total: figures(&total),
	}
	if out.GroupBy == nil {
		out.GroupBy = []string{}
	}
	for i := range groups {
		g := &groups[i]
		gj := usageGroupJSON{Provider: g.key.Provider, Model: g.key.Model, KeyID: g.key.KeyID, usageFiguresJSON: figures(&g.c)}
		if uq.by["day"] {
			gj.Day = g.key.Day.Format(time.DateOnly)
		}
		if k, ok := keys[g.key.KeyID]; ok {
			gj.KeyName, gj.KeyPrefix = k.Name, k.Prefix
		}
		out.Data = append(out.Data, gj)
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, out)
}

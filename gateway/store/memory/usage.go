package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
)

// usageSub is a rollup row's key within its day.
type usageSub struct {
	provider, model, keyID string
}

// addUsage adds a rolled-up row to the organization's rollup. Callers hold
// mu for writing.
func (o *org) addUsage(r *store.UsageRow) {
	day := unixNanos(r.Day)
	rows := o.usage[day]
	if rows == nil {
		rows = map[usageSub]*store.UsageCounts{}
		o.usage[day] = rows
	}
	k := usageSub{r.Provider, r.Model, r.KeyID}
	c := rows[k]
	if c == nil {
		c = &store.UsageCounts{}
		rows[k] = c
	}
	c.Add(&r.UsageCounts)
}

// Usage implements store.UsageStore: the rows of the window's days, by
// day, provider, model and key id. It looks at the organization's days
// (at most store.UsageRetention of them once purged) and reads only the
// rows of those in the window.
func (s *Store) Usage(ctx context.Context, orgID string, since, until time.Time) ([]store.UsageRow, error) {
	if err := s.enter(ctx, mUsage); err != nil {
		return nil, err
	}
	if err := store.CheckUsageWindow(since, until); err != nil {
		return nil, fmt.Errorf("memory store: usage: %w", err)
	}
	lo, hi := unixNanos(since), unixNanos(until)
	var out []store.UsageRow
	s.mu.RLock()
	if o := s.org(orgID); o != nil {
		for day, rows := range o.usage {
			if day < lo || day >= hi {
				continue
			}
			for k, c := range rows {
				out = append(out, store.UsageRow{
					UsageKey:    store.UsageKey{Day: time.Unix(0, day).UTC(), Provider: k.provider, Model: k.model, KeyID: k.keyID},
					UsageCounts: *c,
				})
			}
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b store.UsageRow) int {
		switch {
		case a.UsageKey.Less(&b.UsageKey):
			return -1
		case b.UsageKey.Less(&a.UsageKey):
			return 1
		}
		return 0
	})
	return out, nil
}

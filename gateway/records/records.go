// Package records is what the gateway keeps about the requests it served,
// as an organization reads it back: the request log (GET /v1/logs) and the
// usage rolled up beside it (GET /v1/usage). The rows are written off the
// request path (gateway/store/reqlog) and never edited; this package only
// reads them, and only the organization it is given.
//
// It is apart from gateway/resources, which edits what organizations keep
// (voices, dictionaries, provider keys) and calls providers to check them:
// records need the store and nothing else.
package records

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/store"
)

// Store is the storage records are read from, declared here by its user;
// any store backend satisfies it.
type Store interface {
	ListLogs(ctx context.Context, orgID string, f store.LogFilter, limit int, after store.Position) ([]store.LogRow, store.Position, bool, error)
	GetLog(ctx context.Context, orgID, requestID string) (*store.LogRow, error)
	Usage(ctx context.Context, orgID string, since, until time.Time) ([]store.UsageRow, error)
	// ListKeys names the API keys usage is grouped by.
	ListKeys(ctx context.Context, orgID string) ([]store.APIKey, error)
}

// Service reads the records of every organization.
type Service struct {
	store Store
}

// New returns a Service reading st.
func New(st Store) *Service { return &Service{store: st} }

// Logs returns a page of org's request-log rows matching f, newest first:
// at most limit after position after, the position to go on from, and
// whether more follow.
func (s *Service) Logs(ctx context.Context, org string, f store.LogFilter, limit int, after store.Position) ([]store.LogRow, store.Position, bool, error) {
	return s.store.ListLogs(ctx, org, f, limit, after)
}

// Log returns org's request-log row of requestID. A row of another
// organization is not found, like a missing one.
func (s *Service) Log(ctx context.Context, org, requestID string) (*store.LogRow, error) {
	row, err := s.store.GetLog(ctx, org, requestID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, problem.New(problem.NotFound, "no request %s in this organization's logs", requestID)
	}
	if err != nil {
		return nil, fmt.Errorf("get log: %w", err)
	}
	return row, nil
}

// UsageQuery is a window of whole UTC days, [Since, Until), and what its
// usage is grouped by; no grouping is the window's total only.
type UsageQuery struct {
	Since, Until                      time.Time
	ByDay, ByProvider, ByModel, ByKey bool
}

// Usage is an organization's usage over a window.
type Usage struct {
	// Total sums the whole window.
	Total store.UsageCounts
	// Groups are the groups asked for, in the order of store.UsageKey.
	Groups []UsageGroup
}

// UsageGroup is the usage of one group: the fields it is grouped by are
// set in Key, the others zero.
type UsageGroup struct {
	Key    store.UsageKey
	Counts store.UsageCounts
	// KeyName and KeyPrefix name the API key of a group by key; empty
	// for a key that no longer exists.
	KeyName, KeyPrefix string
}

// Usage returns org's usage over q's window, grouped as q asks. The store
// returns one rollup row per day, provider, model and key in the window,
// which are merged into the groups: the answer costs O(rollup rows in the
// window), never a scan of the log.
func (s *Service) Usage(ctx context.Context, org string, q UsageQuery) (*Usage, error) {
	rows, err := s.store.Usage(ctx, org, q.Since, q.Until)
	if err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	out := &Usage{}
	idx := map[store.UsageKey]int{}
	for i := range rows {
		r := &rows[i]
		out.Total.Add(&r.UsageCounts)
		var k store.UsageKey
		if q.ByDay {
			k.Day = r.Day
		}
		if q.ByProvider {
			k.Provider = r.Provider
		}
		if q.ByModel {
			k.Model = r.Model
		}
		if q.ByKey {
			k.KeyID = r.KeyID
		}
		j, ok := idx[k]
		if !ok {
			j = len(out.Groups)
			idx[k] = j
			out.Groups = append(out.Groups, UsageGroup{Key: k})
		}
		out.Groups[j].Counts.Add(&r.UsageCounts)
	}
	sort.Slice(out.Groups, func(i, j int) bool { return out.Groups[i].Key.Less(&out.Groups[j].Key) })
	if q.ByKey && len(out.Groups) > 0 {
		keys, err := s.store.ListKeys(ctx, org)
		if err != nil {
			return nil, fmt.Errorf("usage: key names: %w", err)
		}
		byID := make(map[string]*store.APIKey, len(keys))
		for i := range keys {
			byID[keys[i].ID] = &keys[i]
		}
		for i := range out.Groups {
			if k := byID[out.Groups[i].Key.KeyID]; k != nil {
				out.Groups[i].KeyName, out.Groups[i].KeyPrefix = k.Name, k.Prefix
			}
		}
	}
	return out, nil
}

// Package orgs is the one list of organizations the request path reads:
// those declared in gateway.yaml (the file's, which a reload replaces
// whole with SetFile) merged with those made through the admin API (kept
// in the store, applied with Put and Reload). It is the only place the
// two lists meet: every consumer (authentication, rate limits, budgets,
// provider access, the admin API's listing) asks Get or List.
//
// The merged view is an immutable snapshot swapped atomically, so a
// lookup on the request path is one atomic load and one map read. An id
// declared in the file always wins: the admin API refuses to make one
// that the file declares, and should a reload add to the file an id the
// store already has, the file's declaration is the one that counts.
package orgs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voxgate/voxgate/gateway/admission/budget"
	"github.com/voxgate/voxgate/gateway/admission/ratelimit"
	"github.com/voxgate/voxgate/gateway/store"
)

// Where an organization is declared: its ManagedBy.
const (
	// ManagedByFile is an organization of gateway.yaml: the admin API
	// lists it and refuses to change it.
	ManagedByFile = "file"
	// ManagedByAPI is an organization made through the admin API and kept
	// in the store.
	ManagedByAPI = "api"
)

// Org is an organization as the request path needs it.
type Org struct {
	ID   string
	Name string
	// ManagedBy is ManagedByFile or ManagedByAPI.
	ManagedBy string
	// Disabled refuses the organization's keys.
	Disabled bool
	// Budget is the organization's budget in credits and in money (zero:
	// none).
	Budget budget.Limit
	// Synthesis and Reads are its two rate limits.
	Synthesis, Reads ratelimit.Limit
	// SynthKey and ReadKey name its two limits in the limiter, built once
	// so the request path builds no strings.
	SynthKey, ReadKey string
	// Stored is the store's record of an organization made through the
	// admin API (its provider access, its times); nil for the file's.
	Stored *store.Org
	// Loudness is the organization's default loudness target; nil: none.
	Loudness *Loudness
	// FailoverWindow is how much audio a realtime context may have sent
	// and still move to a fallback (docs/realtime.md); nil: the gateway's
	// default.
	FailoverWindow *time.Duration
	// Provenance is the organization's provenance settings (zero: marked,
	// consent required, records signed).
	Provenance store.OrgProvenance
}

// Loudness is an EBU R128 target: integrated LUFS, true-peak dBTP.
type Loudness struct {
	Integrated, TruePeak float64
}

// File is what gateway.yaml declares of one organization that the
// directory needs; the rest (moderation, aliases, providers) stays with
// the components that read the file.
type File struct {
	ID               string
	Budget           budget.Limit
	Synthesis, Reads ratelimit.Limit
	// Loudness is the default loudness target (orgs.<id>.loudness).
	Loudness *Loudness
	// FailoverWindow is orgs.<id>.failover_window_ms; nil: none set.
	FailoverWindow *time.Duration
	// Provenance is orgs.<id>.provenance.
	Provenance store.OrgProvenance
}

// Store is the storage the directory reads: the admin API's organizations.
type Store interface {
	ListOrgs(ctx context.Context) ([]store.Org, error)
}

// Directory holds the merged organizations.
type Directory struct {
	// mu serializes writers; readers only load snap.
	mu     sync.Mutex
	file   map[string]*Org
	stored map[string]*Org
	// changes counts Put calls (under mu), so that Reload never applies a
	// list read before one of them (as auth.Authenticator does for keys).
	changes uint64
	snap    atomic.Pointer[map[string]*Org]
}

// New returns a directory of the file's organizations.
func New(file []File) *Directory {
	d := &Directory{stored: map[string]*Org{}}
	d.SetFile(file)
	return d
}

// SetFile replaces the file's organizations (at start, and when a reload
// swaps the configuration).
func (d *Directory) SetFile(file []File) {
	m := make(map[string]*Org, len(file))
	for _, f := range file {
		m[f.ID] = &Org{ID: f.ID, Name: f.ID, ManagedBy: ManagedByFile, Budget: f.Budget, Synthesis: f.Synthesis, Reads: f.Reads, Loudness: f.Loudness, FailoverWindow: f.FailoverWindow, Provenance: f.Provenance,
			SynthKey: "org:" + f.ID + ":synthesis", ReadKey: "org:" + f.ID + ":reads"}
	}
	d.mu.Lock()
	d.file = m
	d.publish()
	d.mu.Unlock()
}

// FromStore is the Org of an organization made through the admin API:
// defaults for everything the file could say and the API does not (no
// moderation, no aliases, no read rate limit).
func FromStore(s *store.Org) *Org {
	o := &Org{ID: s.ID, Name: s.Name, ManagedBy: ManagedByAPI, Disabled: s.Disabled, Stored: store.CloneOrg(s), Provenance: s.Provenance,
		SynthKey: "org:" + s.ID + ":synthesis", ReadKey: "org:" + s.ID + ":reads"}
	if s.Budget > 0 || s.BudgetCost > 0 {
		o.Budget = budget.Limit{Credits: s.Budget, Cost: s.BudgetCost, Period: budget.Period(s.BudgetPeriod)}
	}
	o.Synthesis = PerMinute(s.RatePerMinute)
	if l := s.Loudness; l != nil {
		o.Loudness = &Loudness{Integrated: l.Integrated, TruePeak: l.TruePeak}
	}
	if w := s.FailoverWindowMs; w != nil {
		d := time.Duration(*w) * time.Millisecond
		o.FailoverWindow = &d
	}
	return o
}

// PerMinute is the limit of n requests a minute: up to n at once, then
// one every minute/n (0: unlimited).
func PerMinute(n int) ratelimit.Limit {
	if n <= 0 {
		return ratelimit.Limit{}
	}
	return ratelimit.Limit{Rate: float64(n) / 60, Burst: n}
}

// Put applies one organization written through the admin API on this
// instance (other instances hear of it from the store and Reload).
func (d *Directory) Put(s *store.Org) {
	d.mu.Lock()
	d.stored[s.ID] = FromStore(s)
	d.changes++
	d.publish()
	d.mu.Unlock()
}

// Reload replaces the stored organizations with the store's. A Put that
// lands while the list is read makes Reload read again.
func (d *Directory) Reload(ctx context.Context, st Store) error {
	for {
		d.mu.Lock()
		seen := d.changes
		d.mu.Unlock()
		list, err := st.ListOrgs(ctx)
		if err != nil {
			return fmt.Errorf("load organizations: %w", err)
		}
		m := make(map[string]*Org, len(list))
		for i := range list {
			m[list[i].ID] = FromStore(&list[i])
		}
		d.mu.Lock()
		if d.changes != seen {
			d.mu.Unlock()
			continue
		}
		d.stored = m
		d.publish()
		d.mu.Unlock()
		return nil
	}
}

// publish builds the merged snapshot; the caller holds mu.
func (d *Directory) publish() {
	m := make(map[string]*Org, len(d.file)+len(d.stored))
	for id, o := range d.stored {
		m[id] = o
	}
	for id, o := range d.file {
		m[id] = o // the file wins
	}
	d.snap.Store(&m)
}

// Get returns organization id. Hot path: one atomic load, one map read.
func (d *Directory) Get(id string) (*Org, bool) {
	o, ok := (*d.snap.Load())[id]
	return o, ok
}

// InFile reports whether gateway.yaml declares id.
func (d *Directory) InFile(id string) bool {
	o, ok := d.Get(id)
	return ok && o.ManagedBy == ManagedByFile
}

// List returns every organization, by id.
func (d *Directory) List() []*Org {
	m := *d.snap.Load()
	out := make([]*Org, 0, len(m))
	for _, o := range m {
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b *Org) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Times returns when a stored organization was made and last changed;
// zero for the file's.
func (o *Org) Times() (created, updated time.Time) {
	if o.Stored == nil {
		return time.Time{}, time.Time{}
	}
	return o.Stored.CreatedAt, o.Stored.UpdatedAt
}

package bolt

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/voxgate/voxgate/gateway/store"
)

// orgRecord is the on-disk JSON form of an organization made through the
// admin API. Like keyRecord it is part of the file format: names never
// change, new fields come with omitempty.
type orgRecord struct {
	ID            string                       `json:"id"`
	Name          string                       `json:"name"`
	Disabled      bool                         `json:"disabled,omitempty"`
	Budget        int64                        `json:"budget,omitempty"`
	BudgetPeriod  string                       `json:"budget_period,omitempty"`
	BudgetCost    int64                        `json:"budget_cost,omitempty"`
	RatePerMinute int                          `json:"rate_per_minute,omitempty"`
	Providers     map[string]orgProviderRecord `json:"providers,omitempty"`
	Loudness      *orgLoudnessRecord           `json:"loudness,omitempty"`
	FailoverMs    *int                         `json:"failover_window_ms,omitempty"`
	// The provenance settings, each false by default (store.OrgProvenance).
	Unmarked        bool      `json:"unmarked,omitempty"`
	ConsentOptional bool      `json:"consent_optional,omitempty"`
	NoRecords       bool      `json:"no_records,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
}

type orgLoudnessRecord struct {
	Integrated float64 `json:"integrated"`
	TruePeak   float64 `json:"true_peak"`
}

type orgProviderRecord struct {
	Enabled bool  `json:"enabled,omitempty"`
	BYOK    bool  `json:"byok,omitempty"`
	Managed *bool `json:"managed,omitempty"`
}

func encodeOrg(o *store.Org) ([]byte, error) {
	r := orgRecord{ID: o.ID, Name: o.Name, Disabled: o.Disabled, Budget: o.Budget, BudgetPeriod: o.BudgetPeriod, BudgetCost: o.BudgetCost,
		RatePerMinute: o.RatePerMinute, CreatedAt: o.CreatedAt.UTC(), UpdatedAt: o.UpdatedAt.UTC(), FailoverMs: o.FailoverWindowMs,
		Unmarked: o.Provenance.Unmarked, ConsentOptional: o.Provenance.ConsentOptional, NoRecords: o.Provenance.NoRecords}
	if l := o.Loudness; l != nil {
		r.Loudness = &orgLoudnessRecord{Integrated: l.Integrated, TruePeak: l.TruePeak}
	}
	if len(o.Providers) > 0 {
		r.Providers = make(map[string]orgProviderRecord, len(o.Providers))
		for id, p := range o.Providers {
			r.Providers[id] = orgProviderRecord(p)
		}
	}
	return json.Marshal(r)
}

func decodeOrg(data []byte) (*store.Org, error) {
	var r orgRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	o := &store.Org{ID: r.ID, Name: r.Name, Disabled: r.Disabled, Budget: r.Budget, BudgetPeriod: r.BudgetPeriod, BudgetCost: r.BudgetCost,
		RatePerMinute: r.RatePerMinute, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Providers: map[string]store.OrgProvider{},
		FailoverWindowMs: r.FailoverMs,
		Provenance:       store.OrgProvenance{Unmarked: r.Unmarked, ConsentOptional: r.ConsentOptional, NoRecords: r.NoRecords}}

	for id, p := range r.Providers {
		o.Providers[id] = store.OrgProvider(p)
	}
	if l := r.Loudness; l != nil {
		o.Loudness = &store.OrgLoudness{Integrated: l.Integrated, TruePeak: l.TruePeak}
	}
	return o, nil
}

// CreateOrg implements store.OrgStore.
func (s *Store) CreateOrg(ctx context.Context, o *store.Org) error {
	if o == nil {
		return fmt.Errorf("store: nil org")
	}
	if err := requireIDs("org id", o.ID); err != nil {
		return err
	}
	if err := o.CheckText(); err != nil {
		return fmt.Errorf("store: create org: %w", err)
	}
	if o.CreatedAt.IsZero() {
		o.CreatedAt = s.now().UTC()
	}
	if o.UpdatedAt.IsZero() {
		o.UpdatedAt = o.CreatedAt
	}
	data, err := encodeOrg(o)
	if err != nil {
		return fmt.Errorf("store: encode org %s: %w", o.ID, err)
	}
	err = s.update(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucketOrgRecords))
		if b.Get([]byte(o.ID)) != nil {
			return fmt.Errorf("org %s: %w", o.ID, store.ErrExists)
		}
		return b.Put([]byte(o.ID), data)
	})
	if err != nil {
		return fmt.Errorf("store: create org: %w", err)
	}
	return nil
}

// GetOrg implements store.OrgStore.
func (s *Store) GetOrg(ctx context.Context, id string) (*store.Org, error) {
	var o *store.Org
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		v := tx.Bucket([]byte(bucketOrgRecords)).Get([]byte(id))
		if v == nil || id == "" {
			return store.ErrNotFound
		}
		var err error
		o, err = decodeOrg(v)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: get org %s: %w", id, err)
	}
	return o, nil
}

// UpdateOrg implements store.OrgStore.
func (s *Store) UpdateOrg(ctx context.Context, o *store.Org) error {
	if o == nil {
		return fmt.Errorf("store: nil org")
	}
	if err := o.CheckText(); err != nil {
		return fmt.Errorf("store: update org: %w", err)
	}
	if o.UpdatedAt.IsZero() {
		o.UpdatedAt = s.now().UTC()
	}
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucketOrgRecords))
		v := b.Get([]byte(o.ID))
		if v == nil || o.ID == "" {
			return store.ErrNotFound
		}
		cur, err := decodeOrg(v)
		if err != nil {
			return fmt.Errorf("decode org: %w", err)
		}
		o.CreatedAt = cur.CreatedAt
		data, err := encodeOrg(o)
		if err != nil {
			return err
		}
		return b.Put([]byte(o.ID), data)
	})
	if err != nil {
		return fmt.Errorf("store: update org %s: %w", o.ID, err)
	}
	return nil
}

// ListOrgs implements store.OrgStore: bbolt keeps the ids sorted.
func (s *Store) ListOrgs(ctx context.Context) ([]store.Org, error) {
	out := []store.Org{}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte(bucketOrgRecords)).ForEach(func(_, v []byte) error {
			o, err := decodeOrg(v)
			if err != nil {
				return fmt.Errorf("decode org: %w", err)
			}
			out = append(out, *o)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: list orgs: %w", err)
	}
	return out, nil
}

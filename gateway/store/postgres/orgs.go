package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/voxgate/voxgate/gateway/store"
)

// Organizations made through the admin API (migrations/0009_admin_orgs.sql).
// A trigger announces every change on the change channel.

const orgColumns = "id, name, disabled, budget, budget_period, rate_per_min, providers, created_ns, updated_ns, loudness_integrated, loudness_true_peak, budget_cost, failover_window_ms, prov_unmarked, prov_consent_optional, prov_no_records"

// loudnessColumns are an organization's default loudness as the two
// nullable columns hold it (both NULL: none).
func loudnessColumns(l *store.OrgLoudness) (integrated, truePeak *float64) {
	if l == nil {
		return nil, nil
	}
	return &l.Integrated, &l.TruePeak
}

// orgProviderRecord is store.OrgProvider as stored in the providers column.
type orgProviderRecord struct {
	Enabled bool  `json:"enabled,omitempty"`
	BYOK    bool  `json:"byok,omitempty"`
	Managed *bool `json:"managed,omitempty"`
}

func encodeOrgProviders(m map[string]store.OrgProvider) ([]byte, error) {
	r := make(map[string]orgProviderRecord, len(m))
	for id, p := range m {
		r[id] = orgProviderRecord(p)
	}
	return json.Marshal(r)
}

func scanOrg(row pgx.Row) (*store.Org, error) {
	var o store.Org
	var providers []byte
	var created, updated int64
	var li, ltp *float64
	if err := row.Scan(&o.ID, &o.Name, &o.Disabled, &o.Budget, &o.BudgetPeriod, &o.RatePerMinute, &providers, &created, &updated, &li, &ltp, &o.BudgetCost, &o.FailoverWindowMs,
		&o.Provenance.Unmarked, &o.Provenance.ConsentOptional, &o.Provenance.NoRecords); err != nil {
		return nil, err
	}
	if li != nil && ltp != nil {
		o.Loudness = &store.OrgLoudness{Integrated: *li, TruePeak: *ltp}
	}
	var r map[string]orgProviderRecord
	if err := json.Unmarshal(providers, &r); err != nil {
		return nil, fmt.Errorf("org %s providers: %w", o.ID, err)
	}
	o.Providers = make(map[string]store.OrgProvider, len(r))
	for id, p := range r {
		o.Providers[id] = store.OrgProvider(p)
	}
	o.CreatedAt, o.UpdatedAt = fromNanos(created), fromNanos(updated)
	return &o, nil
}

// CreateOrg implements store.OrgStore.
func (s *Store) CreateOrg(ctx context.Context, o *store.Org) error {
	if o == nil {
		return errors.New("store: nil org")
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
	pj, err := encodeOrgProviders(o.Providers)
	if err != nil {
		return err
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	li, ltp := loudnessColumns(o.Loudness)
	_, err = s.pool.Exec(ctx, `INSERT INTO orgs (`+orgColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
		o.ID, o.Name, o.Disabled, o.Budget, o.BudgetPeriod, o.RatePerMinute, pj, nanos(o.CreatedAt), nanos(o.UpdatedAt), li, ltp, o.BudgetCost, o.FailoverWindowMs,
		o.Provenance.Unmarked, o.Provenance.ConsentOptional, o.Provenance.NoRecords)
	if err != nil {
		return fmt.Errorf("store: create org %s: %w", o.ID, classify(err))
	}
	return nil
}

// GetOrg implements store.OrgStore.
func (s *Store) GetOrg(ctx context.Context, id string) (*store.Org, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	o, err := scanOrg(s.pool.QueryRow(ctx, "SELECT "+orgColumns+" FROM orgs WHERE id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("store: get org %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get org %s: %w", id, classify(err))
	}
	return o, nil
}

// UpdateOrg implements store.OrgStore.
func (s *Store) UpdateOrg(ctx context.Context, o *store.Org) error {
	if o == nil {
		return errors.New("store: nil org")
	}
	if err := o.CheckText(); err != nil {
		return fmt.Errorf("store: update org: %w", err)
	}
	if o.UpdatedAt.IsZero() {
		o.UpdatedAt = s.now().UTC()
	}
	pj, err := encodeOrgProviders(o.Providers)
	if err != nil {
		return err
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	var created int64
	li, ltp := loudnessColumns(o.Loudness)
	err = s.pool.QueryRow(ctx, `UPDATE orgs SET name = $2, disabled = $3, budget = $4, budget_period = $5, rate_per_min = $6, providers = $7, updated_ns = $8,
		loudness_integrated = $9, loudness_true_peak = $10, budget_cost = $11, failover_window_ms = $12,
		prov_unmarked = $13, prov_consent_optional = $14, prov_no_records = $15
		WHERE id = $1 RETURNING created_ns`,
		o.ID, o.Name, o.Disabled, o.Budget, o.BudgetPeriod, o.RatePerMinute, pj, nanos(o.UpdatedAt), li, ltp, o.BudgetCost, o.FailoverWindowMs,
		o.Provenance.Unmarked, o.Provenance.ConsentOptional, o.Provenance.NoRecords).Scan(&created)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("store: update org %s: %w", o.ID, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: update org %s: %w", o.ID, classify(err))
	}
	o.CreatedAt = fromNanos(created)
	return nil
}

// ListOrgs implements store.OrgStore.
func (s *Store) ListOrgs(ctx context.Context) ([]store.Org, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, "SELECT "+orgColumns+" FROM orgs ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("store: list orgs: %w", classify(err))
	}
	defer rows.Close()
	out := []store.Org{}
	for rows.Next() {
		o, err := scanOrg(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list orgs: %w", classify(err))
		}
		out = append(out, *o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list orgs: %w", classify(err))
	}
	return out, nil
}

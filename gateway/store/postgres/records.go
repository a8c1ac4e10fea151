package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/voxgate/voxgate/gateway/store"
)

// Keys.

// CreateKey implements store.KeyStore, and announces the key to every
// instance.
func (s *Store) CreateKey(ctx context.Context, k *store.APIKey) error {
	if k == nil {
		return errors.New("store: nil api key")
	}
	if err := requireIDs("key id", k.ID, "key org id", k.OrgID); err != nil {
		return err
	}
	if len(k.Hash) == 0 {
		return errors.New("store: key hash is required")
	}
	if err := k.CheckText(); err != nil {
		return fmt.Errorf("store: create key: %w", err)
	}
	if k.CreatedAt.IsZero() {
		k.CreatedAt = s.now().UTC()
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var revoked *int64 // A key copied by voxgate migrate may come revoked.
		if !k.RevokedAt.IsZero() {
			n := nanos(k.RevokedAt)
			revoked = &n
		}
		scope, err := encodeScope(k.Scope)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO api_keys (id, org_id, name, prefix, hash, created_ns, revoked_ns, scope, admin) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			k.ID, k.OrgID, k.Name, k.Prefix, k.Hash, nanos(k.CreatedAt), revoked, scope, k.Admin); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, $2)", keyChannel, k.ID)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: create key: %w", classify(err))
	}
	return nil
}

const keyColumns = "id, org_id, name, prefix, hash, created_ns, revoked_ns, scope, admin"

// scopeRecord is store.KeyScope as stored in the scope column.
type scopeRecord struct {
	ExpiresNS    int64    `json:"expires_ns,omitempty"`
	Providers    []string `json:"providers,omitempty"`
	Models       []string `json:"models,omitempty"`
	Budget       int64    `json:"budget,omitempty"`
	BudgetPeriod string   `json:"budget_period,omitempty"`
	PerMinute    int      `json:"per_minute,omitempty"`
	BudgetCost   int64    `json:"budget_cost,omitempty"`
}

func encodeScope(sc store.KeyScope) ([]byte, error) {
	r := scopeRecord{Providers: sc.Providers, Models: sc.Models, Budget: sc.Budget, BudgetPeriod: sc.BudgetPeriod, PerMinute: sc.RatePerMinute, BudgetCost: sc.BudgetCost}
	if !sc.ExpiresAt.IsZero() {
		r.ExpiresNS = nanos(sc.ExpiresAt)
	}
	return json.Marshal(r)
}

func decodeScope(b []byte) (store.KeyScope, error) {
	var r scopeRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return store.KeyScope{}, err
	}
	sc := store.KeyScope{Providers: r.Providers, Models: r.Models, Budget: r.Budget, BudgetPeriod: r.BudgetPeriod, RatePerMinute: r.PerMinute, BudgetCost: r.BudgetCost}
	if r.ExpiresNS != 0 {
		sc.ExpiresAt = fromNanos(r.ExpiresNS)
	}
	return sc, nil
}

func scanKey(row pgx.Row) (*store.APIKey, error) {
	var k store.APIKey
	var created int64
	var revoked *int64
	var scope []byte
	if err := row.Scan(&k.ID, &k.OrgID, &k.Name, &k.Prefix, &k.Hash, &created, &revoked, &scope, &k.Admin); err != nil {
		return nil, err
	}
	var err error
	if k.Scope, err = decodeScope(scope); err != nil {
		return nil, fmt.Errorf("key %s scope: %w", k.ID, err)
	}
	k.CreatedAt = fromNanos(created)
	if revoked != nil {
		k.RevokedAt = fromNanos(*revoked)
	}
	return &k, nil
}

// KeyByHash implements store.KeyStore.
func (s *Store) KeyByHash(ctx context.Context, hash []byte) (*store.APIKey, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	k, err := scanKey(s.pool.QueryRow(ctx, "SELECT "+keyColumns+" FROM api_keys WHERE hash = $1", hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("store: key by hash: %w", store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: key by hash: %w", classify(err))
	}
	return k, nil
}

// ListKeys implements store.KeyStore.
func (s *Store) ListKeys(ctx context.Context, orgID string) ([]store.APIKey, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, "SELECT "+keyColumns+" FROM api_keys WHERE $1 = '' OR org_id = $1 ORDER BY created_ns, id", orgID)
	if err != nil {
		return nil, fmt.Errorf("store: list keys: %w", classify(err))
	}
	out := []store.APIKey{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: list keys: %w", classify(err))
		}
		out = append(out, *k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list keys: %w", classify(err))
	}
	return out, nil
}

// RevokeKey implements store.KeyStore, and announces the revocation to
// every instance.
func (s *Store) RevokeKey(ctx context.Context, id string) (*store.APIKey, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var k *store.APIKey
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		k, err = scanKey(tx.QueryRow(ctx, `UPDATE api_keys SET revoked_ns = coalesce(revoked_ns, $2) WHERE id = $1 RETURNING `+keyColumns, id, nanos(s.now())))
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, $2)", keyChannel, id)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("store: revoke key %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: revoke key %s: %w", id, classify(err))
	}
	return k, nil
}

// UpdateKey implements store.KeyStore, and announces the change to every
// instance.
func (s *Store) UpdateKey(ctx context.Context, k *store.APIKey) (*store.APIKey, error) {
	if k == nil {
		return nil, errors.New("store: nil api key")
	}
	if err := k.CheckText(); err != nil {
		return nil, fmt.Errorf("store: update key: %w", err)
	}
	scope, err := encodeScope(k.Scope)
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	var out *store.APIKey
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = scanKey(tx.QueryRow(ctx, `UPDATE api_keys SET name = $2, scope = $3 WHERE id = $1 RETURNING `+keyColumns, k.ID, k.Name, scope))
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, $2)", keyChannel, k.ID)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("store: update key %s: %w", k.ID, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: update key %s: %w", k.ID, classify(err))
	}
	return out, nil
}

// Voices.

// CreateVoice implements store.VoiceStore.
func (s *Store) CreateVoice(ctx context.Context, v *store.Voice) error {
	if v == nil {
		return errors.New("store: nil voice")
	}
	if err := requireIDs("voice id", v.ID, "voice org id", v.OrgID); err != nil {
		return err
	}
	if err := v.CheckText(); err != nil {
		return fmt.Errorf("store: create voice: %w", err)
	}
	if v.CreatedAt.IsZero() {
		v.CreatedAt = s.now().UTC()
	}
	if v.UpdatedAt.IsZero() {
		v.UpdatedAt = v.CreatedAt
	}
	tj, oj, fj, err := voiceJSON(v)
	if err != nil {
		return err
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	cj, err := consentJSON(v.Consent)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO voices (org_id, id, title, provider, model, voice_id, tags, gender, description, provider_options, media_id, created_ns, updated_ns, fallbacks, consent)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		v.OrgID, v.ID, v.Title, v.Provider, v.Model, v.VoiceID, tj, v.Gender, v.Description, oj, v.MediaID, nanos(v.CreatedAt), nanos(v.UpdatedAt), fj, cj)
	if err != nil {
		return fmt.Errorf("store: create voice: %w", classify(err))
	}
	return nil
}

// voiceJSON encodes a voice's JSON columns (tags, provider options,
// fallbacks), nil collections as empty ones.
func voiceJSON(v *store.Voice) (tags, opts, fallbacks []byte, err error) {
	t, o, f := v.Tags, v.ProviderOptions, v.Fallbacks
	if t == nil {
		t = []string{}
	}
	if o == nil {
		o = map[string]any{}
	}
	if f == nil {
		f = []store.VoiceTarget{}
	}
	if tags, err = json.Marshal(t); err != nil {
		return nil, nil, nil, fmt.Errorf("store: encode voice tags: %w", err)
	}
	if opts, err = json.Marshal(o); err != nil {
		return nil, nil, nil, fmt.Errorf("store: encode voice provider options: %w", err)
	}
	if fallbacks, err = json.Marshal(f); err != nil {
		return nil, nil, nil, fmt.Errorf("store: encode voice fallbacks: %w", err)
	}
	return tags, opts, fallbacks, nil
}

const voiceColumns = "org_id, id, title, provider, model, voice_id, tags, gender, description, provider_options, media_id, created_ns, updated_ns, fallbacks, consent"

// consentJSON encodes a voice's consent column: NULL for none
// (migrations/0011_voice_consent.sql).
func consentJSON(c *store.VoiceConsent) ([]byte, error) {
	if c == nil {
		return nil, nil
	}
	w := *c
	w.Time = w.Time.UTC()
	b, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("store: encode voice consent: %w", err)
	}
	return b, nil
}

func scanVoice(row pgx.Row) (*store.Voice, error) {
	var v store.Voice
	var tj, oj, fj, cj []byte
	var created, updated int64
	if err := row.Scan(&v.OrgID, &v.ID, &v.Title, &v.Provider, &v.Model, &v.VoiceID, &tj, &v.Gender, &v.Description, &oj, &v.MediaID, &created, &updated, &fj, &cj); err != nil {
		return nil, err
	}
	if cj != nil {
		if err := json.Unmarshal(cj, &v.Consent); err != nil {
			return nil, fmt.Errorf("decode voice consent: %w", err)
		}
	}
	if err := json.Unmarshal(fj, &v.Fallbacks); err != nil {
		return nil, fmt.Errorf("decode voice fallbacks: %w", err)
	}
	if v.Fallbacks == nil {
		v.Fallbacks = []store.VoiceTarget{}
	}
	if err := json.Unmarshal(tj, &v.Tags); err != nil {
		return nil, fmt.Errorf("decode voice tags: %w", err)
	}
	if err := json.Unmarshal(oj, &v.ProviderOptions); err != nil {
		return nil, fmt.Errorf("decode voice provider options: %w", err)
	}
	if v.Tags == nil {
		v.Tags = []string{}
	}
	if v.ProviderOptions == nil {
		v.ProviderOptions = map[string]any{}
	}
	v.CreatedAt, v.UpdatedAt = fromNanos(created), fromNanos(updated)
	return &v, nil
}

// GetVoice implements store.VoiceStore.
func (s *Store) GetVoice(ctx context.Context, orgID, id string) (*store.Voice, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	v, err := scanVoice(s.pool.QueryRow(ctx, "SELECT "+voiceColumns+" FROM voices WHERE org_id = $1 AND id = $2", orgID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("store: get voice %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get voice %s: %w", id, classify(err))
	}
	return v, nil
}

// DeleteVoice implements store.VoiceStore.
func (s *Store) DeleteVoice(ctx context.Context, orgID, id string) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	tag, err := s.pool.Exec(ctx, "DELETE FROM voices WHERE org_id = $1 AND id = $2", orgID, id)
	if err != nil {
		return fmt.Errorf("store: delete voice %s: %w", id, classify(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("store: delete voice %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// ListVoices implements store.VoiceStore. A position is the (created_ns,
// id) of the last voice returned (see position.go).
func (s *Store) ListVoices(ctx context.Context, orgID string, limit int, after store.Position) ([]store.Voice, store.Position, bool, error) {
	if limit < 1 {
		return nil, nil, false, fmt.Errorf("store: list voices: limit %d must be positive", limit)
	}
	q := "SELECT " + voiceColumns + " FROM voices WHERE org_id = $1 ORDER BY created_ns DESC, id DESC LIMIT $2"
	args := []any{orgID, limit + 1}
	if after != nil {
		ts, id, err := decodeVoicePosition(after)
		if err != nil {
			return nil, nil, false, fmt.Errorf("store: list voices: %w", err)
		}
		q = "SELECT " + voiceColumns + " FROM voices WHERE org_id = $1 AND (created_ns, id) < ($3, $4) ORDER BY created_ns DESC, id DESC LIMIT $2"
		args = append(args, ts, id)
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, nil, false, fmt.Errorf("store: list voices: %w", classify(err))
	}
	defer rows.Close()
	var voices []store.Voice
	more := false
	for rows.Next() {
		if len(voices) == limit {
			more = true
			break
		}
		v, err := scanVoice(rows)
		if err != nil {
			return nil, nil, false, fmt.Errorf("store: list voices: %w", classify(err))
		}
		voices = append(voices, *v)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, false, fmt.Errorf("store: list voices: %w", classify(err))
	}
	var next store.Position
	if n := len(voices); n > 0 {
		next = encodeVoicePosition(nanos(voices[n-1].CreatedAt), voices[n-1].ID)
	}
	return voices, next, more, nil
}

// Media.

// PutMedia implements store.MediaStore.
func (s *Store) PutMedia(ctx context.Context, m *store.Media, data []byte) error {
	if m == nil {
		return errors.New("store: nil media")
	}
	if err := requireIDs("media id", m.ID, "media org id", m.OrgID); err != nil {
		return err
	}
	if err := m.CheckText(); err != nil {
		return fmt.Errorf("store: put media: %w", err)
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = s.now().UTC()
	}
	if m.Bytes == 0 {
		m.Bytes = int64(len(data))
	}
	if m.SHA256 == "" {
		sum := sha256.Sum256(data)
		m.SHA256 = hex.EncodeToString(sum[:])
	}
	if data == nil {
		data = []byte{}
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	_, err := s.pool.Exec(ctx, `INSERT INTO media (org_id, id, filename, media_type, bytes, duration_ms, sha256, created_ns, data) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		m.OrgID, m.ID, m.Filename, m.MediaType, m.Bytes, m.DurationMS, m.SHA256, nanos(m.CreatedAt), data)
	if err != nil {
		return fmt.Errorf("store: put media: %w", classify(err))
	}
	return nil
}

// GetMedia implements store.MediaStore; it reads the metadata only.
func (s *Store) GetMedia(ctx context.Context, orgID, id string) (*store.Media, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var m store.Media
	var created int64
	err := s.pool.QueryRow(ctx, `SELECT org_id, id, filename, media_type, bytes, duration_ms, sha256, created_ns FROM media WHERE org_id = $1 AND id = $2`, orgID, id).
		Scan(&m.OrgID, &m.ID, &m.Filename, &m.MediaType, &m.Bytes, &m.DurationMS, &m.SHA256, &created)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("store: get media %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get media %s: %w", id, classify(err))
	}
	m.CreatedAt = fromNanos(created)
	return &m, nil
}

// MediaData implements store.MediaStore.
func (s *Store) MediaData(ctx context.Context, orgID, id string) ([]byte, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var data []byte
	err := s.pool.QueryRow(ctx, "SELECT data FROM media WHERE org_id = $1 AND id = $2", orgID, id).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("store: media data %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: media data %s: %w", id, classify(err))
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// DeleteMedia implements store.MediaStore.
func (s *Store) DeleteMedia(ctx context.Context, orgID, id string) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	tag, err := s.pool.Exec(ctx, "DELETE FROM media WHERE org_id = $1 AND id = $2", orgID, id)
	if err != nil {
		return fmt.Errorf("store: delete media %s: %w", id, classify(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("store: delete media %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// Secrets.

// PutSecret implements store.SecretStore.
func (s *Store) PutSecret(ctx context.Context, orgID, name string, ciphertext []byte) error {
	if err := requireIDs("org id", orgID, "secret name", name); err != nil {
		return err
	}
	if err := store.CheckText("org_id", orgID); err != nil {
		return fmt.Errorf("store: put secret: %w", err)
	}
	if err := store.CheckText("name", name); err != nil {
		return fmt.Errorf("store: put secret: %w", err)
	}
	if ciphertext == nil {
		ciphertext = []byte{}
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	_, err := s.pool.Exec(ctx, `INSERT INTO secrets (org_id, name, value) VALUES ($1, $2, $3) ON CONFLICT (org_id, name) DO UPDATE SET value = EXCLUDED.value`, orgID, name, ciphertext)
	if err != nil {
		return fmt.Errorf("store: put secret %q: %w", name, classify(err))
	}
	return nil
}

// GetSecret implements store.SecretStore.
func (s *Store) GetSecret(ctx context.Context, orgID, name string) ([]byte, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var v []byte
	err := s.pool.QueryRow(ctx, "SELECT value FROM secrets WHERE org_id = $1 AND name = $2", orgID, name).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("store: get secret %q: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get secret %q: %w", name, classify(err))
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

// DeleteSecret implements store.SecretStore.
func (s *Store) DeleteSecret(ctx context.Context, orgID, name string) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	tag, err := s.pool.Exec(ctx, "DELETE FROM secrets WHERE org_id = $1 AND name = $2", orgID, name)
	if err != nil {
		return fmt.Errorf("store: delete secret %q: %w", name, classify(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("store: delete secret %q: %w", name, store.ErrNotFound)
	}
	return nil
}

// ListSecretNames implements store.SecretStore: names in byte order.
func (s *Store) ListSecretNames(ctx context.Context, orgID string) ([]string, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, "SELECT name FROM secrets WHERE org_id = $1", orgID)
	if err != nil {
		return nil, fmt.Errorf("store: list secrets: %w", classify(err))
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: list secrets: %w", classify(err))
	}
	// Sorted here, not by ORDER BY: the database's collation need not be
	// byte order, and the contract is byte order.
	sort.Strings(names)
	if names == nil {
		names = []string{}
	}
	return names, nil
}

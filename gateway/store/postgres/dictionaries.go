package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/voxgate/voxgate/gateway/store"
)

// Pronunciation dictionaries and their rules (migration 0002). Bounds are
// kept inside one transaction each: a per-organization advisory lock
// serializes dictionary creation while it counts, and a rule takes its
// place by incrementing the dictionary's rule_count with the bound in the
// WHERE clause, so concurrent writers on several instances never pass a
// bound.

// dictLockBase keeps the dictionary-count advisory locks apart from the
// migration lock ("voxg") and any other user of advisory locks.
const dictLockBase = "voxgate/dictionaries/"

const dictColumns = "org_id, id, name, description, is_default, rule_count, created_ns, updated_ns"

func scanDictionary(row pgx.Row) (*store.Dictionary, error) {
	var d store.Dictionary
	var count int32
	var created, updated int64
	if err := row.Scan(&d.OrgID, &d.ID, &d.Name, &d.Description, &d.IsDefault, &count, &created, &updated); err != nil {
		return nil, err
	}
	d.RuleCount = int(count)
	d.CreatedAt, d.UpdatedAt = fromNanos(created), fromNanos(updated)
	return &d, nil
}

const ruleColumns = "org_id, dictionary_id, id, word, replacement, case_sensitive, kind, alphabet, phoneme, created_ns, updated_ns"

func scanRule(row pgx.Row) (*store.PronunciationRule, error) {
	var r store.PronunciationRule
	var created, updated int64
	if err := row.Scan(&r.OrgID, &r.DictionaryID, &r.ID, &r.Word, &r.Replacement, &r.CaseSensitive, &r.Kind, &r.Alphabet, &r.Phoneme, &created, &updated); err != nil {
		return nil, err
	}
	r.CreatedAt, r.UpdatedAt = fromNanos(created), fromNanos(updated)
	return &r, nil
}

// classifyUnique maps a violation of one of the named uniqueness rules to
// store.ErrConflict; everything else as classify does (a taken primary key
// is store.ErrExists).
func classifyUnique(err error) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == "23505" &&
		(pg.ConstraintName == "pronunciation_dictionaries_name" || pg.ConstraintName == "pronunciations_word") {
		return fmt.Errorf("%w: %s", store.ErrConflict, pg.ConstraintName)
	}
	return classify(err)
}

// CreateDictionary implements store.DictionaryStore.
func (s *Store) CreateDictionary(ctx context.Context, d *store.Dictionary, max int) error {
	if d == nil {
		return errors.New("store: nil dictionary")
	}
	if err := requireIDs("dictionary id", d.ID, "dictionary org id", d.OrgID); err != nil {
		return err
	}
	if err := d.CheckText(); err != nil {
		return fmt.Errorf("store: create dictionary: %w", err)
	}
	if d.CreatedAt.IsZero() {
		d.CreatedAt = s.now().UTC()
	}
	if d.UpdatedAt.IsZero() {
		d.UpdatedAt = d.CreatedAt
	}
	d.IsDefault, d.RuleCount = false, 0
	ctx, cancel := s.op(ctx)
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", dictLockBase+d.OrgID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM pronunciation_dictionaries WHERE org_id = $1", d.OrgID).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return fmt.Errorf("%d dictionaries: %w", max, store.ErrLimit)
		}
		_, err := tx.Exec(ctx, `INSERT INTO pronunciation_dictionaries (org_id, id, name, name_key, description, is_default, rule_count, created_ns, updated_ns)
			VALUES ($1, $2, $3, $4, $5, false, 0, $6, $7)`,
			d.OrgID, d.ID, d.Name, store.NameKey(d.Name), d.Description, nanos(d.CreatedAt), nanos(d.UpdatedAt))
		return err
	})
	if err != nil {
		if errors.Is(err, store.ErrLimit) {
			return fmt.Errorf("store: create dictionary: %w", err)
		}
		return fmt.Errorf("store: create dictionary: %w", classifyUnique(err))
	}
	return nil
}

// DefaultDictionary implements store.DictionaryStore: a read, and an
// insert that concurrent first calls settle through the one-default index.
func (s *Store) DefaultDictionary(ctx context.Context, orgID string, d *store.Dictionary) (*store.Dictionary, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	get := func() (*store.Dictionary, error) {
		return scanDictionary(s.pool.QueryRow(ctx, "SELECT "+dictColumns+" FROM pronunciation_dictionaries WHERE org_id = $1 AND is_default", orgID))
	}
	out, err := get()
	if err == nil {
		return out, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("store: default dictionary: %w", classify(err))
	}
	if d == nil {
		return nil, errors.New("store: nil dictionary")
	}
	if err := requireIDs("dictionary id", d.ID, "org id", orgID); err != nil {
		return nil, err
	}
	created := *d
	created.OrgID, created.IsDefault, created.RuleCount = orgID, true, 0
	if err := created.CheckText(); err != nil {
		return nil, fmt.Errorf("store: default dictionary: %w", err)
	}
	if created.CreatedAt.IsZero() {
		created.CreatedAt = s.now().UTC()
	}
	if created.UpdatedAt.IsZero() {
		created.UpdatedAt = created.CreatedAt
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO pronunciation_dictionaries (org_id, id, name, name_key, description, is_default, rule_count, created_ns, updated_ns)
		VALUES ($1, $2, $3, $4, $5, true, 0, $6, $7) ON CONFLICT (org_id) WHERE is_default DO NOTHING`,
		orgID, created.ID, created.Name, store.NameKey(created.Name), created.Description, nanos(created.CreatedAt), nanos(created.UpdatedAt)); err != nil {
		// ON CONFLICT names one arbiter, the default's index: a
		// concurrent first use can still trip the name's index first.
		// Then the default exists now, made by that other call; only
		// when it does not is the name really taken.
		if out, gerr := get(); gerr == nil {
			return out, nil
		}
		return nil, fmt.Errorf("store: default dictionary: %w", classifyUnique(err))
	}
	if out, err = get(); err != nil {
		return nil, fmt.Errorf("store: default dictionary: %w", classify(err))
	}
	return out, nil
}

// GetDictionary implements store.DictionaryStore.
func (s *Store) GetDictionary(ctx context.Context, orgID, id string) (*store.Dictionary, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	d, err := scanDictionary(s.pool.QueryRow(ctx, "SELECT "+dictColumns+" FROM pronunciation_dictionaries WHERE org_id = $1 AND id = $2", orgID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("store: get dictionary %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get dictionary %s: %w", id, classify(err))
	}
	return d, nil
}

// UpdateDictionary implements store.DictionaryStore.
func (s *Store) UpdateDictionary(ctx context.Context, d *store.Dictionary) error {
	if d == nil {
		return errors.New("store: nil dictionary")
	}
	if err := d.CheckText(); err != nil {
		return fmt.Errorf("store: update dictionary: %w", err)
	}
	if d.UpdatedAt.IsZero() {
		d.UpdatedAt = s.now().UTC()
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	out, err := scanDictionary(s.pool.QueryRow(ctx, `UPDATE pronunciation_dictionaries SET name = $3, name_key = $4, description = $5, updated_ns = $6
		WHERE org_id = $1 AND id = $2 RETURNING `+dictColumns,
		d.OrgID, d.ID, d.Name, store.NameKey(d.Name), d.Description, nanos(d.UpdatedAt)))
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("store: update dictionary %s: %w", d.ID, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: update dictionary %s: %w", d.ID, classifyUnique(err))
	}
	*d = *out
	return nil
}

// DeleteDictionary implements store.DictionaryStore; the rules go with it
// (ON DELETE CASCADE).
func (s *Store) DeleteDictionary(ctx context.Context, orgID, id string) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	tag, err := s.pool.Exec(ctx, "DELETE FROM pronunciation_dictionaries WHERE org_id = $1 AND id = $2", orgID, id)
	if err != nil {
		return fmt.Errorf("store: delete dictionary %s: %w", id, classify(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("store: delete dictionary %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// ListDictionaries implements store.DictionaryStore: one range scan of
// pronunciation_dictionaries_list from the position.
func (s *Store) ListDictionaries(ctx context.Context, orgID string, limit int, after store.Position) ([]store.Dictionary, store.Position, bool, error) {
	if limit < 1 {
		return nil, nil, false, fmt.Errorf("store: list dictionaries: limit %d must be positive", limit)
	}
	q := "SELECT " + dictColumns + " FROM pronunciation_dictionaries WHERE org_id = $1 ORDER BY created_ns DESC, id DESC LIMIT $2"
	args := []any{orgID, limit + 1}
	if after != nil {
		ts, id, err := decodeListPosition('d', after)
		if err != nil {
			return nil, nil, false, fmt.Errorf("store: list dictionaries: %w", err)
		}
		q = "SELECT " + dictColumns + " FROM pronunciation_dictionaries WHERE org_id = $1 AND (created_ns, id) < ($3, $4) ORDER BY created_ns DESC, id DESC LIMIT $2"
		args = append(args, ts, id)
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, nil, false, fmt.Errorf("store: list dictionaries: %w", classify(err))
	}
	defer rows.Close()
	var out []store.Dictionary
	more := false
	for rows.Next() {
		if len(out) == limit {
			more = true
			break
		}
		d, err := scanDictionary(rows)
		if err != nil {
			return nil, nil, false, fmt.Errorf("store: list dictionaries: %w", classify(err))
		}
		out = append(out, *d)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, false, fmt.Errorf("store: list dictionaries: %w", classify(err))
	}
	var next store.Position
	if n := len(out); n > 0 {
		next = encodeListPosition('d', nanos(out[n-1].CreatedAt), out[n-1].ID)
	}
	return out, next, more, nil
}

// CreateRule implements store.DictionaryStore. The dictionary's
// rule_count is raised first, with the bound in the WHERE clause: no row
// means the dictionary is missing or full.
func (s *Store) CreateRule(ctx context.Context, r *store.PronunciationRule, max int) error {
	if r == nil {
		return errors.New("store: nil rule")
	}
	if err := requireIDs("rule id", r.ID, "rule org id", r.OrgID, "rule dictionary id", r.DictionaryID); err != nil {
		return err
	}
	if err := r.CheckText(); err != nil {
		return fmt.Errorf("store: create rule: %w", err)
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = s.now().UTC()
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.CreatedAt
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE pronunciation_dictionaries SET rule_count = rule_count + 1, updated_ns = $3
			WHERE org_id = $1 AND id = $2 AND rule_count < $4`, r.OrgID, r.DictionaryID, nanos(r.CreatedAt), max)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			var exists bool
			if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pronunciation_dictionaries WHERE org_id = $1 AND id = $2)", r.OrgID, r.DictionaryID).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				return fmt.Errorf("dictionary %s: %w", r.DictionaryID, store.ErrNotFound)
			}
			return fmt.Errorf("%d rules: %w", max, store.ErrLimit)
		}
		_, err = tx.Exec(ctx, `INSERT INTO pronunciations (org_id, dictionary_id, id, word, word_key, replacement, case_sensitive, created_ns, updated_ns, kind, alphabet, phoneme)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			r.OrgID, r.DictionaryID, r.ID, r.Word, store.WordKey(r.Word), r.Replacement, r.CaseSensitive, nanos(r.CreatedAt), nanos(r.UpdatedAt), r.Kind, r.Alphabet, r.Phoneme)
		return err
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrLimit) {
			return fmt.Errorf("store: create rule: %w", err)
		}
		return fmt.Errorf("store: create rule: %w", classifyUnique(err))
	}
	return nil
}

// GetRule implements store.DictionaryStore.
func (s *Store) GetRule(ctx context.Context, orgID, dictID, id string) (*store.PronunciationRule, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	r, err := scanRule(s.pool.QueryRow(ctx, "SELECT "+ruleColumns+" FROM pronunciations WHERE org_id = $1 AND dictionary_id = $2 AND id = $3", orgID, dictID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("store: get rule %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get rule %s: %w", id, classify(err))
	}
	return r, nil
}

// UpdateRule implements store.DictionaryStore.
func (s *Store) UpdateRule(ctx context.Context, r *store.PronunciationRule) error {
	if r == nil {
		return errors.New("store: nil rule")
	}
	if err := r.CheckText(); err != nil {
		return fmt.Errorf("store: update rule: %w", err)
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = s.now().UTC()
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	var out *store.PronunciationRule
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = scanRule(tx.QueryRow(ctx, `UPDATE pronunciations SET word = $4, word_key = $5, replacement = $6, case_sensitive = $7, updated_ns = $8, kind = $9, alphabet = $10, phoneme = $11
			WHERE org_id = $1 AND dictionary_id = $2 AND id = $3 RETURNING `+ruleColumns,
			r.OrgID, r.DictionaryID, r.ID, r.Word, store.WordKey(r.Word), r.Replacement, r.CaseSensitive, nanos(r.UpdatedAt), r.Kind, r.Alphabet, r.Phoneme))
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "UPDATE pronunciation_dictionaries SET updated_ns = $3 WHERE org_id = $1 AND id = $2", r.OrgID, r.DictionaryID, nanos(r.UpdatedAt))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("store: update rule %s: %w", r.ID, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: update rule %s: %w", r.ID, classifyUnique(err))
	}
	*r = *out
	return nil
}

// DeleteRule implements store.DictionaryStore.
func (s *Store) DeleteRule(ctx context.Context, orgID, dictID, id string) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "DELETE FROM pronunciations WHERE org_id = $1 AND dictionary_id = $2 AND id = $3", orgID, dictID, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrNotFound
		}
		_, err = tx.Exec(ctx, "UPDATE pronunciation_dictionaries SET rule_count = rule_count - 1, updated_ns = $3 WHERE org_id = $1 AND id = $2",
			orgID, dictID, nanos(s.now().UTC()))
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("store: delete rule %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: delete rule %s: %w", id, classify(err))
	}
	return nil
}

// ListRules implements store.DictionaryStore: one range scan of
// pronunciations_list from the position.
func (s *Store) ListRules(ctx context.Context, orgID, dictID string, limit int, after store.Position) ([]store.PronunciationRule, store.Position, bool, error) {
	if limit < 1 {
		return nil, nil, false, fmt.Errorf("store: list rules: limit %d must be positive", limit)
	}
	q := "SELECT " + ruleColumns + " FROM pronunciations WHERE org_id = $1 AND dictionary_id = $2 ORDER BY created_ns DESC, id DESC LIMIT $3"
	args := []any{orgID, dictID, limit + 1}
	if after != nil {
		ts, id, err := decodeListPosition('r', after)
		if err != nil {
			return nil, nil, false, fmt.Errorf("store: list rules: %w", err)
		}
		q = "SELECT " + ruleColumns + " FROM pronunciations WHERE org_id = $1 AND dictionary_id = $2 AND (created_ns, id) < ($4, $5) ORDER BY created_ns DESC, id DESC LIMIT $3"
		args = append(args, ts, id)
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	if _, err := s.GetDictionary(ctx, orgID, dictID); err != nil {
		return nil, nil, false, err
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, nil, false, fmt.Errorf("store: list rules: %w", classify(err))
	}
	defer rows.Close()
	var out []store.PronunciationRule
	more := false
	for rows.Next() {
		if len(out) == limit {
			more = true
			break
		}
		r, err := scanRule(rows)
		if err != nil {
			return nil, nil, false, fmt.Errorf("store: list rules: %w", classify(err))
		}
		out = append(out, *r)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, false, fmt.Errorf("store: list rules: %w", classify(err))
	}
	var next store.Position
	if n := len(out); n > 0 {
		next = encodeListPosition('r', nanos(out[n-1].CreatedAt), out[n-1].ID)
	}
	return out, next, more, nil
}

// DictionaryRules implements store.DictionaryStore: one query in one
// repeatable-read transaction for the existence check and the rules, so
// the answer is one consistent picture.
func (s *Store) DictionaryRules(ctx context.Context, orgID string, ids []string) ([]store.PronunciationRule, [][]store.PronunciationRule, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var defaults []store.PronunciationRule
	byID := make([][]store.PronunciationRule, len(ids))
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if len(ids) > 0 {
			var found []string
			rows, err := tx.Query(ctx, "SELECT id FROM pronunciation_dictionaries WHERE org_id = $1 AND id = ANY($2)", orgID, ids)
			if err != nil {
				return err
			}
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return err
				}
				found = append(found, id)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			for _, id := range ids {
				ok := false
				for _, f := range found {
					ok = ok || f == id
				}
				if !ok {
					return &store.MissingDictionaryError{ID: id}
				}
			}
		}
		at := make(map[string][]int, len(ids))
		for i, id := range ids {
			at[id] = append(at[id], i)
		}
		rows, err := tx.Query(ctx, `SELECT d.is_default, p.org_id, p.dictionary_id, p.id, p.word, p.replacement, p.case_sensitive, p.kind, p.alphabet, p.phoneme, p.created_ns, p.updated_ns FROM pronunciations p
			JOIN pronunciation_dictionaries d ON d.org_id = p.org_id AND d.id = p.dictionary_id
			WHERE p.org_id = $1 AND (d.is_default OR p.dictionary_id = ANY($2))
			ORDER BY p.dictionary_id, p.created_ns, p.id`, orgID, ids)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var isDefault bool
			var r store.PronunciationRule
			var created, updated int64
			if err := rows.Scan(&isDefault, &r.OrgID, &r.DictionaryID, &r.ID, &r.Word, &r.Replacement, &r.CaseSensitive, &r.Kind, &r.Alphabet, &r.Phoneme, &created, &updated); err != nil {
				return err
			}
			r.CreatedAt, r.UpdatedAt = fromNanos(created), fromNanos(updated)
			if isDefault {
				defaults = append(defaults, r)
			}
			for _, i := range at[r.DictionaryID] {
				byID[i] = append(byID[i], r)
			}
		}
		return rows.Err()
	})
	if err != nil {
		var missing *store.MissingDictionaryError
		if errors.As(err, &missing) {
			return nil, nil, fmt.Errorf("store: dictionary rules: %w", err)
		}
		return nil, nil, fmt.Errorf("store: dictionary rules: %w", classify(err))
	}
	return defaults, byID, nil
}

// encodeListPosition is a dictionary ('d') or rule ('r') list position:
// the kind, created_ns (8 bytes, big endian), the id.
func encodeListPosition(kind byte, createdNS int64, id string) store.Position {
	b := make([]byte, 0, 9+len(id))
	b = append(b, kind)
	b = binary.BigEndian.AppendUint64(b, uint64(createdNS))
	return append(b, id...)
}

func decodeListPosition(kind byte, p store.Position) (int64, string, error) {
	if len(p) < 10 || p[0] != kind {
		return 0, "", store.ErrInvalidPosition
	}
	return int64(binary.BigEndian.Uint64(p[1:9])), string(p[9:]), nil
}

package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/voxgate/voxgate/gateway/store"
)

// Pronunciation dictionaries and their rules, in each organization's
// bucket (see doc.go):
//
//	dictionaries         created_at ns (8B BE) + dictionary id -> Dictionary JSON
//	dictionary_ids       dictionary id -> key in dictionaries
//	dictionary_names     NameKey(name) -> dictionary id      (names unique)
//	dictionary_meta      "default" -> the default dictionary's id
//	pronunciations       len16 + dictionary id + created_at ns + rule id -> rule JSON
//	pronunciation_ids    rule id -> key in pronunciations
//	pronunciation_words  len16 + dictionary id + WordKey(word) -> rule id (words unique per dictionary)
//
// A dictionary's rules are contiguous (its id prefixes their keys) and in
// creation order, so listing a page, reading all of them for a synthesis
// request and deleting them with the dictionary are prefix walks. The
// dictionary record carries its rule count, so CreateRule enforces the
// bound without counting.

const (
	bucketDicts     = "dictionaries"
	bucketDictIDs   = "dictionary_ids"
	bucketDictNames = "dictionary_names"
	bucketDictMeta  = "dictionary_meta"
	bucketRules     = "pronunciations"
	bucketRuleIDs   = "pronunciation_ids"
	bucketRuleWords = "pronunciation_words"

	dictMetaDefault = "default"
)

type dictionaryRecord struct {
	ID          string    `json:"id"`
	OrgID       string    `json:"org_id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	IsDefault   bool      `json:"is_default,omitempty"`
	RuleCount   int       `json:"rule_count"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

type ruleRecord struct {
	ID            string    `json:"id"`
	OrgID         string    `json:"org_id"`
	DictionaryID  string    `json:"dictionary_id"`
	Word          string    `json:"word"`
	Replacement   string    `json:"replacement"`
	CaseSensitive bool      `json:"case_sensitive,omitempty"`
	Kind          string    `json:"kind,omitempty"`
	Alphabet      string    `json:"alphabet,omitempty"`
	Phoneme       string    `json:"phoneme,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

func decodeDictionary(data []byte) (*store.Dictionary, error) {
	var r dictionaryRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decode dictionary: %w", err)
	}
	d := store.Dictionary(r)
	return &d, nil
}

func decodeRule(data []byte) (*store.PronunciationRule, error) {
	var r ruleRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decode rule: %w", err)
	}
	pr := store.PronunciationRule(r)
	return &pr, nil
}

// ruleKey is the key of a rule in pronunciations.
func ruleKey(dictID string, created time.Time, id string) []byte {
	return append(strPrefix(dictID), voiceKey(created, id)...)
}

// wordIndexKey is the key of a word in pronunciation_words.
func wordIndexKey(dictID, word string) []byte {
	return append(strPrefix(dictID), store.WordKey(word)...)
}

// dictTx is one organization's dictionary buckets within a transaction;
// in a read-only transaction buckets the organization never wrote are nil.
type dictTx struct {
	dicts, ids, names, meta, rules, ruleIDs, words *bbolt.Bucket
}

func openDictTx(tx *bbolt.Tx, orgID string, create bool) (*dictTx, error) {
	var d dictTx
	for _, x := range []struct {
		name string
		dst  **bbolt.Bucket
	}{
		{bucketDicts, &d.dicts}, {bucketDictIDs, &d.ids}, {bucketDictNames, &d.names}, {bucketDictMeta, &d.meta},
		{bucketRules, &d.rules}, {bucketRuleIDs, &d.ruleIDs}, {bucketRuleWords, &d.words},
	} {
		if !create {
			*x.dst = orgBucket(tx, orgID, x.name)
			continue
		}
		b, err := orgBucketCreate(tx, orgID, x.name)
		if err != nil {
			return nil, err
		}
		*x.dst = b
	}
	return &d, nil
}

// get returns dictionary id and its key, or store.ErrNotFound.
func (d *dictTx) get(id string) (*store.Dictionary, []byte, error) {
	if d.ids == nil || d.dicts == nil || id == "" {
		return nil, nil, store.ErrNotFound
	}
	key := d.ids.Get([]byte(id))
	if key == nil {
		return nil, nil, store.ErrNotFound
	}
	data := d.dicts.Get(key)
	if data == nil {
		return nil, nil, fmt.Errorf("dictionary %s: index points at a missing record: %w", id, store.ErrNotFound)
	}
	dict, err := decodeDictionary(data)
	return dict, bytes.Clone(key), err
}

func (d *dictTx) put(key []byte, dict *store.Dictionary) error {
	data, err := json.Marshal(dictionaryRecord(*dict))
	if err != nil {
		return err
	}
	return d.dicts.Put(key, data)
}

// insert stores a new dictionary record and its indexes.
func (d *dictTx) insert(dict *store.Dictionary) error {
	if d.ids.Get([]byte(dict.ID)) != nil {
		return fmt.Errorf("dictionary %s: %w", dict.ID, store.ErrExists)
	}
	if d.names.Get([]byte(store.NameKey(dict.Name))) != nil {
		return fmt.Errorf("dictionary name %q: %w", dict.Name, store.ErrConflict)
	}
	key := voiceKey(dict.CreatedAt, dict.ID)
	if err := d.put(key, dict); err != nil {
		return err
	}
	if err := d.ids.Put([]byte(dict.ID), key); err != nil {
		return err
	}
	return d.names.Put([]byte(store.NameKey(dict.Name)), []byte(dict.ID))
}

// rule returns rule id of dictionary dictID and its key, or
// store.ErrNotFound (also for a rule of another dictionary).
func (d *dictTx) rule(dictID, id string) (*store.PronunciationRule, []byte, error) {
	if d.ruleIDs == nil || d.rules == nil || id == "" {
		return nil, nil, store.ErrNotFound
	}
	key := d.ruleIDs.Get([]byte(id))
	if key == nil || !bytes.HasPrefix(key, strPrefix(dictID)) {
		return nil, nil, store.ErrNotFound
	}
	data := d.rules.Get(key)
	if data == nil {
		return nil, nil, fmt.Errorf("rule %s: index points at a missing record: %w", id, store.ErrNotFound)
	}
	r, err := decodeRule(data)
	return r, bytes.Clone(key), err
}

func (d *dictTx) putRule(key []byte, r *store.PronunciationRule) error {
	data, err := json.Marshal(ruleRecord(*r))
	if err != nil {
		return err
	}
	return d.rules.Put(key, data)
}

// rulesOf returns every rule of dictionary dictID, oldest first.
func (d *dictTx) rulesOf(dictID string) ([]store.PronunciationRule, error) {
	var out []store.PronunciationRule
	if d.rules == nil {
		return out, nil
	}
	prefix := strPrefix(dictID)
	c := d.rules.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		r, err := decodeRule(v)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, nil
}

// CreateDictionary implements store.DictionaryStore.
func (s *Store) CreateDictionary(ctx context.Context, dict *store.Dictionary, max int) error {
	if dict == nil {
		return fmt.Errorf("store: nil dictionary")
	}
	if err := requireIDs("dictionary id", dict.ID, "dictionary org id", dict.OrgID); err != nil {
		return err
	}
	if err := dict.CheckText(); err != nil {
		return fmt.Errorf("store: create dictionary: %w", err)
	}
	s.defaultTimes(&dict.CreatedAt, &dict.UpdatedAt)
	dict.IsDefault, dict.RuleCount = false, 0
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		d, err := openDictTx(tx, dict.OrgID, true)
		if err != nil {
			return err
		}
		n := 0
		c := d.ids.Cursor()
		for k, _ := c.First(); k != nil && n < max; k, _ = c.Next() {
			n++
		}
		if n >= max {
			return fmt.Errorf("%d dictionaries: %w", max, store.ErrLimit)
		}
		return d.insert(dict)
	})
	if err != nil {
		return fmt.Errorf("store: create dictionary: %w", err)
	}
	return nil
}

// defaultTimes fills zero creation and update times: now, and the
// creation time.
func (s *Store) defaultTimes(created, updated *time.Time) {
	if created.IsZero() {
		*created = s.now().UTC()
	}
	if updated.IsZero() {
		*updated = *created
	}
}

// DefaultDictionary implements store.DictionaryStore. The common case, a
// default that exists, is a read-only transaction.
func (s *Store) DefaultDictionary(ctx context.Context, orgID string, dict *store.Dictionary) (*store.Dictionary, error) {
	var out *store.Dictionary
	find := func(d *dictTx) error {
		if d.meta == nil {
			return nil
		}
		if id := d.meta.Get([]byte(dictMetaDefault)); id != nil {
			var err error
			out, _, err = d.get(string(id))
			return err
		}
		return nil
	}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		d, _ := openDictTx(tx, orgID, false)
		return find(d)
	})
	if err != nil || out != nil {
		if err != nil {
			return nil, fmt.Errorf("store: default dictionary: %w", err)
		}
		return out, nil
	}
	if dict == nil {
		return nil, fmt.Errorf("store: nil dictionary")
	}
	if err := requireIDs("dictionary id", dict.ID, "org id", orgID); err != nil {
		return nil, err
	}
	created := *dict
	created.OrgID, created.IsDefault, created.RuleCount = orgID, true, 0
	if err := created.CheckText(); err != nil {
		return nil, fmt.Errorf("store: default dictionary: %w", err)
	}
	s.defaultTimes(&created.CreatedAt, &created.UpdatedAt)
	err = s.update(ctx, func(tx *bbolt.Tx) error {
		d, err := openDictTx(tx, orgID, true)
		if err != nil {
			return err
		}
		if err := find(d); err != nil || out != nil {
			return err // another writer created it first
		}
		if err := d.insert(&created); err != nil {
			return err
		}
		out = &created
		return d.meta.Put([]byte(dictMetaDefault), []byte(created.ID))
	})
	if err != nil {
		return nil, fmt.Errorf("store: default dictionary: %w", err)
	}
	return out, nil
}

// GetDictionary implements store.DictionaryStore.
func (s *Store) GetDictionary(ctx context.Context, orgID, id string) (*store.Dictionary, error) {
	var out *store.Dictionary
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		d, _ := openDictTx(tx, orgID, false)
		var err error
		out, _, err = d.get(id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: get dictionary %s: %w", id, err)
	}
	return out, nil
}

// UpdateDictionary implements store.DictionaryStore.
func (s *Store) UpdateDictionary(ctx context.Context, dict *store.Dictionary) error {
	if dict == nil {
		return fmt.Errorf("store: nil dictionary")
	}
	if err := dict.CheckText(); err != nil {
		return fmt.Errorf("store: update dictionary: %w", err)
	}
	if dict.UpdatedAt.IsZero() {
		dict.UpdatedAt = s.now().UTC()
	}
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		d, err := openDictTx(tx, dict.OrgID, true)
		if err != nil {
			return err
		}
		cur, key, err := d.get(dict.ID)
		if err != nil {
			return err
		}
		if oldKey, newKey := store.NameKey(cur.Name), store.NameKey(dict.Name); oldKey != newKey {
			if d.names.Get([]byte(newKey)) != nil {
				return fmt.Errorf("dictionary name %q: %w", dict.Name, store.ErrConflict)
			}
			if err := d.names.Delete([]byte(oldKey)); err != nil {
				return err
			}
			if err := d.names.Put([]byte(newKey), []byte(cur.ID)); err != nil {
				return err
			}
		}
		cur.Name, cur.Description, cur.UpdatedAt = dict.Name, dict.Description, dict.UpdatedAt
		*dict = *cur
		return d.put(key, cur)
	})
	if err != nil {
		return fmt.Errorf("store: update dictionary %s: %w", dict.ID, err)
	}
	return nil
}

// DeleteDictionary implements store.DictionaryStore: the dictionary, its
// rules and every index entry, in one transaction.
func (s *Store) DeleteDictionary(ctx context.Context, orgID, id string) error {
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		d, err := openDictTx(tx, orgID, true)
		if err != nil {
			return err
		}
		cur, key, err := d.get(id)
		if err != nil {
			return err
		}
		// Collect first, then delete: deleting under a live cursor skips
		// keys.
		type victim struct{ key, id, word []byte }
		var victims []victim
		prefix := strPrefix(id)
		c := d.rules.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			r, err := decodeRule(v)
			if err != nil {
				return err
			}
			victims = append(victims, victim{bytes.Clone(k), []byte(r.ID), wordIndexKey(id, r.Word)})
		}
		for _, v := range victims {
			if err := d.rules.Delete(v.key); err != nil {
				return err
			}
			if err := d.ruleIDs.Delete(v.id); err != nil {
				return err
			}
			if err := d.words.Delete(v.word); err != nil {
				return err
			}
		}
		if def := d.meta.Get([]byte(dictMetaDefault)); def != nil && string(def) == id {
			if err := d.meta.Delete([]byte(dictMetaDefault)); err != nil {
				return err
			}
		}
		if err := d.names.Delete([]byte(store.NameKey(cur.Name))); err != nil {
			return err
		}
		if err := d.ids.Delete([]byte(id)); err != nil {
			return err
		}
		return d.dicts.Delete(key)
	})
	if err != nil {
		return fmt.Errorf("store: delete dictionary %s: %w", id, err)
	}
	return nil
}

// ListDictionaries implements store.DictionaryStore; it reads only the
// page it returns, like ListVoices.
func (s *Store) ListDictionaries(ctx context.Context, orgID string, limit int, after store.Position) (dicts []store.Dictionary, next store.Position, hasMore bool, err error) {
	return listNewest(s, ctx, orgID, bucketDicts, "dictionaries", limit, after, decodeDictionary)
}

// CreateRule implements store.DictionaryStore.
func (s *Store) CreateRule(ctx context.Context, r *store.PronunciationRule, max int) error {
	if r == nil {
		return fmt.Errorf("store: nil rule")
	}
	if err := requireIDs("rule id", r.ID, "rule org id", r.OrgID, "rule dictionary id", r.DictionaryID); err != nil {
		return err
	}
	if err := r.CheckText(); err != nil {
		return fmt.Errorf("store: create rule: %w", err)
	}
	s.defaultTimes(&r.CreatedAt, &r.UpdatedAt)
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		d, err := openDictTx(tx, r.OrgID, true)
		if err != nil {
			return err
		}
		dict, dictKey, err := d.get(r.DictionaryID)
		if err != nil {
			return err
		}
		if d.ruleIDs.Get([]byte(r.ID)) != nil {
			return fmt.Errorf("rule %s: %w", r.ID, store.ErrExists)
		}
		word := wordIndexKey(r.DictionaryID, r.Word)
		if d.words.Get(word) != nil {
			return fmt.Errorf("word %q: %w", r.Word, store.ErrConflict)
		}
		if dict.RuleCount >= max {
			return fmt.Errorf("%d rules: %w", max, store.ErrLimit)
		}
		key := ruleKey(r.DictionaryID, r.CreatedAt, r.ID)
		if err := d.putRule(key, r); err != nil {
			return err
		}
		if err := d.ruleIDs.Put([]byte(r.ID), key); err != nil {
			return err
		}
		if err := d.words.Put(word, []byte(r.ID)); err != nil {
			return err
		}
		dict.RuleCount++
		dict.UpdatedAt = r.CreatedAt
		return d.put(dictKey, dict)
	})
	if err != nil {
		return fmt.Errorf("store: create rule: %w", err)
	}
	return nil
}

// GetRule implements store.DictionaryStore.
func (s *Store) GetRule(ctx context.Context, orgID, dictID, id string) (*store.PronunciationRule, error) {
	var out *store.PronunciationRule
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		d, _ := openDictTx(tx, orgID, false)
		var err error
		out, _, err = d.rule(dictID, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: get rule %s: %w", id, err)
	}
	return out, nil
}

// UpdateRule implements store.DictionaryStore.
func (s *Store) UpdateRule(ctx context.Context, r *store.PronunciationRule) error {
	if r == nil {
		return fmt.Errorf("store: nil rule")
	}
	if err := r.CheckText(); err != nil {
		return fmt.Errorf("store: update rule: %w", err)
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = s.now().UTC()
	}
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		d, err := openDictTx(tx, r.OrgID, true)
		if err != nil {
			return err
		}
		cur, key, err := d.rule(r.DictionaryID, r.ID)
		if err != nil {
			return err
		}
		dict, dictKey, err := d.get(r.DictionaryID)
		if err != nil {
			return err
		}
		if oldWord, newWord := wordIndexKey(r.DictionaryID, cur.Word), wordIndexKey(r.DictionaryID, r.Word); !bytes.Equal(oldWord, newWord) {
			if d.words.Get(newWord) != nil {
				return fmt.Errorf("word %q: %w", r.Word, store.ErrConflict)
			}
			if err := d.words.Delete(oldWord); err != nil {
				return err
			}
			if err := d.words.Put(newWord, []byte(cur.ID)); err != nil {
				return err
			}
		}
		cur.Word, cur.Replacement, cur.CaseSensitive, cur.UpdatedAt = r.Word, r.Replacement, r.CaseSensitive, r.UpdatedAt
		cur.Kind, cur.Alphabet, cur.Phoneme = r.Kind, r.Alphabet, r.Phoneme
		*r = *cur
		if err := d.putRule(key, cur); err != nil {
			return err
		}
		dict.UpdatedAt = r.UpdatedAt
		return d.put(dictKey, dict)
	})
	if err != nil {
		return fmt.Errorf("store: update rule %s: %w", r.ID, err)
	}
	return nil
}

// DeleteRule implements store.DictionaryStore.
func (s *Store) DeleteRule(ctx context.Context, orgID, dictID, id string) error {
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		d, err := openDictTx(tx, orgID, true)
		if err != nil {
			return err
		}
		cur, key, err := d.rule(dictID, id)
		if err != nil {
			return err
		}
		dict, dictKey, err := d.get(dictID)
		if err != nil {
			return err
		}
		if err := d.rules.Delete(key); err != nil {
			return err
		}
		if err := d.ruleIDs.Delete([]byte(id)); err != nil {
			return err
		}
		if err := d.words.Delete(wordIndexKey(dictID, cur.Word)); err != nil {
			return err
		}
		dict.RuleCount--
		dict.UpdatedAt = s.now().UTC()
		return d.put(dictKey, dict)
	})
	if err != nil {
		return fmt.Errorf("store: delete rule %s: %w", id, err)
	}
	return nil
}

// ListRules implements store.DictionaryStore: a backwards walk inside the
// dictionary's prefix from one seek. A position is a rule key without
// the prefix.
func (s *Store) ListRules(ctx context.Context, orgID, dictID string, limit int, after store.Position) (rules []store.PronunciationRule, next store.Position, hasMore bool, err error) {
	if limit < 1 {
		return nil, nil, false, fmt.Errorf("store: list rules: limit %d must be positive", limit)
	}
	if after != nil && len(after) <= 8 {
		return nil, nil, false, fmt.Errorf("store: list rules: %w", store.ErrInvalidPosition)
	}
	prefix := strPrefix(dictID)
	upper := append(bytes.Clone(prefix), 0xFF)
	if after != nil {
		upper = append(bytes.Clone(prefix), after...)
	}
	err = s.view(ctx, func(tx *bbolt.Tx) error {
		d, _ := openDictTx(tx, orgID, false)
		if _, _, err := d.get(dictID); err != nil {
			return err
		}
		if d.rules == nil {
			return nil
		}
		c := d.rules.Cursor()
		var last []byte
		for k, v := seekBefore(c, upper); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
			if len(rules) == limit {
				hasMore = true
				break
			}
			r, err := decodeRule(v)
			if err != nil {
				return err
			}
			rules = append(rules, *r)
			last = k[len(prefix):]
		}
		next = bytes.Clone(last)
		return nil
	})
	if err != nil {
		return nil, nil, false, fmt.Errorf("store: list rules: %w", err)
	}
	return rules, next, hasMore, nil
}

// DictionaryRules implements store.DictionaryStore, in one read-only
// transaction: a prefix walk per dictionary.
func (s *Store) DictionaryRules(ctx context.Context, orgID string, ids []string) (defaults []store.PronunciationRule, byID [][]store.PronunciationRule, err error) {
	err = s.view(ctx, func(tx *bbolt.Tx) error {
		d, _ := openDictTx(tx, orgID, false)
		if d.meta != nil {
			if def := d.meta.Get([]byte(dictMetaDefault)); def != nil {
				var err error
				if defaults, err = d.rulesOf(string(def)); err != nil {
					return err
				}
			}
		}
		byID = make([][]store.PronunciationRule, len(ids))
		for i, id := range ids {
			if _, _, err := d.get(id); err != nil {
				return &store.MissingDictionaryError{ID: id}
			}
			var err error
			if byID[i], err = d.rulesOf(id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("store: dictionary rules: %w", err)
	}
	return defaults, byID, nil
}

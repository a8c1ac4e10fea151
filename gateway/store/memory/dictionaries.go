package memory

import (
	"context"
	"fmt"

	"github.com/voxgate/voxgate/gateway/store"
)

// dictEntry is a pronunciation dictionary with its rules. d.RuleCount is
// the number of rules, kept with them.
type dictEntry struct {
	d         store.Dictionary
	rules     map[string]*store.PronunciationRule
	ruleOrder createdList
	words     map[string]string // store.WordKey(word) -> rule id
}

// dict returns dictionary id of orgID, or nil. Callers hold mu.
func (s *Store) dict(orgID, id string) *dictEntry {
	if o := s.org(orgID); o != nil {
		return o.dicts[id]
	}
	return nil
}

// insertDict stores a new dictionary after checking its id and name.
// Callers hold mu for writing and have checked everything else.
func (s *Store) insertDict(d *store.Dictionary) error {
	if o := s.org(d.OrgID); o != nil {
		if o.dicts[d.ID] != nil {
			return fmt.Errorf("dictionary %s: %w", d.ID, store.ErrExists)
		}
		if _, ok := o.dictNames[store.NameKey(d.Name)]; ok {
			return fmt.Errorf("dictionary name %q: %w", d.Name, store.ErrConflict)
		}
	}
	o := s.orgForWrite(d.OrgID)
	e := &dictEntry{d: *d, rules: map[string]*store.PronunciationRule{}, words: map[string]string{}}
	e.d.CreatedAt, e.d.UpdatedAt = utc(d.CreatedAt), utc(d.UpdatedAt)
	o.dicts[d.ID] = e
	o.dictOrder.insert(keyOf(e.d.CreatedAt, d.ID))
	o.dictNames[store.NameKey(d.Name)] = d.ID
	return nil
}

// CreateDictionary implements store.DictionaryStore.
func (s *Store) CreateDictionary(ctx context.Context, d *store.Dictionary, max int) error {
	if err := s.enter(ctx, mCreateDictionary); err != nil {
		return err
	}
	if d == nil {
		return fmt.Errorf("memory store: nil dictionary")
	}
	if err := requireIDs("dictionary id", d.ID, "dictionary org id", d.OrgID); err != nil {
		return err
	}
	if err := d.CheckText(); err != nil {
		return fmt.Errorf("memory store: create dictionary: %w", err)
	}
	s.defaultTimes(&d.CreatedAt, &d.UpdatedAt)
	d.IsDefault, d.RuleCount = false, 0
	s.mu.Lock()
	defer s.mu.Unlock()
	if o := s.org(d.OrgID); (o != nil && len(o.dicts) >= max) || max < 1 {
		return fmt.Errorf("memory store: create dictionary: %d dictionaries: %w", max, store.ErrLimit)
	}
	if err := s.insertDict(d); err != nil {
		return fmt.Errorf("memory store: create dictionary: %w", err)
	}
	return nil
}

// DefaultDictionary implements store.DictionaryStore. The common case, a
// default that exists, takes only the read lock.
func (s *Store) DefaultDictionary(ctx context.Context, orgID string, d *store.Dictionary) (*store.Dictionary, error) {
	if err := s.enter(ctx, mDefaultDictionary); err != nil {
		return nil, err
	}
	s.mu.RLock()
	found := s.defaultDict(orgID)
	s.mu.RUnlock()
	if found != nil {
		return found, nil
	}
	if d == nil {
		return nil, fmt.Errorf("memory store: nil dictionary")
	}
	if err := requireIDs("dictionary id", d.ID, "org id", orgID); err != nil {
		return nil, err
	}
	created := *d
	created.OrgID, created.IsDefault, created.RuleCount = orgID, true, 0
	if err := created.CheckText(); err != nil {
		return nil, fmt.Errorf("memory store: default dictionary: %w", err)
	}
	s.defaultTimes(&created.CreatedAt, &created.UpdatedAt)
	s.mu.Lock()
	defer s.mu.Unlock()
	if found := s.defaultDict(orgID); found != nil {
		return found, nil // another caller created it first
	}
	if err := s.insertDict(&created); err != nil {
		return nil, fmt.Errorf("memory store: default dictionary: %w", err)
	}
	s.orgs[orgID].defaultDict = created.ID
	return s.defaultDict(orgID), nil
}

// defaultDict returns a copy of orgID's default dictionary, or nil.
// Callers hold mu.
func (s *Store) defaultDict(orgID string) *store.Dictionary {
	if o := s.org(orgID); o != nil && o.defaultDict != "" {
		d := o.dicts[o.defaultDict].d
		return &d
	}
	return nil
}

// GetDictionary implements store.DictionaryStore.
func (s *Store) GetDictionary(ctx context.Context, orgID, id string) (*store.Dictionary, error) {
	if err := s.enter(ctx, mGetDictionary); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.dict(orgID, id)
	if e == nil {
		return nil, fmt.Errorf("memory store: get dictionary %s: %w", id, store.ErrNotFound)
	}
	d := e.d
	return &d, nil
}

// UpdateDictionary implements store.DictionaryStore.
func (s *Store) UpdateDictionary(ctx context.Context, d *store.Dictionary) error {
	if err := s.enter(ctx, mUpdateDictionary); err != nil {
		return err
	}
	if d == nil {
		return fmt.Errorf("memory store: nil dictionary")
	}
	if err := d.CheckText(); err != nil {
		return fmt.Errorf("memory store: update dictionary: %w", err)
	}
	if d.UpdatedAt.IsZero() {
		d.UpdatedAt = s.utcNow()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.dict(d.OrgID, d.ID)
	if e == nil {
		return fmt.Errorf("memory store: update dictionary %s: %w", d.ID, store.ErrNotFound)
	}
	o := s.orgs[d.OrgID]
	if oldKey, newKey := store.NameKey(e.d.Name), store.NameKey(d.Name); oldKey != newKey {
		if _, ok := o.dictNames[newKey]; ok {
			return fmt.Errorf("memory store: update dictionary %s: name %q: %w", d.ID, d.Name, store.ErrConflict)
		}
		delete(o.dictNames, oldKey)
		o.dictNames[newKey] = d.ID
	}
	e.d.Name, e.d.Description, e.d.UpdatedAt = d.Name, d.Description, utc(d.UpdatedAt)
	*d = e.d
	return nil
}

// DeleteDictionary implements store.DictionaryStore: the dictionary with
// its rules, at once.
func (s *Store) DeleteDictionary(ctx context.Context, orgID, id string) error {
	if err := s.enter(ctx, mDeleteDictionary); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.dict(orgID, id)
	if e == nil {
		return fmt.Errorf("memory store: delete dictionary %s: %w", id, store.ErrNotFound)
	}
	o := s.orgs[orgID]
	for ruleID := range e.rules {
		delete(o.ruleDicts, ruleID)
	}
	if o.defaultDict == id {
		o.defaultDict = ""
	}
	delete(o.dictNames, store.NameKey(e.d.Name))
	o.dictOrder.remove(keyOf(e.d.CreatedAt, id))
	delete(o.dicts, id)
	return nil
}

// ListDictionaries implements store.DictionaryStore; it reads only the
// page, like ListVoices.
func (s *Store) ListDictionaries(ctx context.Context, orgID string, limit int, after store.Position) (dicts []store.Dictionary, next store.Position, hasMore bool, err error) {
	if err := s.enter(ctx, mListDictionaries); err != nil {
		return nil, nil, false, err
	}
	if err := checkPage(limit, after); err != nil {
		return nil, nil, false, fmt.Errorf("memory store: list dictionaries: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	o := s.org(orgID)
	if o == nil {
		return nil, nil, false, nil
	}
	keys, next, hasMore := o.dictOrder.newest(limit, after)
	for _, k := range keys {
		dicts = append(dicts, o.dicts[k.id].d)
	}
	return dicts, next, hasMore, nil
}

// CreateRule implements store.DictionaryStore.
func (s *Store) CreateRule(ctx context.Context, r *store.PronunciationRule, max int) error {
	if err := s.enter(ctx, mCreateRule); err != nil {
		return err
	}
	if r == nil {
		return fmt.Errorf("memory store: nil rule")
	}
	if err := requireIDs("rule id", r.ID, "rule org id", r.OrgID, "rule dictionary id", r.DictionaryID); err != nil {
		return err
	}
	if err := r.CheckText(); err != nil {
		return fmt.Errorf("memory store: create rule: %w", err)
	}
	s.defaultTimes(&r.CreatedAt, &r.UpdatedAt)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.dict(r.OrgID, r.DictionaryID)
	if e == nil {
		return fmt.Errorf("memory store: create rule: dictionary %s: %w", r.DictionaryID, store.ErrNotFound)
	}
	o := s.orgs[r.OrgID]
	if _, ok := o.ruleDicts[r.ID]; ok {
		return fmt.Errorf("memory store: create rule %s: %w", r.ID, store.ErrExists)
	}
	word := store.WordKey(r.Word)
	if _, ok := e.words[word]; ok {
		return fmt.Errorf("memory store: create rule: word %q: %w", r.Word, store.ErrConflict)
	}
	if len(e.rules) >= max {
		return fmt.Errorf("memory store: create rule: %d rules: %w", max, store.ErrLimit)
	}
	stored := *r
	stored.CreatedAt, stored.UpdatedAt = utc(r.CreatedAt), utc(r.UpdatedAt)
	e.rules[r.ID] = &stored
	e.ruleOrder.insert(keyOf(stored.CreatedAt, r.ID))
	e.words[word] = r.ID
	o.ruleDicts[r.ID] = r.DictionaryID
	e.d.RuleCount = len(e.rules)
	e.d.UpdatedAt = stored.CreatedAt
	return nil
}

// rule returns rule id of dictionary dictID of orgID and its dictionary,
// or nils (also for a rule of another dictionary). Callers hold mu.
func (s *Store) rule(orgID, dictID, id string) (*store.PronunciationRule, *dictEntry) {
	if e := s.dict(orgID, dictID); e != nil && e.rules[id] != nil {
		return e.rules[id], e
	}
	return nil, nil
}

// GetRule implements store.DictionaryStore.
func (s *Store) GetRule(ctx context.Context, orgID, dictID, id string) (*store.PronunciationRule, error) {
	if err := s.enter(ctx, mGetRule); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, _ := s.rule(orgID, dictID, id)
	if r == nil {
		return nil, fmt.Errorf("memory store: get rule %s: %w", id, store.ErrNotFound)
	}
	c := *r
	return &c, nil
}

// UpdateRule implements store.DictionaryStore.
func (s *Store) UpdateRule(ctx context.Context, r *store.PronunciationRule) error {
	if err := s.enter(ctx, mUpdateRule); err != nil {
		return err
	}
	if r == nil {
		return fmt.Errorf("memory store: nil rule")
	}
	if err := r.CheckText(); err != nil {
		return fmt.Errorf("memory store: update rule: %w", err)
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = s.utcNow()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, e := s.rule(r.OrgID, r.DictionaryID, r.ID)
	if cur == nil {
		return fmt.Errorf("memory store: update rule %s: %w", r.ID, store.ErrNotFound)
	}
	if oldWord, newWord := store.WordKey(cur.Word), store.WordKey(r.Word); oldWord != newWord {
		if _, ok := e.words[newWord]; ok {
			return fmt.Errorf("memory store: update rule %s: word %q: %w", r.ID, r.Word, store.ErrConflict)
		}
		delete(e.words, oldWord)
		e.words[newWord] = cur.ID
	}
	cur.Word, cur.Replacement, cur.CaseSensitive, cur.UpdatedAt = r.Word, r.Replacement, r.CaseSensitive, utc(r.UpdatedAt)
	cur.Kind, cur.Alphabet, cur.Phoneme = r.Kind, r.Alphabet, r.Phoneme
	*r = *cur
	e.d.UpdatedAt = cur.UpdatedAt
	return nil
}

// DeleteRule implements store.DictionaryStore.
func (s *Store) DeleteRule(ctx context.Context, orgID, dictID, id string) error {
	if err := s.enter(ctx, mDeleteRule); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, e := s.rule(orgID, dictID, id)
	if cur == nil {
		return fmt.Errorf("memory store: delete rule %s: %w", id, store.ErrNotFound)
	}
	e.ruleOrder.remove(keyOf(cur.CreatedAt, id))
	delete(e.words, store.WordKey(cur.Word))
	delete(e.rules, id)
	delete(s.orgs[orgID].ruleDicts, id)
	e.d.RuleCount = len(e.rules)
	e.d.UpdatedAt = s.utcNow()
	return nil
}

// ListRules implements store.DictionaryStore: newest created first, ids
// breaking ties; a position has the shape of a dictionary's.
func (s *Store) ListRules(ctx context.Context, orgID, dictID string, limit int, after store.Position) (rules []store.PronunciationRule, next store.Position, hasMore bool, err error) {
	if err := s.enter(ctx, mListRules); err != nil {
		return nil, nil, false, err
	}
	if err := checkPage(limit, after); err != nil {
		return nil, nil, false, fmt.Errorf("memory store: list rules: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.dict(orgID, dictID)
	if e == nil {
		return nil, nil, false, fmt.Errorf("memory store: list rules: dictionary %s: %w", dictID, store.ErrNotFound)
	}
	keys, next, hasMore := e.ruleOrder.newest(limit, after)
	for _, k := range keys {
		rules = append(rules, *e.rules[k.id])
	}
	return rules, next, hasMore, nil
}

// DictionaryRules implements store.DictionaryStore, under one read lock:
// the rules of the default and of each dictionary asked for, oldest
// first.
func (s *Store) DictionaryRules(ctx context.Context, orgID string, ids []string) (defaults []store.PronunciationRule, byID [][]store.PronunciationRule, err error) {
	if err := s.enter(ctx, mDictionaryRules); err != nil {
		return nil, nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if o := s.org(orgID); o != nil && o.defaultDict != "" {
		defaults = o.dicts[o.defaultDict].rulesInOrder()
	}
	byID = make([][]store.PronunciationRule, len(ids))
	for i, id := range ids {
		e := s.dict(orgID, id)
		if e == nil {
			return nil, nil, fmt.Errorf("memory store: dictionary rules: %w", &store.MissingDictionaryError{ID: id})
		}
		byID[i] = e.rulesInOrder()
	}
	return defaults, byID, nil
}

// rulesInOrder copies the dictionary's rules, oldest first.
func (e *dictEntry) rulesInOrder() []store.PronunciationRule {
	if len(e.ruleOrder) == 0 {
		return nil
	}
	out := make([]store.PronunciationRule, len(e.ruleOrder))
	for i, k := range e.ruleOrder {
		out[i] = *e.rules[k.id]
	}
	return out
}

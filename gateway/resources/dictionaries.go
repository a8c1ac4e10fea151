package resources

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/store"
)

// Pronunciation dictionaries: the organization's named rule sets, the one
// default dictionary every synthesis request applies, and their rules
// (docs/compatibility.md#pronunciations). How a request's rules are put
// together is the pipeline's (speech.layerRules).

// Bounds of what an organization may keep.
const (
	MaxDictionaries          = 100
	MaxRulesPerDictionary    = 1000
	MaxDictionaryNameChars   = 100
	MaxDictionaryDescription = 500
)

// DefaultDictionaryID is the alias of an organization's default dictionary
// in paths (/v1/pronunciation-dictionaries/default).
const DefaultDictionaryID = "default"

// DictionarySpec is a dictionary as a caller creates or changes it; nil
// fields are left as they are.
type DictionarySpec struct {
	Name, Description *string
}

// RuleSpec is a rule as a caller creates or changes it; nil fields are
// left as they are.
type RuleSpec struct {
	Word, Replacement *string
	CaseSensitive     *bool
	// Kind, Alphabet and Phoneme make a phoneme rule (store.RulePhoneme);
	// a rule created without a kind is an alias.
	Kind, Alphabet, Phoneme *string
}

// set applies the spec's non-nil fields to r. Changing a rule's kind to
// alias drops its alphabet and phoneme unless the spec gives them.
func (spec RuleSpec) set(r *store.PronunciationRule) {
	if spec.Word != nil {
		r.Word = *spec.Word
	}
	if spec.Replacement != nil {
		r.Replacement = *spec.Replacement
	}
	if spec.CaseSensitive != nil {
		r.CaseSensitive = *spec.CaseSensitive
	}
	if spec.Kind != nil {
		r.Kind = *spec.Kind
		if r.Kind == store.RuleAlias && spec.Alphabet == nil && spec.Phoneme == nil {
			r.Alphabet, r.Phoneme = "", ""
		}
	}
	if spec.Alphabet != nil {
		r.Alphabet = *spec.Alphabet
	}
	if spec.Phoneme != nil {
		r.Phoneme = *spec.Phoneme
	}
	if r.Kind == "" {
		r.Kind = store.RuleAlias
	}
}

// validateSpec checks a dictionary's fields; creating needs a name.
func (d DictionarySpec) validate(creating bool) []problem.FieldError {
	var fe []problem.FieldError
	switch {
	case d.Name == nil && creating:
		fe = append(fe, problem.Field("is required", "name"))
	case d.Name != nil && (strings.TrimSpace(*d.Name) == "" || utf8.RuneCountInString(*d.Name) > MaxDictionaryNameChars):
		fe = append(fe, problem.Field(fmt.Sprintf("must be 1 to %d characters", MaxDictionaryNameChars), "name"))
	}
	if d.Description != nil && utf8.RuneCountInString(*d.Description) > MaxDictionaryDescription {
		fe = append(fe, problem.Field(fmt.Sprintf("must be at most %d characters", MaxDictionaryDescription), "description"))
	}
	return fe
}

// dictionaryErr maps store failures of a dictionary operation to
// problems.
func dictionaryErr(err error, id string) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return problem.New(problem.DictionaryNotFound, "no pronunciation dictionary %s in this organization", id)
	case errors.Is(err, store.ErrConflict):
		return problem.New(problem.Conflict, "this organization has a pronunciation dictionary of that name")
	case errors.Is(err, store.ErrLimit):
		return problem.New(problem.LimitReached, "this organization has %d pronunciation dictionaries, the most it may keep; delete one first", MaxDictionaries)
	}
	return err
}

// ruleErr maps store failures of a rule operation to problems.
func ruleErr(err error, dictID, id string) error {
	switch {
	case errors.Is(err, store.ErrNotFound) && id != "":
		return problem.New(problem.RuleNotFound, "no rule %s in pronunciation dictionary %s", id, dictID)
	case errors.Is(err, store.ErrNotFound):
		return problem.New(problem.DictionaryNotFound, "no pronunciation dictionary %s in this organization", dictID)
	case errors.Is(err, store.ErrConflict):
		return problem.New(problem.Conflict, "the dictionary has a rule for that word (words are compared case-insensitively)")
	case errors.Is(err, store.ErrLimit):
		return problem.New(problem.LimitReached, "the dictionary has %d rules, the most one may hold; use another dictionary", MaxRulesPerDictionary)
	}
	return err
}

// Dictionary returns dictionary id of org; DefaultDictionaryID names the
// default, which is created on first use. An id that is not a uuid is
// not found, like one of another organization.
func (s *Service) Dictionary(ctx context.Context, org, id string) (*store.Dictionary, error) {
	if id == DefaultDictionaryID || strings.EqualFold(id, DefaultDictionaryID) {
		d, err := s.store.DefaultDictionary(ctx, org, &store.Dictionary{ID: uuid.NewString(), Name: store.DefaultDictionaryName})
		if err != nil {
			return nil, dictionaryErr(err, id)
		}
		return d, nil
	}
	if uuid.Validate(id) != nil {
		return nil, problem.New(problem.DictionaryNotFound, "no pronunciation dictionary %q in this organization (an id is a uuid, or \"default\")", id)
	}
	d, err := s.store.GetDictionary(ctx, org, id)
	if err != nil {
		return nil, dictionaryErr(err, id)
	}
	return d, nil
}

// EnsureDefaultDictionary creates org's default dictionary if it has none
// yet, so that it is listed from the first list on.
func (s *Service) EnsureDefaultDictionary(ctx context.Context, org string) error {
	_, err := s.Dictionary(ctx, org, DefaultDictionaryID)
	return err
}

// CreateDictionary creates a dictionary of org. The default dictionary's
// name is reserved.
func (s *Service) CreateDictionary(ctx context.Context, org string, spec DictionarySpec, now time.Time) (*store.Dictionary, error) {
	if fe := spec.validate(true); len(fe) > 0 {
		return nil, problem.Validation(fe...)
	}
	name := strings.TrimSpace(*spec.Name)
	if store.NameKey(name) == store.NameKey(store.DefaultDictionaryName) {
		return nil, problem.New(problem.Conflict, "the name %q is the organization's default dictionary's", store.DefaultDictionaryName)
	}
	d := &store.Dictionary{ID: uuid.NewString(), OrgID: org, Name: name, CreatedAt: now, UpdatedAt: now}
	if spec.Description != nil {
		d.Description = *spec.Description
	}
	if err := s.EnsureDefaultDictionary(ctx, org); err != nil {
		return nil, err
	}
	if err := s.store.CreateDictionary(ctx, d, MaxDictionaries); err != nil {
		return nil, dictionaryErr(err, d.ID)
	}
	return d, nil
}

// UpdateDictionary changes a dictionary's name or description. The
// default dictionary keeps its name.
func (s *Service) UpdateDictionary(ctx context.Context, org, id string, spec DictionarySpec, now time.Time) (*store.Dictionary, error) {
	if fe := spec.validate(false); len(fe) > 0 {
		return nil, problem.Validation(fe...)
	}
	d, err := s.Dictionary(ctx, org, id)
	if err != nil {
		return nil, err
	}
	if spec.Name != nil {
		name := strings.TrimSpace(*spec.Name)
		switch {
		case d.IsDefault && name != d.Name:
			return nil, problem.New(problem.Conflict, "the default dictionary keeps its name")
		case !d.IsDefault && store.NameKey(name) == store.NameKey(store.DefaultDictionaryName):
			return nil, problem.New(problem.Conflict, "the name %q is the organization's default dictionary's", store.DefaultDictionaryName)
		}
		d.Name = name
	}
	if spec.Description != nil {
		d.Description = *spec.Description
	}
	d.UpdatedAt = now
	if err := s.store.UpdateDictionary(ctx, d); err != nil {
		return nil, dictionaryErr(err, d.ID)
	}
	return d, nil
}

// DeleteDictionary deletes a dictionary and its rules. The default
// dictionary always applies, so it cannot be deleted (409); its rules can.
func (s *Service) DeleteDictionary(ctx context.Context, org, id string) error {
	d, err := s.Dictionary(ctx, org, id)
	if err != nil {
		return err
	}
	if d.IsDefault {
		return problem.New(problem.Conflict, "the default dictionary always applies and cannot be deleted; delete its rules instead")
	}
	if err := s.store.DeleteDictionary(ctx, org, d.ID); err != nil {
		return dictionaryErr(err, d.ID)
	}
	return nil
}

// ListDictionaries returns a page of org's dictionaries, the default
// (created on first use) among them.
func (s *Service) ListDictionaries(ctx context.Context, org string, limit int, after store.Position) ([]store.Dictionary, store.Position, bool, error) {
	if err := s.EnsureDefaultDictionary(ctx, org); err != nil {
		return nil, nil, false, err
	}
	return s.store.ListDictionaries(ctx, org, limit, after)
}

// CreateRule adds a rule to a dictionary of org.
func (s *Service) CreateRule(ctx context.Context, org, dictID string, spec RuleSpec, now time.Time) (*store.PronunciationRule, error) {
	var fe []problem.FieldError
	if spec.Word == nil {
		fe = append(fe, problem.Field("is required", "word"))
	}
	phoneme := spec.Kind != nil && *spec.Kind == store.RulePhoneme
	if spec.Replacement == nil && !phoneme {
		fe = append(fe, problem.Field("is required", "replacement"))
	}
	if len(fe) > 0 {
		return nil, problem.Validation(fe...)
	}
	r := &store.PronunciationRule{ID: uuid.NewString(), OrgID: org, CreatedAt: now, UpdatedAt: now}
	spec.set(r)
	if fe := s.checkRule(r); len(fe) > 0 {
		return nil, problem.Validation(fe...)
	}
	d, err := s.Dictionary(ctx, org, dictID)
	if err != nil {
		return nil, err
	}
	r.DictionaryID = d.ID
	if err := s.store.CreateRule(ctx, r, MaxRulesPerDictionary); err != nil {
		return nil, ruleErr(err, d.ID, "")
	}
	return r, nil
}

// Rule returns a rule of a dictionary of org.
func (s *Service) Rule(ctx context.Context, org, dictID, id string) (*store.PronunciationRule, error) {
	d, err := s.Dictionary(ctx, org, dictID)
	if err != nil {
		return nil, err
	}
	if uuid.Validate(id) != nil {
		return nil, problem.New(problem.RuleNotFound, "no rule %q in pronunciation dictionary %s", id, d.ID)
	}
	r, err := s.store.GetRule(ctx, org, d.ID, id)
	if err != nil {
		return nil, ruleErr(err, d.ID, id)
	}
	return r, nil
}

// UpdateRule changes a rule's word, replacement, case sensitivity, kind
// or pronunciation.
func (s *Service) UpdateRule(ctx context.Context, org, dictID, id string, spec RuleSpec, now time.Time) (*store.PronunciationRule, error) {
	r, err := s.Rule(ctx, org, dictID, id)
	if err != nil {
		return nil, err
	}
	spec.set(r)
	if fe := s.checkRule(r); len(fe) > 0 {
		return nil, problem.Validation(fe...)
	}
	r.UpdatedAt = now
	if err := s.store.UpdateRule(ctx, r); err != nil {
		return nil, ruleErr(err, r.DictionaryID, id)
	}
	return r, nil
}

// DeleteRule deletes a rule of a dictionary of org.
func (s *Service) DeleteRule(ctx context.Context, org, dictID, id string) error {
	r, err := s.Rule(ctx, org, dictID, id)
	if err != nil {
		return err
	}
	if err := s.store.DeleteRule(ctx, org, r.DictionaryID, id); err != nil {
		return ruleErr(err, r.DictionaryID, id)
	}
	return nil
}

// ListRules returns a page of a dictionary's rules, newest first.
func (s *Service) ListRules(ctx context.Context, org, dictID string, limit int, after store.Position) ([]store.PronunciationRule, store.Position, bool, error) {
	d, err := s.Dictionary(ctx, org, dictID)
	if err != nil {
		return nil, nil, false, err
	}
	rules, next, more, err := s.store.ListRules(ctx, org, d.ID, limit, after)
	if err != nil && errors.Is(err, store.ErrNotFound) {
		return nil, nil, false, ruleErr(err, d.ID, "")
	}
	return rules, next, more, err
}

// ImportDictionary creates a dictionary with rules (an imported PLS
// document) all at once: every rule is checked, and no two may have the
// same word, before anything is stored, and a failure while storing the
// rules deletes the dictionary again, so a refused import leaves nothing
// behind. Rule errors point at ["rules", i, field].
func (s *Service) ImportDictionary(ctx context.Context, org string, spec DictionarySpec, rules []RuleSpec, now time.Time) (*store.Dictionary, error) {
	if len(rules) > MaxRulesPerDictionary {
		return nil, problem.Validation(problem.Field(fmt.Sprintf("%d rules; a dictionary holds at most %d", len(rules), MaxRulesPerDictionary), "rules"))
	}
	made := make([]*store.PronunciationRule, len(rules))
	seen := make(map[string]int, len(rules))
	var fe []problem.FieldError
	for i, spec := range rules {
		r := &store.PronunciationRule{ID: uuid.NewString(), OrgID: org, CreatedAt: now.Add(time.Duration(i)), UpdatedAt: now}
		spec.set(r)
		for _, e := range s.checkRule(r) {
			fe = append(fe, problem.Field(e.Message, append([]string{"rules", fmt.Sprint(i)}, e.Path...)...))
		}
		if j, ok := seen[store.WordKey(r.Word)]; ok {
			fe = append(fe, problem.Field(fmt.Sprintf("has the word of rule %d (words are compared case-insensitively)", j), "rules", fmt.Sprint(i), "word"))
		}
		seen[store.WordKey(r.Word)] = i
		made[i] = r
	}
	if len(fe) > 0 {
		return nil, problem.Validation(fe...)
	}
	d, err := s.CreateDictionary(ctx, org, spec, now)
	if err != nil {
		return nil, err
	}
	for _, r := range made {
		r.DictionaryID = d.ID
		if err := s.store.CreateRule(ctx, r, MaxRulesPerDictionary); err != nil {
			// Leave no half dictionary: the caller may try again whole.
			if derr := s.store.DeleteDictionary(context.WithoutCancel(ctx), org, d.ID); derr != nil {
				return nil, fmt.Errorf("import: %w (and deleting the half-imported dictionary %s: %v)", ruleErr(err, d.ID, ""), d.ID, derr)
			}
			return nil, ruleErr(err, d.ID, "")
		}
	}
	d.RuleCount = len(made)
	return d, nil
}

// AllRules returns every rule of a dictionary of org, oldest first.
func (s *Service) AllRules(ctx context.Context, org, dictID string) (*store.Dictionary, []store.PronunciationRule, error) {
	d, err := s.Dictionary(ctx, org, dictID)
	if err != nil {
		return nil, nil, err
	}
	var out []store.PronunciationRule
	var after store.Position
	for {
		page, next, more, err := s.store.ListRules(ctx, org, d.ID, 200, after)
		if err != nil {
			return nil, nil, ruleErr(err, d.ID, "")
		}
		out = append(out, page...)
		if !more {
			break
		}
		after = next
	}
	slices.Reverse(out) // listed newest first
	return d, out, nil
}

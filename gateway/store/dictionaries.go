package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Pronunciation dictionaries: named sets of word-replacement rules of an
// organization, one of which (the default) applies to every synthesis
// request. See docs/compatibility.md#pronunciations.

// Errors of the dictionary and rule writes, beside ErrNotFound and
// ErrExists.
var (
	// ErrConflict is returned when a write would break a uniqueness rule:
	// a dictionary name or a word already taken.
	ErrConflict = errors.New("conflicts with an existing record")
	// ErrLimit is returned when a write would take an organization or a
	// dictionary past the bound the caller gave.
	ErrLimit = errors.New("limit reached")
)

// DefaultDictionaryName is the name of every organization's default
// dictionary; no other dictionary may take it.
const DefaultDictionaryName = "Default"

// Dictionary is a named set of pronunciation rules.
type Dictionary struct {
	// ID is the dictionary's uuid.
	ID string
	// OrgID is the owning organization.
	OrgID string
	// Name is unique in the organization, compared case-insensitively
	// (NameKey).
	Name string
	// Description is free-form.
	Description string
	// IsDefault marks the organization's default dictionary, which every
	// synthesis request applies. Only DefaultDictionary creates it.
	IsDefault bool
	// RuleCount is the number of rules the dictionary holds; the store
	// keeps it.
	RuleCount int
	// CreatedAt orders the dictionary list (newest first).
	CreatedAt time.Time
	// UpdatedAt is the last change of the dictionary's name or
	// description, or of its rules.
	UpdatedAt time.Time
}

// PronunciationRule replaces a word (or several words) before synthesis.
type PronunciationRule struct {
	// ID is the rule's uuid.
	ID string
	// OrgID is the owning organization.
	OrgID string
	// DictionaryID is the dictionary the rule belongs to.
	DictionaryID string
	// Word is what the rule replaces; unique in its dictionary, compared
	// case-insensitively (WordKey).
	Word string
	// Replacement is what is spoken instead: an alias rule's text, and
	// a phoneme rule's optional stand-in where a provider takes no
	// phonemes (empty: the word is spoken as written).
	Replacement string
	// CaseSensitive makes the rule match Word's exact case only.
	CaseSensitive bool
	// Kind is RuleAlias (also when empty: rules stored before kinds
	// existed) or RulePhoneme.
	Kind string
	// Alphabet ("ipa" or "cmu") and Phoneme are a phoneme rule's
	// pronunciation; empty for an alias rule.
	Alphabet, Phoneme string
	// CreatedAt orders the rule list (newest first).
	CreatedAt time.Time
	// UpdatedAt is the rule's last change.
	UpdatedAt time.Time
}

// Rule kinds (PronunciationRule.Kind).
const (
	// RuleAlias replaces the word by other text before synthesis.
	RuleAlias = "alias"
	// RulePhoneme gives the word's pronunciation in a phonetic alphabet.
	RulePhoneme = "phoneme"
)

// IsPhoneme reports whether r gives a pronunciation rather than text.
func (r *PronunciationRule) IsPhoneme() bool { return r.Kind == RulePhoneme }

// NameKey is the form a dictionary name is unique in.
func NameKey(name string) string { return strings.ToLower(name) }

// WordKey is the form a rule's word is unique in, within its dictionary;
// two rules with the same key are "the same word" when dictionaries are
// layered.
func WordKey(word string) string { return strings.ToLower(word) }

// MissingDictionaryError names the dictionary DictionaryRules did not
// find in the organization. It matches ErrNotFound.
type MissingDictionaryError struct{ ID string }

func (e *MissingDictionaryError) Error() string { return fmt.Sprintf("dictionary %s: not found", e.ID) }

// Is makes errors.Is(err, ErrNotFound) hold.
func (e *MissingDictionaryError) Is(target error) bool { return target == ErrNotFound }

// DictionaryStore stores pronunciation dictionaries and their rules.
// Every method reads and writes only the organization it is given.
type DictionaryStore interface {
	// CreateDictionary stores a new, non-default dictionary. The caller
	// sets ID, OrgID and Name; zero CreatedAt means now and zero
	// UpdatedAt means CreatedAt; RuleCount starts at 0. A name taken in
	// the organization fails with ErrConflict, an organization holding
	// max dictionaries with ErrLimit, a taken ID with ErrExists.
	CreateDictionary(ctx context.Context, d *Dictionary, max int) error
	// DefaultDictionary returns orgID's default dictionary, creating it
	// from d (ID, Name, times; IsDefault is set) when the organization has
	// none yet. Concurrent first calls create one.
	DefaultDictionary(ctx context.Context, orgID string, d *Dictionary) (*Dictionary, error)
	// GetDictionary returns dictionary id of orgID, or ErrNotFound.
	GetDictionary(ctx context.Context, orgID, id string) (*Dictionary, error)
	// UpdateDictionary sets the name, description and UpdatedAt of
	// dictionary d.ID of d.OrgID; ErrNotFound, or ErrConflict for a
	// taken name.
	UpdateDictionary(ctx context.Context, d *Dictionary) error
	// DeleteDictionary removes dictionary id of orgID with all its rules,
	// or fails with ErrNotFound.
	DeleteDictionary(ctx context.Context, orgID, id string) error
	// ListDictionaries returns up to limit dictionaries of orgID, newest
	// created first, strictly after position after, like ListVoices.
	ListDictionaries(ctx context.Context, orgID string, limit int, after Position) (dicts []Dictionary, next Position, hasMore bool, err error)

	// CreateRule adds a rule to dictionary r.DictionaryID of r.OrgID. The
	// caller sets ID, OrgID, DictionaryID, Word and Replacement; times
	// default as for dictionaries, and the dictionary's UpdatedAt becomes
	// the rule's CreatedAt. A missing dictionary fails with ErrNotFound,
	// a word the dictionary has with ErrConflict, a dictionary holding
	// max rules with ErrLimit, a taken ID with ErrExists.
	CreateRule(ctx context.Context, r *PronunciationRule, max int) error
	// GetRule returns rule id of dictionary dictID of orgID, or
	// ErrNotFound.
	GetRule(ctx context.Context, orgID, dictID, id string) (*PronunciationRule, error)
	// UpdateRule sets the word, replacement, case sensitivity and
	// UpdatedAt of rule r.ID of dictionary r.DictionaryID of r.OrgID;
	// ErrNotFound, or ErrConflict for a word the dictionary has in
	// another rule.
	UpdateRule(ctx context.Context, r *PronunciationRule) error
	// DeleteRule removes rule id of dictionary dictID of orgID, or fails
	// with ErrNotFound.
	DeleteRule(ctx context.Context, orgID, dictID, id string) error
	// ListRules returns up to limit rules of dictionary dictID of orgID,
	// newest created first, strictly after position after. A missing
	// dictionary fails with ErrNotFound.
	ListRules(ctx context.Context, orgID, dictID string, limit int, after Position) (rules []PronunciationRule, next Position, hasMore bool, err error)

	// DictionaryRules returns, from one consistent read, the rules of
	// orgID's default dictionary (none when it has none yet) and those of
	// each dictionary of ids, in the order of ids. An id that is not a
	// dictionary of orgID fails with a *MissingDictionaryError.
	DictionaryRules(ctx context.Context, orgID string, ids []string) (defaults []PronunciationRule, byID [][]PronunciationRule, err error)
}

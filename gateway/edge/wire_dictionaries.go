package edge

import (
	"time"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/resources"
	"github.com/voxgate/voxgate/gateway/store"
)

// The JSON shapes of the pronunciation dictionary routes.

// dictionaryJSON is a pronunciation dictionary on the wire.
type dictionaryJSON struct {
	ID          string    `json:"id"`
	OrgID       string    `json:"org_id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	IsDefault   bool      `json:"is_default"`
	RuleCount   int       `json:"rule_count"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

func dictionaryOut(d *store.Dictionary) dictionaryJSON { return dictionaryJSON(*d) }

// ruleJSON is a pronunciation rule on the wire.
type ruleJSON struct {
	ID            string    `json:"id"`
	DictionaryID  string    `json:"dictionary_id"`
	Word          string    `json:"word"`
	Replacement   string    `json:"replacement"`
	CaseSensitive bool      `json:"case_sensitive"`
	Kind          string    `json:"kind"`
	Alphabet      string    `json:"alphabet,omitempty"`
	Phoneme       string    `json:"phoneme,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

func ruleOut(r *store.PronunciationRule) ruleJSON {
	kind := r.Kind
	if kind == "" {
		kind = store.RuleAlias // stored before rules had kinds
	}
	return ruleJSON{ID: r.ID, DictionaryID: r.DictionaryID, Word: r.Word, Replacement: r.Replacement,
		CaseSensitive: r.CaseSensitive, Kind: kind, Alphabet: r.Alphabet, Phoneme: r.Phoneme, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// dictionaryRequest is the body of creating or changing a dictionary.
type dictionaryRequest struct {
	Name        *string `json:"name"`
	Description *string `json:"description"`
}

// ruleRequest is the body of creating or changing a rule. The resource
// says case_sensitive and a request's inline rules caseSensitive: both
// are taken.
type ruleRequest struct {
	Word              *string `json:"word"`
	Replacement       *string `json:"replacement"`
	CaseSensitive     *bool   `json:"case_sensitive"`
	CaseSensitiveAlso *bool   `json:"caseSensitive"`
	Kind              *string `json:"kind"`
	Alphabet          *string `json:"alphabet"`
	Phoneme           *string `json:"phoneme"`
}

func (r *ruleRequest) spec() (resources.RuleSpec, error) {
	cs := r.CaseSensitive
	if r.CaseSensitiveAlso != nil {
		if cs != nil && *cs != *r.CaseSensitiveAlso {
			return resources.RuleSpec{}, problem.Validation(problem.Field("give case_sensitive once (caseSensitive says otherwise)", "caseSensitive"))
		}
		cs = r.CaseSensitiveAlso
	}
	return resources.RuleSpec{Word: r.Word, Replacement: r.Replacement, CaseSensitive: cs, Kind: r.Kind, Alphabet: r.Alphabet, Phoneme: r.Phoneme}, nil
}

package store

import (
	"errors"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Text the store can hold.
//
// Every string a backend keeps must be valid UTF-8 without U+0000 (NUL):
// PostgreSQL's text type cannot hold NUL at all and refuses invalid UTF-8,
// and bbolt's JSON records would silently replace invalid UTF-8. So the
// rule is the same for every backend, whatever one of them could keep: the
// HTTP layer refuses such text at the edge (400 validation_failed naming
// the field), every backend refuses a write carrying it with an error
// matching ErrInvalidText before it changes anything, and the request-log
// writer (reqlog) sanitizes a row a backend refused, since a log row must
// not be lost for one bad string in it.

// ErrInvalidText is matched by the error of a write whose record holds a
// string that is not valid text (see ValidText): a NUL or invalid UTF-8.
// Nothing is written. The HTTP layer answers 400 for it, never 500.
var ErrInvalidText = errors.New("text the store cannot hold (U+0000 or invalid UTF-8)")

// TextError names the field of a record whose text a backend refused. It
// matches ErrInvalidText.
type TextError struct {
	// Field names the field, in the record's snake_case form
	// ("voice_id", "tags.2", "provider_options.lang").
	Field string
	// Reason says what is wrong, without quoting the text.
	Reason string
}

func (e *TextError) Error() string {
	return e.Field + ": " + e.Reason + ": " + ErrInvalidText.Error()
}

// Is makes errors.Is(err, ErrInvalidText) hold.
func (e *TextError) Is(target error) bool { return target == ErrInvalidText }

// ValidText reports whether every backend can hold s: valid UTF-8 with no
// U+0000. It does not allocate; a batch of log rows checks every string
// of every row with it (BenchmarkLogRowCheckText).
func ValidText(s string) bool {
	return strings.IndexByte(s, 0) < 0 && utf8.ValidString(s)
}

// CheckText returns nil when s is valid text, else a *TextError naming
// field.
func CheckText(field, s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return &TextError{Field: field, Reason: "contains U+0000 (NUL)"}
	}
	if !utf8.ValidString(s) {
		return &TextError{Field: field, Reason: "is not valid UTF-8"}
	}
	return nil
}

// SanitizeText returns s with every NUL and every run of invalid UTF-8
// replaced by U+FFFD, the replacement character: the text a backend can
// hold that is closest to s, with the places that were changed visible.
// Valid text is returned as it is, without allocating.
func SanitizeText(s string) string {
	if ValidText(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// namedText is one string field of a record and its name.
type namedText struct {
	name string
	s    *string
}

// logRowText lists the string fields of r. An array, not a slice, so that
// checking a row in a batch allocates nothing; a new string field of
// LogRow belongs here.
func (r *LogRow) logRowText() [19]namedText {
	return [...]namedText{
		{"request_id", &r.RequestID}, {"parent_request_id", &r.ParentRequestID}, {"org_id", &r.OrgID},
		{"path", &r.Path}, {"provider", &r.Provider}, {"model", &r.Model}, {"voice_id", &r.VoiceID},
		{"voice_ref", &r.VoiceRef}, {"error_code", &r.ErrorCode}, {"error_detail", &r.ErrorDetail},
		{"provider_options", &r.ProviderOptions}, {"moderation_decision", &r.ModerationDecision},
		{"moderation_reason_type", &r.ModerationReasonType}, {"moderation_reason_detail", &r.ModerationReasonDetail},
		{"key_id", &r.KeyID}, {"cache", &r.Cache}, {"transcoded", &r.Transcoded}, {"provenance", &r.Provenance},
		{"currency", &r.Currency},
	}
}

// CheckText returns a *TextError naming the first string field of r that
// is not valid text, or nil. It does not allocate for a valid row.
func (r *LogRow) CheckText() error {
	for _, f := range r.logRowText() {
		if !ValidText(*f.s) {
			return CheckText(f.name, *f.s)
		}
	}
	return nil
}

// Sanitize replaces, in every string field of r, what a backend cannot
// hold (see SanitizeText), marks r Sanitized when it changed anything, and
// reports whether it did.
func (r *LogRow) Sanitize() bool {
	changed := false
	for _, f := range r.logRowText() {
		if !ValidText(*f.s) {
			*f.s = SanitizeText(*f.s)
			changed = true
		}
	}
	if changed {
		r.Sanitized = true
	}
	return changed
}

// CheckText returns a *TextError naming the first string of k that is not
// valid text, or nil.
func (k *APIKey) CheckText() error {
	return firstInvalid(
		[]namedText{{"id", &k.ID}, {"org_id", &k.OrgID}, {"name", &k.Name}, {"prefix", &k.Prefix}, {"scope.budget_period", &k.Scope.BudgetPeriod}},
		listText("scope.providers", k.Scope.Providers), listText("scope.models", k.Scope.Models))
}

// CheckText returns a *TextError naming the first string of v (its
// provider options at any depth, keys included) that is not valid text,
// or nil.
func (v *Voice) CheckText() error {
	if err := firstInvalid([]namedText{
		{"id", &v.ID}, {"org_id", &v.OrgID}, {"title", &v.Title}, {"provider", &v.Provider}, {"model", &v.Model},
		{"voice_id", &v.VoiceID}, {"gender", &v.Gender}, {"description", &v.Description}, {"media_id", &v.MediaID},
	}, listText("tags", v.Tags)); err != nil {
		return err
	}
	if c := v.Consent; c != nil {
		if err := firstInvalid([]namedText{{"consent.attested_by", &c.AttestedBy}, {"consent.relation", &c.Relation}, {"consent.statement", &c.Statement}}); err != nil {
			return err
		}
	}
	for i := range v.Fallbacks {
		f := &v.Fallbacks[i]
		p := "fallbacks." + strconv.Itoa(i) + "."
		if err := firstInvalid([]namedText{{p + "provider", &f.Provider}, {p + "model", &f.Model}, {p + "voice_id", &f.VoiceID}}); err != nil {
			return err
		}
	}
	return CheckValueText("provider_options", v.ProviderOptions)
}

// CheckText returns a *TextError naming the first string of m that is not
// valid text, or nil.
func (m *Media) CheckText() error {
	return firstInvalid([]namedText{{"id", &m.ID}, {"org_id", &m.OrgID}, {"filename", &m.Filename}, {"media_type", &m.MediaType}, {"sha256", &m.SHA256}})
}

// CheckText returns a *TextError naming the first string of d that is not
// valid text, or nil.
func (d *Dictionary) CheckText() error {
	return firstInvalid([]namedText{{"id", &d.ID}, {"org_id", &d.OrgID}, {"name", &d.Name}, {"description", &d.Description}})
}

// CheckText returns a *TextError naming the first string of r that is not
// valid text, or nil.
func (r *PronunciationRule) CheckText() error {
	return firstInvalid([]namedText{{"id", &r.ID}, {"org_id", &r.OrgID}, {"dictionary_id", &r.DictionaryID}, {"word", &r.Word}, {"replacement", &r.Replacement},
		{"kind", &r.Kind}, {"alphabet", &r.Alphabet}, {"phoneme", &r.Phoneme}})
}

// CheckValueText checks every string in v, a value decoded from JSON
// (maps, slices, strings and scalars, at any depth), map keys included,
// and returns a *TextError naming the first that is not valid text (its
// path under field, keys in sorted order), or nil.
func CheckValueText(field string, v any) error {
	switch x := v.(type) {
	case string:
		return CheckText(field, x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := CheckText(field+" (a key)", k); err != nil {
				return err
			}
			if err := CheckValueText(field+"."+k, x[k]); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := CheckValueText(field+"."+strconv.Itoa(i), e); err != nil {
				return err
			}
		}
	case []string:
		for i, e := range x {
			if err := CheckText(field+"."+strconv.Itoa(i), e); err != nil {
				return err
			}
		}
	}
	return nil
}

// listText names the strings of a list field ("tags.0", "tags.1", ...).
// The names are built only for a list holding invalid text.
func listText(field string, list []string) []namedText {
	var out []namedText
	for i := range list {
		if !ValidText(list[i]) {
			out = append(out, namedText{field + "." + strconv.Itoa(i), &list[i]})
		}
	}
	return out
}

// firstInvalid returns the error of the first field of the groups, in
// order, that is not valid text.
func firstInvalid(groups ...[]namedText) error {
	for _, g := range groups {
		for _, f := range g {
			if err := CheckText(f.name, *f.s); err != nil {
				return err
			}
		}
	}
	return nil
}

// CheckText returns a *TextError naming the first string of o (its
// provider ids included) that is not valid text, or nil.
func (o *Org) CheckText() error {
	if err := firstInvalid([]namedText{{"id", &o.ID}, {"name", &o.Name}, {"budget_period", &o.BudgetPeriod}}); err != nil {
		return err
	}
	for id := range o.Providers {
		if err := CheckText("providers (a key)", id); err != nil {
			return err
		}
	}
	return nil
}

// CloneOrg returns a deep copy of o, its Providers never nil.
func CloneOrg(o *Org) *Org {
	c := *o
	c.Providers = make(map[string]OrgProvider, len(o.Providers))
	for id, p := range o.Providers {
		if p.Managed != nil {
			m := *p.Managed
			p.Managed = &m
		}
		c.Providers[id] = p
	}
	if o.Loudness != nil {
		l := *o.Loudness
		c.Loudness = &l
	}
	if o.FailoverWindowMs != nil {
		w := *o.FailoverWindowMs
		c.FailoverWindowMs = &w
	}
	return &c
}

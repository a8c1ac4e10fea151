package sdk

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SettingProblem is one mistake in a provider block's settings: the
// setting's key (Path, as written in gateway.yaml under the provider) and
// what is wrong with it. `voxgate config check` prints it with the line
// of the key.
type SettingProblem struct {
	// Path is the setting's key, e.g. "base_url"; empty when the problem
	// is about the settings as a whole.
	Path string
	// Message says what is wrong and what is accepted, e.g. "want an
	// absolute http(s) URL, got \"api.example\"". It never repeats a
	// secret's value.
	Message string
}

// String renders the problem as "path: message".
func (p SettingProblem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// SettingsValidator is an optional extension of Provider (and Moderator):
// it checks settings without applying them, so that `voxgate config
// check`, a reload and a start report every unknown key and bad value of a
// provider block at once, before Configure is called with them.
//
// ValidateSettings must not change the plugin's state: a reload checks a
// new configuration against a plugin that keeps serving the old one. It
// returns nil for settings Configure would accept.
//
// A plugin that decodes its settings into a struct can implement
// SettingsDecoder instead and get ValidateSettings from the sdk.
type SettingsValidator interface {
	ValidateSettings(ctx context.Context, settings map[string]string) []SettingProblem
}

// SettingsDecoder is the simpler alternative to SettingsValidator for a
// plugin whose settings are a struct decoded with DecodeSettings: Serve
// validates settings by decoding them into a fresh value from
// NewSettings, which refuses unknown keys and malformed values (and runs
// the value's Validate method, when it has one).
type SettingsDecoder interface {
	// NewSettings returns a pointer to a zero settings struct, the type
	// Configure decodes into.
	NewSettings() any
}

// SettingsChecker is implemented by a settings struct that checks its
// values after DecodeSettings has decoded them (ranges, combinations).
type SettingsChecker interface {
	CheckSettings() []SettingProblem
}

// ValidateSettings checks settings for p, which is a plugin's own Provider
// or Moderator or the gateway's view of a plugin process: it asks a
// SettingsValidator, decodes into a SettingsDecoder's struct, or (for a
// plugin process) makes the ValidateSettings call. checked is false when
// p has no way to check settings: a plugin that implements neither, or a
// plugin process built before the call existed. err is a failed call,
// never a problem with the settings.
func ValidateSettings(ctx context.Context, p any, settings map[string]string) (problems []SettingProblem, checked bool, err error) {
	switch v := p.(type) {
	case remoteSettingsValidator:
		return v.validateSettings(ctx, settings)
	case SettingsValidator:
		return v.ValidateSettings(ctx, settings), true, nil
	case SettingsDecoder:
		return DecodeSettings(settings, v.NewSettings()), true, nil
	}
	return nil, false, nil
}

// remoteSettingsValidator is the host side of a plugin process, which
// can also answer "not checked".
type remoteSettingsValidator interface {
	validateSettings(ctx context.Context, settings map[string]string) ([]SettingProblem, bool, error)
}

// SettingsError lists every problem found in a plugin's settings, so a
// Configure that refuses them (SettingsErr) still names each setting to a
// gateway that did not call ValidateSettings first.
type SettingsError struct {
	// Provider names the plugin in the message, e.g. "openai".
	Provider string
	// Problems are the mistakes, at least one.
	Problems []SettingProblem
}

// Error lists the problems on one line.
func (e *SettingsError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return e.Provider + " settings: " + strings.Join(parts, "; ")
}

// SettingsErr returns a KindInvalidRequest *Error wrapping a SettingsError
// for problems, or nil when there are none; Configure returns it.
func SettingsErr(provider string, problems []SettingProblem) error {
	if len(problems) == 0 {
		return nil
	}
	se := &SettingsError{Provider: provider, Problems: problems}
	// Not Field: that names a providerOptions field of a request.
	return &Error{Kind: KindInvalidRequest, Message: se.Error()}
}

// DecodeSettings decodes a Configure map into v, a pointer to a struct
// whose fields carry `setting:"key"` tags, and returns every problem: a
// key no field has (with the closest known key as a hint), and a value
// that does not parse as its field's type. Embedded structs' fields count
// as v's own, so a plugin embeds the settings it shares with others.
//
// Field types (or pointers to them, nil while the key is absent): string
// (trimmed), bool, int, float64, time.Duration (a Go
// duration, not negative), []string (comma-separated, items trimmed,
// empties dropped) and map[string]string under a tag "prefix.*", which
// takes every key that starts with "prefix." (keyed by the rest). Fields
// of absent keys, and of keys whose value is empty (an unset ${VAR}),
// are left as they are, so set defaults before decoding.
// When v implements SettingsChecker and every value parsed, its
// CheckSettings problems are added.
//
// It is hand-written rather than a mapstructure dependency because the
// sdk stays light for plugin authors (see the package comment) and the
// problems must name keys as gateway.yaml spells them.
func DecodeSettings(settings map[string]string, v any) []SettingProblem {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("sdk.DecodeSettings: want a pointer to a struct, got %T", v))
	}
	fields := map[string]reflect.Value{}
	prefixes := map[string]reflect.Value{}
	settingFields(rv.Elem(), fields, prefixes)
	var problems []SettingProblem
	for _, key := range sortedSettingKeys(settings) {
		raw := settings[key]
		f, ok := fields[key]
		if !ok {
			if m, ok := prefixField(prefixes, key); ok {
				if m.field.IsNil() {
					m.field.Set(reflect.MakeMap(m.field.Type()))
				}
				m.field.SetMapIndex(reflect.ValueOf(m.rest), reflect.ValueOf(strings.TrimSpace(raw)))
				continue
			}
			problems = append(problems, unknownSetting(key, fields, prefixes))
			continue
		}
		if strings.TrimSpace(raw) == "" {
			// An empty value (an unset ${VAR}) means the default.
			continue
		}
		if msg := setField(f, raw); msg != "" {
			problems = append(problems, SettingProblem{Path: key, Message: msg})
		}
	}
	if len(problems) == 0 {
		if c, ok := v.(SettingsChecker); ok {
			problems = append(problems, c.CheckSettings()...)
		}
	}
	return problems
}

// settingFields collects the tagged fields of struct value s, embedded
// structs' included.
func settingFields(s reflect.Value, fields, prefixes map[string]reflect.Value) {
	t := s.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("setting")
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			settingFields(s.Field(i), fields, prefixes)
			continue
		}
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		if prefix, ok := strings.CutSuffix(tag, ".*"); ok {
			prefixes[prefix] = s.Field(i)
			continue
		}
		fields[tag] = s.Field(i)
	}
}

type prefixMatch struct {
	field reflect.Value
	rest  string
}

func prefixField(prefixes map[string]reflect.Value, key string) (prefixMatch, bool) {
	for p, f := range prefixes {
		if rest, ok := strings.CutPrefix(key, p+"."); ok && rest != "" {
			return prefixMatch{field: f, rest: rest}, true
		}
	}
	return prefixMatch{}, false
}

var durationType = reflect.TypeOf(time.Duration(0))

// setField parses raw into f and returns what is wrong, or "".
func setField(f reflect.Value, raw string) string {
	v := strings.TrimSpace(raw)
	if f.Kind() == reflect.Pointer {
		// A pointer field tells an absent key (nil) from a zero value.
		elem := reflect.New(f.Type().Elem())
		if msg := setField(elem.Elem(), raw); msg != "" {
			return msg
		}
		f.Set(elem)
		return ""
	}
	switch {
	case f.Type() == durationType:
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Sprintf("want a duration such as 30s, got %q", v)
		}
		f.SetInt(int64(d))
		return ""
	case f.Kind() == reflect.String:
		f.SetString(v)
	case f.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Sprintf("want true or false, got %q", v)
		}
		f.SetBool(b)
	case f.CanInt():
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || f.OverflowInt(n) {
			return fmt.Sprintf("want a whole number, got %q", v)
		}
		f.SetInt(n)
	case f.Kind() == reflect.Float64 || f.Kind() == reflect.Float32:
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Sprintf("want a number, got %q", v)
		}
		f.SetFloat(x)
	case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
		var items []string
		for item := range strings.SplitSeq(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
		f.Set(reflect.ValueOf(items).Convert(f.Type()))
	default:
		panic(fmt.Sprintf("sdk.DecodeSettings: unsupported field type %s", f.Type()))
	}
	return ""
}

// unknownSetting is the problem of a key no field has, naming the
// closest known key when one is near enough to be the intended one.
func unknownSetting(key string, fields, prefixes map[string]reflect.Value) SettingProblem {
	known := make([]string, 0, len(fields)+len(prefixes))
	for k := range fields {
		known = append(known, k)
	}
	for p := range prefixes {
		known = append(known, p+".<name>")
	}
	slices.Sort(known)
	msg := "unknown setting"
	if near := Closest(key, known); near != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", near)
	}
	if len(known) == 0 {
		msg += "; this provider takes no settings"
	} else {
		msg += "; known: " + strings.Join(known, ", ")
	}
	return SettingProblem{Path: key, Message: msg}
}

// Closest returns the word of words nearest to s by edit distance when it
// is close enough to be a typo of it (at most 2 edits, and fewer than
// half of s), or "".
func Closest(s string, words []string) string {
	best, bestD := "", 3
	for _, w := range words {
		if d := editDistance(s, w); d < bestD && d*2 < len(s) {
			best, bestD = w, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, counted in bytes
// (keys are ASCII). Hand-written: a dozen lines do not justify a
// dependency in the sdk.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func sortedSettingKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

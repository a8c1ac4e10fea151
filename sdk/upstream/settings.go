package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/voxgate/voxgate/sdk"
)

// Settings are the deployment settings (Provider.Configure) every cloud
// plugin built on this package understands:
//
//	base_url         the API root, e.g. https://api.openai.com/v1
//	timeout          bound of one whole-clip call and of the wait for a
//	                 stream's first byte (Go duration, e.g. 60s); default none
//	connect_timeout  TCP connect and TLS handshake bound; default 5s
//	max_attempts     tries per idempotent call, the first included; default 3
//	max_idle_conns   idle keep-alive connections kept; default 256
type Settings struct {
	BaseURL     string
	Timeout     time.Duration
	MaxAttempts int
	Client      ClientOptions
}

// IsSettingKey reports whether ParseSettings consumes key, so a plugin can
// tell its own keys from the common ones.
func IsSettingKey(key string) bool {
	switch key {
	case "base_url", "timeout", "connect_timeout", "max_attempts", "max_idle_conns":
		return true
	}
	return false
}

// CommonSettings are the common settings as a settings struct
// (sdk.DecodeSettings): a plugin embeds it in its own settings struct, or
// returns a new one from NewSettings when it takes no others, so that a
// provider block is checked against every key the plugin reads.
type CommonSettings struct {
	BaseURL        string        `setting:"base_url"`
	Timeout        time.Duration `setting:"timeout"`
	ConnectTimeout time.Duration `setting:"connect_timeout"`
	MaxAttempts    *int          `setting:"max_attempts"`
	MaxIdleConns   *int          `setting:"max_idle_conns"`
}

// CheckSettings implements sdk.SettingsChecker. A plugin whose settings
// struct has a CheckSettings of its own calls this one from it.
func (c *CommonSettings) CheckSettings() []sdk.SettingProblem {
	var problems []sdk.SettingProblem
	if p := CheckURL("base_url", c.BaseURL); p != nil {
		problems = append(problems, *p)
	}
	for _, f := range []struct {
		key string
		n   *int
	}{{"max_attempts", c.MaxAttempts}, {"max_idle_conns", c.MaxIdleConns}} {
		if f.n != nil && *f.n < 1 {
			problems = append(problems, sdk.SettingProblem{Path: f.key, Message: fmt.Sprintf("want a positive integer, got %d", *f.n)})
		}
	}
	return problems
}

// ParseSettings reads the common settings from a Configure map, with
// defaultBaseURL when base_url is absent. Keys it does not know are left
// for the plugin (a plugin checks them with its settings struct, see
// CommonSettings). A malformed value is an error naming the key.
func ParseSettings(settings map[string]string, defaultBaseURL string) (Settings, error) {
	common := map[string]string{}
	for k, v := range settings {
		// An empty value means the default, as it always has.
		if IsSettingKey(k) && strings.TrimSpace(v) != "" {
			common[k] = v
		}
	}
	var c CommonSettings
	if problems := sdk.DecodeSettings(common, &c); len(problems) > 0 {
		errs := make([]error, len(problems))
		for i, p := range problems {
			errs[i] = errors.New(p.String())
		}
		return Settings{}, errors.Join(errs...)
	}
	deref := func(n *int) int {
		if n == nil {
			return 0
		}
		return *n
	}
	s := Settings{BaseURL: strings.TrimRight(cmpOr(c.BaseURL, defaultBaseURL), "/"), Timeout: c.Timeout, MaxAttempts: deref(c.MaxAttempts)}
	s.Client = ClientOptions{
		DialTimeout:           c.ConnectTimeout,
		TLSHandshakeTimeout:   c.ConnectTimeout,
		ResponseHeaderTimeout: s.Timeout,
		MaxIdleConnsPerHost:   deref(c.MaxIdleConns),
	}
	return s, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// DecodeOptions decodes a request's providerOptions JSON object into v (a
// pointer to a struct whose fields are the options the plugin accepts)
// and rejects fields v lacks. Empty or null options leave v untouched. The
// error is an *sdk.Error of KindInvalidRequest naming the offending field
// (Error.Field, its path even inside a nested object) and, when accepted
// is not empty, what is accepted.
//
// Decoding checks types only; a plugin then checks the values it passes
// on against what the provider documents (ranges, enumerations, list
// lengths; see Options), so that a value the provider would refuse costs
// no round trip and is reported as the caller's field.
func DecodeOptions(provider string, raw []byte, v any, accepted ...string) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	err := d.Decode(v)
	if err == nil && d.More() {
		err = errors.New("data after the options object")
	}
	if err == nil {
		return nil
	}
	hint := ""
	if len(accepted) > 0 {
		hint = "; accepted: " + strings.Join(accepted, ", ")
	}
	if _, field, ok := strings.Cut(err.Error(), "json: unknown field "); ok {
		// encoding/json names the field but not where it is: find it.
		path := unknownField(raw, reflect.TypeOf(v))
		if path == "" {
			path = strings.Trim(field, `"`)
		}
		return sdk.InvalidOption(path, "%s: providerOptions field %q is not supported%s", provider, path, hint)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return sdk.InvalidOption(te.Field, "%s: providerOptions field %q must be a JSON %s", provider, te.Field, jsonKind(te.Type.Kind().String()))
	}
	return sdk.Errorf(sdk.KindInvalidRequest, "%s: providerOptions must be a JSON object: %v", provider, err)
}

// unknownField returns the dotted path of the first key of the JSON
// object raw that type t (a struct, or a pointer to one) has no field
// for, looking into nested objects and arrays of objects; "" if none is
// found. Keys are visited in sorted order, so the answer is stable.
func unknownField(raw []byte, t reflect.Type) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	var walk func(v any, t reflect.Type, path string) string
	walk = func(v any, t reflect.Type, path string) string {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch v := v.(type) {
		case map[string]any:
			if t.Kind() == reflect.Map {
				for _, k := range slices.Sorted(maps.Keys(v)) {
					if p := walk(v[k], t.Elem(), join(path, k)); p != "" {
						return p
					}
				}
				return ""
			}
			if t.Kind() != reflect.Struct {
				return ""
			}
			fields := jsonFields(t)
			for _, k := range slices.Sorted(maps.Keys(v)) {
				// encoding/json matches names without regard to case.
				ft, ok := fields[strings.ToLower(k)]
				if !ok {
					return join(path, k)
				}
				if p := walk(v[k], ft, join(path, k)); p != "" {
					return p
				}
			}
		case []any:
			if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
				return ""
			}
			for i, item := range v {
				if p := walk(item, t.Elem(), join(path, strconv.Itoa(i))); p != "" {
					return p
				}
			}
		}
		return ""
	}
	return walk(v, t, "")
}

// jsonFields maps the JSON names of struct t's fields (embedded structs'
// included), lowercased, to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				maps.Copy(out, jsonFields(ft))
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		out[strings.ToLower(name)] = f.Type
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "struct", "map":
		return "object"
	case "slice", "array":
		return "array"
	case "ptr", "interface":
		return "value"
	}
	return "number"
}

// CheckURL is the problem with a URL setting that is not an absolute
// http(s) URL, or nil (also for an empty one, which means the default).
func CheckURL(key, v string) *sdk.SettingProblem {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &sdk.SettingProblem{Path: key, Message: fmt.Sprintf("want an absolute http(s) URL, got %q", v)}
	}
	return nil
}

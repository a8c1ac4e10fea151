package edge

import (
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/voxgate/voxgate/gateway/problem"
)

// unknownFields returns one validation entry per member of the JSON body
// that no field of t takes, at any depth, keys in sorted order within an
// object. It runs only after the decoder reported an unknown field (the
// decoder stops at the first), so its second parse costs nothing on the
// path of valid requests. Members are matched to fields the way
// encoding/json matches them: by json tag or name, case-insensitively.
func unknownFields(body []byte, t reflect.Type) []problem.FieldError {
	var doc any
	if json.Unmarshal(body, &doc) != nil {
		return nil
	}
	var out []problem.FieldError
	walkUnknown(doc, t, nil, &out)
	return out
}

// shaped is a field type decoded by its own rules that, when sent as a
// JSON object, takes the members of the struct objectShape returns.
type shaped interface{ objectShape() reflect.Type }

var (
	shapedType      = reflect.TypeFor[shaped]()
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func walkUnknown(v any, t reflect.Type, path []string, out *[]problem.FieldError) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(shapedType) {
		// Decoded by its own rules, with a struct's members when an object.
		if _, ok := v.(map[string]any); ok {
			walkUnknown(v, reflect.Zero(t).Interface().(shaped).objectShape(), path, out)
		}
		return
	}
	if t == rawMessageType || t.Kind() == reflect.Interface ||
		reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return // decoded by its own rules
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := append(slices.Clone(path), k)
			if ft, ok := fieldFor(t, k); ok {
				walkUnknown(obj[k], ft, p, out)
			} else {
				*out = append(*out, problem.Field("unknown field", p...))
			}
		}
	case reflect.Slice, reflect.Array:
		arr, ok := v.([]any)
		if !ok {
			return
		}
		for i, e := range arr {
			walkUnknown(e, t.Elem(), append(slices.Clone(path), strconv.Itoa(i)), out)
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, e := range obj {
			walkUnknown(e, t.Elem(), append(slices.Clone(path), k), out)
		}
	}
}

// fieldFor returns the type of the field of struct t that JSON member
// name decodes into, following embedded structs.
func fieldFor(t reflect.Type, name string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if f.Anonymous && tag == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if ft, ok := fieldFor(et, name); ok {
					return ft, true
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		key := tag
		if key == "" {
			key = f.Name
		}
		if strings.EqualFold(key, name) {
			return f.Type, true
		}
	}
	return nil, false
}

// invalidUTF8At returns the offset of the first byte of b that is not
// part of valid UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

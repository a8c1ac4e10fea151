// Package textrule is the edge's rule for the text a client sends: what
// may reach the store, a log row or a provider, checked once where a
// request is decoded, so that no handler checks (or forgets) a field of
// its own.
//
// The rule:
//
//   - No string may contain U+0000 (NUL), in any JSON body, at any depth
//     (providerOptions values included). No backend can store it
//     (PostgreSQL's text cannot hold it; see store.ValidText), and a NUL
//     that reached a request-log row once cost a whole batch of other
//     organizations' rows.
//   - Member names (JSON object keys, such as providerOptions' keys) and
//     the names a request carries outside its JSON body (path parameters,
//     query parameters, an upload's file name) are identifiers: they may
//     contain no control character at all (U+0000 to U+001F, U+007F),
//     and must be valid UTF-8.
//   - Invalid UTF-8 cannot arrive inside a JSON string: voxgate's decoder
//     refuses a body that is not valid UTF-8 (invalid_json), and the
//     lenient dialect decoder, like encoding/json, turns it and lone
//     surrogate escapes into U+FFFD, which is storable.
//
// Other control characters in values (a newline in a text to speak, a
// tab in a description) are valid text that every backend stores byte for
// byte, so they are left alone.
package textrule

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/voxgate/voxgate/gateway/problem"
)

// Messages of the validation entries. They never quote the text.
const (
	msgNUL     = "must not contain U+0000 (NUL): the gateway cannot store it"
	msgKeyCtl  = "member names must not contain control characters (U+0000 to U+001F, U+007F)"
	msgNameCtl = "must not contain control characters (U+0000 to U+001F, U+007F)"
	msgUTF8    = "must be valid UTF-8"
)

// JSON checks every string of doc, a JSON document that has already been
// decoded without error, against the rule, and returns one validation
// entry per offending string, its path in the document's own member names
// (the wire names, so each dialect's entries name its own fields), or nil.
//
// Hot path (every request body): a document without escapes or DEL
// characters, the common case, costs two vectorized byte searches; any
// other is scanned once, string by string, without allocating. Only a
// document that breaks the rule is decoded again, to name the paths.
func JSON(doc []byte) []problem.FieldError {
	if clean(doc) {
		return nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return nil // Not a document the caller could have decoded.
	}
	var out []problem.FieldError
	walk(v, nil, &out)
	return out
}

// Name returns why s cannot be a name (a path or query parameter, a file
// name): it must be valid UTF-8 without control characters. It returns ""
// when s is fine, without allocating.
func Name(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return msgNameCtl
		}
	}
	if !utf8.ValidString(s) {
		return msgUTF8
	}
	return ""
}

// NameBytes is Name for a byte slice, such as a raw query argument.
func NameBytes(b []byte) string {
	for _, c := range b {
		if c < 0x20 || c == 0x7f {
			return msgNameCtl
		}
	}
	if !utf8.Valid(b) {
		return msgUTF8
	}
	return ""
}

// clean reports whether no string of doc breaks the rule: no value holds
// a NUL and no member name a control character. doc is valid JSON, so a
// control character can only be written as an escape, or as a raw DEL
// (which JSON allows unescaped): without either, the document is clean.
//
// Hand-written rather than a tokenizer (encoding/json's allocates per
// token): it jumps from quote to quote and escape to escape with
// bytes.IndexByte, so a long text costs vectorized scans, not a loop per
// byte.
func clean(doc []byte) bool {
	if bytes.IndexByte(doc, '\\') < 0 && bytes.IndexByte(doc, 0x7f) < 0 {
		return true
	}
	for i := 0; i < len(doc); {
		q := bytes.IndexByte(doc[i:], '"')
		if q < 0 {
			return true
		}
		end, nul, ctl := scanString(doc, i+q+1)
		if nul {
			return false
		}
		i = end + 1
		if ctl && isKey(doc, i) {
			return false
		}
	}
	return true
}

// scanString reads the string whose first byte (after its opening quote)
// is doc[i] and returns the index of its closing quote, whether it holds
// a NUL, and whether it holds any control character. The next quote and
// the next backslash are searched once each and kept until passed, so a
// string with many escapes is still read in one pass.
func scanString(doc []byte, i int) (end int, nul, ctl bool) {
	q, b := -1, -1
	for {
		if q < i {
			q = indexFrom(doc, i, '"')
		}
		if b < i {
			b = indexFrom(doc, i, '\\')
		}
		if b >= q { // no escape before the closing quote
			return q, nul, ctl || bytes.IndexByte(doc[i:q], 0x7f) >= 0
		}
		ctl = ctl || bytes.IndexByte(doc[i:b], 0x7f) >= 0
		if b+1 >= len(doc) {
			return len(doc), nul, ctl
		}
		switch doc[b+1] {
		case 'u':
			if b+6 > len(doc) {
				return len(doc), nul, ctl
			}
			v := hex4(doc[b+2 : b+6])
			nul = nul || v == 0
			ctl = ctl || v < 0x20 || v == 0x7f
			i = b + 6
		case 'b', 'f', 'n', 'r', 't':
			ctl = true
			i = b + 2
		default: // \" \\ \/
			i = b + 2
		}
	}
}

// hex4 decodes the four hex digits of a \u escape (valid, since the
// document decoded).
func hex4(h []byte) rune {
	var v rune
	for _, c := range h {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		v = v<<4 | rune(c)
	}
	return v
}

// indexFrom returns the index of the first c in doc at or after i, or
// len(doc).
func indexFrom(doc []byte, i int, c byte) int {
	if j := bytes.IndexByte(doc[i:], c); j >= 0 {
		return i + j
	}
	return len(doc)
}

// isKey reports whether the string that ended just before doc[i] is a
// member name: the next byte after white space is a colon.
func isKey(doc []byte, i int) bool {
	for ; i < len(doc); i++ {
		switch doc[i] {
		case ' ', '\t', '\n', '\r':
		case ':':
			return true
		default:
			return false
		}
	}
	return false
}

// walk appends an entry for every string of v, a decoded document, that
// breaks the rule; keys are visited in sorted order so the answer is
// stable.
func walk(v any, path []string, out *[]problem.FieldError) {
	switch x := v.(type) {
	case string:
		if strings.IndexByte(x, 0) >= 0 {
			*out = append(*out, problem.Field(msgNUL, slices.Clone(path)...))
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := append(slices.Clone(path), k)
			if Name(k) != "" {
				*out = append(*out, problem.Field(msgKeyCtl, p...))
				continue
			}
			walk(x[k], p, out)
		}
	case []any:
		for i, e := range x {
			walk(e, append(slices.Clone(path), strconv.Itoa(i)), out)
		}
	}
}

package edge

import (
	"unicode/utf16"
	"unicode/utf8"
)

// Flat bodies: the speech request most clients send is a JSON object of a
// few string members ({"model", "voice", "text"}). Hot path: decoding it
// through go-json-experiment's reflection took 17 µs of a stream's first
// byte on a cold cache (BENCHMARKS.md, round 3, session 7), more than any
// other step of the request; this scanner reads such a body in one pass
// with a fraction of the code. It accepts only what it can decode exactly
// as decodeStrict would (FuzzDecodeHot holds the two to the same values)
// and declines anything else (a member that is not a string, an unknown or
// repeated name, an escape in a name, a lone surrogate, invalid UTF-8,
// malformed JSON), which then takes the general decoder and gets its
// errors. Hand-written because no JSON library decodes into a struct
// without reflection or generated code at this cost.

// scanFlatObject walks body, a JSON object whose members must all be
// strings, calling set with each name and decoded value; set returns false
// for a name it does not take. It reports whether the whole body was such
// an object and every member was taken.
func scanFlatObject(body []byte, set func(name []byte, value string) bool) bool {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return false
	}
	i = skipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		return skipSpace(body, i+1) == len(body)
	}
	for {
		if i >= len(body) || body[i] != '"' {
			return false
		}
		end := i + 1
		for end < len(body) && body[end] != '"' && body[end] != '\\' && body[end] >= 0x20 {
			end++
		}
		if end >= len(body) || body[end] != '"' {
			return false // an escape or a control character in a name
		}
		name := body[i+1 : end]
		i = skipSpace(body, end+1)
		if i >= len(body) || body[i] != ':' {
			return false
		}
		i = skipSpace(body, i+1)
		value, next, ok := scanString(body, i)
		if !ok || !set(name, value) {
			return false
		}
		i = skipSpace(body, next)
		if i >= len(body) {
			return false
		}
		switch body[i] {
		case ',':
			i = skipSpace(body, i+1)
		case '}':
			return skipSpace(body, i+1) == len(body)
		default:
			return false
		}
	}
}

// skipSpace returns the index of the first byte at or after i that is
// not JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// scanString decodes the JSON string starting at b[i] (its opening
// quote): the value and the index after the closing quote. It declines
// invalid UTF-8, raw control characters, unknown escapes and lone
// surrogates, on which decoders differ or fail.
func scanString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", 0, false
	}
	start := i + 1
	j := start
	for j < len(b) {
		c := b[j]
		switch {
		case c == '"':
			s := b[start:j]
			if !utf8.Valid(s) {
				return "", 0, false
			}
			return string(s), j + 1, true
		case c == '\\':
			return scanEscaped(b, start, j)
		case c < 0x20:
			return "", 0, false
		}
		j++
	}
	return "", 0, false
}

// scanEscaped is scanString for a string with an escape at b[j]; the
// string's contents begin at b[start].
func scanEscaped(b []byte, start, j int) (string, int, bool) {
	out := make([]byte, 0, len(b)-start)
	out = append(out, b[start:j]...)
	for j < len(b) {
		c := b[j]
		switch {
		case c == '"':
			if !utf8.Valid(out) {
				return "", 0, false
			}
			return string(out), j + 1, true
		case c < 0x20:
			return "", 0, false
		case c != '\\':
			out = append(out, c)
			j++
			continue
		}
		if j+1 >= len(b) {
			return "", 0, false
		}
		switch b[j+1] {
		case '"', '\\', '/':
			out = append(out, b[j+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n, ok := scanUnicode(b, j)
			if !ok {
				return "", 0, false
			}
			out = utf8.AppendRune(out, r)
			j += n
			continue
		default:
			return "", 0, false
		}
		j += 2
	}
	return "", 0, false
}

// scanUnicode decodes the \uXXXX escape at b[j] (a surrogate pair takes
// two): the rune and the escape's length. Lone surrogates are declined.
func scanUnicode(b []byte, j int) (rune, int, bool) {
	r1, ok := hex4(b, j+2)
	if !ok {
		return 0, 0, false
	}
	if !utf16.IsSurrogate(r1) {
		return r1, 6, true
	}
	if j+12 > len(b) || b[j+6] != '\\' || b[j+7] != 'u' {
		return 0, 0, false
	}
	r2, ok := hex4(b, j+8)
	if !ok {
		return 0, 0, false
	}
	r := utf16.DecodeRune(r1, r2)
	if r == utf8.RuneError {
		return 0, 0, false
	}
	return r, 12, true
}

// hex4 reads the four hexadecimal digits at b[i].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// decodeFlatSpeech decodes a flat speech body (see scanFlatObject) into
// r, which must be zero; false leaves r zero for the general decoder.
func decodeFlatSpeech(body []byte, r *speechRequestJSON) bool {
	var seen uint16
	ok := scanFlatObject(body, func(name []byte, v string) bool {
		var bit uint16
		switch string(name) { // compared in place; no string is made
		case "model":
			bit, r.Model = 1<<0, v
		case "voice":
			bit, r.Voice = 1<<1, v
		case "text":
			bit, r.Text = 1<<2, &v
		case "voiceId":
			bit, r.VoiceID = 1<<3, v
		case "mode":
			bit, r.Mode = 1<<4, v
		case "moderation_ruleset_id":
			bit, r.ModerationRulesetID = 1<<5, v
		case "captions":
			bit, r.Captions = 1<<6, v
		case "timestamps":
			bit, r.Timestamps = 1<<7, v
		case "instructions":
			bit, r.Instructions = 1<<8, &v
		default:
			return false
		}
		if seen&bit != 0 {
			return false // a repeated member: the general decoder refuses it
		}
		seen |= bit
		return true
	})
	if !ok {
		*r = speechRequestJSON{}
	}
	return ok
}

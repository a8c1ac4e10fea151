package edge

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/voxgate/voxgate/gateway/edge/dialect"
)

// Flat bodies: the speech request most clients send is a JSON object of a
// few string members ({"model", "voice", "text"}), perhaps with an
// `output` ("mp3", or {"format": "pcm", "sampleRate": 24000}). Hot path: decoding it
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

// scanFlatObject walks body, a JSON object of members without nesting
// beyond what member reads, calling member with each name and the index
// of its value; member scans the value (scanString for a string) and
// returns the index after it, or false for a name or value it does not
// take. It reports whether the whole body was such an object and every
// member was taken.
func scanFlatObject(body []byte, member func(name, body []byte, i int) (int, bool)) bool {
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
		next, ok := member(name, body, skipSpace(body, i+1))
		if !ok {
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

// members is what a flat decoder has taken: each member once (a repeated
// one is declined, as the general decoder refuses it), by its bit.
type members uint16

// take marks bit taken; false when it already was.
func (m *members) take(bit members) bool {
	if *m&bit != 0 {
		return false
	}
	*m |= bit
	return true
}

// str reads the string member at b[i] into *dst.
func (m *members) str(b []byte, i int, bit members, dst *string) (int, bool) {
	if !m.take(bit) {
		return 0, false
	}
	v, next, ok := scanString(b, i)
	*dst = v
	return next, ok
}

// strPtr is str for a member kept by pointer (text, input): only such a
// string goes to the heap, not every member's.
func (m *members) strPtr(b []byte, i int, bit members, dst **string) (int, bool) {
	if !m.take(bit) {
		return 0, false
	}
	v, next, ok := scanString(b, i)
	*dst = &v
	return next, ok
}

// decodeFlatSpeech decodes a flat speech body (see scanFlatObject) into
// r, which must be zero; false leaves r zero for the general decoder. Its
// `output` is kept as sent, as outputField keeps it, for decodeOutput
// (which reads it with scanOutput); only a string or a flat object is
// taken here.
func decodeFlatSpeech(body []byte, r *speechRequestJSON) bool {
	var m members
	ok := scanFlatObject(body, func(name, b []byte, i int) (int, bool) {
		switch string(name) { // compared in place; no string is made
		case "model":
			return m.str(b, i, 1<<0, &r.Model)
		case "voice":
			return m.str(b, i, 1<<1, &r.Voice)
		case "text":
			return m.strPtr(b, i, 1<<2, &r.Text)
		case "voiceId":
			return m.str(b, i, 1<<3, &r.VoiceID)
		case "mode":
			return m.str(b, i, 1<<4, &r.Mode)
		case "moderation_ruleset_id":
			return m.str(b, i, 1<<5, &r.ModerationRulesetID)
		case "captions":
			return m.str(b, i, 1<<6, &r.Captions)
		case "timestamps":
			return m.str(b, i, 1<<7, &r.Timestamps)
		case "instructions":
			return m.strPtr(b, i, 1<<8, &r.Instructions)
		case "output":
			end, ok := skipOutput(b, i)
			if !ok || !m.take(1<<9) {
				return 0, false
			}
			// Not copied, as outputField.UnmarshalJSON copies: the wire
			// value lives only while the handler decodes the request,
			// and domain reads it into values of its own.
			r.Output = outputField(b[i:end])
			return end, true
		}
		return 0, false
	})
	if !ok {
		*r = speechRequestJSON{}
	}
	return ok
}

// decodeFlatOpenAI is decodeFlatSpeech for OpenAI's speech body, which
// the OpenAI SDKs send ({"model", "input", "voice", "response_format"},
// perhaps "speed"): string members, a voice given by name, and a speed
// that is a plain decimal number. Anything else (a voice object, null, an
// exponent) is declined, r left zero, for the general decoder.
func decodeFlatOpenAI(body []byte, r *dialect.OpenAISpeech) bool {
	var m members
	ok := scanFlatObject(body, func(name, b []byte, i int) (int, bool) {
		switch string(name) { // compared in place; no string is made
		case "model":
			return m.str(b, i, 1<<0, &r.Model)
		case "input":
			return m.strPtr(b, i, 1<<1, &r.Input)
		case "voice":
			return m.str(b, i, 1<<2, &r.Voice.ID)
		case "response_format":
			return m.str(b, i, 1<<3, &r.ResponseFormat)
		case "instructions":
			return m.str(b, i, 1<<4, &r.Instructions)
		case "stream_format":
			return m.str(b, i, 1<<5, &r.StreamFormat)
		case "speed":
			if !m.take(1 << 6) {
				return 0, false
			}
			f, next, ok := scanDecimal(b, i)
			r.Speed = &f
			return next, ok
		}
		return 0, false
	})
	if !ok {
		*r = dialect.OpenAISpeech{}
	}
	return ok
}

// decodeFlatElevenLabs is decodeFlatSpeech for ElevenLabs' speech body as
// its SDKs send it ({"text", "model_id"}, perhaps a language code or the
// neighbouring texts): string members of known names only. The general
// (lenient) decoder ignores unknown members and matches names in any
// case; a body with either, or with voice_settings, is declined and left
// to it.
func decodeFlatElevenLabs(body []byte, r *dialect.ElevenLabsSpeech) bool {
	var m members
	ok := scanFlatObject(body, func(name, b []byte, i int) (int, bool) {
		switch string(name) { // compared in place; no string is made
		case "text":
			return m.strPtr(b, i, 1<<0, &r.Text)
		case "model_id":
			return m.str(b, i, 1<<1, &r.ModelID)
		case "language_code":
			return m.strPtr(b, i, 1<<2, &r.LanguageCode)
		case "previous_text":
			return m.strPtr(b, i, 1<<3, &r.PreviousText)
		case "next_text":
			return m.strPtr(b, i, 1<<4, &r.NextText)
		case "apply_text_normalization":
			return m.strPtr(b, i, 1<<5, &r.ApplyTextNormalization)
		}
		return 0, false
	})
	if !ok {
		*r = dialect.ElevenLabsSpeech{}
	}
	return ok
}

// scanDecimal reads the JSON number at b[i] when it is a plain decimal
// (an optional minus, digits without a leading zero, an optional
// fraction; no exponent) of at most 24 characters, parsed as every JSON
// decoder parses it (strconv.ParseFloat).
func scanDecimal(b []byte, i int) (float64, int, bool) {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	start := j
	for j < len(b) && '0' <= b[j] && b[j] <= '9' {
		j++
	}
	if j == start || j-start > 1 && b[start] == '0' {
		return 0, 0, false
	}
	if j < len(b) && b[j] == '.' {
		j++
		frac := j
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		if j == frac {
			return 0, 0, false
		}
	}
	if j-i > 24 || j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		return 0, 0, false
	}
	f, err := strconv.ParseFloat(string(b[i:j]), 64)
	if err != nil {
		return 0, 0, false
	}
	return f, j, true
}

// skipOutput returns the index after the `output` value at b[i] when it is
// one decodeFlatSpeech takes: a string, or an object that scanOutput reads.
func skipOutput(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '"' {
		_, next, ok := scanString(b, i)
		return next, ok
	}
	end := i
	for end < len(b) && b[end] != '}' {
		if b[end] == '{' && end > i || b[end] == '[' {
			return 0, false // nested: the general decoder's
		}
		end++
	}
	if end >= len(b) {
		return 0, false
	}
	end++
	if _, ok := scanOutput(b[i:end]); !ok {
		return 0, false
	}
	return end, true
}

// scanOutput decodes the object form of `output` as decodeOutput's
// general decoder would when it is flat: "format" a string, "sampleRate"
// and "bitrate" plain non-negative integers, each once. Anything else
// (null, a fraction, an exponent, an unknown member) is declined and left
// to the general decoder, and its problem.
func scanOutput(t []byte) (outputJSON, bool) {
	var o outputJSON
	var m members
	ok := scanFlatObject(t, func(name, b []byte, i int) (int, bool) {
		var dst **int
		var bit members
		switch string(name) {
		case "format":
			return m.str(b, i, 1<<0, &o.Format)
		case "sampleRate":
			dst, bit = &o.SampleRate, 1<<1
		case "bitrate":
			dst, bit = &o.Bitrate, 1<<2
		default:
			return 0, false
		}
		if !m.take(bit) {
			return 0, false
		}
		n, next, ok := scanSmallInt(b, i)
		*dst = &n
		return next, ok
	})
	return o, ok
}

// scanSmallInt reads the JSON number at b[i] when it is a plain
// non-negative integer of at most nine digits (no sign, fraction, exponent
// or leading zero), which every decoder reads alike into an int.
func scanSmallInt(b []byte, i int) (int, int, bool) {
	n, j := 0, i
	for j < len(b) && j-i < 10 && '0' <= b[j] && b[j] <= '9' {
		n = n*10 + int(b[j]-'0')
		j++
	}
	switch {
	case j == i, j-i > 9, j-i > 1 && b[i] == '0':
		return 0, 0, false
	case j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E'):
		return 0, 0, false
	}
	return n, j, true
}

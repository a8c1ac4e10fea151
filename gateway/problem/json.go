package problem

import (
	"strconv"
	"unicode/utf8"
)

// TypeURI returns the problem `type` of a code. It is a URN rather than a
// URL so that no documentation host is implied.
func TypeURI(c Code) string { return "urn:voxgate:problem:" + string(c) }

// AppendJSON appends the problem object of e to dst.
//
// Hand-written rather than encoding/json: problem writing is on the hot path
// of every rejected request (401s under a credential-stuffing load, 429s),
// and this appends into a pooled buffer without reflection or allocations.
func (e *Error) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, TypeURI(e.Code))
	dst = append(dst, `,"title":`...)
	dst = appendString(dst, e.Title())
	dst = append(dst, `,"status":`...)
	dst = strconv.AppendInt(dst, int64(e.Status()), 10)
	if e.Detail != "" {
		dst = append(dst, `,"detail":`...)
		dst = appendString(dst, e.Detail)
	}
	dst = append(dst, `,"code":`...)
	dst = appendString(dst, string(e.Code))
	if len(e.Validation) > 0 {
		dst = append(dst, `,"validation":[`...)
		for i, f := range e.Validation {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"path":[`...)
			for j, p := range f.Path {
				if j > 0 {
					dst = append(dst, ',')
				}
				dst = appendString(dst, p)
			}
			dst = append(dst, `],"message":`...)
			dst = appendString(dst, f.Message)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if e.Provider != "" {
		dst = append(dst, `,"provider":`...)
		dst = appendString(dst, e.Provider)
	}
	if e.UpstreamCode != "" {
		dst = append(dst, `,"upstream_code":`...)
		dst = appendString(dst, e.UpstreamCode)
	}
	if e.UpstreamStatus != 0 {
		dst = append(dst, `,"upstream_status":`...)
		dst = strconv.AppendInt(dst, int64(e.UpstreamStatus), 10)
	}
	if e.TurnIndex != nil {
		dst = append(dst, `,"turn_index":`...)
		dst = strconv.AppendInt(dst, int64(*e.TurnIndex), 10)
	}
	return append(dst, '}')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaping per RFC 8259 and
// replacing invalid UTF-8 with U+FFFD, as encoding/json does.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

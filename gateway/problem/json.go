package problem

import (
	"strconv"

	"github.com/voxgate/voxgate/gateway/internal/jsonstr"
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

// appendString appends s as a JSON string, escaped as encoding/json does.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = jsonstr.Append(dst, s, true)
	return append(dst, '"')
}

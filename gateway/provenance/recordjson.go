package provenance

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/voxgate/voxgate/gateway/internal/jsonstr"
)

// The record's JSON is written out by hand. Hot path: every answer signs
// one record, and encoding/json's reflection over Record, its Mark and
// Consent was about 7 µs warm and much more cold (BENCHMARKS.md, round 3,
// session 7), a third of what the record cost beside its hash and
// signature. The bytes are json.Marshal's exactly (same member order,
// omitempty, HTML-safe escaping, RFC 3339 times): FuzzRecordJSON holds
// the two to the same output, TestRecordJSONCoversRecord fails when
// Record, Mark or Consent gain a member this does not write, and a record
// json.Marshal would refuse (a time it cannot write) goes to json.Marshal
// and gets its error.

// marshalRecord returns r's JSON as json.Marshal makes it.
func marshalRecord(r *Record) ([]byte, error) {
	if !marshalableTime(r.Time) || (r.Mark != nil && !marshalableTime(r.Mark.Time)) ||
		(r.Consent != nil && !marshalableTime(r.Consent.Time)) {
		return json.Marshal(r)
	}
	// Names, punctuation and times take under 400 bytes; strings that
	// need escaping grow the buffer once.
	n := 400 + len(r.RequestID) + len(r.OrgID) + len(r.Gateway) + len(r.Provider) + len(r.Model) + len(r.VoiceID) +
		len(r.VoiceRef) + len(r.MediaType) + len(r.SHA256) + len(r.DigitalSourceType) + len(r.Marked)
	if m := r.Mark; m != nil {
		n += 200 + len(m.RequestID) + len(m.Gateway) + len(m.Provider) + len(m.Model) + len(m.SourceType)
	}
	if c := r.Consent; c != nil {
		n += 150 + len(c.AttestedBy) + len(c.Relation) + len(c.Statement)
	}
	b := make([]byte, 0, n)
	b = append(b, `{"version":`...)
	b = strconv.AppendInt(b, int64(r.Version), 10)
	b = appendMember(b, `,"request_id":`, r.RequestID)
	b = appendMember(b, `,"org":`, r.OrgID)
	b = appendMember(b, `,"gateway":`, r.Gateway)
	b = appendMember(b, `,"provider":`, r.Provider)
	b = appendMember(b, `,"model":`, r.Model)
	if r.VoiceID != "" {
		b = appendMember(b, `,"voice_id":`, r.VoiceID)
	}
	if r.VoiceRef != "" {
		b = appendMember(b, `,"voice_ref":`, r.VoiceRef)
	}
	b = appendTime(append(b, `,"time":`...), r.Time)
	b = appendMember(b, `,"media_type":`, r.MediaType)
	b = appendMember(b, `,"sha256":`, r.SHA256)
	b = strconv.AppendInt(append(b, `,"bytes":`...), r.Bytes, 10)
	b = strconv.AppendBool(append(b, `,"complete":`...), r.Complete)
	b = appendMember(b, `,"digital_source_type":`, r.DigitalSourceType)
	b = appendMember(b, `,"marked":`, r.Marked)
	if m := r.Mark; m != nil {
		b = appendMember(b, `,"mark":{"request_id":`, m.RequestID)
		b = appendMember(b, `,"gateway":`, m.Gateway)
		b = appendMember(b, `,"provider":`, m.Provider)
		b = appendMember(b, `,"model":`, m.Model)
		b = appendTime(append(b, `,"time":`...), m.Time)
		b = appendMember(b, `,"digital_source_type":`, m.SourceType)
		b = append(b, '}')
	}
	if c := r.Consent; c != nil {
		b = appendMember(b, `,"consent":{"attested_by":`, c.AttestedBy)
		b = appendMember(b, `,"relation":`, c.Relation)
		b = appendMember(b, `,"statement":`, c.Statement)
		b = appendTime(append(b, `,"time":`...), c.Time)
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// marshalableTime reports whether json.Marshal takes t: time.Time's
// MarshalJSON refuses years outside 0 to 9999 and zone offsets of 24
// hours or more.
func marshalableTime(t time.Time) bool {
	_, off := t.Zone()
	y := t.Year()
	return y >= 0 && y <= 9999 && off > -24*3600 && off < 24*3600
}

// appendTime appends t as time.Time's MarshalJSON does (RFC 3339 with
// the nanoseconds it has), t being marshalableTime.
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendMember appends name (the punctuation and quoted name before a
// value) and s as a JSON string.
func appendMember(b []byte, name, s string) []byte {
	return appendString(append(b, name...), s)
}

// appendString appends s quoted as encoding/json quotes strings, with
// its default HTML-safe escaping.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = jsonstr.Append(b, s, true)
	return append(b, '"')
}

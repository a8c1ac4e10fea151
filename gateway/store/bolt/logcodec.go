package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/voxgate/voxgate/gateway/store"
)

// Log rows are stored in the protobuf wire format, written and read with
// protowire rather than generated code: the row is one flat message, so the
// hand-listed field numbers below are the whole schema. The wire format buys
// compactness (zero fields take no bytes, names are one-byte tags; a typical
// row is ~150 bytes against ~600 as JSON) and schema evolution (unknown
// fields are skipped, so rows written by a newer binary still read).
//
// The timestamp and organization are not in the value: the timestamp is the
// first 8 bytes of the key, the organization is the enclosing bucket.
//
// Field numbers are part of the file format: never reuse or renumber them.
const (
	fieldRequestID              protowire.Number = 1
	fieldParentRequestID        protowire.Number = 2
	fieldPath                   protowire.Number = 3
	fieldStatus                 protowire.Number = 4
	fieldProvider               protowire.Number = 5
	fieldModel                  protowire.Number = 6
	fieldVoiceID                protowire.Number = 7
	fieldVoiceRef               protowire.Number = 8
	fieldCharCount              protowire.Number = 9
	fieldCreditsUsed            protowire.Number = 10
	fieldLatencyMS              protowire.Number = 11
	fieldErrorCode              protowire.Number = 12
	fieldErrorDetail            protowire.Number = 13
	fieldProviderOptions        protowire.Number = 14
	fieldModerationDecision     protowire.Number = 15
	fieldModerationReasonType   protowire.Number = 16
	fieldModerationReasonDetail protowire.Number = 17
	fieldModerationConfidence   protowire.Number = 18
	fieldModerationLatencyMS    protowire.Number = 19
	fieldKeyID                  protowire.Number = 20
	fieldAudioMS                protowire.Number = 21
	fieldCache                  protowire.Number = 22
	fieldTimeToFirstAudioMS     protowire.Number = 23
	fieldTranscoded             protowire.Number = 24
	fieldSanitized              protowire.Number = 25
	fieldProvenance             protowire.Number = 26
	fieldCost                   protowire.Number = 27
	fieldCurrency               protowire.Number = 28
	fieldCostEstimate           protowire.Number = 29
	fieldTextWaitMS             protowire.Number = 34
)

// logKeyLen is the length of a log primary key: 8 bytes of big-endian
// timestamp nanoseconds, then 8 bytes of the org's log bucket sequence.
const logKeyLen = 16

// logKey builds a primary log key. The sequence makes keys unique even when
// many rows share a timestamp, and keeps their insertion order.
func logKey(ts time.Time, seq uint64) []byte {
	k := make([]byte, logKeyLen)
	binary.BigEndian.PutUint64(k, unixNanos(ts))
	binary.BigEndian.PutUint64(k[8:], seq)
	return k
}

// logKeyTime returns the timestamp stored in a primary log key.
func logKeyTime(pk []byte) time.Time {
	return time.Unix(0, int64(binary.BigEndian.Uint64(pk))).UTC()
}

// encodeLogRow appends the wire form of r (without TS and OrgID) to b.
func encodeLogRow(b []byte, r *store.LogRow) []byte {
	str := func(n protowire.Number, s string) {
		if s != "" {
			b = protowire.AppendTag(b, n, protowire.BytesType)
			b = protowire.AppendString(b, s)
		}
	}
	num := func(n protowire.Number, v int64) {
		if v != 0 {
			b = protowire.AppendTag(b, n, protowire.VarintType)
			b = protowire.AppendVarint(b, protowire.EncodeZigZag(v))
		}
	}
	str(fieldRequestID, r.RequestID)
	str(fieldParentRequestID, r.ParentRequestID)
	str(fieldPath, r.Path)
	num(fieldStatus, int64(r.Status))
	str(fieldProvider, r.Provider)
	str(fieldModel, r.Model)
	str(fieldVoiceID, r.VoiceID)
	str(fieldVoiceRef, r.VoiceRef)
	num(fieldCharCount, int64(r.CharCount))
	num(fieldCreditsUsed, int64(r.CreditsUsed))
	num(fieldLatencyMS, r.LatencyMS)
	str(fieldErrorCode, r.ErrorCode)
	str(fieldErrorDetail, r.ErrorDetail)
	str(fieldProviderOptions, r.ProviderOptions)
	str(fieldModerationDecision, r.ModerationDecision)
	str(fieldModerationReasonType, r.ModerationReasonType)
	str(fieldModerationReasonDetail, r.ModerationReasonDetail)
	if r.ModerationConfidence != 0 {
		b = protowire.AppendTag(b, fieldModerationConfidence, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, math.Float64bits(r.ModerationConfidence))
	}
	num(fieldModerationLatencyMS, r.ModerationLatencyMS)
	str(fieldKeyID, r.KeyID)
	num(fieldAudioMS, r.AudioMS)
	str(fieldCache, r.Cache)
	num(fieldTimeToFirstAudioMS, r.TimeToFirstAudioMS)
	num(fieldTextWaitMS, r.TextWaitMS)
	str(fieldTranscoded, r.Transcoded)
	str(fieldProvenance, r.Provenance)
	num(fieldCost, r.Cost)
	str(fieldCurrency, r.Currency)
	num(fieldCostEstimate, r.CostEstimate)
	if r.Sanitized {
		num(fieldSanitized, 1)
	}
	return b
}

// errCorruptLogRow reports an undecodable stored row.
var errCorruptLogRow = errors.New("corrupt log row")

// decodeLogRow decodes a stored row whose primary key is pk into r.
//
// Hot path (every row a log page returns): the value is copied into one
// string and every string field is a substring of it, so a row costs one
// allocation however many fields it has. bbolt's memory is only valid
// inside the transaction, so one copy is unavoidable.
func decodeLogRow(r *store.LogRow, orgID string, pk, val []byte) error {
	*r = store.LogRow{OrgID: orgID, TS: logKeyTime(pk)}
	all := string(val)
	b := val
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %w", errCorruptLogRow, protowire.ParseError(n))
		}
		b = b[n:]
		switch typ {
		case protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("%w: %w", errCorruptLogRow, protowire.ParseError(n))
			}
			start := len(val) - len(b) + n - len(v)
			s := all[start : start+len(v)]
			switch num {
			case fieldRequestID:
				r.RequestID = s
			case fieldParentRequestID:
				r.ParentRequestID = s
			case fieldPath:
				r.Path = s
			case fieldProvider:
				r.Provider = s
			case fieldModel:
				r.Model = s
			case fieldVoiceID:
				r.VoiceID = s
			case fieldVoiceRef:
				r.VoiceRef = s
			case fieldErrorCode:
				r.ErrorCode = s
			case fieldErrorDetail:
				r.ErrorDetail = s
			case fieldProviderOptions:
				r.ProviderOptions = s
			case fieldModerationDecision:
				r.ModerationDecision = s
			case fieldModerationReasonType:
				r.ModerationReasonType = s
			case fieldModerationReasonDetail:
				r.ModerationReasonDetail = s
			case fieldKeyID:
				r.KeyID = s
			case fieldCache:
				r.Cache = s
			case fieldTranscoded:
				r.Transcoded = s
			case fieldProvenance:
				r.Provenance = s
			case fieldCurrency:
				r.Currency = s
			}
			b = b[n:]
		case protowire.VarintType:
			u, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return fmt.Errorf("%w: %w", errCorruptLogRow, protowire.ParseError(n))
			}
			v := protowire.DecodeZigZag(u)
			switch num {
			case fieldStatus:
				r.Status = int(v)
			case fieldCharCount:
				r.CharCount = int(v)
			case fieldCreditsUsed:
				r.CreditsUsed = int(v)
			case fieldLatencyMS:
				r.LatencyMS = v
			case fieldModerationLatencyMS:
				r.ModerationLatencyMS = v
			case fieldAudioMS:
				r.AudioMS = v
			case fieldTimeToFirstAudioMS:
				r.TimeToFirstAudioMS = v
			case fieldTextWaitMS:
				r.TextWaitMS = v
			case fieldSanitized:
				r.Sanitized = v != 0
			case fieldCost:
				r.Cost = v
			case fieldCostEstimate:
				r.CostEstimate = v
			}
			b = b[n:]
		case protowire.Fixed64Type:
			u, n := protowire.ConsumeFixed64(b)
			if n < 0 {
				return fmt.Errorf("%w: %w", errCorruptLogRow, protowire.ParseError(n))
			}
			if num == fieldModerationConfidence {
				r.ModerationConfidence = math.Float64frombits(u)
			}
			b = b[n:]
		default:
			// A field type this binary does not write: skip it.
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("%w: %w", errCorruptLogRow, protowire.ParseError(n))
			}
			b = b[n:]
		}
	}
	return nil
}

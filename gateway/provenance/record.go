package provenance

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"slices"
	"time"
)

// RecordVersion is the version of Record's shape.
const RecordVersion = 1

// Record is what the gateway attests about one answer: who asked, what
// made it, and the SHA-256 of exactly the bytes it sent.
type Record struct {
	Version   int       `json:"version"`
	RequestID string    `json:"request_id"`
	OrgID     string    `json:"org"`
	Gateway   string    `json:"gateway"`
	Provider  string    `json:"provider"`
	Model     string    `json:"model"`
	VoiceID   string    `json:"voice_id,omitempty"`
	VoiceRef  string    `json:"voice_ref,omitempty"`
	Time      time.Time `json:"time"`
	MediaType string    `json:"media_type"`
	// SHA256 is the hex SHA-256 of the body sent and Bytes its length;
	// for a stream, of what was written before it ended.
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
	// Complete is false for a stream that broke off.
	Complete bool `json:"complete"`
	// DigitalSourceType is DigitalSourceType: the record says the audio
	// is synthetic whether or not the file could carry a mark.
	DigitalSourceType string `json:"digital_source_type"`
	// Marked says how the file was marked (an X-Voxgate-Mark value) and
	// Mark what was written; nil when nothing was.
	Marked string `json:"marked"`
	Mark   *Mark  `json:"mark,omitempty"`
	// Consent is the attestation of the saved voice used, when it was
	// made from uploaded media.
	Consent *Consent `json:"consent,omitempty"`
}

// Consent is an attestation that the person whose voice was cloned
// agreed to it.
type Consent struct {
	// AttestedBy names who attests (a person or role).
	AttestedBy string `json:"attested_by"`
	// Relation is theirs to the speaker: "self", "employer", "agent",
	// "guardian", ...
	Relation string `json:"relation"`
	// Statement is what they attest, in their words.
	Statement string `json:"statement"`
	// Time is when they attested (the voice's creation when not given).
	Time time.Time `json:"time"`
}

// Signed is a signed record as stored with the log row and served.
type Signed struct {
	// Record is the record; RecordBase64 its exact signed bytes, which a
	// verifier checks rather than the JSON re-serialized.
	Record       json.RawMessage `json:"record"`
	RecordBase64 string          `json:"record_base64"`
	Algorithm    string          `json:"algorithm"`
	KeyID        string          `json:"key_id"`
	// Signature is the base64 Ed25519 signature of the record's bytes.
	Signature string `json:"signature"`
}

// Sign signs r and returns the stored form of the signed record.
//
// Cost: the record's JSON (recordjson.go) and one Ed25519 signature
// (BenchmarkSignRecord; tens of microseconds on an idle core): paid where
// the log row is recorded, once per answer, after the answer's body is
// set (a stream's after it ended).
func (s *Signer) SignRecord(r *Record) (string, error) {
	r.Version = RecordVersion
	r.DigitalSourceType = DigitalSourceType
	msg, err := marshalRecord(r)
	if err != nil {
		return "", err
	}
	return string(s.appendSigned(nil, msg, s.Sign(msg))), nil
}

// appendSigned appends the stored form of the record msg signed with sig:
// the bytes json.Marshal makes of Signed (TestSignedFormIsMarshals),
// written out by hand because Marshal re-scanned the record to check and
// compact it as a json.RawMessage, a third of the record's JSON cost on
// every answer. It needs no escaping: msg is json.Marshal's compact
// output, and the other members are base64 and the hex key id.
func (s *Signer) appendSigned(b, msg, sig []byte) []byte {
	enc := base64.StdEncoding
	b = slices.Grow(b, len(msg)+enc.EncodedLen(len(msg))+enc.EncodedLen(len(sig))+len(s.id)+80)
	b = append(b, `{"record":`...)
	b = append(b, msg...)
	b = append(b, `,"record_base64":"`...)
	b = enc.AppendEncode(b, msg)
	b = append(b, `","algorithm":"Ed25519","key_id":"`...)
	b = append(b, s.id...)
	b = append(b, `","signature":"`...)
	b = enc.AppendEncode(b, sig)
	return append(b, `"}`...)
}

// ErrBadSignature is a stored record whose signature does not check.
var ErrBadSignature = errors.New("provenance: the record's signature does not verify")

// VerifyStored parses a stored signed record and checks its signature
// with s's key.
func (s *Signer) VerifyStored(stored string) (*Signed, *Record, error) {
	var sg Signed
	if err := json.Unmarshal([]byte(stored), &sg); err != nil {
		return nil, nil, err
	}
	msg, err := base64.StdEncoding.DecodeString(sg.RecordBase64)
	if err != nil {
		return nil, nil, err
	}
	sig, err := base64.StdEncoding.DecodeString(sg.Signature)
	if err != nil || sg.KeyID != s.id || !s.Verify(msg, sig) {
		return &sg, nil, ErrBadSignature
	}
	var r Record
	if err := json.Unmarshal(msg, &r); err != nil {
		return nil, nil, err
	}
	return &sg, &r, nil
}

// Hasher hashes the bytes of an answer as they are written, so that a
// stream's hash is ready when it ends without its bytes being kept.
//
// The SHA-256 state is made at the first Write: a stream's Hasher is
// made before its first audio goes out and written only after, so the
// state's allocation and setup stay off the way of the first byte.
type Hasher struct {
	h hash.Hash
	n int64
}

// NewHasher returns an empty Hasher.
func NewHasher() *Hasher { return &Hasher{} }

// Write adds b. Hot path: SHA-256 of each piece, no allocation after
// the first.
func (h *Hasher) Write(b []byte) {
	h.digest().Write(b)
	h.n += int64(len(b))
}

// digest returns the SHA-256 state, made on the first call.
func (h *Hasher) digest() hash.Hash {
	if h.h == nil {
		h.h = sha256.New()
	}
	return h.h
}

// Sum returns the hex SHA-256 and the length of what was written.
func (h *Hasher) Sum() (string, int64) {
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.digest().Sum(sum[:0])), h.n
}

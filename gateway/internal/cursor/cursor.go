// Package cursor makes opaque, tamper-evident pagination cursors.
//
// A cursor carries a store position (the key of the last item returned) and
// an HMAC over that position, the organization and the query it belongs to.
// A cursor that was altered, truncated, made by another organization or
// replayed against another query fails to verify; callers answer 400
// invalid_cursor.
package cursor

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
)

const (
	version = 1
	macLen  = 16 // truncated HMAC-SHA256: 128 bits is ample against forgery
	maxPos  = 512
)

// ErrInvalid reports a cursor that is malformed, tampered with, or bound to
// another organization or query.
var ErrInvalid = errors.New("invalid cursor")

// Codec signs and verifies cursors with one secret.
type Codec struct {
	secret []byte
}

// New returns a Codec keyed with secret (at least 16 bytes).
func New(secret []byte) *Codec {
	return &Codec{secret: append([]byte(nil), secret...)}
}

// Encode returns the cursor for position pos of org's query scope.
func (c *Codec) Encode(org, scope string, pos []byte) string {
	buf := make([]byte, 0, 1+len(pos)+macLen)
	buf = append(buf, version)
	buf = append(buf, pos...)
	buf = append(buf, c.mac(org, scope, pos)...)
	return base64.RawURLEncoding.EncodeToString(buf)
}

// Decode verifies s for org and scope and returns its position.
func (c *Codec) Decode(org, scope, s string) ([]byte, error) {
	if len(s) == 0 || len(s) > base64.RawURLEncoding.EncodedLen(1+maxPos+macLen) {
		return nil, ErrInvalid
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) < 1+macLen+1 || raw[0] != version {
		return nil, ErrInvalid
	}
	pos := raw[1 : len(raw)-macLen]
	if !hmac.Equal(raw[len(raw)-macLen:], c.mac(org, scope, pos)) {
		return nil, ErrInvalid
	}
	return pos, nil
}

func (c *Codec) mac(org, scope string, pos []byte) []byte {
	m := hmac.New(sha256.New, c.secret)
	// Length-prefix the variable parts so ("ab","c") and ("a","bc") differ.
	m.Write([]byte{byte(len(org))})
	m.Write([]byte(org))
	m.Write([]byte{byte(len(scope) >> 8), byte(len(scope))})
	m.Write([]byte(scope))
	m.Write(pos)
	return m.Sum(nil)[:macLen]
}

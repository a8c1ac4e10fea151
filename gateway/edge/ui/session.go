package ui

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"time"

	"github.com/voxgate/voxgate/gateway/admission/auth"
)

// A session is a signed cookie, not a server-side record: instances that
// share storage share the deployment secret, so a cookie made by one is
// read by every other, and nothing is written per sign-in. What the
// cookie cannot carry, whether its key is still good, is asked of the
// in-memory key table on every request (auth.Authenticator.Active), which
// already follows revocations across instances. A session therefore ends
// when it expires, when its key is revoked anywhere, or when its
// organization leaves the config.
//
// Cookie value: "v1." base64url(payload) "." base64url(HMAC-SHA256(payload)),
// payload = expires (8 bytes, unix seconds BE) + key id.

// DefaultTTL is how long a session lasts after sign-in.
const DefaultTTL = 8 * time.Hour

// CookieName is the session cookie.
const CookieName = "voxgate_session"

// Errors of Sessions.Verify, told apart so the dashboard can say which.
var (
	// ErrNoSession: no cookie, or one that was not made here.
	ErrNoSession = errors.New("not signed in")
	// ErrExpired: the session's time is up.
	ErrExpired = errors.New("the session expired")
	// ErrKeyRevoked: the session's key no longer authenticates.
	ErrKeyRevoked = errors.New("the session's API key was revoked")
)

// Sessions makes and checks session cookies.
type Sessions struct {
	auth *auth.Authenticator
	mac  []byte // signing key, derived from the deployment secret
	ttl  time.Duration
	now  func() time.Time
}

// NewSessions returns Sessions signing with a key derived from secret
// (the storage's deployment secret).
func NewSessions(a *auth.Authenticator, secret []byte, ttl time.Duration, now func() time.Time) *Sessions {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if now == nil {
		now = time.Now
	}
	h := hmac.New(sha256.New, secret)
	h.Write([]byte("voxgate dashboard session v1"))
	return &Sessions{auth: a, mac: h.Sum(nil), ttl: ttl, now: now}
}

// Session is a verified session.
type Session struct {
	Principal auth.Principal
	Expires   time.Time
	// token is the cookie value, from which the CSRF token derives.
	token string
}

// CSRFToken is the value unsafe requests must send in the X-CSRF-Token
// header: bound to this session, so a token of another session (or of a
// signed-out one) does not pass.
func (s *Sessions) CSRFToken(sess *Session) string {
	h := hmac.New(sha256.New, s.mac)
	h.Write([]byte("csrf\x00"))
	h.Write([]byte(sess.token))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// CheckCSRF reports whether token is sess's CSRF token.
func (s *Sessions) CheckCSRF(sess *Session, token []byte) bool {
	return hmac.Equal([]byte(s.CSRFToken(sess)), token)
}

// Issue makes a session for the principal p of a key that just
// authenticated.
func (s *Sessions) Issue(p auth.Principal) (string, *Session) {
	exp := s.now().Add(s.ttl).Truncate(time.Second)
	payload := binary.BigEndian.AppendUint64(nil, uint64(exp.Unix()))
	payload = append(payload, p.KeyID...)
	token := "v1." + base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(s.sign(payload))
	return token, &Session{Principal: p, Expires: exp, token: token}
}

func (s *Sessions) sign(payload []byte) []byte {
	h := hmac.New(sha256.New, s.mac)
	h.Write(payload)
	return h.Sum(nil)
}

// maxCookie bounds what Verify decodes.
const maxCookie = 512

// Verify checks a cookie value: signature, expiry, and that its key still
// authenticates. Hot path of every dashboard request: no storage access.
func (s *Sessions) Verify(cookie []byte) (*Session, error) {
	if len(cookie) == 0 || len(cookie) > maxCookie || !bytes.HasPrefix(cookie, []byte("v1.")) {
		return nil, ErrNoSession
	}
	body, sig, ok := bytes.Cut(cookie[3:], []byte("."))
	if !ok {
		return nil, ErrNoSession
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(string(body))
	mac, err2 := base64.RawURLEncoding.DecodeString(string(sig))
	if err1 != nil || err2 != nil || len(payload) < 9 || !hmac.Equal(mac, s.sign(payload)) {
		return nil, ErrNoSession
	}
	exp := time.Unix(int64(binary.BigEndian.Uint64(payload)), 0)
	if !s.now().Before(exp) {
		return nil, ErrExpired
	}
	p, ok := s.auth.Active(string(payload[8:]))
	if !ok {
		return nil, ErrKeyRevoked
	}
	return &Session{Principal: p, Expires: exp, token: string(cookie)}, nil
}

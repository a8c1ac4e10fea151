package ui

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/admission/auth"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
)

func TestSessions(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err := auth.New(context.Background(), st, func(org string) bool { return org != "gone" })
	if err != nil {
		t.Fatal(err)
	}
	_, k, err := a.Create(context.Background(), "acme", "k")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	s := NewSessions(a, st.Secret(), time.Hour, clock)
	token, sess := s.Issue(auth.Principal{OrgID: "acme", KeyID: k.ID})

	got, err := s.Verify([]byte(token))
	if err != nil || got.Principal.OrgID != "acme" || got.Principal.KeyID != k.ID {
		t.Fatalf("Verify = %+v, %v", got, err)
	}
	if !s.CheckCSRF(got, []byte(s.CSRFToken(sess))) || s.CheckCSRF(got, []byte("x")) || s.CheckCSRF(got, nil) {
		t.Error("CSRF token check")
	}
	// Another session's CSRF token does not pass.
	_, other := s.Issue(auth.Principal{OrgID: "acme", KeyID: k.ID + "x"})
	if s.CheckCSRF(got, []byte(s.CSRFToken(other))) {
		t.Error("another session's CSRF token passes")
	}

	// Another deployment's secret, a changed byte, garbage: not a session.
	foreign := NewSessions(a, []byte("another deployment's secret 32b!"), time.Hour, clock)
	ft, _ := foreign.Issue(auth.Principal{OrgID: "acme", KeyID: k.ID})
	tampered := []byte(token)
	tampered[len("v1.")+2] ^= 1
	for _, bad := range [][]byte{[]byte(ft), tampered, nil, []byte("v1."), []byte("v1.a.b"), []byte(strings.Repeat("v", 2000))} {
		if _, err := s.Verify(bad); !errors.Is(err, ErrNoSession) {
			t.Errorf("Verify(%.20q) = %v, want ErrNoSession", bad, err)
		}
	}

	// Expiry.
	now = now.Add(time.Hour)
	if _, err := s.Verify([]byte(token)); !errors.Is(err, ErrExpired) {
		t.Errorf("after its hour: %v, want ErrExpired", err)
	}
	now = now.Add(-time.Minute)

	// Revocation.
	if _, err := a.Revoke(context.Background(), k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Verify([]byte(token)); !errors.Is(err, ErrKeyRevoked) {
		t.Errorf("after revocation: %v, want ErrKeyRevoked", err)
	}
}

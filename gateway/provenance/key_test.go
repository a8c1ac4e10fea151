package provenance

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
)

func TestLoadSeed(t *testing.T) {
	dir := t.TempDir()
	good := base64.StdEncoding.EncodeToString(make([]byte, 32))
	t.Setenv("PROV_GOOD", good)
	t.Setenv("PROV_SHORT", base64.StdEncoding.EncodeToString(make([]byte, 16)))
	t.Setenv("PROV_EMPTY", "")
	for _, tc := range []struct {
		name, env, file, wantErr string
	}{
		{"env", "PROV_GOOD", "", ""},
		{"env not set", "PROV_EMPTY", filepath.Join(dir, "unused.key"), "which is not set"},
		{"env short", "PROV_SHORT", "", "32-byte"},
		{"no source", "", "", "no provenance key"},
		{"file made", "", filepath.Join(dir, "sub", "provenance.key"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed, _, err := LoadSeed(tc.env, tc.file)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || len(seed) != 32 {
				t.Fatalf("%d bytes, %v", len(seed), err)
			}
		})
	}
	// A made key file is kept: the next load reads the same key, mode 0600.
	f := filepath.Join(dir, "sub", "provenance.key")
	a, _, _ := LoadSeed("", f)
	b, _, err := LoadSeed("", f)
	if err != nil || string(a) != string(b) {
		t.Fatalf("second load: %v", err)
	}
	if st, _ := os.Stat(f); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode())
	}
	if err := os.WriteFile(f, []byte("not base64!"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadSeed("", f); err == nil {
		t.Error("a corrupt key file loaded")
	}
}

func TestSignedRecordVerifies(t *testing.T) {
	s, err := NewSigner(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	stored, err := s.SignRecord(&Record{RequestID: "r", OrgID: "o", Time: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	_, r, err := s.VerifyStored(stored)
	if err != nil || r.RequestID != "r" || r.DigitalSourceType != DigitalSourceType || r.Version != RecordVersion {
		t.Fatalf("%+v %v", r, err)
	}
	// Another key does not verify it; neither does a changed record.
	other, _ := NewSigner(append(make([]byte, 31), 1))
	if _, _, err := other.VerifyStored(stored); err == nil {
		t.Error("verified with another key")
	}
	if !ed25519.Verify(s.Public(), []byte("x"), s.Sign([]byte("x"))) || s.Verify([]byte("y"), s.Sign([]byte("x"))) {
		t.Error("Sign and Verify disagree")
	}
	tampered := strings.Replace(stored, `"signature":"`, `"signature":"A`, 1)
	if _, _, err := s.VerifyStored(tampered); err == nil {
		t.Error("a changed signature verified")
	}
}

// TestSignedFormIsMarshals: the stored form SignRecord writes by hand is
// byte for byte what json.Marshal makes of Signed, for records whose
// strings JSON must escape (quotes, HTML, U+2028, control characters,
// non-ASCII) and with every optional member.
func TestSignedFormIsMarshals(t *testing.T) {
	s, err := NewSigner(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 28, 23, 59, 1, 123456789, time.FixedZone("x", 3600))
	for _, r := range []*Record{
		{RequestID: "r", OrgID: "o", Time: time.Unix(0, 0)},
		{RequestID: "0b0c5d4e", OrgID: `a"c<m>e&\`, Gateway: "gw\u2028\n\x01", Provider: "openai", Model: "gpt-4o-mini-tts",
			VoiceID: "alloy", VoiceRef: "voice_é", Time: at, MediaType: "audio/mpeg", SHA256: "93b9", Bytes: 48000, Complete: true,
			Marked: MarkedID3, Mark: &Mark{RequestID: "0b0c5d4e", Gateway: "<gw>", Time: at, SourceType: DigitalSourceType},
			Consent: &Consent{AttestedBy: "Ana \"A\" B", Relation: "self", Statement: "I agree\t😀", Time: at}},
	} {
		got, err := s.SignRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := json.Marshal(r)
		want, _ := json.Marshal(Signed{Record: msg, RecordBase64: base64.StdEncoding.EncodeToString(msg),
			Algorithm: "Ed25519", KeyID: s.id, Signature: base64.StdEncoding.EncodeToString(s.Sign(msg))})
		if got != string(want) {
			t.Errorf("stored form differs:\n got %s\nwant %s", got, want)
		}
		if _, _, err := s.VerifyStored(got); err != nil {
			t.Error(err)
		}
	}
}

// TestCheckKey: the first key a store sees is recorded; the same key
// passes again (after a reopen); another is refused with what to do,
// unless rotate, which records it in the old one's place.
func TestCheckKey(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v.db")
	open := func() *bolt.Store {
		st, err := bolt.Open(path, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	signer := func(b byte) *Signer {
		seed := make([]byte, 32)
		seed[0] = b
		s, err := NewSigner(seed)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first, second := signer(1), signer(2)
	st := open()
	if err := first.CheckKey(ctx, st, "$KEY", false); err != nil {
		t.Fatalf("first key: %v", err)
	}
	st.Close()
	st = open()
	defer func() { st.Close() }()
	if err := first.CheckKey(ctx, st, "$KEY", false); err != nil {
		t.Fatalf("the same key after a reopen: %v", err)
	}
	err := second.CheckKey(ctx, st, "/etc/voxgate/provenance.key", false)
	if !errors.Is(err, ErrWrongKey) {
		t.Fatalf("another key: %v, want ErrWrongKey", err)
	}
	for _, want := range []string{"/etc/voxgate/provenance.key", first.KeyID(), second.KeyID(), "provenance.rotate_key: true"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
	if err := second.CheckKey(ctx, st, "$KEY", true); err != nil {
		t.Fatalf("rotate: %v", err)
	}
	if err := first.CheckKey(ctx, st, "$KEY", false); !errors.Is(err, ErrWrongKey) {
		t.Errorf("the old key after the rotation: %v, want ErrWrongKey", err)
	}
}

package provenance

import (
	"crypto/ed25519"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

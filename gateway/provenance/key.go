package provenance

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/voxgate/voxgate/gateway/store"
)

// Signer signs provenance records with the gateway's Ed25519 key.
type Signer struct {
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
	id   string
}

// NewSigner returns a Signer for a 32-byte Ed25519 seed (RFC 8032).
func NewSigner(seed []byte) (*Signer, error) {
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("provenance key: want a %d-byte Ed25519 seed, have %d bytes", ed25519.SeedSize, len(seed))
	}
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	sum := sha256.Sum256(pub)
	return &Signer{priv: priv, pub: pub, id: hex.EncodeToString(sum[:8])}, nil
}

// KeyID names the key: the first 8 bytes of the SHA-256 of the raw public
// key, in hex. Every signed record names the key that signed it, so
// records signed before a key change are still checked with the old one.
func (s *Signer) KeyID() string { return s.id }

// Fingerprint is the SHA-256 of the raw public key: what the store
// records of the key (store.SigningKeyStore), public like the key.
func (s *Signer) Fingerprint() []byte {
	sum := sha256.Sum256(s.pub)
	return sum[:]
}

// ErrWrongKey is what a start with another signing key than the store's
// wraps.
var ErrWrongKey = errors.New("wrong provenance signing key")

// CheckKey records s's fingerprint in st, or compares it with the one
// recorded: another key is refused (ErrWrongKey, naming source, the key
// file's path or "$ENV_VAR", and what to do) unless rotate, which
// records s's in its place. Without the check an instance given a new
// key would sign its records with a key that GET /v1/provenance/keys of
// the others does not publish.
func (s *Signer) CheckKey(ctx context.Context, st store.SigningKeyStore, source string, rotate bool) error {
	recorded, err := st.RecordSigningKey(ctx, s.Fingerprint(), rotate)
	if err != nil {
		return fmt.Errorf("provenance key: record the key's fingerprint: %w", err)
	}
	if bytes.Equal(recorded, s.Fingerprint()) {
		return nil
	}
	old := FingerprintKeyID(recorded)
	return fmt.Errorf("%w: the provenance signing key from %s (key id %s) is not the key that signed this store's records (key id %s); "+
		"give every instance the same key (provenance.key_env or provenance.key_file), the one with key id %s; "+
		"to change the key on purpose, start once with provenance.rotate_key: true and keep the old public key to check the old records",
		ErrWrongKey, source, s.id, old, old)
}

// FingerprintKeyID is the key id (KeyID) of the key whose Fingerprint is
// fp: its first 8 bytes in hex.
func FingerprintKeyID(fp []byte) string {
	id := hex.EncodeToString(fp)
	if len(id) > 16 {
		id = id[:16]
	}
	return id
}

// Public is the raw 32-byte public key.
func (s *Signer) Public() ed25519.PublicKey { return s.pub }

// PublicPEM is the public key as a PEM SubjectPublicKeyInfo, the form
// `openssl pkeyutl -verify -pubin -inkey` reads.
func (s *Signer) PublicPEM() string {
	der, err := x509.MarshalPKIXPublicKey(s.pub)
	if err != nil { // an Ed25519 key always marshals
		panic(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// Sign signs msg (pure Ed25519, no pre-hash: what openssl pkeyutl -rawin
// verifies).
func (s *Signer) Sign(msg []byte) []byte { return ed25519.Sign(s.priv, msg) }

// Verify checks sig over msg with the signer's public key.
func (s *Signer) Verify(msg, sig []byte) bool { return ed25519.Verify(s.pub, msg, sig) }

// LoadSeed returns the 32-byte Ed25519 seed and where it came from: from
// the environment variable envName when one is named (never falling back
// to a file then), else from keyFile, which is made with a new random seed
// (mode 0600) when it does not exist. The seed is base64 text, as the
// secrets key is (`openssl rand -base64 32` makes one).
//
// Unlike the secrets key, a new provenance key loses nothing: records
// name the key that signed them, and the old public key still checks
// them. Keep the key file with the database all the same, and give
// every instance the same key so that GET /v1/provenance/keys tells the
// truth on each.
func LoadSeed(envName, keyFile string) (seed []byte, source string, err error) {
	if envName != "" {
		source = "$" + envName
		v := os.Getenv(envName)
		if v == "" {
			return nil, source, fmt.Errorf("provenance.key_env names %s, which is not set: set it to the base64 of a 32-byte Ed25519 seed (e.g. `openssl rand -base64 32`), the same on every instance", source)
		}
		return decodeSeed(v, source)
	}
	if keyFile == "" {
		return nil, "", errors.New("no provenance key: set provenance.key_env or provenance.key_file")
	}
	source = keyFile
	data, err := os.ReadFile(keyFile)
	if errors.Is(err, os.ErrNotExist) {
		k := make([]byte, ed25519.SeedSize)
		if _, err := rand.Read(k); err != nil {
			return nil, source, err
		}
		if err := os.MkdirAll(filepath.Dir(keyFile), 0o700); err != nil {
			return nil, source, fmt.Errorf("provenance key: %w", err)
		}
		// O_EXCL: of two processes making the key, one wins and the
		// other reads its key.
		f, err := os.OpenFile(keyFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			if errors.Is(err, os.ErrExist) {
				return LoadSeed("", keyFile)
			}
			return nil, source, fmt.Errorf("provenance key: %w", err)
		}
		defer f.Close()
		if _, err := f.WriteString(base64.StdEncoding.EncodeToString(k) + "\n"); err != nil {
			return nil, source, fmt.Errorf("provenance key: %w", err)
		}
		return k, source, f.Sync()
	}
	if err != nil {
		return nil, source, fmt.Errorf("provenance key: %w", err)
	}
	return decodeSeed(string(data), source)
}

func decodeSeed(v, source string) ([]byte, string, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
	if err != nil || len(k) != ed25519.SeedSize {
		return nil, source, fmt.Errorf("provenance key %s must hold the base64 of a 32-byte Ed25519 seed (e.g. `openssl rand -base64 32`)", source)
	}
	return k, source, nil
}

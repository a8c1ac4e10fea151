// Package credentials resolves the provider credentials of a call and keeps
// organizations' own provider keys (BYOK) encrypted at rest.
package credentials

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Sealer encrypts and decrypts stored secrets with AES-256-GCM.
type Sealer struct {
	aead cipher.AEAD
	// fingerprint is Fingerprint of the key; source says where the key
	// came from, for messages (WithSource).
	fingerprint []byte
	source      string
}

// Source is where the key came from, as WithSource named it.
func (s *Sealer) Source() string { return s.source }

// Fingerprint is the key's Fingerprint.
func (s *Sealer) Fingerprint() []byte { return s.fingerprint }

// WithSource names where the key came from ("$VOXGATE_SECRETS_KEY", a
// file path) in the guard's messages, and returns s.
func (s *Sealer) WithSource(source string) *Sealer {
	s.source = source
	return s
}

// LoadKey returns the 32-byte sealing key and where it came from (for
// messages): from the environment variable envName when one is named,
// else from keyFile. A named variable that is not set is an error, never
// a reason to fall back to a file. A missing keyFile is created with a
// new random key (mode 0600) only when create is true: the caller says
// so only for a store that holds no secrets yet and records no key's
// fingerprint, so that a lost or misplaced key file is never silently
// replaced by a new key.
func LoadKey(envName, keyFile string, create bool) (key []byte, source string, err error) {
	if envName != "" {
		source = "$" + envName
		v := os.Getenv(envName)
		if v == "" {
			return nil, source, fmt.Errorf("secrets.key_env names %s, which is not set: set it to the deployment's secrets key (base64 of 32 bytes, the same on every instance); voxgate makes no key file when key_env is named", source)
		}
		k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
		if err != nil || len(k) != 32 {
			return nil, source, fmt.Errorf("%s must hold a base64-encoded 32-byte key (e.g. `openssl rand -base64 32`)", source)
		}
		return k, source, nil
	}
	if keyFile == "" {
		return nil, "", errors.New("no secrets key: set secrets.key_env or secrets.key_file")
	}
	source = keyFile
	data, err := os.ReadFile(keyFile)
	if errors.Is(err, os.ErrNotExist) {
		if !create {
			return nil, source, fmt.Errorf("secrets key file %s does not exist, and the store holds provider keys sealed with a key: restore that key file (or name it with secrets.key_file, or give the key with secrets.key_env); a new key could not open them", keyFile)
		}
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			return nil, source, err
		}
		if err := os.MkdirAll(filepath.Dir(keyFile), 0o700); err != nil {
			return nil, source, fmt.Errorf("secrets key: %w", err)
		}
		// O_EXCL: two processes racing to create the key must not both win.
		f, err := os.OpenFile(keyFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			if errors.Is(err, os.ErrExist) {
				return LoadKey("", keyFile, false)
			}
			return nil, source, fmt.Errorf("secrets key: %w", err)
		}
		defer f.Close()
		if _, err := f.WriteString(base64.StdEncoding.EncodeToString(k) + "\n"); err != nil {
			return nil, source, fmt.Errorf("secrets key: %w", err)
		}
		return k, source, f.Sync()
	}
	if err != nil {
		return nil, source, fmt.Errorf("secrets key: %w", err)
	}
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(k) != 32 {
		return nil, source, fmt.Errorf("secrets key file %s must hold a base64-encoded 32-byte key", keyFile)
	}
	return k, source, nil
}

// NewSealer returns a Sealer for a 32-byte key.
func NewSealer(key []byte) (*Sealer, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead, fingerprint: Fingerprint(key), source: "the configured key"}, nil
}

// Seal encrypts plaintext; aad (e.g. "org/provider") binds the ciphertext
// to its place so it cannot be copied to another org's entry.
func (s *Sealer) Seal(plaintext, aad []byte) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plaintext)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return s.aead.Seal(nonce, nonce, plaintext, aad), nil
}

// Open decrypts what Seal produced with the same aad.
func (s *Sealer) Open(ciphertext, aad []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(ciphertext) < n+s.aead.Overhead() {
		return nil, errors.New("secret is corrupt")
	}
	pt, err := s.aead.Open(nil, ciphertext[:n], ciphertext[n:], aad)
	if err != nil {
		return nil, errors.New("secret cannot be decrypted: wrong secrets key or corrupt data")
	}
	return pt, nil
}

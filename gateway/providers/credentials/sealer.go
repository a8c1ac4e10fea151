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
}

// LoadKey returns the 32-byte sealing key: from the environment variable
// envName when set (base64), else from keyFile, which is created with a new
// random key (mode 0600) when missing.
func LoadKey(envName, keyFile string) ([]byte, error) {
	if envName != "" {
		if v := os.Getenv(envName); v != "" {
			k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
			if err != nil || len(k) != 32 {
				return nil, fmt.Errorf("%s must hold a base64-encoded 32-byte key (e.g. `openssl rand -base64 32`)", envName)
			}
			return k, nil
		}
	}
	if keyFile == "" {
		return nil, errors.New("no secrets key: set secrets.key_env or secrets.key_file")
	}
	data, err := os.ReadFile(keyFile)
	if errors.Is(err, os.ErrNotExist) {
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(keyFile), 0o700); err != nil {
			return nil, fmt.Errorf("secrets key: %w", err)
		}
		// O_EXCL: two processes racing to create the key must not both win.
		f, err := os.OpenFile(keyFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			if errors.Is(err, os.ErrExist) {
				return LoadKey("", keyFile)
			}
			return nil, fmt.Errorf("secrets key: %w", err)
		}
		defer f.Close()
		if _, err := f.WriteString(base64.StdEncoding.EncodeToString(k) + "\n"); err != nil {
			return nil, fmt.Errorf("secrets key: %w", err)
		}
		return k, f.Sync()
	}
	if err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(k) != 32 {
		return nil, fmt.Errorf("secrets key file %s must hold a base64-encoded 32-byte key", keyFile)
	}
	return k, nil
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
	return &Sealer{aead: aead}, nil
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

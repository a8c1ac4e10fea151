package credentials

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
)

// The secrets key guard: the store records a fingerprint of the key that
// sealed its secrets, and a gateway or CLI holding another key refuses to
// start or to write, rather than sealing secrets that no other instance
// can open (or failing every BYOK request with "cannot be decrypted").

// fingerprintLabel is what a key's fingerprint is the HMAC of. Fixed: a
// new label would orphan every recorded fingerprint.
const fingerprintLabel = "voxgate secrets key fingerprint v1"

// Fingerprint identifies a secrets key without revealing it:
// HMAC-SHA256 of a fixed label under the key. It is what the store
// records, never the key.
func Fingerprint(key []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(fingerprintLabel))
	return m.Sum(nil)
}

// SealStore is the part of the store that records the fingerprint
// (store.SecretStore has it).
type SealStore interface {
	SealFingerprint(ctx context.Context) (fingerprint []byte, hasSecrets bool, err error)
	RecordSealFingerprint(ctx context.Context, fingerprint []byte) ([]byte, error)
}

// ErrWrongKey is what a mismatch wraps: the key at hand is not the key
// that sealed the store's secrets.
var ErrWrongKey = errors.New("wrong secrets key")

// CheckKey compares the fingerprint of the key from source (the key
// file's path or "$ENV_VAR") with the one st records. nil when they match
// or when none is recorded (the first write records it); otherwise an
// error wrapping ErrWrongKey that names source and how to fix it.
func CheckKey(ctx context.Context, st SealStore, key []byte, source string) error {
	recorded, _, err := st.SealFingerprint(ctx)
	if err != nil {
		return fmt.Errorf("secrets key: read the store's key fingerprint: %w", err)
	}
	return compare(recorded, Fingerprint(key), source)
}

func compare(recorded, fp []byte, source string) error {
	if recorded == nil || hmac.Equal(recorded, fp) {
		return nil
	}
	return fmt.Errorf("%w: the secrets key from %s is not the key that sealed this store's provider keys (the store records another key's fingerprint); "+
		"give every instance and the CLI the same key (secrets.key_env or secrets.key_file), the one the store's secrets were sealed with", ErrWrongKey, source)
}

// guard records the sealer's fingerprint in st when none is recorded and
// refuses (ErrWrongKey) when another is: called before every write of a
// sealed secret.
func (s *Sealer) guard(ctx context.Context, st Secrets) error {
	ss, ok := st.(SealStore)
	if !ok {
		return errors.New("secrets key: the store cannot record the key's fingerprint")
	}
	recorded, err := ss.RecordSealFingerprint(ctx, s.fingerprint)
	if err != nil {
		return fmt.Errorf("secrets key: record the key's fingerprint: %w", err)
	}
	return compare(recorded, s.fingerprint, s.source)
}

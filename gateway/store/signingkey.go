package store

import "context"

// SigningKeyStore records which key signs the gateway's provenance
// records, as SecretStore records the secrets key: a gateway started
// with another key is refused rather than signing new records with a key
// the published one does not check (docs/provenance.md). Every driver
// implements it. What is recorded is the public key's fingerprint, never
// the key.
type SigningKeyStore interface {
	// RecordSigningKey records fingerprint unless one is recorded (or,
	// with replace, in its place: a deliberate rotation) and returns the
	// one recorded now, so that of two instances starting at once the
	// first wins.
	RecordSigningKey(ctx context.Context, fingerprint []byte, replace bool) ([]byte, error)
}

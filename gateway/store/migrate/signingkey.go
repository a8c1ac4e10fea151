package migrate

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
)

// ErrSigningKeyDiffers is wrapped by Run's error when PostgreSQL records
// another provenance signing key than the file.
var ErrSigningKeyDiffers = errors.New("provenance signing keys differ")

// signingKey copies the fingerprint of the provenance signing key the
// file records (store.SigningKeyStore) into PostgreSQL, so that the
// PostgreSQL gateways' key guard checks the key that signed the file's
// records: without it, the first PostgreSQL instance would record
// whatever key it was started with, and a mistaken new key would pass.
// A database that records the same key is left as it is (a second run
// changes nothing), and one that records none gets the file's.
//
// A database that records another key fails the migration, before
// anything is copied, rather than warning and going on: a recorded key
// means a gateway has already run on that database with its own key, so
// either the DSN names another deployment's database (copying into it
// would mix two deployments' records) or a trial start recorded a key by
// mistake; which key is to sign from now on is the operator's choice,
// and either way the PostgreSQL gateways' start would refuse one of the
// two keys later, after a copy that may have taken hours. The message
// names both keys and the way out, the same provenance.rotate_key the
// start's guard offers: a start with it on one side records that side's
// key in place of the other's, and the migration run again then passes.
func (m *migration) signingKey(ctx context.Context) error {
	fp, err := m.src.SigningKey(ctx)
	if err != nil {
		return err
	}
	if fp == nil {
		m.say("provenance signing key: none recorded in the file")
		return nil
	}
	recorded, err := m.dst.RecordSigningKey(ctx, fp, false)
	if err != nil {
		return err
	}
	if !bytes.Equal(recorded, fp) {
		return fmt.Errorf("%w: the file records the provenance signing key with key id %s (fingerprint %x), PostgreSQL another, key id %s (fingerprint %x), "+
			"so a gateway has run on that database with its own key; nothing was copied in this run. Check that --dsn names the database meant for this deployment; "+
			"to keep the file's key (the one its records name), start one gateway on PostgreSQL with that key and provenance.rotate_key: true, stop it, and migrate again; "+
			"to keep PostgreSQL's, start the file's gateway once with that key and provenance.rotate_key: true, stop it, and migrate again; "+
			"either way keep the other public key to check the records it signed",
			ErrSigningKeyDiffers, keyID(fp), fp, keyID(recorded), recorded)
	}
	m.say("provenance signing key: key id " + keyID(fp) + " recorded")
	return nil
}

// keyID is the key id of the key whose fingerprint is fp: its first 8
// bytes in hex, as provenance.FingerprintKeyID names it (not imported:
// that package brings the audio codecs).
func keyID(fp []byte) string {
	return hex.EncodeToString(fp[:min(len(fp), 8)])
}

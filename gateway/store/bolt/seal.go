package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/voxgate/voxgate/gateway/store"
)

// SealFingerprint implements store.SecretStore: the fingerprint in the
// meta bucket, and whether any organization's secrets bucket has a key.
func (s *Store) SealFingerprint(ctx context.Context) ([]byte, bool, error) {
	var fp []byte
	has := false
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		fp = bytes.Clone(tx.Bucket([]byte(bucketMeta)).Get([]byte(metaSealFingerprint)))
		c := tx.Bucket([]byte(bucketOrgs)).Cursor()
		for k, v := c.First(); k != nil && !has; k, v = c.Next() {
			if v != nil {
				continue // not an organization's bucket
			}
			if b := orgBucket(tx, string(k), bucketSecrets); b != nil {
				first, _ := b.Cursor().First()
				has = first != nil
			}
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("store: seal fingerprint: %w", err)
	}
	return fp, has, nil
}

// RecordSealFingerprint implements store.SecretStore in one write
// transaction, so two writers cannot both record theirs.
func (s *Store) RecordSealFingerprint(ctx context.Context, fingerprint []byte) ([]byte, error) {
	var out []byte
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		meta := tx.Bucket([]byte(bucketMeta))
		if v := meta.Get([]byte(metaSealFingerprint)); v != nil {
			out = bytes.Clone(v)
			return nil
		}
		out = bytes.Clone(fingerprint)
		return meta.Put([]byte(metaSealFingerprint), bytes.Clone(fingerprint))
	})
	if err != nil {
		return nil, fmt.Errorf("store: record seal fingerprint: %w", err)
	}
	return out, nil
}

// PeekSealFingerprint reads SealFingerprint from the file at path without
// changing it (read-only, shared lock), for `voxgate config check`. A
// file that does not exist has neither; a file held by a running gateway
// fails with store.ErrLocked after a short wait.
func PeekSealFingerprint(path string) (fingerprint []byte, hasSecrets bool, err error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: 200 * time.Millisecond})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, false, fmt.Errorf("store: open %s: %w", path, store.ErrLocked)
		}
		return nil, false, fmt.Errorf("store: open %s: %w", path, err)
	}
	defer db.Close()
	s := &Store{db: db, path: path}
	err = db.View(func(tx *bbolt.Tx) error {
		if tx.Bucket([]byte(bucketMeta)) == nil || tx.Bucket([]byte(bucketOrgs)) == nil {
			return errEmptyFile
		}
		return nil
	})
	if errors.Is(err, errEmptyFile) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return s.SealFingerprint(context.Background())
}

var errEmptyFile = errors.New("no voxgate data")

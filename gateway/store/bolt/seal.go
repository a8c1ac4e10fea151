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
	err = peek(path, func(s *Store) error {
		fingerprint, hasSecrets, err = s.SealFingerprint(context.Background())
		return err
	})
	return fingerprint, hasSecrets, err
}

// peek runs fn on the file at path opened read-only (a shared lock, so
// nothing a running gateway holds is disturbed), unless the file does
// not exist or holds no voxgate data: then fn is not run and peek
// returns nil. A file held by a running gateway fails with
// store.ErrLocked after a short wait.
func peek(path string, fn func(*Store) error) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: 200 * time.Millisecond})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return fmt.Errorf("store: open %s: %w", path, store.ErrLocked)
		}
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	defer db.Close()
	err = db.View(func(tx *bbolt.Tx) error {
		if tx.Bucket([]byte(bucketMeta)) == nil || tx.Bucket([]byte(bucketOrgs)) == nil {
			return errEmptyFile
		}
		return nil
	})
	if errors.Is(err, errEmptyFile) {
		return nil
	}
	if err != nil {
		return err
	}
	return fn(&Store{db: db, path: path})
}

var errEmptyFile = errors.New("no voxgate data")

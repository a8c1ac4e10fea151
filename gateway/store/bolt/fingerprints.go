package bolt

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.etcd.io/bbolt"

	"github.com/voxgate/voxgate/gateway/store"
)

// Acoustic fingerprints, per organization: bucketFingerprints maps a
// request id to its fingerprint (encodeFingerprint), and
// bucketFingerprintKeys holds one empty entry per index key and request,
// key (4 bytes, big-endian) then request id, so that the requests of a
// key are one cursor range.
const (
	bucketFingerprints    = "fingerprints"
	bucketFingerprintKeys = "fingerprint_keys"
)

// PutFingerprint implements store.FingerprintStore.
func (s *Store) PutFingerprint(ctx context.Context, f *store.Fingerprint) error {
	if f == nil {
		return errors.New("store: nil fingerprint")
	}
	if err := requireIDs("org id", f.OrgID, "request id", f.RequestID); err != nil {
		return err
	}
	if err := store.CheckText("request_id", f.RequestID); err != nil {
		return fmt.Errorf("store: put fingerprint: %w", err)
	}
	ts := f.TS
	if ts.IsZero() {
		ts = s.now()
	}
	val := encodeFingerprint(ts, f.Values, f.Keys)
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		fb, err := orgBucketCreate(tx, f.OrgID, bucketFingerprints)
		if err != nil {
			return err
		}
		kb, err := orgBucketCreate(tx, f.OrgID, bucketFingerprintKeys)
		if err != nil {
			return err
		}
		if old := fb.Get([]byte(f.RequestID)); old != nil {
			if _, _, oldKeys, err := decodeFingerprint(old); err == nil {
				for _, k := range oldKeys {
					if err := kb.Delete(fingerprintKey(k, f.RequestID)); err != nil {
						return err
					}
				}
			}
		}
		if err := fb.Put([]byte(f.RequestID), val); err != nil {
			return err
		}
		for _, k := range f.Keys {
			if err := kb.Put(fingerprintKey(k, f.RequestID), []byte{}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: put fingerprint %s: %w", f.RequestID, err)
	}
	return nil
}

// LoadFingerprints fills orgID's empty index with n fingerprints,
// fingerprint(i) for i from 0, for benchmarks (`voxbench -only
// identify`). fingerprint must be deterministic (it is called twice per
// i) and give request ids in increasing byte order. Each bucket is then
// written in key order, which bbolt appends to full pages: a million
// fingerprints (24 million key entries) in minutes, where random
// inserts (20,000 fingerprints to a transaction) took nine minutes for
// the first twenty thousand on a busy machine.
func (s *Store) LoadFingerprints(ctx context.Context, orgID string, n int, fingerprint func(i int) store.Fingerprint) error {
	byKey := map[uint32][]int32{}
	idOf := make([]string, n)
	for i := range n {
		f := fingerprint(i)
		if i > 0 && f.RequestID <= idOf[i-1] {
			return fmt.Errorf("store: load fingerprints: request id %q does not follow %q", f.RequestID, idOf[i-1])
		}
		idOf[i] = f.RequestID
		for _, k := range f.Keys {
			byKey[k] = append(byKey[k], int32(i))
		}
	}
	const perTx = 500_000
	put := func(bucket string, each func(b *bbolt.Bucket, from int) (int, error)) error {
		for from, done := 0, false; !done; {
			err := s.update(ctx, func(tx *bbolt.Tx) error {
				b, err := orgBucketCreate(tx, orgID, bucket)
				if err != nil {
					return err
				}
				b.FillPercent = 1
				next, err := each(b, from)
				done, from = next < 0, next
				return err
			})
			if err != nil {
				return fmt.Errorf("store: load fingerprints: %w", err)
			}
		}
		return nil
	}
	now := s.now()
	err := put(bucketFingerprints, func(b *bbolt.Bucket, from int) (int, error) {
		for i := from; i < n; i++ {
			if i-from == perTx {
				return i, nil
			}
			f := fingerprint(i)
			ts := f.TS
			if ts.IsZero() {
				ts = now
			}
			if err := b.Put([]byte(f.RequestID), encodeFingerprint(ts, f.Values, f.Keys)); err != nil {
				return 0, err
			}
		}
		return -1, nil
	})
	if err != nil {
		return err
	}
	keys := slices.Sorted(maps.Keys(byKey))
	return put(bucketFingerprintKeys, func(b *bbolt.Bucket, from int) (int, error) {
		count := 0
		for ki := from; ki < len(keys); ki++ {
			if count >= perTx {
				return ki, nil
			}
			for _, i := range byKey[keys[ki]] {
				if err := b.Put(fingerprintKey(keys[ki], idOf[i]), []byte{}); err != nil {
					return 0, err
				}
				count++
			}
		}
		return -1, nil
	})
}

// MatchFingerprints implements store.FingerprintStore: one cursor range
// per key, then the fingerprints of the best candidates.
func (s *Store) MatchFingerprints(ctx context.Context, orgID string, keys []uint32, limit int) ([]store.Fingerprint, error) {
	out := []store.Fingerprint{}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		kb, fb := orgBucket(tx, orgID, bucketFingerprintKeys), orgBucket(tx, orgID, bucketFingerprints)
		if kb == nil || fb == nil {
			return nil
		}
		hits := map[string]int{}
		c := kb.Cursor()
		var prefix [4]byte
		for _, k := range keys {
			binary.BigEndian.PutUint32(prefix[:], k)
			for ek, _ := c.Seek(prefix[:]); ek != nil && bytes.HasPrefix(ek, prefix[:]); ek, _ = c.Next() {
				hits[string(ek[4:])]++
			}
		}
		// Rank the candidates by their times alone (a value's first 8
		// bytes) and decode only the best limit: at a million indexed
		// clips a query has thousands of candidates, and decoding every
		// one was most of the lookup (voxbench -only identify).
		type cand struct {
			id   string
			hits int
			ts   uint64
		}
		cands := make([]cand, 0, len(hits))
		for id, n := range hits {
			v := fb.Get([]byte(id))
			if len(v) < 8 {
				return fmt.Errorf("fingerprint %s: %w", id, errCorruptFingerprint)
			}
			cands = append(cands, cand{id, n, binary.BigEndian.Uint64(v)})
		}
		slices.SortFunc(cands, func(a, b cand) int {
			if d := b.hits - a.hits; d != 0 {
				return d
			}
			return cmp.Compare(b.ts, a.ts)
		})
		for _, c := range cands[:min(len(cands), limit)] {
			ts, values, fkeys, err := decodeFingerprint(fb.Get([]byte(c.id)))
			if err != nil {
				return fmt.Errorf("fingerprint %s: %w", c.id, err)
			}
			out = append(out, store.Fingerprint{OrgID: orgID, RequestID: c.id, TS: ts, Values: values, Keys: fkeys})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: match fingerprints: %w", err)
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// DeleteFingerprint implements store.FingerprintStore.
func (s *Store) DeleteFingerprint(ctx context.Context, orgID, requestID string) error {
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		kb, fb := orgBucket(tx, orgID, bucketFingerprintKeys), orgBucket(tx, orgID, bucketFingerprints)
		if kb == nil || fb == nil {
			return nil
		}
		return deleteFingerprint(fb, kb, requestID)
	})
	if err != nil {
		return fmt.Errorf("store: delete fingerprint %s: %w", requestID, err)
	}
	return nil
}

// deleteFingerprint drops one fingerprint and its key entries.
func deleteFingerprint(fb, kb *bbolt.Bucket, requestID string) error {
	old := fb.Get([]byte(requestID))
	if old == nil {
		return nil
	}
	if _, _, keys, err := decodeFingerprint(old); err == nil {
		for _, k := range keys {
			if err := kb.Delete(fingerprintKey(k, requestID)); err != nil {
				return err
			}
		}
	}
	return fb.Delete([]byte(requestID))
}

// purgeFingerprints deletes orgID's fingerprints made before cutoff (unix
// ns), up to purgeBatch in one transaction; it returns how many. The
// fingerprints are keyed by request, so this reads each one's time (its
// first 8 bytes): a scan of the bucket, once per purge.
func (s *Store) purgeFingerprints(ctx context.Context, orgID string, cutoff uint64) (int, error) {
	n := 0
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		kb, fb := orgBucket(tx, orgID, bucketFingerprintKeys), orgBucket(tx, orgID, bucketFingerprints)
		if kb == nil || fb == nil {
			return nil
		}
		var old []string
		c := fb.Cursor()
		for k, v := c.First(); k != nil && len(old) < purgeBatch; k, v = c.Next() {
			if len(v) >= 8 && binary.BigEndian.Uint64(v) < cutoff {
				old = append(old, string(k))
			}
		}
		for _, id := range old {
			if err := deleteFingerprint(fb, kb, id); err != nil {
				return err
			}
		}
		n = len(old)
		return nil
	})
	return n, err
}

// ForEachFingerprint implements store.FingerprintStore: one read
// transaction per organization.
func (s *Store) ForEachFingerprint(ctx context.Context, fn func(*store.Fingerprint) error) error {
	var orgIDs []string
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte(bucketOrgs)).ForEachBucket(func(k []byte) error {
			orgIDs = append(orgIDs, string(k))
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("store: list fingerprints: %w", err)
	}
	for _, org := range orgIDs {
		var list []store.Fingerprint
		err := s.view(ctx, func(tx *bbolt.Tx) error {
			fb := orgBucket(tx, org, bucketFingerprints)
			if fb == nil {
				return nil
			}
			return fb.ForEach(func(k, v []byte) error {
				ts, values, keys, err := decodeFingerprint(v)
				if err != nil {
					return fmt.Errorf("fingerprint %s: %w", k, err)
				}
				list = append(list, store.Fingerprint{OrgID: org, RequestID: string(k), TS: ts, Values: values, Keys: keys})
				return nil
			})
		})
		if err != nil {
			return fmt.Errorf("store: list fingerprints: %w", err)
		}
		for i := range list {
			if err := fn(&list[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

func fingerprintKey(k uint32, requestID string) []byte {
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(requestID)), k)
	return append(b, requestID...)
}

// encodeFingerprint is the time (unix nanoseconds), then the values and
// the keys, each a count and little-endian uint32s.
func encodeFingerprint(ts time.Time, values, keys []uint32) []byte {
	b := make([]byte, 0, 16+4*(len(values)+len(keys)))
	b = binary.BigEndian.AppendUint64(b, uint64(ts.UnixNano()))
	for _, list := range [][]uint32{values, keys} {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(list)))
		for _, v := range list {
			b = binary.LittleEndian.AppendUint32(b, v)
		}
	}
	return b
}

var errCorruptFingerprint = errors.New("corrupt fingerprint")

func decodeFingerprint(b []byte) (ts time.Time, values, keys []uint32, err error) {
	if len(b) < 8 {
		return ts, nil, nil, errCorruptFingerprint
	}
	ts = time.Unix(0, int64(binary.BigEndian.Uint64(b))).UTC()
	b = b[8:]
	lists := [2][]uint32{}
	for i := range lists {
		if len(b) < 4 {
			return ts, nil, nil, errCorruptFingerprint
		}
		n := int(binary.LittleEndian.Uint32(b))
		b = b[4:]
		if n > len(b)/4 {
			return ts, nil, nil, errCorruptFingerprint
		}
		lists[i] = make([]uint32, n)
		for j := range n {
			lists[i][j] = binary.LittleEndian.Uint32(b[4*j:])
		}
		b = b[4*n:]
	}
	return ts, lists[0], lists[1], nil
}

package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/voxgate/voxgate/gateway/store"
)

// purgeBatch bounds the rows one purge transaction deletes, so a purge of a
// large backlog never holds bbolt's single write lock for long and request
// log batches and user writes interleave with it.
const purgeBatch = 2000

// Index key prefixes. Each secondary index key is prefix + primary key and
// has an empty value; the prefix encodes the indexed value so that all keys
// of one value are contiguous and, within it, ordered like the primary.
// Strings are length-prefixed (2 bytes) so no value's prefix is a prefix of
// another value's keys.

func strPrefix(s string) []byte { return appendStrPrefix(make([]byte, 0, 2+len(s)+2+logKeyLen), s) }

func appendStrPrefix(b []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint16(b, uint16(len(s))), s...)
}

func statusPrefix(status int) []byte {
	return binary.BigEndian.AppendUint16(make([]byte, 0, 2+logKeyLen), uint16(status))
}

func providerStatusPrefix(provider string, status int) []byte {
	return binary.BigEndian.AppendUint16(strPrefix(provider), uint16(status))
}

// indexable reports whether a string value fits the 2-byte length prefix.
// Longer values (never produced by the gateway) are left out of the index.
func indexable(s string) bool { return s != "" && len(s) <= 0xFFFF }

// statusIndexable reports whether a status fits the 2-byte index prefix.
func statusIndexable(status int) bool { return status > 0 && status <= 0xFFFF }

// chooseLogIndex picks the bucket and key prefix a filtered listing walks:
// the most selective index the filter allows. A conversation's children are
// few; provider+status is exact for the dashboard's common combination;
// then provider, status, or the primary bucket (empty prefix). Whatever the
// choice, keys under the prefix end in the primary key, so the time range
// and an `after` position become key bounds in that index.
func chooseLogIndex(f *store.LogFilter) (bucket string, prefix []byte) {
	switch {
	case f.ParentRequestID != "" && indexable(f.ParentRequestID):
		return bucketLogsParent, strPrefix(f.ParentRequestID)
	case f.Provider != "" && indexable(f.Provider) && f.Status != 0 && statusIndexable(f.Status):
		return bucketLogsProviderStatus, providerStatusPrefix(f.Provider, f.Status)
	case f.Provider != "" && indexable(f.Provider):
		return bucketLogsProvider, strPrefix(f.Provider)
	case f.Status != 0 && statusIndexable(f.Status):
		return bucketLogsStatus, statusPrefix(f.Status)
	}
	return bucketLogs, nil
}

// orgLogBuckets are one organization's log buckets within a write
// transaction.
type orgLogBuckets struct {
	rows, parent, provider, providerStatus, status, request *bbolt.Bucket
}

func (s *Store) openOrgLogBuckets(tx *bbolt.Tx, orgID string) (*orgLogBuckets, error) {
	var ob orgLogBuckets
	for _, x := range []struct {
		name string
		dst  **bbolt.Bucket
	}{
		{bucketLogs, &ob.rows},
		{bucketLogsParent, &ob.parent},
		{bucketLogsProvider, &ob.provider},
		{bucketLogsProviderStatus, &ob.providerStatus},
		{bucketLogsStatus, &ob.status},
		{bucketLogsRequest, &ob.request},
	} {
		b, err := orgBucketCreate(tx, orgID, x.name)
		if err != nil {
			return nil, err
		}
		b.FillPercent = s.logFill
		*x.dst = b
	}
	return &ob, nil
}

// eachIndexKey calls fn with every index bucket row r (primary key pk)
// belongs in and its key there. Keys are built in scratch, so each is only
// valid during its call (bbolt's Put and Delete copy keys); the grown
// scratch is returned for reuse.
func (ob *orgLogBuckets) eachIndexKey(scratch []byte, r *store.LogRow, pk []byte, fn func(*bbolt.Bucket, []byte) error) ([]byte, error) {
	if indexable(r.ParentRequestID) {
		scratch = append(appendStrPrefix(scratch[:0], r.ParentRequestID), pk...)
		if err := fn(ob.parent, scratch); err != nil {
			return scratch, err
		}
	}
	if indexable(r.Provider) {
		scratch = append(appendStrPrefix(scratch[:0], r.Provider), pk...)
		if err := fn(ob.provider, scratch); err != nil {
			return scratch, err
		}
		if statusIndexable(r.Status) {
			scratch = binary.BigEndian.AppendUint16(appendStrPrefix(scratch[:0], r.Provider), uint16(r.Status))
			scratch = append(scratch, pk...)
			if err := fn(ob.providerStatus, scratch); err != nil {
				return scratch, err
			}
		}
	}
	if statusIndexable(r.Status) {
		scratch = append(binary.BigEndian.AppendUint16(scratch[:0], uint16(r.Status)), pk...)
		if err := fn(ob.status, scratch); err != nil {
			return scratch, err
		}
	}
	if indexable(r.RequestID) {
		scratch = append(appendStrPrefix(scratch[:0], r.RequestID), pk...)
		if err := fn(ob.request, scratch); err != nil {
			return scratch, err
		}
	}
	return scratch, nil
}

func putIndex(b *bbolt.Bucket, key []byte) error { return b.Put(key, []byte{}) }

func deleteIndex(b *bbolt.Bucket, key []byte) error { return b.Delete(key) }

// AppendLogs writes a batch of rows in one transaction (one fsync for the
// whole batch): each row under its organization's primary log bucket, plus
// its secondary index entries. Rows with a zero TS get the current time.
// Every row must name its organization; otherwise nothing is written.
func (s *Store) AppendLogs(ctx context.Context, rows []store.LogRow) error {
	if len(rows) == 0 {
		return nil
	}
	for i := range rows {
		if rows[i].OrgID == "" {
			return fmt.Errorf("store: append logs: row %d (request %q) has no org id", i, rows[i].RequestID)
		}
		if err := rows[i].CheckText(); err != nil {
			return fmt.Errorf("store: append logs: row %d: %w", i, err)
		}
	}
	now := s.now()
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		orgs := make(map[string]*orgLogBuckets, 1)
		// bbolt keeps references to keys' and values' memory until commit, so
		// each row gets fresh slices; they are carved from one arena per batch
		// to keep a 512-row batch at a handful of allocations.
		var arena, scratch []byte
		alloc := func(n int) []byte {
			if cap(arena)-len(arena) < n {
				arena = make([]byte, 0, max(n, 64<<10))
			}
			b := arena[len(arena) : len(arena) : len(arena)+n]
			arena = arena[:len(arena)+n]
			return b
		}
		for i := range rows {
			r := &rows[i]
			ob := orgs[r.OrgID]
			if ob == nil {
				var err error
				if ob, err = s.openOrgLogBuckets(tx, r.OrgID); err != nil {
					return err
				}
				orgs[r.OrgID] = ob
			}
			seq, err := ob.rows.NextSequence()
			if err != nil {
				return err
			}
			ts := r.TS
			if ts.IsZero() {
				ts = now
			}
			pk := binary.BigEndian.AppendUint64(alloc(logKeyLen), unixNanos(ts))
			pk = binary.BigEndian.AppendUint64(pk, seq)
			val := encodeLogRow(alloc(encodedLogRowSize(r)), r)
			if err := ob.rows.Put(pk, val); err != nil {
				return err
			}
			if scratch, err = ob.eachIndexKey(scratch, r, pk, putIndex); err != nil {
				return err
			}
		}
		return addUsage(tx, store.RollUp(rows, now))
	})
	if err != nil {
		return fmt.Errorf("store: append %d log rows: %w", len(rows), err)
	}
	return nil
}

// encodedLogRowSize is an upper bound on len(encodeLogRow(nil, r)): every
// field at its widest tag and length prefix.
func encodedLogRowSize(r *store.LogRow) int {
	n := len(r.RequestID) + len(r.ParentRequestID) + len(r.Path) + len(r.Provider) +
		len(r.Model) + len(r.VoiceID) + len(r.VoiceRef) + len(r.ErrorCode) +
		len(r.ErrorDetail) + len(r.ProviderOptions) + len(r.ModerationDecision) +
		len(r.ModerationReasonType) + len(r.ModerationReasonDetail) + len(r.KeyID) + len(r.Cache) +
		len(r.Transcoded) + len(r.Provenance) + len(r.Currency)
	return n + 29*(2+10)
}

// ListLogs returns up to limit rows of orgID matching f, newest TS first,
// starting strictly after position after (nil starts at the newest). next
// is the position of the last returned row (nil when none is returned) and
// hasMore reports whether more matching rows remain. Rows older than
// LogRetention are never returned, whatever f.Since says.
//
// It reads only what it returns: it walks one index (see chooseLogIndex)
// backwards from a single seek, stops at the Since bound, and peeks one
// matching row past the page for hasMore. A position is the primary key of
// a row, valid in every index, so it resumes exactly after that row.
func (s *Store) ListLogs(ctx context.Context, orgID string, f store.LogFilter, limit int, after store.Position) (rows []store.LogRow, next store.Position, hasMore bool, err error) {
	if limit < 1 {
		return nil, nil, false, fmt.Errorf("store: list logs: limit %d must be positive", limit)
	}
	if after != nil && len(after) != logKeyLen {
		return nil, nil, false, fmt.Errorf("store: list logs: %w", store.ErrInvalidPosition)
	}
	since := s.now().Add(-s.retention)
	if f.Since.After(since) {
		since = f.Since
	}
	if !f.Until.IsZero() && !f.Until.After(since) {
		return nil, nil, false, nil
	}
	lo := unixNanos(since)
	bucket, prefix := chooseLogIndex(&f)

	// upper is an exclusive bound: the walk starts at the greatest key
	// below it. Without other bounds it is prefix + 17 bytes of 0xFF, above
	// every key of the prefix (those are exactly 16 bytes longer).
	upper := append(bytes.Clone(prefix), bytes.Repeat([]byte{0xFF}, logKeyLen+1)...)
	if !f.Until.IsZero() {
		upper = binary.BigEndian.AppendUint64(bytes.Clone(prefix), unixNanos(f.Until))
	}
	if after != nil {
		if pos := append(bytes.Clone(prefix), after...); bytes.Compare(pos, upper) < 0 {
			upper = pos
		}
	}

	err = s.view(ctx, func(tx *bbolt.Tx) error {
		primary := orgBucket(tx, orgID, bucketLogs)
		index := orgBucket(tx, orgID, bucket)
		if primary == nil || index == nil {
			return nil
		}
		c := index.Cursor()
		var last []byte
		for k, v := seekBefore(c, upper); k != nil; k, v = c.Prev() {
			if len(k) != len(prefix)+logKeyLen || !bytes.HasPrefix(k, prefix) {
				break // Walked out of this value's keys.
			}
			pk := k[len(prefix):]
			if binary.BigEndian.Uint64(pk) < lo {
				break // Older than Since or the retention window.
			}
			if bucket != bucketLogs {
				if v = primary.Get(pk); v == nil {
					continue // Index entry whose row a purge removed concurrently; not possible inside one tx, but harmless.
				}
			}
			var r store.LogRow
			if err := decodeLogRow(&r, orgID, pk, v); err != nil {
				return fmt.Errorf("row %x: %w", pk, err)
			}
			if !f.Matches(&r) {
				continue
			}
			if len(rows) == limit {
				hasMore = true
				break
			}
			if rows == nil {
				rows = make([]store.LogRow, 0, min(limit, 256))
			}
			rows = append(rows, r)
			last = pk
		}
		next = bytes.Clone(last)
		return nil
	})
	if err != nil {
		return nil, nil, false, fmt.Errorf("store: list logs: %w", err)
	}
	return rows, next, hasMore, nil
}

// PurgeLogs deletes every log row (and its index entries) with TS before
// olderThan, in all organizations, and returns how many it deleted. It works
// in transactions of at most purgeBatch rows, oldest first, checking ctx
// between them, so it never holds the write lock for long.
func (s *Store) PurgeLogs(ctx context.Context, olderThan time.Time) (int, error) {
	var orgIDs []string
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte(bucketOrgs)).ForEachBucket(func(k []byte) error {
			orgIDs = append(orgIDs, string(k))
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("store: purge logs: %w", err)
	}
	if err := s.purgeUsage(ctx, s.now().Add(-store.UsageRetention)); err != nil {
		return 0, fmt.Errorf("store: purge usage: %w", err)
	}
	cutoff := unixNanos(olderThan)
	total := 0
	for _, orgID := range orgIDs {
		for {
			n, err := s.purgeFingerprints(ctx, orgID, cutoff)
			if err != nil {
				return total, fmt.Errorf("store: purge fingerprints of org %q: %w", orgID, err)
			}
			if n < purgeBatch {
				break
			}
		}
		for {
			n, err := s.purgeOrgLogs(ctx, orgID, cutoff)
			total += n
			if err != nil {
				return total, fmt.Errorf("store: purge logs of org %q: %w", orgID, err)
			}
			if n < purgeBatch {
				break
			}
		}
	}
	return total, nil
}

// purgeOrgLogs deletes up to purgeBatch of orgID's oldest rows with a
// timestamp below cutoff, in one transaction.
func (s *Store) purgeOrgLogs(ctx context.Context, orgID string, cutoff uint64) (int, error) {
	n := 0
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		if orgBucket(tx, orgID, bucketLogs) == nil {
			return nil
		}
		ob, err := s.openOrgLogBuckets(tx, orgID)
		if err != nil {
			return err
		}
		// Collect first, then delete: deleting under a live cursor makes
		// bbolt's cursor skip keys.
		type victim struct {
			pk  []byte
			row store.LogRow
		}
		var victims []victim
		var scratch []byte
		c := ob.rows.Cursor()
		for k, v := c.First(); k != nil && len(victims) < purgeBatch; k, v = c.Next() {
			if len(k) != logKeyLen || binary.BigEndian.Uint64(k) >= cutoff {
				break
			}
			vc := victim{pk: bytes.Clone(k)}
			if err := decodeLogRow(&vc.row, orgID, k, v); err != nil {
				return fmt.Errorf("row %x: %w", k, err)
			}
			victims = append(victims, vc)
		}
		for _, vc := range victims {
			if scratch, err = ob.eachIndexKey(scratch, &vc.row, vc.pk, deleteIndex); err != nil {
				return err
			}
			if err := ob.rows.Delete(vc.pk); err != nil {
				return err
			}
		}
		n = len(victims)
		return nil
	})
	return n, err
}

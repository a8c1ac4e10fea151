package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"time"

	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/voxgate/voxgate/gateway/store"
)

// The usage rollup lives in each organization's "usage" bucket:
//
//	day ns (8B BE) + len16 provider + len16 model + len16 key id -> counts
//
// so a window of days is one forward cursor walk over exactly its rows.
// The counts are a flat protobuf-wire message like the log rows (fields
// below; the latency histogram packed), so fields can be added later.
const (
	usageRequests     protowire.Number = 1
	usageErrors       protowire.Number = 2
	usageServerErrors protowire.Number = 3
	usageCharacters   protowire.Number = 4
	usageCredits      protowire.Number = 5
	usageAudioMS      protowire.Number = 6
	usageCacheHits    protowire.Number = 7
	usageLatencySum   protowire.Number = 8
	usageLatency      protowire.Number = 9
	usageCost         protowire.Number = 10
)

func usageKey(k *store.UsageKey) []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 8+6+len(k.Provider)+len(k.Model)+len(k.KeyID)), unixNanos(k.Day))
	for _, s := range []string{k.Provider, k.Model, k.KeyID} {
		b = appendStrPrefix(b, clip16(s))
	}
	return b
}

// clip16 keeps a string within the 2-byte length prefix; the gateway
// never produces longer ids.
func clip16(s string) string {
	if len(s) > 0xFFFF {
		return s[:0xFFFF]
	}
	return s
}

func parseUsageKey(b []byte) (store.UsageKey, error) {
	if len(b) < 8 {
		return store.UsageKey{}, fmt.Errorf("usage key %x too short", b)
	}
	k := store.UsageKey{Day: time.Unix(0, int64(binary.BigEndian.Uint64(b))).UTC()}
	b = b[8:]
	for _, dst := range []*string{&k.Provider, &k.Model, &k.KeyID} {
		if len(b) < 2 || len(b) < 2+int(binary.BigEndian.Uint16(b)) {
			return store.UsageKey{}, fmt.Errorf("usage key: corrupt")
		}
		n := int(binary.BigEndian.Uint16(b))
		*dst = string(b[2 : 2+n])
		b = b[2+n:]
	}
	return k, nil
}

func encodeUsage(c *store.UsageCounts) []byte {
	var b []byte
	num := func(n protowire.Number, v int64) {
		if v != 0 {
			b = protowire.AppendTag(b, n, protowire.VarintType)
			b = protowire.AppendVarint(b, protowire.EncodeZigZag(v))
		}
	}
	num(usageRequests, c.Requests)
	num(usageErrors, c.Errors)
	num(usageServerErrors, c.ServerErrors)
	num(usageCharacters, c.Characters)
	num(usageCredits, c.Credits)
	num(usageAudioMS, c.AudioMS)
	num(usageCacheHits, c.CacheHits)
	num(usageLatencySum, c.LatencyMSSum)
	num(usageCost, c.Cost)
	var packed []byte
	for _, n := range c.Latency {
		packed = protowire.AppendVarint(packed, uint64(n))
	}
	b = protowire.AppendTag(b, usageLatency, protowire.BytesType)
	return protowire.AppendBytes(b, packed)
}

func decodeUsage(c *store.UsageCounts, b []byte) error {
	*c = store.UsageCounts{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		switch {
		case typ == protowire.VarintType:
			u, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			v := protowire.DecodeZigZag(u)
			switch num {
			case usageRequests:
				c.Requests = v
			case usageErrors:
				c.Errors = v
			case usageServerErrors:
				c.ServerErrors = v
			case usageCharacters:
				c.Characters = v
			case usageCredits:
				c.Credits = v
			case usageAudioMS:
				c.AudioMS = v
			case usageCacheHits:
				c.CacheHits = v
			case usageLatencySum:
				c.LatencyMSSum = v
			case usageCost:
				c.Cost = v
			}
		case typ == protowire.BytesType && num == usageLatency:
			p, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			for i := 0; len(p) > 0; i++ {
				u, n := protowire.ConsumeVarint(p)
				if n < 0 {
					return protowire.ParseError(n)
				}
				p = p[n:]
				if i < len(c.Latency) {
					c.Latency[i] = int64(u)
				}
			}
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
		}
	}
	return nil
}

// addUsage adds rolled-up rows to the organizations' usage buckets, in the
// transaction that writes the log rows they count.
func addUsage(tx *bbolt.Tx, rows []store.OrgUsage) error {
	for i := range rows {
		u := &rows[i]
		b, err := orgBucketCreate(tx, u.OrgID, bucketUsage)
		if err != nil {
			return err
		}
		k := usageKey(&u.Row.UsageKey)
		c := u.Row.UsageCounts
		if v := b.Get(k); v != nil {
			var old store.UsageCounts
			if err := decodeUsage(&old, v); err != nil {
				return fmt.Errorf("usage row %x: %w", k, err)
			}
			c.Add(&old)
		}
		if err := b.Put(k, encodeUsage(&c)); err != nil {
			return err
		}
	}
	return nil
}

// Usage implements store.UsageStore: one cursor walk over the window's
// keys of orgID's usage bucket.
func (s *Store) Usage(ctx context.Context, orgID string, since, until time.Time) ([]store.UsageRow, error) {
	if err := store.CheckUsageWindow(since, until); err != nil {
		return nil, fmt.Errorf("store: usage: %w", err)
	}
	lo := binary.BigEndian.AppendUint64(nil, unixNanos(since))
	hi := binary.BigEndian.AppendUint64(nil, unixNanos(until))
	var out []store.UsageRow
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		b := orgBucket(tx, orgID, bucketUsage)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(lo); k != nil && bytes.Compare(k, hi) < 0; k, v = c.Next() {
			var r store.UsageRow
			var err error
			if r.UsageKey, err = parseUsageKey(k); err != nil {
				return err
			}
			if err := decodeUsage(&r.UsageCounts, v); err != nil {
				return fmt.Errorf("usage row %x: %w", k, err)
			}
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: usage: %w", err)
	}
	// Length-prefixed strings sort by length first; the contract's order
	// is by value.
	sort.Slice(out, func(i, j int) bool { return out[i].UsageKey.Less(&out[j].UsageKey) })
	return out, nil
}

// purgeUsage deletes every organization's rollup rows of days before
// cutoff.
func (s *Store) purgeUsage(ctx context.Context, cutoff time.Time) error {
	hi := binary.BigEndian.AppendUint64(nil, unixNanos(store.UsageDayOf(cutoff)))
	return s.update(ctx, func(tx *bbolt.Tx) error {
		for _, org := range orgNames(tx) {
			b := tx.Bucket([]byte(bucketOrgs)).Bucket(org).Bucket([]byte(bucketUsage))
			if b == nil {
				continue
			}
			var old [][]byte
			c := b.Cursor()
			for k, _ := c.First(); k != nil && bytes.Compare(k, hi) < 0; k, _ = c.Next() {
				old = append(old, bytes.Clone(k))
			}
			for _, k := range old {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// orgNames lists the organization buckets, so callers can change them
// without modifying a bucket under a live cursor.
func orgNames(tx *bbolt.Tx) [][]byte {
	var names [][]byte
	_ = tx.Bucket([]byte(bucketOrgs)).ForEachBucket(func(k []byte) error {
		names = append(names, bytes.Clone(k))
		return nil
	})
	return names
}

// backfillUsage builds the usage rollup of a version-1 file from its log
// rows, inside the transaction that upgrades the file, so the rollup
// counts every row exactly once whether the upgrade completes or not.
func backfillUsage(tx *bbolt.Tx) error {
	orgs := tx.Bucket([]byte(bucketOrgs))
	for _, org := range orgNames(tx) {
		logs := orgs.Bucket(org).Bucket([]byte(bucketLogs))
		if logs == nil {
			continue
		}
		acc := map[store.UsageKey]*store.UsageCounts{}
		var order []store.UsageKey
		c := logs.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if len(k) != logKeyLen {
				continue
			}
			var r store.LogRow
			if err := decodeLogRow(&r, string(org), k, v); err != nil {
				return fmt.Errorf("row %x: %w", k, err)
			}
			if !store.Counted(&r) {
				continue
			}
			key := store.KeyOf(&r)
			cnt := acc[key]
			if cnt == nil {
				cnt = &store.UsageCounts{}
				acc[key] = cnt
				order = append(order, key)
			}
			cnt.AddRow(&r)
		}
		rows := make([]store.OrgUsage, 0, len(order))
		for _, k := range order {
			rows = append(rows, store.OrgUsage{OrgID: string(org), Row: store.UsageRow{UsageKey: k, UsageCounts: *acc[k]}})
		}
		if err := addUsage(tx, rows); err != nil {
			return err
		}
	}
	return nil
}

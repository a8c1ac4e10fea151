// Package respcache keeps rendered speech so the same request is paid for
// once. A Store is one small interface with two implementations, picked by
// config:
//
//	Disk   files in a directory of this machine, bounded in total bytes
//	       and evicted least recently used, each entry with a TTL. It
//	       needs nothing but the disk, for a single instance.
//	Redis  entries in the shared Redis with a TTL, for several instances.
//	       Redis over PostgreSQL for large values: a cache wants eviction
//	       under memory pressure (Redis' maxmemory-policy allkeys-lru does
//	       it without our code), entries are read whole in one round trip,
//	       and losing the cache loses nothing; PostgreSQL would keep
//	       megabytes of audio in WAL and backups and need its own eviction.
//
// Entries are opaque to the stores: the speech service encodes what a
// cached answer needs (media type, timestamps, warnings) as Meta.
package respcache

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Entry is one cached answer: the audio and what describes it.
type Entry struct {
	Data []byte
	Meta []byte
}

// Store keeps entries by key. Get reports a miss with ok false and no
// error; an error means the store could not be asked (the caller treats
// it as a miss). Put may drop an entry it cannot keep.
type Store interface {
	Get(ctx context.Context, key string) (e Entry, ok bool, err error)
	Put(ctx context.Context, key string, e Entry, ttl time.Duration) error
}

// ErrTooLarge is returned by Put for an entry over the store's limit.
var ErrTooLarge = errors.New("cache: entry too large")

// Key hashes the parts that decide an answer's bytes into a fixed-size
// key: each part is length-prefixed, so no two sequences of parts collide.
func Key(parts ...string) string {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// The wire format of an entry, shared by the stores: the expiry (unix
// nanoseconds), Meta's length, Meta, then Data.
const headerLen = 8 + 4

func encode(e Entry, expires time.Time) []byte {
	b := make([]byte, headerLen+len(e.Meta)+len(e.Data))
	binary.BigEndian.PutUint64(b, uint64(expires.UnixNano()))
	binary.BigEndian.PutUint32(b[8:], uint32(len(e.Meta)))
	copy(b[headerLen:], e.Meta)
	copy(b[headerLen+len(e.Meta):], e.Data)
	return b
}

func decode(b []byte) (Entry, time.Time, error) {
	if len(b) < headerLen {
		return Entry{}, time.Time{}, fmt.Errorf("cache: entry of %d bytes is truncated", len(b))
	}
	expires := time.Unix(0, int64(binary.BigEndian.Uint64(b)))
	m := int(binary.BigEndian.Uint32(b[8:]))
	if m > len(b)-headerLen {
		return Entry{}, time.Time{}, fmt.Errorf("cache: entry meta of %d bytes in %d", m, len(b))
	}
	return Entry{Meta: b[headerLen : headerLen+m], Data: b[headerLen+m:]}, expires, nil
}

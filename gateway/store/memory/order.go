package memory

import (
	"cmp"
	"encoding/binary"
	"slices"
	"strings"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
)

// createdKey orders voices, dictionaries and rules: creation time, then
// id for records created in the same nanosecond.
type createdKey struct {
	ns int64
	id string
}

func keyOf(created time.Time, id string) createdKey { return createdKey{unixNanos(created), id} }

func (a createdKey) compare(b createdKey) int {
	if c := cmp.Compare(a.ns, b.ns); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

// position encodes k as bbolt does its key: 8 bytes of big-endian
// nanoseconds, then the id.
func (k createdKey) position() store.Position {
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(k.id)), uint64(k.ns)), k.id...)
}

// parseCreatedPosition decodes a position made by createdKey.position.
// One of 8 bytes or fewer cannot be one.
func parseCreatedPosition(p store.Position) (createdKey, bool) {
	if len(p) <= 8 {
		return createdKey{}, false
	}
	return createdKey{int64(binary.BigEndian.Uint64(p)), string(p[8:])}, true
}

// createdList is a sorted list of keys, oldest first. Records are created
// with the current time, so an insert is nearly always an append; binary
// search finds everything else (see the package doc for why no B-tree).
type createdList []createdKey

func (l *createdList) insert(k createdKey) {
	s := *l
	if n := len(s); n == 0 || s[n-1].compare(k) < 0 {
		*l = append(s, k)
		return
	}
	i, _ := slices.BinarySearchFunc(s, k, createdKey.compare)
	*l = slices.Insert(s, i, k)
}

func (l *createdList) remove(k createdKey) {
	if i, ok := slices.BinarySearchFunc(*l, k, createdKey.compare); ok {
		*l = slices.Delete(*l, i, i+1)
	}
}

// newest returns up to limit keys, newest first, strictly older than the
// position after (nil: from the newest), the position of the last one
// returned and whether older keys remain. It reads only the page.
func (l createdList) newest(limit int, after store.Position) (page []createdKey, next store.Position, hasMore bool) {
	end := len(l)
	if after != nil {
		k, _ := parseCreatedPosition(after) // checked by the caller
		end, _ = slices.BinarySearchFunc(l, k, createdKey.compare)
	}
	start := max(end-limit, 0)
	if start == end {
		return nil, nil, false
	}
	page = make([]createdKey, 0, end-start)
	for i := end - 1; i >= start; i-- {
		page = append(page, l[i])
	}
	return page, l[start].position(), start > 0
}

// utc returns t in UTC without a monotonic clock reading: the form every
// stored time is kept in, as the other backends read times back.
func utc(t time.Time) time.Time { return t.UTC() }

package bolt

import (
	"syscall"

	"go.etcd.io/bbolt"
)

// ReleaseMemory takes the database file's pages out of this process's
// resident memory: madvise(MADV_DONTNEED) over bbolt's read-only shared
// map of the file.
//
// Why: bbolt reads through a map of the whole file, and every page a
// write touched stays mapped, so after a burst of request-log rows the
// file counts in the gateway's resident memory (57 MiB after make
// bench's load) although the kernel's page cache holds it and could drop
// it any time. Dropping the mapping's page-table entries changes no data
// (bbolt writes with pwrite, never through the map); the next read of a
// page faults it back in from the page cache, which costs a minor fault.
//
// The advice covers the pages in use (tx.Size), never the file's length:
// bbolt grows the file ahead of its map (in AllocSize steps once past
// 16 MiB), so the file can be longer than the map, and advice past the
// map's end zeroes whatever memory is mapped next. It once did: C
// malloc's arena sat right after the map, MADV_DONTNEED wiped its
// header, and the next malloc in LAME or Chromaprint crashed the gateway
// (TestReleaseMemoryStaysInsideTheMap). Pages past tx.Size are never
// read through the map, so none of them is resident.
//
// The read transaction holds bbolt's map lock shared, so the map cannot
// be replaced (remap takes it exclusively) while the advice runs, and
// bbolt maps at least the pages in use: the range is always inside
// bbolt's own map. Linux only (see release_other.go); the gateway calls
// it once the server has been quiet for a while.
func (s *Store) ReleaseMemory() error {
	return s.db.View(func(tx *bbolt.Tx) error {
		size := tx.Size()
		_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, s.db.Info().Data, uintptr(size), syscall.MADV_DONTNEED)
		if errno != 0 {
			return errno
		}
		return nil
	})
}

package bolt

import (
	"os"
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
// The read transaction holds bbolt's map lock shared, so the map cannot
// be replaced (remap takes it exclusively) while the advice runs: the
// range is always bbolt's own map, never memory reused by another.
// Linux only (see release_other.go); the gateway calls it once the
// server has been quiet for a while.
func (s *Store) ReleaseMemory() error {
	return s.db.View(func(tx *bbolt.Tx) error {
		// The map covers the whole file, which bbolt grows ahead of the
		// pages in use (tx.Size); pages past those may be resident too.
		fi, err := os.Stat(s.db.Path())
		if err != nil {
			return err
		}
		size := max(fi.Size(), tx.Size())
		_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, s.db.Info().Data, uintptr(size), syscall.MADV_DONTNEED)
		if errno != 0 {
			return errno
		}
		return nil
	})
}

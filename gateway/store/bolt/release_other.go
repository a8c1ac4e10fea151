//go:build !linux

package bolt

// ReleaseMemory does nothing outside Linux (see release_linux.go).
func (s *Store) ReleaseMemory() error { return nil }

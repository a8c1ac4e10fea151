//go:build !linux

package testenv

import "testing"

// SmallFS mounts a small tmpfs on Linux; elsewhere the test is skipped.
func SmallFS(t testing.TB, size int64) string {
	t.Helper()
	t.Skip("mounts a small tmpfs: Linux only")
	return ""
}

// Fill is Linux-only, like SmallFS.
func Fill(t testing.TB, dir string, leave int64) (free func()) {
	t.Helper()
	t.Skip("fills a small tmpfs: Linux only")
	return func() {}
}

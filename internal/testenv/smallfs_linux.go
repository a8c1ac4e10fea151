package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// SmallFS mounts a tmpfs of size bytes on a new temporary directory and
// returns the directory; it is unmounted when the test ends. Tests of
// what happens when a disk fills up use it (with Fill) instead of filling
// the machine's own disk.
//
// Mounting needs root (CAP_SYS_ADMIN). CI runs the tests as root, so
// there a mount that fails fails the test; run as another user, the test
// is skipped, saying why.
func SmallFS(t testing.TB, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounts a small tmpfs to fill it: needs root (CI runs as root)")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Fatalf("mount a %d-byte tmpfs on %s: %v (the test needs root with CAP_SYS_ADMIN)", size, dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// Fill writes a file into dir until the file system holding dir is out
// of space (ENOSPC), then gives leave bytes of it back, and returns a
// function that deletes the file, freeing the space.
func Fill(t testing.TB, dir string, leave int64) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("fill %s: %v", dir, err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", dir, err)
			}
			break
		}
	}
	if leave > 0 {
		st, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(max(st.Size()-leave, 0)); err != nil {
			t.Fatalf("fill %s: %v", dir, err)
		}
	}
	return func() {
		if err := os.Remove(path); err != nil {
			t.Errorf("free %s: %v", dir, err)
		}
	}
}

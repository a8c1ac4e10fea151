package bolt_test

import (
	"unsafe"

	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/voxgate/voxgate/gateway/store"
)

// mappedKiB is the resident size of this process's map of file path,
// from /proc/self/smaps.
func mappedKiB(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	total, in := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			// A mapping's header: address range, perms, offset, device,
			// inode, and the path when it maps a file.
			in = len(fields) >= 6 && fields[5] == path
			continue
		}
		if in && len(fields) == 3 && fields[0] == "Rss:" {
			n, _ := strconv.Atoi(fields[1])
			total += n
		}
	}
	return total
}

// TestReleaseMemory: the pages a burst of log rows left in the process's
// map of the file leave its resident memory, and every row still reads.
func TestReleaseMemory(t *testing.T) {
	clk := newClock()
	path := filepath.Join(t.TempDir(), "voxgate.db")
	s := openAt(t, path, clk)
	ctx := context.Background()
	const n = 20000
	rows := make([]store.LogRow, 0, 1000)
	for i := range n {
		rows = append(rows, store.LogRow{OrgID: "acme", RequestID: fmt.Sprintf("req-%06d", i), TS: clk.Advance(1e6), Status: 200, Provider: "espeak", Model: "espeak-ng", Path: "/v1/audio/speech", ErrorDetail: strings.Repeat("x", 200)})
		if len(rows) == cap(rows) {
			if err := s.AppendLogs(ctx, rows); err != nil {
				t.Fatal(err)
			}
			rows = rows[:0]
		}
	}
	// bbolt writes the file with pwrite and reads it through the map, so
	// the map holds only what was read: about 1 MiB after the appends
	// alone, on the edge of the check below (it failed CI once at 1012
	// KiB). Reading the rows back, as the log's readers do, puts the
	// burst's pages in the map.
	for i := 0; i < n; i += 5 {
		if _, err := s.GetLog(ctx, "acme", fmt.Sprintf("req-%06d", i)); err != nil {
			t.Fatal(err)
		}
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	before := mappedKiB(t, resolved)
	if before < 1024 {
		t.Fatalf("the map holds %d KiB after %d rows; the test expects megabytes", before, n)
	}
	t.Logf("the map holds %d KiB before the release", before)
	if err := s.ReleaseMemory(); err != nil {
		t.Fatal(err)
	}

	if after := mappedKiB(t, resolved); after > before/10 {
		t.Errorf("resident map %d KiB before, %d KiB after the release", before, after)
	}
	for _, id := range []string{"req-000000", "req-010000", fmt.Sprintf("req-%06d", n-1)} {
		if row, err := s.GetLog(ctx, "acme", id); err != nil || row.RequestID != id {
			t.Errorf("GetLog(%s) after the release: %+v, %v", id, row, err)
		}
	}
	if err := s.AppendLogs(ctx, []store.LogRow{{OrgID: "acme", RequestID: "after", TS: clk.Advance(1e6), Status: 200}}); err != nil {
		t.Errorf("a write after the release: %v", err)
	}
}

// mapOf is the address range [start, end) of this process's map of file
// path, from /proc/self/maps.
func mapOf(t *testing.T, path string) (start, end uintptr) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 6 || fields[5] != path {
			continue
		}
		lo, hi, _ := strings.Cut(fields[0], "-")
		s, err1 := strconv.ParseUint(lo, 16, 64)
		e, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("unreadable map line %q", line)
		}
		return uintptr(s), uintptr(e)
	}
	t.Fatalf("no map of %s in /proc/self/maps", path)
	return 0, 0
}

// TestReleaseMemoryStaysInsideTheMap: once bbolt has grown the file past
// its map (it grows the file in 16 MiB steps past 16 MiB, the map in
// powers of two), the release must not advise memory past the map's end.
// The test maps a page of its own right after bbolt's map, as C malloc's
// arena once was, and checks it still holds what was written there.
func TestReleaseMemoryStaysInsideTheMap(t *testing.T) {
	clk := newClock()
	path := filepath.Join(t.TempDir(), "voxgate.db")
	s := openAt(t, path, clk)
	ctx := context.Background()
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	detail := strings.Repeat("x", 2000)
	var start, end uintptr
	for i := 0; ; i++ {
		rows := make([]store.LogRow, 500)
		for j := range rows {
			rows[j] = store.LogRow{OrgID: "acme", RequestID: fmt.Sprintf("req-%04d-%03d", i, j), TS: clk.Advance(1e6), Status: 200, ErrorDetail: detail}
		}
		if err := s.AppendLogs(ctx, rows); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(resolved)
		if err != nil {
			t.Fatal(err)
		}
		start, end = mapOf(t, resolved)
		if fi.Size() > int64(end-start) {
			break // the file is longer than the map
		}
		if i == 200 {
			t.Fatalf("the file (%d bytes) never outgrew the map (%d bytes)", fi.Size(), end-start)
		}
	}

	page := os.Getpagesize()
	sentinel, err := unix.MmapPtr(-1, 0, unsafe.Add(nil, end), uintptr(page), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE)
	if err != nil {
		t.Skipf("cannot map a page right after bbolt's map at %#x: %v", end, err)
	}
	defer unix.MunmapPtr(sentinel, uintptr(page))
	if uintptr(sentinel) != end {
		t.Skipf("the kernel placed the page at %p, not at %#x", sentinel, end)
	}
	mem := unsafe.Slice((*byte)(sentinel), page)
	for i := range mem {
		mem[i] = 0xA5
	}
	err = s.ReleaseMemory()
	for i, b := range mem {
		if b != 0xA5 {
			t.Fatalf("byte %d of the page after bbolt's map is %#x after the release: the advice ran past the map", i, b)
		}
	}
	if err != nil {
		t.Fatalf("the release: %v", err)
	}
}

package bolt_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	before := mappedKiB(t, resolved)
	if before < 1024 {
		t.Fatalf("the map holds %d KiB after %d rows; the test expects megabytes", before, n)
	}
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

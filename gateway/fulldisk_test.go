package gateway_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/voxgate/voxgate/internal/testenv"
)

// TestFullDiskHoldsLogRows puts the bbolt file on an 8 MiB file system
// and fills it (issue 27: 424 of 432 rows were dropped there while
// synthesis kept answering 200). Requests must keep answering while the
// disk is full, their rows wait in the queue and are written once space
// comes back, with 0 lost; a voice create meanwhile answers 503
// storage_unavailable with Retry-After, not 500.
//
// It needs root: it mounts a tmpfs (testenv.SmallFS). CI runs as root.
func TestFullDiskHoldsLogRows(t *testing.T) {
	fs := testenv.SmallFS(t, 8<<20)
	tg := startGateway(t, strings.Replace(withEspeakConfig, "%DIR%/voxgate.db", fs+"/voxgate.db", 1))
	speak := func(org string, i int) {
		t.Helper()
		r := tg.do("POST", "/v1/audio/speech", org, speechBody(fmt.Sprintf("Row %d.", i)))
		if r.status != 200 {
			t.Errorf("request %d of %s: %d %s", i, org, r.status, r.body)
		}
	}
	for i := range 4 {
		speak("acme", i)
	}
	tg.flushLogs()
	free := testenv.Fill(t, fs, 0)

	// Voice creates fail as soon as a write needs a page the file does
	// not have yet (until then bbolt reuses its free pages): each answer
	// is a 201 or a 503 with Retry-After, and the disk fills within a few.
	full := false
	for i := 0; i < 50 && !full; i++ {
		r := tg.do("POST", "/v1/voices", "acme", map[string]any{"title": fmt.Sprintf("Voice %d %s", i, strings.Repeat("x", 150)),
			"provider": "espeak", "model": "espeak-ng", "voice_id": "en", "description": strings.Repeat("a long description ", 100)})
		switch r.status {
		case 201:
		case 503:
			r.problem(t, 503, "storage_unavailable")
			if r.header.Get("Retry-After") == "" {
				t.Errorf("503 without Retry-After: %s", r.body)
			}
			full = true
		default:
			t.Fatalf("voice create on a full disk: %d %s", r.status, r.body)
		}
	}
	if !full {
		t.Fatal("50 voices fit on a full 8 MiB file system")
	}

	// Synthesis goes on; the rows wait.
	const n = 200
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				speak([]string{"acme", "globex"}[i%2], i)
			}
		}()
	}
	wg.Wait()
	if held := tg.logs.FilterMessageSnippet("holding the batch and retrying").Len(); held == 0 {
		t.Fatalf("no batch was held: the disk never refused a log write\n%s", tg.warnings())
	}
	if got := tg.metricValue("voxgate_log_rows_dropped_total"); got != 0 {
		t.Fatalf("%v rows dropped while the queue had room", got)
	}

	free()
	acme, globex := tg.logsWhere("acme", ""), tg.logsWhere("globex", "")
	if len(acme) != 4+n/2 || len(globex) != n/2 {
		t.Errorf("after space came back: acme %d rows (want %d), globex %d (want %d)", len(acme), 4+n/2, len(globex), n/2)
	}
	if got := tg.metricValue("voxgate_log_rows_dropped_total"); got != 0 {
		t.Errorf("voxgate_log_rows_dropped_total = %v, want 0", got)
	}
	if r := tg.do("POST", "/v1/voices", "acme", map[string]any{"title": "After", "provider": "espeak", "model": "espeak-ng", "voice_id": "en"}); r.status != 201 {
		t.Errorf("voice create once space is back: %d %s", r.status, r.body)
	}
}

package reqlog_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
	"github.com/voxgate/voxgate/gateway/store/reqlog"
)

func openStore(t testing.TB, path string) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func row(org string, i int) store.LogRow {
	return store.LogRow{
		RequestID: fmt.Sprintf("req-%d", i), OrgID: org, TS: time.Now().Add(time.Duration(i) * time.Microsecond),
		Path: "/v1/audio/speech", Status: 200, Provider: "espeak",
	}
}

// allIDs lists every row of org in the store.
func allIDs(t testing.TB, s *bolt.Store, org string) []string {
	t.Helper()
	var ids []string
	var after []byte
	for {
		rows, next, more, err := s.ListLogs(context.Background(), org, store.LogFilter{}, 200, after)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			ids = append(ids, r.RequestID)
		}
		if !more {
			return ids
		}
		after = next
	}
}

func TestFlushPutsRecordedRowsOnDisk(t *testing.T) {
	for _, c := range []struct {
		name string
		opts reqlog.Options
		n    int
	}{
		{"defaults", reqlog.Options{}, 1500},
		{"tiny batches", reqlog.Options{BatchSize: 3}, 100},
		{"batch larger than rows", reqlog.Options{BatchSize: 10000, FlushInterval: time.Hour}, 700},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			s := openStore(t, filepath.Join(t.TempDir(), "db"))
			defer s.Close()
			w := reqlog.New(s, c.opts)
			w.Start()
			defer w.Close(ctx)
			var wg sync.WaitGroup
			for g := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range c.n / 2 {
						if !w.Record(row(fmt.Sprintf("org%d", g), i)) {
							t.Errorf("Record dropped a row with a %d-row queue", reqlog.DefaultQueueSize)
						}
					}
				}()
			}
			wg.Wait()
			if err := w.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			for g := range 2 {
				if got := len(allIDs(t, s, fmt.Sprintf("org%d", g))); got != c.n/2 {
					t.Errorf("org%d has %d rows on disk after Flush, want %d", g, got, c.n/2)
				}
			}
			if w.Written() != uint64(c.n) || w.Dropped() != 0 || w.QueueLen() != 0 {
				t.Errorf("Written=%d Dropped=%d QueueLen=%d, want %d/0/0", w.Written(), w.Dropped(), w.QueueLen(), c.n)
			}
		})
	}
}

// TestCloseDrains checks that Close writes every accepted row, across a
// reopen of the file: rows the writer holds in a partial batch for an hour,
// rows still queued behind many small fsynced batches, and rows of a writer
// that was never started.
func TestCloseDrains(t *testing.T) {
	for _, c := range []struct {
		name    string
		started bool
		batch   int
		n       int
	}{
		{"partial batch held", true, 1000, 2500},
		{"backlog in queue", true, 16, reqlog.DefaultQueueSize},
		{"never started", false, 1000, 2500},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "db")
			s := openStore(t, path)
			w := reqlog.New(s, reqlog.Options{BatchSize: c.batch, FlushInterval: time.Hour, PurgeInterval: -1})
			if c.started {
				w.Start()
			}
			n := c.n
			for i := range n {
				if !w.Record(row("o", i)) {
					t.Fatalf("Record %d dropped", i)
				}
			}
			if err := w.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(ctx); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			if err := w.Flush(ctx); err != nil {
				t.Fatalf("Flush after Close: %v", err)
			}
			if w.Record(row("o", n)) {
				t.Error("Record after Close accepted a row")
			}
			if w.Dropped() != 1 || w.Written() != uint64(n) {
				t.Errorf("Dropped=%d Written=%d, want 1/%d", w.Dropped(), w.Written(), n)
			}
			w.Start() // Must not restart a closed writer.
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openStore(t, path)
			defer s.Close()
			if got := len(allIDs(t, s, "o")); got != n {
				t.Errorf("%d rows on disk after Close and reopen, want %d", got, n)
			}
		})
	}
}

// TestNothingWrittenBeforeBatchOrInterval pins the batching itself: rows
// below BatchSize stay in memory until the interval, Flush or Close.
func TestNothingWrittenBeforeBatchOrInterval(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "db"))
	defer s.Close()
	w := reqlog.New(s, reqlog.Options{BatchSize: 100, FlushInterval: time.Hour, PurgeInterval: -1})
	w.Start()
	defer w.Close(ctx)
	for i := range 99 {
		w.Record(row("o", i))
	}
	// Make sure the writer has taken the rows into its batch: a full batch
	// (the 100th row) must then be written without any Flush.
	w.Record(row("o", 99))
	for i := 0; w.Written() < 100; i++ {
		if i > 10000 {
			t.Fatal("a full batch was not written within 10s")
		}
		time.Sleep(time.Millisecond)
	}
	for i := 100; i < 150; i++ {
		w.Record(row("o", i))
	}
	if got := len(allIDs(t, s, "o")); got != 100 {
		t.Errorf("%d rows on disk, want exactly the full batch of 100", got)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(allIDs(t, s, "o")); got != 150 {
		t.Errorf("%d rows on disk after Flush, want 150", got)
	}
}

func TestFullQueueDropsWithoutBlocking(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "db"))
	defer s.Close()
	core, logs := observer.New(zap.WarnLevel)
	w := reqlog.New(s, reqlog.Options{QueueSize: 4, PurgeInterval: -1, Logger: zap.New(core)})
	if err := w.Flush(ctx); !errors.Is(err, reqlog.ErrNotStarted) {
		t.Errorf("Flush before Start = %v, want ErrNotStarted", err)
	}
	// Not started: nothing consumes the queue, so it fills after 4 rows and
	// every further Record must return false at once (a blocking Record
	// would hang this test).
	accepted := 0
	for i := range 1000 {
		if w.Record(row("o", i)) {
			accepted++
		}
	}
	if accepted != 4 || w.Dropped() != 996 || w.QueueLen() != 4 {
		t.Errorf("accepted=%d Dropped=%d QueueLen=%d, want 4/996/4", accepted, w.Dropped(), w.QueueLen())
	}
	if n := logs.FilterMessage("request log rows dropped").Len(); n != 1 {
		t.Errorf("%d drop warnings for one burst, want 1 (rate-limited)", n)
	}
	if w.Record(store.LogRow{RequestID: "no-org"}) || w.Dropped() != 997 {
		t.Errorf("row without org accepted or not counted (Dropped=%d)", w.Dropped())
	}
	w.Start()
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := allIDs(t, s, "o"); len(got) != 4 {
		t.Errorf("on disk %v, want the 4 accepted rows", got)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestCloseHonorsContext(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "db"))
	defer s.Close()
	w := reqlog.New(s, reqlog.Options{PurgeInterval: -1})
	w.Start()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Either the drain already finished (nil) or ctx ended first; both are
	// fine, but a canceled ctx must not make Close hang or panic.
	if err := w.Close(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Close(canceled) = %v", err)
	}
	if err := w.Close(context.Background()); err != nil {
		t.Errorf("Close = %v", err)
	}
}

// TestPurgeRunsAfterStart gives the writer a clock 31 days ahead of the
// store's: rows that the store still lists are expired for the writer, and
// its first purge must delete them.
func TestPurgeRunsAfterStart(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "db"))
	defer s.Close()
	if err := s.AppendLogs(ctx, []store.LogRow{row("o", 1), row("o", 2)}); err != nil {
		t.Fatal(err)
	}
	w := reqlog.New(s, reqlog.Options{
		PurgeDelay: time.Millisecond,
		Now:        func() time.Time { return time.Now().Add(31 * 24 * time.Hour) },
	})
	w.Start()
	defer w.Close(ctx)
	for i := 0; len(allIDs(t, s, "o")) > 0; i++ {
		if i > 1000 {
			t.Fatal("expired rows still listed 10s after Start")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// outage is a sink in front of a real bbolt store that reports the
// storage unavailable until it is healed, like a PostgreSQL server that
// went away and came back.
type outage struct {
	*bolt.Store
	mu       sync.Mutex
	down     bool
	attempts int
}

func (o *outage) AppendLogs(ctx context.Context, rows []store.LogRow) error {
	o.mu.Lock()
	o.attempts++
	down := o.down
	o.mu.Unlock()
	if down {
		return fmt.Errorf("dial: %w", store.ErrUnavailable)
	}
	return o.Store.AppendLogs(ctx, rows)
}

func (o *outage) set(down bool) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.down = down
	return o.attempts
}

func TestUnavailableStorageIsWaitedFor(t *testing.T) {
	o := &outage{Store: openStore(t, filepath.Join(t.TempDir(), "db")), down: true}
	defer o.Close()
	w := reqlog.New(o, reqlog.Options{FlushInterval: 5 * time.Millisecond, PurgeInterval: -1, Logger: zap.NewNop()})
	w.Start()
	for i := range 10 {
		w.Record(row("acme", i))
	}
	deadline := time.Now().Add(10 * time.Second)
	for o.set(true) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if w.Dropped() != 0 {
		t.Fatalf("rows dropped during the outage: %d", w.Dropped())
	}
	o.set(false)
	for len(allIDs(t, o.Store, "acme")) < 10 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := len(allIDs(t, o.Store, "acme")); got != 10 || w.Dropped() != 0 {
		t.Fatalf("after the outage: %d rows on disk, %d dropped; want 10 and 0", got, w.Dropped())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestOneRowNeverFailsABatch records, in one batch, rows of two
// organizations and two rows a store cannot hold (a NUL in the voice, as
// a client once sent it; invalid UTF-8 in a provider's error message).
// The real bbolt store refuses the batch as it is; every row must still
// land, the two marked sanitized with their text replaced.
func TestOneRowNeverFailsABatch(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "db"))
	defer s.Close()
	core, logs := observer.New(zap.WarnLevel)
	w := reqlog.New(s, reqlog.Options{BatchSize: 64, FlushInterval: time.Hour, PurgeInterval: -1, Logger: zap.New(core)})
	w.Start()
	defer w.Close(ctx)
	for i := range 20 {
		r := row([]string{"acme", "globex"}[i%2], i)
		switch i {
		case 7:
			r.VoiceID, r.ErrorCode, r.Status = "en\x00x", "unknown_voice", 422
		case 12:
			r.ErrorDetail = "upstream said caf\xe9"
		}
		if !w.Record(r) {
			t.Fatal("Record dropped a row")
		}
	}
	if err := s.AppendLogs(ctx, []store.LogRow{row("acme", 99), {RequestID: "x", OrgID: "acme", VoiceID: "\x00"}}); !errors.Is(err, store.ErrInvalidText) {
		t.Fatalf("the store took a NUL (%v): this test needs one that refuses it", err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatalf("Flush = %v", err)
	}
	if a, g := len(allIDs(t, s, "acme")), len(allIDs(t, s, "globex")); a != 10 || g != 10 {
		t.Errorf("on disk: acme %d rows, globex %d; want 10 each", a, g)
	}
	for id, want := range map[string]func(*store.LogRow) bool{
		"req-7":  func(r *store.LogRow) bool { return r.VoiceID == "en\ufffdx" && r.ErrorCode == "unknown_voice" },
		"req-12": func(r *store.LogRow) bool { return r.ErrorDetail == "upstream said caf\ufffd" },
	} {
		org := map[string]string{"req-7": "globex", "req-12": "acme"}[id]
		got, err := s.GetLog(ctx, org, id)
		if err != nil || !got.Sanitized || !want(got) {
			t.Errorf("%s read back as %+v, %v; want it sanitized and marked", id, got, err)
		}
	}
	if got, err := s.GetLog(ctx, "acme", "req-2"); err != nil || got.Sanitized {
		t.Errorf("an unharmed row of the batch: %+v, %v; want it unmarked", got, err)
	}
	if w.Written() != 20 || w.Sanitized() != 2 || w.Dropped() != 0 {
		t.Errorf("Written=%d Sanitized=%d Dropped=%d, want 20/2/0", w.Written(), w.Sanitized(), w.Dropped())
	}
	if logs.FilterMessageSnippet("request log batch refused").Len() != 1 {
		t.Errorf("logged %v, want one warning about the refused batch", logs.All())
	}
}

// picky is a real store that refuses, for a reason sanitizing cannot
// fix, any batch holding the row named poison.
type picky struct {
	*bolt.Store
	poison string
}

func (p *picky) AppendLogs(ctx context.Context, rows []store.LogRow) error {
	for _, r := range rows {
		if r.RequestID == p.poison {
			return errors.New("check constraint violated")
		}
	}
	return p.Store.AppendLogs(ctx, rows)
}

// TestRowRefusedAloneIsDropped: a row the store refuses on its own, with
// nothing to sanitize, is dropped, counted and logged; the rest of its
// batch lands.
func TestRowRefusedAloneIsDropped(t *testing.T) {
	ctx := context.Background()
	p := &picky{Store: openStore(t, filepath.Join(t.TempDir(), "db")), poison: "req-3"}
	defer p.Close()
	core, logs := observer.New(zap.WarnLevel)
	w := reqlog.New(p, reqlog.Options{FlushInterval: time.Hour, PurgeInterval: -1, Logger: zap.New(core)})
	w.Start()
	defer w.Close(ctx)
	for i := range 8 {
		w.Record(row("acme", i))
	}
	if err := w.Flush(ctx); err == nil {
		t.Error("Flush hid the dropped row's error")
	}
	if got := allIDs(t, p.Store, "acme"); len(got) != 7 || slices.Contains(got, "req-3") {
		t.Errorf("on disk %v, want every row but req-3", got)
	}
	if w.Written() != 7 || w.Dropped() != 1 || w.Sanitized() != 0 {
		t.Errorf("Written=%d Dropped=%d Sanitized=%d, want 7/1/0", w.Written(), w.Dropped(), w.Sanitized())
	}
	if logs.FilterMessageSnippet("dropped").Len() != 1 {
		t.Errorf("logged %v, want one error about the dropped row", logs.All())
	}
}

// TestFlushWaitsForHeldRows: a row held (on its way, its provenance
// record being signed) is waited for by Flush, and is on disk when Flush
// returns; a Flush whose context ends first says so.
func TestFlushWaitsForHeldRows(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "db"))
	defer s.Close()
	w := reqlog.New(s, reqlog.Options{FlushInterval: time.Hour, PurgeInterval: -1})
	w.Start()
	defer w.Close(ctx)
	release := w.Hold()
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := w.Flush(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Flush with a held row and a short context = %v, want DeadlineExceeded", err)
	}
	go func() {
		w.Record(row("o", 1))
		release()
		release() // a second call does nothing
	}()
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(allIDs(t, s, "o")); got != 1 {
		t.Errorf("%d rows on disk after Flush, want the held one", got)
	}
	if err := w.Flush(ctx); err != nil {
		t.Errorf("Flush after the release: %v", err)
	}
}

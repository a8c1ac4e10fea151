package reqlog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/store"
)

// Defaults for Options fields left zero.
const (
	DefaultQueueSize     = 8192
	DefaultBatchSize     = 512
	DefaultFlushInterval = 50 * time.Millisecond
	DefaultPurgeInterval = time.Hour
	DefaultPurgeDelay    = 10 * time.Second
)

// dropWarnInterval rate-limits the "rows dropped" warning, which would
// otherwise be logged once per request exactly when the gateway is busiest.
const dropWarnInterval = 10 * time.Second

// ErrNotStarted is returned by Flush on a writer that was never started.
var ErrNotStarted = errors.New("reqlog: writer not started")

// Options configure a Writer. Zero fields take the defaults above.
type Options struct {
	// QueueSize is the capacity of the in-memory queue (rows).
	QueueSize int
	// BatchSize is the most rows written in one transaction.
	BatchSize int
	// FlushInterval is the longest a row waits in a partial batch.
	FlushInterval time.Duration
	// PurgeInterval is the time between purges of expired rows; negative
	// disables purging.
	PurgeInterval time.Duration
	// PurgeDelay is the time from Start to the first purge.
	PurgeDelay time.Duration
	// Logger receives drop warnings, write errors and purge results; nil
	// discards them.
	Logger *zap.Logger
	// Now returns the current time, for the purge cutoff; nil is time.Now.
	Now func() time.Time
	// Retention is how long rows are kept before a purge deletes them;
	// zero means store.DefaultLogRetention.
	Retention time.Duration
}

// Sink is where batches go: the storage's log table. It is declared here,
// by its user; any store backend satisfies it.
type Sink interface {
	// AppendLogs writes one batch atomically.
	AppendLogs(ctx context.Context, rows []store.LogRow) error
	// PurgeLogs deletes rows older than olderThan.
	PurgeLogs(ctx context.Context, olderThan time.Time) (int, error)
}

// Writer batches request log rows into the store. Create it with New, call
// Start once, Record from any goroutine, and Close at shutdown.
type Writer struct {
	st               Sink
	retention        time.Duration
	queue            chan store.LogRow
	batchSize        int
	flushInterval    time.Duration
	purgeInterval    time.Duration
	purgeDelay       time.Duration
	log              *zap.Logger
	now              func() time.Time
	flushReq         chan chan error
	hurry            chan struct{} // a full batch is waiting (buffer of 1)
	stop             chan struct{} // closed by Close: drain and exit
	done             chan struct{} // closed when the batch writer has exited
	purgeDone        chan struct{} // closed when the purge loop has exited
	dropped, written atomic.Uint64
	sanitized        atomic.Uint64
	lastDropWarn     atomic.Int64 // unix nanos of the last drop warning
	lastWriteErrWarn atomic.Int64 // unix nanos of the last write error log
	lastLostWarn     atomic.Int64 // unix nanos of the last "rows lost" log
	closeErr         error        // set before done is closed
	recordMu         sync.RWMutex // Record holds it shared; Close exclusively
	closed           bool         // guarded by recordMu
	lifeMu           sync.Mutex
	started, closing bool // guarded by lifeMu
	closeOnce        sync.Once
	// held counts rows on their way (Hold): Flush waits for them.
	held atomic.Int64
}

// New returns a Writer for st. Rows recorded before Start wait in the queue.
func New(st Sink, opts Options) *Writer {
	w := &Writer{
		st:            st,
		retention:     opts.Retention,
		batchSize:     opts.BatchSize,
		flushInterval: opts.FlushInterval,
		purgeInterval: opts.PurgeInterval,
		purgeDelay:    opts.PurgeDelay,
		log:           opts.Logger,
		now:           opts.Now,
		flushReq:      make(chan chan error),
		hurry:         make(chan struct{}, 1),
		stop:          make(chan struct{}),
		done:          make(chan struct{}),
		purgeDone:     make(chan struct{}),
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	w.queue = make(chan store.LogRow, opts.QueueSize)
	if w.batchSize <= 0 {
		w.batchSize = DefaultBatchSize
	}
	if w.flushInterval <= 0 {
		w.flushInterval = DefaultFlushInterval
	}
	if w.purgeInterval == 0 {
		w.purgeInterval = DefaultPurgeInterval
	}
	if w.purgeDelay <= 0 {
		w.purgeDelay = DefaultPurgeDelay
	}
	if w.log == nil {
		w.log = zap.NewNop()
	}
	if w.now == nil {
		w.now = time.Now
	}
	if w.retention <= 0 {
		w.retention = store.DefaultLogRetention
	}
	return w
}

// Start starts the batch writer and the purge loop. Calls after the first,
// or after Close, do nothing.
func (w *Writer) Start() {
	w.lifeMu.Lock()
	defer w.lifeMu.Unlock()
	if w.started || w.closing {
		return
	}
	w.started = true
	go w.run()
	if w.purgeInterval > 0 {
		go w.purgeLoop()
	} else {
		close(w.purgeDone)
	}
}

// Record queues row for writing and reports whether it was accepted. It
// never blocks: when the queue is full, after Close, or for a row without
// an organization it returns false and counts the row as dropped.
//
// Hot path (every request): a read lock, a channel send of the row by value
// and no allocation.
func (w *Writer) Record(row store.LogRow) bool {
	if row.OrgID == "" {
		w.drop("row has no organization")
		return false
	}
	w.recordMu.RLock()
	if w.closed {
		w.recordMu.RUnlock()
		w.drop("writer closed")
		return false
	}
	select {
	case w.queue <- row:
		w.recordMu.RUnlock()
		if len(w.queue)+1 >= w.batchSize { // +1: the row the writer holds
			select { // wake the writer early; it is asleep between batches
			case w.hurry <- struct{}{}:
			default:
			}
		}
		return true
	default:
		w.recordMu.RUnlock()
		w.drop("queue full")
		return false
	}
}

// drop counts a dropped row and warns at most once per dropWarnInterval.
// Hand-written with one atomic compare-and-swap rather than a rate limiter
// with a mutex, because it runs on every request while the gateway is
// overloaded.
func (w *Writer) drop(reason string) {
	total := w.dropped.Add(1)
	if allow(&w.lastDropWarn, dropWarnInterval) {
		w.log.Warn("request log rows dropped", zap.String("reason", reason), zap.Uint64("dropped_total", total))
	}
}

// allow reports whether interval has passed since *last and, if so, claims
// the slot by storing the current time.
func allow(last *atomic.Int64, interval time.Duration) bool {
	now := time.Now().UnixNano()
	prev := last.Load()
	return now-prev >= int64(interval) && last.CompareAndSwap(prev, now)
}

// QueueLen returns the number of rows waiting in the queue.
func (w *Writer) QueueLen() int { return len(w.queue) }

// Dropped returns the number of rows not accepted or not written.
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }

// Written returns the number of rows committed to the store.
func (w *Writer) Written() uint64 { return w.written.Load() }

// Sanitized returns the number of rows committed with their unstorable
// text replaced (store.LogRow.Sanitized), a subset of Written.
func (w *Writer) Sanitized() uint64 { return w.sanitized.Load() }

// Hold says a row is on its way: one the edge records once its signed
// provenance record is made, off the request path (gateway/edge's seals).
// Flush waits for it as for a row already recorded, so that a flush after
// an answer finds the answer's row. The returned release, called once
// the row is recorded (or given up), lets it go.
func (w *Writer) Hold() (release func()) {
	w.held.Add(1)
	var once sync.Once
	return func() { once.Do(func() { w.held.Add(-1) }) }
}

// holdPoll is how often Flush looks whether held rows arrived. Polled
// rather than signalled: Flush is for tests, the admin socket and
// shutdown, and a held row is recorded within a signature's time.
const holdPoll = time.Millisecond

// Flush waits until every row Recorded before the call (and every row
// Held then) is committed (or ctx ends) and returns the error of the
// write it forced, if any. After Close it waits for the drain instead.
func (w *Writer) Flush(ctx context.Context) error {
	for w.held.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(holdPoll):
		}
	}
	w.lifeMu.Lock()
	started, closing := w.started, w.closing
	w.lifeMu.Unlock()
	if closing {
		return w.wait(ctx)
	}
	if !started {
		return ErrNotStarted
	}
	reply := make(chan error, 1)
	select {
	case w.flushReq <- reply:
	case <-w.done: // Closed meanwhile: Close drained the queue.
		return w.closeErr
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops accepting rows, writes everything queued, and stops the purge
// loop. It returns ctx's error if ctx ends first (the drain continues in the
// background), else the error of the final write, if any. It is idempotent.
func (w *Writer) Close(ctx context.Context) error {
	w.closeOnce.Do(func() {
		w.lifeMu.Lock()
		w.closing = true
		started := w.started
		w.lifeMu.Unlock()

		// Wait for in-flight Record calls; after this no row can enter the
		// queue, so draining it empty loses nothing that was accepted.
		w.recordMu.Lock()
		w.closed = true
		w.recordMu.Unlock()

		close(w.stop)
		if !started {
			go func() {
				w.closeErr = w.write(w.drain(nil))
				close(w.done)
			}()
			close(w.purgeDone)
		}
	})
	return w.wait(ctx)
}

// wait blocks until the writer and purge loop have exited or ctx ends.
func (w *Writer) wait(ctx context.Context) error {
	for _, ch := range []chan struct{}{w.done, w.purgeDone} {
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("reqlog: close: %w", ctx.Err())
		}
	}
	return w.closeErr
}

// run is the batch writer: the only goroutine that receives from the queue.
//
// It wakes once per batch, not once per row: the first row of a batch
// wakes it, and then it sleeps for the flush interval while rows pile up
// in the queue, unless Record reports a full batch waiting (hurry). A
// writer that woke for every row cost every request a thread wake-up,
// which `make bench` showed as a measurable share of the gateway's CPU.
func (w *Writer) run() {
	defer close(w.done)
	batch := make([]store.LogRow, 0, w.batchSize)
	timer := time.NewTimer(w.flushInterval)
	timer.Stop()
	for {
		select {
		case row := <-w.queue:
			batch = append(batch, row)
		case reply := <-w.flushReq:
			reply <- w.writeQueued(batch[:0])
			continue
		case <-w.stop:
			w.closeErr = w.write(w.drain(batch[:0]))
			return
		}
		timer.Reset(w.flushInterval)
		select {
		case <-timer.C:
		case <-w.hurry:
			timer.Stop()
		case reply := <-w.flushReq:
			timer.Stop()
			reply <- w.writeQueued(batch)
			batch = batch[:0]
			continue
		case <-w.stop:
			timer.Stop()
			w.closeErr = w.write(w.drain(batch))
			return
		}
		_ = w.writeQueued(batch)
		batch = batch[:0]
	}
}

// writeQueued writes batch and the rows queued now, in batches, and
// returns the first error. Rows recorded before a Flush call are in the
// queue by then (a buffered send completes when the row is in the
// buffer), at its front: taking the current length takes them all.
func (w *Writer) writeQueued(batch []store.LogRow) error {
	var firstErr error
	for n := len(w.queue); ; {
		take := min(n, w.batchSize-len(batch))
		batch = w.take(batch, take)
		n -= take
		if err := w.write(batch); err != nil && firstErr == nil {
			firstErr = err
		}
		batch = batch[:0]
		if n <= 0 {
			return firstErr
		}
	}
}

// take moves up to n rows that are already queued into batch, without
// waiting for more.
func (w *Writer) take(batch []store.LogRow, n int) []store.LogRow {
	for ; n > 0; n-- {
		select {
		case row := <-w.queue:
			batch = append(batch, row)
		default:
			return batch
		}
	}
	return batch
}

// drain writes full batches until the queue is empty and returns the last,
// partial batch. Used only after Close has stopped Record.
func (w *Writer) drain(batch []store.LogRow) []store.LogRow {
	for {
		batch = w.take(batch, w.batchSize-len(batch))
		if len(batch) < w.batchSize {
			return batch
		}
		_ = w.write(batch)
		batch = batch[:0]
	}
}

// write commits batch in one transaction and accounts for it. A batch the
// store refused (any error but store.ErrUnavailable, which append waits
// out) is salvaged row by row, so that one row never costs the others
// theirs; what still fails is counted as dropped.
func (w *Writer) write(batch []store.LogRow) error {
	if len(batch) == 0 {
		return nil
	}
	err := w.append(batch)
	switch {
	case err == nil:
		w.wrote(batch)
	case errors.Is(err, store.ErrUnavailable):
		// Only after Close stopped the waiting: the last try failed too.
		w.lost(len(batch), err)
	default:
		err = w.salvage(batch, err)
	}
	clear(batch) // Let the rows' strings go; the slice is reused.
	return err
}

// salvage writes what it can of a batch the store refused with cause.
//
// Rows whose text the store cannot hold (store.ValidText: a NUL, invalid
// UTF-8, say in a provider's error message) are sanitized and marked
// (store.LogRow.Sanitize), and the batch is tried once more: the usual
// cause costs one more transaction, not one per row. If the store still
// refuses it, the rows go one by one, and only a row refused on its own is
// dropped: the other organizations' rows of the batch land whatever one
// row holds.
func (w *Writer) salvage(batch []store.LogRow, cause error) error {
	fixed := 0
	for i := range batch {
		if batch[i].Sanitize() {
			fixed++
		}
	}
	if allow(&w.lastWriteErrWarn, dropWarnInterval) {
		w.log.Warn("request log batch refused; writing it again with unstorable text replaced, then row by row",
			zap.Int("rows", len(batch)), zap.Int("sanitized", fixed), zap.Error(cause))
	}
	if fixed == 0 && len(batch) == 1 {
		w.lost(1, cause) // alone already, and nothing to replace
		return cause
	}
	if fixed > 0 {
		err := w.append(batch)
		switch {
		case err == nil:
			w.wrote(batch)
			return nil
		case errors.Is(err, store.ErrUnavailable):
			w.lost(len(batch), err)
			return err
		}
	}
	var firstErr error
	for i := range batch {
		one := batch[i : i+1]
		err := w.append(one)
		if err == nil {
			w.wrote(one)
			continue
		}
		if firstErr == nil {
			firstErr = err
		}
		w.lost(1, err)
	}
	return firstErr
}

// wrote accounts for rows committed to the store.
func (w *Writer) wrote(rows []store.LogRow) {
	w.written.Add(uint64(len(rows)))
	for i := range rows {
		if rows[i].Sanitized {
			w.sanitized.Add(1)
		}
	}
}

// lost counts n rows that failed for good as dropped and logs it, at most
// once per dropWarnInterval. Retrying would only grow the backlog behind a
// store that refuses them.
func (w *Writer) lost(n int, err error) {
	total := w.dropped.Add(uint64(n))
	if allow(&w.lastLostWarn, dropWarnInterval) {
		w.log.Error("writing request log rows failed; dropped", zap.Int("rows", n),
			zap.Uint64("dropped_total", total), zap.Error(err))
	}
}

// purgeLoop deletes expired rows shortly after Start and then every
// purgeInterval until Close.
func (w *Writer) purgeLoop() {
	defer close(w.purgeDone)
	// Close interrupts a running purge between its transactions.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-w.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	timer := time.NewTimer(w.purgeDelay)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		start := time.Now()
		n, err := w.st.PurgeLogs(ctx, w.now().Add(-w.retention))
		switch {
		case err != nil && ctx.Err() != nil:
			return // Interrupted by Close.
		case err != nil:
			w.log.Error("purging expired request logs failed", zap.Int("deleted", n), zap.Error(err))
		case n > 0:
			w.log.Info("purged expired request logs", zap.Int("deleted", n), zap.Duration("took", time.Since(start)))
		}
		timer.Reset(w.purgeInterval)
	}
}

// append writes one batch. A store that is unavailable for now
// (store.ErrUnavailable: a shared database that cannot be reached, or an
// embedded one whose disk is full, store.ErrFull) is waited for, with
// backoff, instead of dropping the rows: it usually comes back (a
// failover, a restart, space freed), and meanwhile the queue absorbs new
// rows up to its bound, past which Record drops and counts them. Close
// stops the waiting; the batch then gets one last try.
func (w *Writer) append(batch []store.LogRow) error {
	backoff := 100 * time.Millisecond
	for {
		err := w.st.AppendLogs(context.Background(), batch)
		if err == nil || !errors.Is(err, store.ErrUnavailable) {
			return err
		}
		if allow(&w.lastWriteErrWarn, dropWarnInterval) {
			w.log.Warn("request log storage unavailable; holding the batch and retrying", zap.Int("rows", len(batch)), zap.Int("queued", len(w.queue)), zap.Error(err))
		}
		t := time.NewTimer(backoff)
		select {
		case <-w.stop:
			t.Stop()
			return w.st.AppendLogs(context.Background(), batch)
		case <-t.C:
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

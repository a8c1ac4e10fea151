// Package reqlog writes request log rows to the store without putting disk
// I/O on the request path.
//
// A handler calls Writer.Record, which only tries a send on a bounded
// channel: it never blocks and never waits for fsync. One goroutine takes
// rows off the channel and appends them to the store in batches, one bbolt
// transaction (one fsync) per batch: a batch is written when it reaches
// BatchSize rows or FlushInterval after its first row, whichever comes first.
//
// Invariants:
//   - Record returns true only for rows that will be written: rows accepted
//     before Close are drained to disk by Close; Close waits for in-flight
//     Record calls (a read lock) before it stops the writer.
//   - When the queue is full the row is dropped, counted (Dropped) and a
//     warning is logged at most once per dropWarnInterval. Losing log rows
//     under overload is preferred to slowing every request down.
//   - A store that is unavailable for now (store.ErrUnavailable: a
//     PostgreSQL server away, a bbolt disk full) is waited for with
//     backoff while the queue holds new rows; only rows past its bound
//     are dropped.
//   - One row never fails a batch: a batch the store refuses is written
//     again with unstorable text sanitized and the rows marked
//     (store.LogRow.Sanitized, counted by Sanitized), then row by row;
//     only a row the store refuses on its own is dropped.
//   - A second goroutine purges rows older than store.LogRetention shortly
//     after Start and then every PurgeInterval, in the store's bounded
//     transactions, so it never stalls batch writes for long.
package reqlog

package postgres

import (
	"context"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
)

// WatchKeys implements store.KeyWatcher: it LISTENs on the key channel on a
// connection of its own and calls fn for each notification until ctx ends.
// When the connection is lost it reconnects with backoff and then calls fn
// with an empty event, since notifications sent meanwhile are gone and the
// caller must resynchronize.
func (s *Store) WatchKeys(ctx context.Context, fn func(store.KeyEvent)) error {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		// Every session, the first included, starts with a resync: keys
		// may have changed between the caller's load and the LISTEN.
		err := s.listen(ctx, fn, true)
		if ctx.Err() != nil {
			break
		}
		_ = err // The caller learns of outages from the requests that fail.
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
	return ctx.Err()
}

// listen runs one LISTEN session; resync says to report a possible gap
// once the session is up.
func (s *Store) listen(ctx context.Context, fn func(store.KeyEvent), resync bool) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection had LISTEN on it; never hand it back to the pool.
	defer func() { conn.Hijack().Close(context.Background()) }() //nolint:errcheck // closing a private connection
	if _, err := conn.Exec(ctx, "LISTEN "+keyChannel); err != nil {
		return err
	}
	if resync {
		fn(store.KeyEvent{})
	}
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return err
		}
		fn(store.KeyEvent{ID: n.Payload})
	}
}

package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/voxgate/voxgate/gateway/store"
)

// changeChannel carries the changes of voices, dictionaries and their
// rules, and secrets. Triggers send them (migrations/0007_change_notify.sql),
// so every write is announced, whoever makes it: an instance, the CLI,
// `voxgate migrate`, or an operator's SQL. The payload is
// {"k": kind, "o": org id, "i": record id}.
const changeChannel = "voxgate_changes"

// changePayload is a changeChannel notification's payload.
type changePayload struct {
	Kind string `json:"k"`
	Org  string `json:"o"`
	ID   string `json:"i"`
}

// Watch implements store.Watcher: it LISTENs on the key channel and the
// change channel on one connection of its own and calls fn for each
// notification until ctx ends. When the connection is lost it says so
// (store.ChangeDisconnected), reconnects with backoff, and then calls fn
// with store.ChangeResync, since notifications sent meanwhile are gone and
// the caller must resynchronize.
func (s *Store) Watch(ctx context.Context, fn func(store.Change)) error {
	backoff := 100 * time.Millisecond
	for first := true; ctx.Err() == nil; first = false {
		// Every session, the first included, starts with a resync:
		// records may have changed between the caller's load and the
		// LISTEN.
		up, _ := s.listen(ctx, fn)
		if ctx.Err() != nil {
			break
		}
		// The caller learns of the outage here (once, not at every
		// failed reconnection) and from the requests that fail; the
		// error itself says no more than "gone".
		if up || first {
			fn(store.Change{Kind: store.ChangeDisconnected})
		}
		if up {
			backoff = 100 * time.Millisecond
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		// At most a second between tries: the watch's resync is how an
		// instance serving from memory learns that the store is back.
		backoff = min(backoff*2, time.Second)
	}
	return ctx.Err()
}

// WatchKeys implements store.KeyWatcher over Watch: key changes, and an
// empty event for every resync.
func (s *Store) WatchKeys(ctx context.Context, fn func(store.KeyEvent)) error {
	return s.Watch(ctx, func(c store.Change) {
		switch c.Kind {
		case store.ChangeResync:
			fn(store.KeyEvent{})
		case store.ChangeKey:
			fn(store.KeyEvent{ID: c.ID})
		}
	})
}

// listen runs one LISTEN session; up reports whether it got as far as
// listening.
func (s *Store) listen(ctx context.Context, fn func(store.Change)) (up bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	// The connection had LISTEN on it; never hand it back to the pool.
	defer func() { conn.Hijack().Close(context.Background()) }() //nolint:errcheck // closing a private connection
	if _, err := conn.Exec(ctx, "LISTEN "+keyChannel+"; LISTEN "+changeChannel); err != nil {
		return false, err
	}
	fn(store.Change{Kind: store.ChangeResync})
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		fn(parseNotification(n))
	}
}

// parseNotification turns a notification into a Change. One it cannot read
// (a newer instance's payload) is a resync: the caller then rereads
// everything, which is never wrong.
func parseNotification(n *pgconn.Notification) store.Change {
	if n.Channel == keyChannel {
		return store.Change{Kind: store.ChangeKey, ID: n.Payload}
	}
	var p changePayload
	if err := json.Unmarshal([]byte(n.Payload), &p); err != nil {
		return store.Change{Kind: store.ChangeResync}
	}
	c := store.Change{OrgID: p.Org, ID: p.ID}
	switch p.Kind {
	case "voice":
		c.Kind = store.ChangeVoice
	case "dictionary":
		c.Kind = store.ChangeDictionary
	case "secret":
		c.Kind = store.ChangeSecret
	case "org":
		c.Kind = store.ChangeOrg
	default:
		return store.Change{Kind: store.ChangeResync}
	}
	return c
}

package store

import "context"

// ChangeKind says what a Change is about.
type ChangeKind uint8

// The kinds of Change. A watcher reports the records a synthesis request
// reads (keys, voices, dictionaries, secrets), so that instances sharing a
// store can keep them in memory; what only control routes read (media, log
// rows, usage) is not announced.
const (
	// ChangeResync says that anything may have changed: the watch has just
	// (re)connected, and changes made while it was away were not heard.
	// The store answered the watch, so it is reachable again.
	ChangeResync ChangeKind = iota
	// ChangeDisconnected says that the watch lost its connection to the
	// store: until the next ChangeResync no change is heard, and the store
	// is probably unreachable.
	ChangeDisconnected
	// ChangeKey: API key ID was created, changed or revoked (OrgID is
	// empty).
	ChangeKey
	// ChangeVoice: saved voice ID of OrgID was created, changed or deleted.
	ChangeVoice
	// ChangeDictionary: pronunciation dictionary ID of OrgID, or one of its
	// rules, was created, changed or deleted.
	ChangeDictionary
	// ChangeSecret: secret ID (its name) of OrgID was stored or deleted.
	ChangeSecret
	// ChangeOrg: organization ID was created or changed (OrgID is ID).
	ChangeOrg
)

// String names the kind for logs.
func (k ChangeKind) String() string {
	switch k {
	case ChangeResync:
		return "resync"
	case ChangeDisconnected:
		return "disconnected"
	case ChangeKey:
		return "key"
	case ChangeVoice:
		return "voice"
	case ChangeDictionary:
		return "dictionary"
	case ChangeSecret:
		return "secret"
	case ChangeOrg:
		return "org"
	}
	return "unknown"
}

// Change says that a record changed on some instance (or that the watch
// cannot tell: ChangeResync, ChangeDisconnected).
type Change struct {
	Kind  ChangeKind
	OrgID string
	ID    string
}

// Watcher is implemented by backends that several gateway instances share:
// Watch calls fn, from one goroutine, for every change any instance (or a
// CLI, or an operator's SQL) makes to the records a synthesis request
// reads, until ctx ends. Every watch session starts with a ChangeResync,
// since changes may have been made between the caller's first reads and
// the watch. It is an optional extra, like Vault's HA backends: a
// single-process backend has no other writers to hear from, and its
// callers see their own writes.
type Watcher interface {
	Watch(ctx context.Context, fn func(Change)) error
}

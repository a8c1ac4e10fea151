package store

import (
	"context"
	"time"
)

// Backend is the whole storage contract: what a backend implements and the
// conformance suite (store/storetest) checks. Consumers never take a
// Backend; each declares the few methods it uses.
//
// Every write method commits durably before it returns, except AppendLogs,
// whose caller (reqlog) batches rows so the request path never waits on it.
// Every method reads and writes only the organization it is given; an id of
// another organization is ErrNotFound.
//
// Text: every string a caller passes must be valid text (ValidText: valid
// UTF-8 without U+0000), since PostgreSQL cannot hold NUL in text. Callers
// check at the edge; a write whose record holds anything else fails with
// an error matching ErrInvalidText (a *TextError naming the field) and
// writes nothing, on every backend, never with a raw driver error. A
// lookup by such an id or filter finds nothing: ErrNotFound, an empty
// list, or an error matching ErrInvalidText.
//
// A write that fails because an embedded database's disk is full fails
// with an error matching ErrFull and ErrUnavailable, and leaves the
// database as it was.
type Backend interface {
	KeyStore
	VoiceStore
	MediaStore
	SecretStore
	LogStore
	UsageStore
	DictionaryStore
	OrgStore
	JobStore

	// Secret returns the deployment's 32-byte random secret, created with
	// the storage and shared by every instance that uses it, so that list
	// cursors signed by one instance verify on another.
	Secret() []byte
	// Close releases the backend's files or connections.
	Close() error
}

// KeyStore stores API keys. Keys are few and global (an operator issues them
// by hand), so the listings scan.
type KeyStore interface {
	// CreateKey stores a new key. Zero CreatedAt means now. A taken ID or
	// hash fails with ErrExists.
	CreateKey(ctx context.Context, k *APIKey) error
	// KeyByHash returns the key whose sha256 is hash, revoked or not, or
	// ErrNotFound.
	KeyByHash(ctx context.Context, hash []byte) (*APIKey, error)
	// ListKeys returns the keys of orgID ("" for every organization),
	// oldest first.
	ListKeys(ctx context.Context, orgID string) ([]APIKey, error)
	// RevokeKey marks key id revoked (now) and returns it. Revoking a
	// revoked key keeps its first revocation time; an unknown id is
	// ErrNotFound.
	RevokeKey(ctx context.Context, id string) (*APIKey, error)
	// UpdateKey replaces the Name and Scope of key k.ID with k's (the
	// caller merges a partial update first) and returns the stored key;
	// nothing else of a key changes after it is made. An unknown id is
	// ErrNotFound.
	UpdateKey(ctx context.Context, k *APIKey) (*APIKey, error)
}

// OrgStore stores the organizations made through the admin API. They are
// few (an operator makes them), so the listing reads them all.
type OrgStore interface {
	// CreateOrg stores a new organization. Zero CreatedAt means now, zero
	// UpdatedAt CreatedAt. A taken ID fails with ErrExists.
	CreateOrg(ctx context.Context, o *Org) error
	// GetOrg returns organization id, or ErrNotFound.
	GetOrg(ctx context.Context, id string) (*Org, error)
	// UpdateOrg replaces every field of organization o.ID but ID and
	// CreatedAt with o's (the caller merges a partial update first), or
	// fails with ErrNotFound. Zero UpdatedAt means now.
	UpdateOrg(ctx context.Context, o *Org) error
	// ListOrgs returns every organization, by id.
	ListOrgs(ctx context.Context) ([]Org, error)
}

// VoiceStore stores saved voices.
type VoiceStore interface {
	// CreateVoice stores a new voice. The caller sets ID and OrgID; zero
	// CreatedAt means now and zero UpdatedAt means CreatedAt. An ID already
	// used in the organization fails with ErrExists.
	CreateVoice(ctx context.Context, v *Voice) error
	// GetVoice returns voice id of orgID, or ErrNotFound.
	GetVoice(ctx context.Context, orgID, id string) (*Voice, error)
	// DeleteVoice removes voice id of orgID, or fails with ErrNotFound.
	DeleteVoice(ctx context.Context, orgID, id string) error
	// UpdateVoice replaces every field of voice v.ID of v.OrgID but ID,
	// OrgID and CreatedAt with v's (the caller merges a partial update
	// first), or fails with ErrNotFound. Zero UpdatedAt means now.
	UpdateVoice(ctx context.Context, v *Voice) error
	// ListVoices returns up to limit voices of orgID, newest created first,
	// strictly after position after (nil starts at the newest). next is
	// the position of the last returned voice and hasMore whether older
	// voices remain. Voices created while a client pages sort newer than
	// its position, so paging neither repeats nor skips.
	ListVoices(ctx context.Context, orgID string, limit int, after Position) (voices []Voice, next Position, hasMore bool, err error)
}

// MediaStore stores uploaded audio and its metadata.
type MediaStore interface {
	// PutMedia stores a new media object and its data. Zero CreatedAt
	// means now; zero Bytes and empty SHA256 are filled in from data. An ID
	// already used in the organization fails with ErrExists.
	PutMedia(ctx context.Context, m *Media, data []byte) error
	// GetMedia returns the metadata of media id of orgID, or ErrNotFound.
	GetMedia(ctx context.Context, orgID, id string) (*Media, error)
	// MediaData returns the bytes of media id of orgID, or ErrNotFound.
	MediaData(ctx context.Context, orgID, id string) ([]byte, error)
	// DeleteMedia removes media id of orgID and its data, or fails with
	// ErrNotFound.
	DeleteMedia(ctx context.Context, orgID, id string) error
}

// SecretStore stores named opaque values per organization. Callers encrypt
// before PutSecret and decrypt after GetSecret; backends never see
// plaintext provider keys.
type SecretStore interface {
	// PutSecret stores or replaces the named secret of orgID.
	PutSecret(ctx context.Context, orgID, name string, ciphertext []byte) error
	// GetSecret returns the named secret of orgID, or ErrNotFound.
	GetSecret(ctx context.Context, orgID, name string) ([]byte, error)
	// DeleteSecret removes the named secret of orgID, or ErrNotFound.
	DeleteSecret(ctx context.Context, orgID, name string) error
	// ListSecretNames returns the names of orgID's secrets in byte order.
	ListSecretNames(ctx context.Context, orgID string) ([]string, error)
	// SealFingerprint returns the recorded fingerprint of the key that
	// seals the organizations' secrets (nil when none is recorded) and
	// whether any organization holds a secret, so that a gateway or CLI
	// with another key refuses to start or write instead of sealing
	// secrets no other instance can open.
	SealFingerprint(ctx context.Context) (fingerprint []byte, hasSecrets bool, err error)
	// RecordSealFingerprint records fingerprint unless one is recorded
	// already, and returns the one in force: the first writer wins.
	RecordSealFingerprint(ctx context.Context, fingerprint []byte) ([]byte, error)
}

// LogStore stores request log rows.
type LogStore interface {
	// AppendLogs writes a batch of rows atomically. Rows with a zero TS
	// get the current time. Every row must name its organization and
	// hold valid text (a row that does not fails the whole batch with
	// ErrInvalidText); otherwise nothing is written.
	AppendLogs(ctx context.Context, rows []LogRow) error
	// ListLogs returns up to limit rows of orgID matching f, newest TS
	// first (rows of equal TS newest-written first), strictly after
	// position after. Rows older than the retention are never returned.
	// A page reads O(limit) rows whatever the table's size.
	ListLogs(ctx context.Context, orgID string, f LogFilter, limit int, after Position) (rows []LogRow, next Position, hasMore bool, err error)
	// GetLog returns orgID's row of request requestID (the newest, should
	// an id repeat), or ErrNotFound; rows older than the retention are
	// not found. One index lookup, whatever the log's size.
	GetLog(ctx context.Context, orgID, requestID string) (*LogRow, error)
	// PurgeLogs deletes the rows of every organization older than
	// olderThan and returns how many it deleted.
	PurgeLogs(ctx context.Context, olderThan time.Time) (int, error)
}

// KeyEvent says that an API key changed on some instance.
type KeyEvent struct {
	// ID is the key that was created or revoked; empty means "anything may
	// have changed" (the watch reconnected and events may have been lost).
	ID string
}

// KeyWatcher is implemented by backends that several gateway instances
// share: Watch calls fn for every key created or revoked by any instance,
// until ctx ends. It is an optional extra, like Vault's HA backends: a
// single-process backend has no other writers to hear from.
type KeyWatcher interface {
	WatchKeys(ctx context.Context, fn func(KeyEvent)) error
}

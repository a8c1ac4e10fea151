package bolt

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/voxgate/voxgate/gateway/store"
)

// schemaVersion is the on-disk layout version written into the meta bucket.
// Open refuses a file with a newer version instead of misreading it, and
// upgrades an older one (upgrade.go): version 2 added the usage rollup,
// version 3 the logs_by_request index, version 4 the jobs_finished index.
const schemaVersion = 4

// lockTimeout bounds how long Open waits for the file lock, so a second
// gateway started on the same file fails fast with store.ErrLocked instead of
// hanging forever (bbolt's default).
const lockTimeout = time.Second

// secretLen is the size of the per-database random secret.
const secretLen = 32

// Top-level and per-organization bucket names. See doc.go for the layout.
const (
	bucketMeta      = "meta"
	bucketOrgs      = "orgs"
	bucketKeys      = "keys"
	bucketKeyHashes = "key_hashes"
	// bucketOrgRecords holds the organizations made through the admin
	// API (org id -> JSON); bucketOrgs holds every organization's data.
	bucketOrgRecords = "org_records"

	bucketVoices    = "voices"
	bucketVoiceIDs  = "voice_ids"
	bucketMedia     = "media"
	bucketMediaData = "media_data"
	bucketSecrets   = "secrets"

	bucketLogs               = "logs"
	bucketLogsParent         = "logs_by_parent"
	bucketLogsProvider       = "logs_by_provider"
	bucketLogsProviderStatus = "logs_by_provider_status"
	bucketLogsStatus         = "logs_by_status"
	bucketUsage              = "usage"
	bucketLogsRequest        = "logs_by_request"

	metaSchema = "schema"
	metaSecret = "secret"
	// metaSealFingerprint is the fingerprint of the secrets key
	// (SealFingerprint).
	metaSealFingerprint = "seal_fingerprint"
)

// Store is the gateway's persistent state in one bbolt file. It is safe for
// concurrent use; bbolt serializes writers and lets readers run in parallel.
type Store struct {
	db   *bbolt.DB
	path string
	now  func() time.Time
	// retention is how far back ListLogs reads (storage.log_retain_days).
	retention time.Duration
	secret    []byte
	// upgradeFrom is the schema version of an older file being opened,
	// 0 when the file is current.
	upgradeFrom uint64
	// logFill is the FillPercent used for log buckets. Log keys arrive in
	// (nearly) ascending order within each bucket or index prefix, so pages
	// split near-full instead of bbolt's default half-full; that halves the
	// file size and the pages a list has to touch.
	logFill float64
}

// Open opens (creating if needed) the database at path. Missing parent
// directories are created with mode 0700 and the file with 0600, since it
// holds API key hashes and encrypted provider keys. If another process has
// the file open, Open fails after about a second with an error wrapping
// store.ErrLocked.
func Open(path string, opts store.Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("store: empty database path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: create directory for %s: %w", path, err)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{
		Timeout: lockTimeout,
		// The hashmap freelist stays fast when purges leave many free pages.
		FreelistType: bbolt.FreelistMapType,
	})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("store: open %s: %w", path, store.ErrLocked)
		}
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	s := &Store{db: db, path: path, now: opts.Clock(), retention: opts.Retention(), logFill: 0.9}
	if err := s.init(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: initialize %s: %w", path, err)
	}
	if err := s.upgrade(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: upgrade %s: %w", path, err)
	}
	return s, nil
}

// init creates the top-level buckets, checks the schema version and loads
// (or creates) the database secret.
func (s *Store) init() error {
	return s.db.Update(func(tx *bbolt.Tx) error {
		for _, name := range []string{bucketMeta, bucketOrgs, bucketKeys, bucketKeyHashes, bucketOrgRecords} {
			if _, err := tx.CreateBucketIfNotExists([]byte(name)); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		if err := jobBuckets(tx); err != nil {
			return err
		}
		meta := tx.Bucket([]byte(bucketMeta))
		if v := meta.Get([]byte(metaSchema)); v != nil {
			if len(v) != 8 {
				return fmt.Errorf("corrupt schema version (%d bytes)", len(v))
			}
			got := binary.BigEndian.Uint64(v)
			if got > schemaVersion {
				return fmt.Errorf("database schema version %d is newer than this binary's %d", got, schemaVersion)
			}
			if got < schemaVersion {
				// upgrade (upgrade.go) records the new version once the
				// file's data has the newer layout.
				s.upgradeFrom = got
			}
		}
		if s.upgradeFrom == 0 {
			if err := meta.Put([]byte(metaSchema), binary.BigEndian.AppendUint64(nil, schemaVersion)); err != nil {
				return err
			}
		}
		if v := meta.Get([]byte(metaSecret)); v != nil {
			if len(v) != secretLen {
				return fmt.Errorf("corrupt database secret (%d bytes)", len(v))
			}
			s.secret = bytes.Clone(v)
			return nil
		}
		secret := make([]byte, secretLen)
		_, _ = rand.Read(secret) // crypto/rand.Read never fails; it aborts the process instead.
		s.secret = secret
		return meta.Put([]byte(metaSecret), bytes.Clone(secret))
	})
}

// Close releases the database file and its lock.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("store: close %s: %w", s.path, err)
	}
	return nil
}

// Path returns the database file path given to Open.
func (s *Store) Path() string { return s.path }

// Secret returns a copy of the 32-byte random secret generated when the
// database was created. It is stable across restarts, so it can sign list
// cursors and seed key derivation for encrypted secrets.
func (s *Store) Secret() []byte { return bytes.Clone(s.secret) }

// view runs fn in a read transaction unless ctx is already done.
func (s *Store) view(ctx context.Context, fn func(*bbolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.View(fn)
}

// update runs fn in a write transaction, committed and fsynced before it
// returns, unless ctx is already done. A transaction that failed for want
// of disk space fails with store.ErrFull (see full).
func (s *Store) update(ctx context.Context, fn func(*bbolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return full(s.db.Update(fn))
}

// full marks a write that failed because the file system is out of space
// or quota as store.ErrFull and store.ErrUnavailable: a condition that
// passes once an operator frees space, so callers hold and retry (the
// request-log writer) or answer 503 (the HTTP layer) instead of failing
// for good. bbolt rolls a transaction whose commit failed back (the meta
// page, written last, still names the previous tree, and the pages the
// transaction had taken return to the freelist), so the file stays
// consistent and the next transaction works once there is room again
// (TestFullDiskRollsBack).
func full(err error) error {
	if err != nil && (errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)) {
		return fmt.Errorf("%w: %w: %w", store.ErrUnavailable, store.ErrFull, err)
	}
	return err
}

// orgBucket returns the sub-bucket name of orgID's bucket, or nil if either
// does not exist. For read paths: a missing bucket simply means "no data".
func orgBucket(tx *bbolt.Tx, orgID, name string) *bbolt.Bucket {
	org := tx.Bucket([]byte(bucketOrgs)).Bucket([]byte(orgID))
	if org == nil {
		return nil
	}
	return org.Bucket([]byte(name))
}

// orgBucketCreate returns the sub-bucket name of orgID's bucket, creating
// both as needed. For write paths.
func orgBucketCreate(tx *bbolt.Tx, orgID, name string) (*bbolt.Bucket, error) {
	org, err := tx.Bucket([]byte(bucketOrgs)).CreateBucketIfNotExists([]byte(orgID))
	if err != nil {
		return nil, fmt.Errorf("org bucket %q: %w", orgID, err)
	}
	b, err := org.CreateBucketIfNotExists([]byte(name))
	if err != nil {
		return nil, fmt.Errorf("org %q bucket %s: %w", orgID, name, err)
	}
	return b, nil
}

// unixNanos returns t as unsigned nanoseconds since the epoch for use in
// big-endian keys (so byte order equals time order). Times before 1970
// clamp to 0; nothing the gateway stores is that old.
func unixNanos(t time.Time) uint64 {
	n := t.UnixNano()
	if n < 0 {
		return 0
	}
	return uint64(n)
}

// seekBefore positions c on the greatest key strictly less than x and
// returns it (nil if there is none).
func seekBefore(c *bbolt.Cursor, x []byte) ([]byte, []byte) {
	if k, _ := c.Seek(x); k == nil {
		return c.Last()
	}
	return c.Prev()
}

// requireIDs returns an error naming the first empty value.
func requireIDs(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			return fmt.Errorf("store: %s is required", pairs[i])
		}
	}
	return nil
}

// Store satisfies the whole storage contract.
var _ store.Backend = (*Store)(nil)

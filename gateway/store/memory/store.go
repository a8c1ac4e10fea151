package memory

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
)

// errClosed is what every call of a closed Store returns.
var errClosed = errors.New("the store is closed")

// Store is a store.Backend kept in memory. It is safe for concurrent use.
// The zero value is not usable; call New.
type Store struct {
	now       func() time.Time
	retention time.Duration
	secret    []byte
	closed    atomic.Bool
	faults    faults

	// mu guards everything below. A write holds it for the whole write,
	// so every write is atomic and isolated, as a transaction would be.
	mu        sync.RWMutex
	keys      map[string]*store.APIKey
	keyHashes map[string]string
	orgs      map[string]*org
	// orgRecords are the organizations made through the admin API (orgs
	// above holds every organization's data, whoever declared it).
	orgRecords map[string]*store.Org
	// sealFingerprint is store.SecretStore's SealFingerprint.
	sealFingerprint []byte
	// signingKey is store.SigningKeyStore's fingerprint.
	signingKey []byte

	// fpMu guards fps, the acoustic fingerprints by organization
	// (fingerprints.go), apart from mu: they are written off the
	// request path and need not wait for other writes.
	fpMu sync.Mutex
	fps  map[string]*fingerprints
	// jobs are every organization's long-form jobs, by id.
	jobs map[string]*jobEntry
	// sweep is the job sweeper's lease.
	sweep store.SweepLease
}

// org is one organization's records. It is created by its first write;
// reads of an organization that never wrote find nothing.
type org struct {
	voices     map[string]*store.Voice
	voiceOrder createdList

	media   map[string]*mediaEntry
	secrets map[string][]byte

	logs  orgLogs
	usage map[int64]map[usageSub]*store.UsageCounts

	dicts       map[string]*dictEntry
	dictOrder   createdList
	dictNames   map[string]string // store.NameKey(name) -> dictionary id
	defaultDict string            // the default dictionary's id, "" before it exists
	ruleDicts   map[string]string // rule id -> its dictionary's id (rule ids are unique per organization)
}

// New returns an empty Store that uses opts' clock and log retention. Its
// secret (Secret) is random, made here: cursors signed by one Store do not
// verify on another, as with two bbolt files.
func New(opts store.Options) *Store {
	secret := make([]byte, 32)
	_, _ = rand.Read(secret) // crypto/rand.Read never fails; it aborts the process instead.
	return &Store{
		now:       opts.Clock(),
		retention: opts.Retention(),
		secret:    secret,
		keys:      map[string]*store.APIKey{},
		keyHashes: map[string]string{},
		orgs:      map[string]*org{},

		orgRecords: map[string]*store.Org{},
		jobs:       map[string]*jobEntry{},
	}
}

// Close makes every later call fail; the records go with the Store.
// Closing twice is harmless.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}

// Secret returns a copy of the Store's 32 random bytes.
func (s *Store) Secret() []byte { return bytes.Clone(s.secret) }

// enter begins every call of method m: a closed store, a done context and
// an injected fault (see faults) fail it before it does anything. It does
// not allocate unless it fails.
func (s *Store) enter(ctx context.Context, m method) error {
	if s.closed.Load() {
		return fmt.Errorf("memory store: %s: %w", m, errClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory store: %s: %w", m, err)
	}
	return s.faults.check(m)
}

// org returns orgID's records, or nil when it has none. Callers hold mu.
func (s *Store) org(orgID string) *org {
	return s.orgs[orgID]
}

// orgForWrite returns orgID's records, creating them. Callers hold mu for
// writing, and call it only once every check of the write has passed, so
// that a refused write leaves no trace.
func (s *Store) orgForWrite(orgID string) *org {
	o := s.orgs[orgID]
	if o == nil {
		o = &org{
			voices:    map[string]*store.Voice{},
			media:     map[string]*mediaEntry{},
			secrets:   map[string][]byte{},
			logs:      newOrgLogs(),
			usage:     map[int64]map[usageSub]*store.UsageCounts{},
			dicts:     map[string]*dictEntry{},
			dictNames: map[string]string{},
			ruleDicts: map[string]string{},
		}
		s.orgs[orgID] = o
	}
	return o
}

// utcNow is the clock's time in UTC, the form every time is kept in.
func (s *Store) utcNow() time.Time { return s.now().UTC() }

// defaultTimes fills zero creation and update times: now, and the
// creation time.
func (s *Store) defaultTimes(created, updated *time.Time) {
	if created.IsZero() {
		*created = s.utcNow()
	}
	if updated.IsZero() {
		*updated = *created
	}
}

// requireIDs returns an error naming the first empty value of the pairs
// (name, value).
func requireIDs(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			return fmt.Errorf("memory store: %s is required", pairs[i])
		}
	}
	return nil
}

// Store satisfies the whole storage contract.
var _ store.Backend = (*Store)(nil)

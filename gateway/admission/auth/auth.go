// Package auth maps bearer API keys to organizations.
//
// Keys are 256-bit random tokens shown once at creation. Only their SHA-256
// hash is stored: a key has enough entropy that a fast hash is safe (no
// password stretching needed), and a hash lets the request path find the key
// with one map lookup. The active keys live in memory, so authenticating a
// request never touches storage, and revocation takes effect at once on the
// instance that revokes; other instances sharing the storage reload their
// table when it tells them (Reload).
package auth

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/voxgate/voxgate/gateway/store"
)

// KeyPrefix starts every voxgate API key, so leaked keys are recognizable
// by secret scanners.
const KeyPrefix = "vxk_"

// keyLen is the length of a key: prefix + base64url of 32 bytes.
var keyLen = len(KeyPrefix) + base64.RawURLEncoding.EncodedLen(32)

// Principal is an authenticated caller.
type Principal struct {
	OrgID string
	KeyID string
	// Scope is the key's scope; nil when the key has none (the common
	// case, so unrestricted keys cost nothing more to check).
	Scope *store.KeyScope
	// Admin says the key is an admin key: it calls the admin API
	// (/v1/admin/) and nothing else. Its OrgID is store.AdminOrg.
	Admin bool
	// RateKey names the key's own rate limit in the limiter ("key:<id>"),
	// made once; "" when the key has none.
	RateKey string
}

// OrgState is what the gateway knows of an organization, for deciding
// whether its keys authenticate.
type OrgState uint8

// The states of an organization.
const (
	// OrgUnknown: neither gateway.yaml nor the store has it; its keys
	// are refused like unknown keys.
	OrgUnknown OrgState = iota
	// OrgActive: its keys authenticate.
	OrgActive
	// OrgDisabled: an organization disabled through the admin API; its
	// keys are refused with 403.
	OrgDisabled
)

// Status says why a key does or does not authenticate.
type Status uint8

// The outcomes of Check.
const (
	// StatusOK: the key authenticates.
	StatusOK Status = iota
	// StatusUnknown: no such active key (missing, malformed, unknown,
	// revoked, or of an organization that no longer exists).
	StatusUnknown
	// StatusExpired: the key's expiry has passed.
	StatusExpired
	// StatusOrgDisabled: the key's organization is disabled.
	StatusOrgDisabled
)

type entry struct {
	hash [sha256.Size]byte
	p    Principal
}

// Keys is the storage auth needs: the key table. It is declared here, by
// its user, so auth depends on four methods rather than on a backend.
type Keys interface {
	CreateKey(ctx context.Context, k *store.APIKey) error
	ListKeys(ctx context.Context, orgID string) ([]store.APIKey, error)
	RevokeKey(ctx context.Context, id string) (*store.APIKey, error)
}

// Authenticator holds the active keys in memory.
type Authenticator struct {
	st Keys
	// orgs says which organizations exist (in the current config or the
	// store) and whether they are disabled; keys of removed organizations
	// stop working. Admin keys are of no organization and skip it.
	orgs func(string) OrgState

	mu     sync.RWMutex
	byHash map[[sha256.Size]byte]entry
	// byID indexes the same entries by key id, for dashboard sessions
	// (Active) and revocation.
	byID map[string]entry
	// changes counts this instance's own creations and revocations
	// (under mu), so that Reload never applies a snapshot read before one
	// of them: it would bring a revoked key back, or drop a new one,
	// until the next reload.
	changes uint64
	// gen counts every change of the table (under mu), reloads included:
	// a Memo holds only for the generation it was made in.
	gen atomic.Uint64
}

// New loads the active keys from st. orgExists reports whether an org is
// configured.
func New(ctx context.Context, st Keys, orgExists func(string) bool) (*Authenticator, error) {
	return NewWithOrgs(ctx, st, func(org string) OrgState {
		if orgExists == nil || orgExists(org) {
			return OrgActive
		}
		return OrgUnknown
	})
}

// NewWithOrgs is New with the organizations' states: a disabled
// organization's keys are told apart from unknown ones (Check).
func NewWithOrgs(ctx context.Context, st Keys, orgs func(string) OrgState) (*Authenticator, error) {
	a := &Authenticator{st: st, orgs: orgs, byHash: map[[sha256.Size]byte]entry{}, byID: map[string]entry{}}
	if err := a.Reload(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// Reload replaces the in-memory table with the active keys in storage. A
// gateway that shares storage with other instances calls it when they
// create or revoke a key (store.KeyWatcher), so a revocation anywhere holds
// everywhere; the request path keeps reading memory only.
//
// A local Create or Revoke that lands while the snapshot is being read
// makes Reload read again: the snapshot may predate it.
func (a *Authenticator) Reload(ctx context.Context) error {
	for {
		a.mu.RLock()
		seen := a.changes
		a.mu.RUnlock()
		keys, err := a.st.ListKeys(ctx, "")
		if err != nil {
			return fmt.Errorf("load api keys: %w", err)
		}
		table := make(map[[sha256.Size]byte]entry, len(keys))
		byID := make(map[string]entry, len(keys))
		for i := range keys {
			if e, ok := activeEntry(&keys[i]); ok {
				table[e.hash] = e
				byID[e.p.KeyID] = e
			}
		}
		a.mu.Lock()
		if a.changes != seen {
			a.mu.Unlock()
			continue
		}
		a.byHash, a.byID = table, byID
		a.gen.Add(1)
		a.mu.Unlock()
		return nil
	}
}

// activeEntry returns k's table entry, or false when k cannot authenticate.
func activeEntry(k *store.APIKey) (entry, bool) {
	if !k.RevokedAt.IsZero() || len(k.Hash) != sha256.Size {
		return entry{}, false
	}
	var h [sha256.Size]byte
	copy(h[:], k.Hash)
	p := Principal{OrgID: k.OrgID, KeyID: k.ID, Admin: k.Admin}
	if !scopeEmpty(&k.Scope) {
		sc := k.Scope
		p.Scope = &sc
	}
	if k.Scope.RatePerMinute > 0 {
		p.RateKey = "key:" + k.ID
	}
	return entry{hash: h, p: p}, true
}

func scopeEmpty(s *store.KeyScope) bool {
	return s.ExpiresAt.IsZero() && len(s.Providers) == 0 && len(s.Models) == 0 && s.Budget == 0 && s.RatePerMinute == 0
}

func (a *Authenticator) add(k *store.APIKey) {
	e, ok := activeEntry(k)
	if !ok {
		return
	}
	a.mu.Lock()
	a.byHash[e.hash] = e
	a.byID[e.p.KeyID] = e
	a.changes++
	a.gen.Add(1)
	a.mu.Unlock()
}

var bearer = []byte("bearer ")

// Authenticate checks an Authorization header value. Hot path: no
// allocations.
func (a *Authenticator) Authenticate(header []byte) (Principal, bool) {
	if len(header) < len(bearer) || !bytes.EqualFold(header[:len(bearer)], bearer) {
		return Principal{}, false
	}
	return a.AuthenticateKey(bytes.TrimSpace(header[len(bearer):]))
}

// AuthenticateKey resolves a bare API key, as a dialect that sends it in
// a header of its own (ElevenLabs' xi-api-key) carries it.
func (a *Authenticator) AuthenticateKey(token []byte) (Principal, bool) {
	p, st := a.CheckKey(token)
	return p, st == StatusOK
}

// Check is Authenticate that says why a key is refused: the HTTP layer
// answers an expired key and a disabled organization's key with their
// own messages. The principal is returned with StatusExpired and
// StatusOrgDisabled too (the key is known). Hot path: no allocations.
func (a *Authenticator) Check(header []byte) (Principal, Status) {
	return a.CheckMemo(header, nil)
}

// CheckKey is Check for a bare API key.
func (a *Authenticator) CheckKey(token []byte) (Principal, Status) {
	p, ok := a.lookup(token)
	if !ok {
		return Principal{}, StatusUnknown
	}
	return p, a.state(&p)
}

// lookup finds the principal of token in the table.
func (a *Authenticator) lookup(token []byte) (Principal, bool) {
	if len(token) != keyLen || !bytes.HasPrefix(token, []byte(KeyPrefix)) {
		return Principal{}, false
	}
	h := sha256.Sum256(token)
	a.mu.RLock()
	e, ok := a.byHash[h]
	a.mu.RUnlock()
	// The map found the entry by hash; the constant-time compare keeps the
	// final decision free of data-dependent timing all the same.
	if !ok || subtle.ConstantTimeCompare(e.hash[:], h[:]) != 1 {
		return Principal{}, false
	}
	return e.p, true
}

// Memo is what a connection's last key check left, so that the next
// request on the same connection with the same key skips the key's
// SHA-256 and the table (the larger part of the check on a cold cache:
// BENCHMARKS.md, round 3 session 11). A connection is one client, and a
// keep-alive client sends one key. A Memo holds only while the key table
// is unchanged: a key created, updated or revoked here, or a reload,
// voids every Memo. The organization's state and the key's expiry are
// checked on every request all the same. One goroutine at a time uses a
// Memo (a connection's); its zero value is empty.
type Memo struct {
	token [memoKeyCap]byte
	valid bool
	gen   uint64
	p     Principal
}

// memoKeyCap bounds the key a Memo holds (keyLen today).
const memoKeyCap = 64

// CheckMemo is Check remembering the key in m (nil: Check).
func (a *Authenticator) CheckMemo(header []byte, m *Memo) (Principal, Status) {
	if len(header) < len(bearer) || !bytes.EqualFold(header[:len(bearer)], bearer) {
		return Principal{}, StatusUnknown
	}
	return a.CheckKeyMemo(bytes.TrimSpace(header[len(bearer):]), m)
}

// CheckKeyMemo is CheckKey remembering the key in m (nil: CheckKey).
func (a *Authenticator) CheckKeyMemo(token []byte, m *Memo) (Principal, Status) {
	if m == nil || len(token) > memoKeyCap {
		return a.CheckKey(token)
	}
	// Read before the table: a change after this read voids the memo
	// made from it.
	gen := a.gen.Load()
	if m.valid && m.gen == gen && len(token) == keyLen && subtle.ConstantTimeCompare(token, m.token[:keyLen]) == 1 {
		return m.p, a.state(&m.p)
	}
	p, ok := a.lookup(token)
	if !ok {
		m.valid = false
		return Principal{}, StatusUnknown
	}
	copy(m.token[:], token)
	m.valid, m.gen, m.p = true, gen, p
	return p, a.state(&p)
}

// state is what a known key's principal may do now.
func (a *Authenticator) state(p *Principal) Status {
	if !p.Admin && a.orgs != nil {
		switch a.orgs(p.OrgID) {
		case OrgUnknown:
			return StatusUnknown
		case OrgDisabled:
			return StatusOrgDisabled
		}
	}
	if p.Scope != nil && p.Scope.Expired(time.Now()) {
		return StatusExpired
	}
	return StatusOK
}

// Active returns the principal of key id while the key can authenticate:
// not revoked (here or, through Reload, on any instance sharing the
// storage), not expired, and of a configured organization. Dashboard
// sessions call it on every request, so a session ends with its key
// everywhere.
func (a *Authenticator) Active(id string) (Principal, bool) {
	a.mu.RLock()
	e, ok := a.byID[id]
	a.mu.RUnlock()
	if !ok || a.state(&e.p) != StatusOK {
		return Principal{}, false
	}
	return e.p, true
}

// Create makes a key for org, stores its hash and activates it. The
// returned plaintext is shown once and never stored.
func (a *Authenticator) Create(ctx context.Context, org, name string) (string, *store.APIKey, error) {
	return a.CreateWith(ctx, org, name, store.KeyScope{})
}

// CreateWith is Create for a key with a scope.
func (a *Authenticator) CreateWith(ctx context.Context, org, name string, scope store.KeyScope) (string, *store.APIKey, error) {
	plain, k, err := CreateKeyWith(ctx, a.st, org, name, scope)
	if err != nil {
		return "", nil, err
	}
	a.add(k)
	return plain, k, nil
}

// CreateAdmin makes an admin key (see Principal.Admin).
func (a *Authenticator) CreateAdmin(ctx context.Context, name string) (string, *store.APIKey, error) {
	plain, k, err := CreateAdminKey(ctx, a.st, name)
	if err != nil {
		return "", nil, err
	}
	a.add(k)
	return plain, k, nil
}

// Update replaces key id's name and scope and applies them at once.
func (a *Authenticator) Update(ctx context.Context, k *store.APIKey) (*store.APIKey, error) {
	if err := ValidateScope(k.Scope); err != nil {
		return nil, err
	}
	st, ok := a.st.(Updater)
	if !ok {
		return nil, fmt.Errorf("this key storage cannot update keys")
	}
	out, err := st.UpdateKey(ctx, k)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	if e, ok := a.byID[out.ID]; ok {
		delete(a.byHash, e.hash)
		delete(a.byID, out.ID)
	}
	if e, ok := activeEntry(out); ok {
		a.byHash[e.hash] = e
		a.byID[e.p.KeyID] = e
	}
	a.changes++
	a.gen.Add(1)
	a.mu.Unlock()
	return out, nil
}

// Updater is the storage a key update needs, beside Keys.
type Updater interface {
	UpdateKey(ctx context.Context, k *store.APIKey) (*store.APIKey, error)
}

// Revoke revokes the key with id; it stops authenticating at once.
func (a *Authenticator) Revoke(ctx context.Context, id string) (*store.APIKey, error) {
	k, err := a.st.RevokeKey(ctx, id)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	if e, ok := a.byID[id]; ok {
		delete(a.byHash, e.hash)
		delete(a.byID, id)
	}
	a.changes++
	a.gen.Add(1)
	a.mu.Unlock()
	return k, nil
}

// List returns org's keys from storage, revoked ones included (the admin
// socket lists them; the request path never does).
func (a *Authenticator) List(ctx context.Context, org string) ([]store.APIKey, error) {
	return a.st.ListKeys(ctx, org)
}

// OrgExists reports whether org exists (in the config or the store): the
// keys of an organization that does not stop authenticating.
func (a *Authenticator) OrgExists(org string) bool { return a.orgs == nil || a.orgs(org) != OrgUnknown }

// CreateKey generates a key for org and stores its hash in st. It is used
// by the running gateway (through Authenticator.Create) and by the CLI when
// no gateway holds the database.
func CreateKey(ctx context.Context, st Keys, org, name string) (string, *store.APIKey, error) {
	return CreateKeyWith(ctx, st, org, name, store.KeyScope{})
}

// CreateKeyWith is CreateKey for a key with a scope.
func CreateKeyWith(ctx context.Context, st Keys, org, name string, scope store.KeyScope) (string, *store.APIKey, error) {
	if err := ValidateScope(scope); err != nil {
		return "", nil, err
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", nil, fmt.Errorf("generate key: %w", err)
	}
	plain := KeyPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	sum := sha256.Sum256([]byte(plain))
	k := &store.APIKey{
		ID:        uuid.NewString(),
		OrgID:     org,
		Name:      name,
		Prefix:    plain[:len(KeyPrefix)+6],
		Hash:      sum[:],
		CreatedAt: time.Now().UTC(),
		Scope:     scope,
	}
	if err := st.CreateKey(ctx, k); err != nil {
		return "", nil, fmt.Errorf("store key: %w", err)
	}
	return plain, k, nil
}

// CreateAdminKey generates an admin key and stores its hash in st.
func CreateAdminKey(ctx context.Context, st Keys, name string) (string, *store.APIKey, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", nil, fmt.Errorf("generate key: %w", err)
	}
	plain := KeyPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	sum := sha256.Sum256([]byte(plain))
	k := &store.APIKey{ID: uuid.NewString(), OrgID: store.AdminOrg, Name: name, Prefix: plain[:len(KeyPrefix)+6],
		Hash: sum[:], CreatedAt: time.Now().UTC(), Admin: true}
	if err := st.CreateKey(ctx, k); err != nil {
		return "", nil, fmt.Errorf("store key: %w", err)
	}
	return plain, k, nil
}

// BudgetPeriods are the periods a budget may count over.
var BudgetPeriods = []string{"day", "month"}

// ValidateScope checks a key scope before it is stored.
func ValidateScope(s store.KeyScope) error {
	switch {
	case s.Budget < 0:
		return fmt.Errorf("key budget must be 0 (none) or more credits, got %d", s.Budget)
	case s.BudgetCost < 0:
		return fmt.Errorf("key budget must be 0 (none) or more in the gateway's currency, got %d nano-units", s.BudgetCost)
	case (s.Budget > 0 || s.BudgetCost > 0) && !slices.Contains(BudgetPeriods, s.BudgetPeriod):
		return fmt.Errorf("key budget period must be day or month, got %q", s.BudgetPeriod)
	case s.RatePerMinute < 0:
		return fmt.Errorf("key rate limit must be 0 (none) or more requests a minute, got %d", s.RatePerMinute)
	case !s.ExpiresAt.IsZero() && !s.ExpiresAt.After(time.Now()):
		return fmt.Errorf("key expiry %s is not in the future", s.ExpiresAt.Format(time.RFC3339))
	}
	for _, m := range s.Models {
		if p, mm, ok := strings.Cut(m, "/"); !ok || p == "" || mm == "" {
			return fmt.Errorf("key model %q is not provider/model", m)
		}
	}
	return nil
}

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
	"sync"
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
}

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
	// orgs says which organizations exist in the current config; keys of
	// removed organizations stop working.
	orgs func(string) bool

	mu     sync.RWMutex
	byHash map[[sha256.Size]byte]entry
}

// New loads the active keys from st. orgExists reports whether an org is
// configured.
func New(ctx context.Context, st Keys, orgExists func(string) bool) (*Authenticator, error) {
	a := &Authenticator{st: st, orgs: orgExists, byHash: map[[sha256.Size]byte]entry{}}
	if err := a.Reload(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// Reload replaces the in-memory table with the active keys in storage. A
// gateway that shares storage with other instances calls it when they
// create or revoke a key (store.KeyWatcher), so a revocation anywhere holds
// everywhere; the request path keeps reading memory only.
func (a *Authenticator) Reload(ctx context.Context) error {
	keys, err := a.st.ListKeys(ctx, "")
	if err != nil {
		return fmt.Errorf("load api keys: %w", err)
	}
	table := make(map[[sha256.Size]byte]entry, len(keys))
	for i := range keys {
		if e, ok := activeEntry(&keys[i]); ok {
			table[e.hash] = e
		}
	}
	a.mu.Lock()
	a.byHash = table
	a.mu.Unlock()
	return nil
}

// activeEntry returns k's table entry, or false when k cannot authenticate.
func activeEntry(k *store.APIKey) (entry, bool) {
	if !k.RevokedAt.IsZero() || len(k.Hash) != sha256.Size {
		return entry{}, false
	}
	var h [sha256.Size]byte
	copy(h[:], k.Hash)
	return entry{hash: h, p: Principal{OrgID: k.OrgID, KeyID: k.ID}}, true
}

func (a *Authenticator) add(k *store.APIKey) {
	e, ok := activeEntry(k)
	if !ok {
		return
	}
	a.mu.Lock()
	a.byHash[e.hash] = e
	a.mu.Unlock()
}

var bearer = []byte("bearer ")

// Authenticate checks an Authorization header value. Hot path: no
// allocations.
func (a *Authenticator) Authenticate(header []byte) (Principal, bool) {
	if len(header) < len(bearer) || !bytes.EqualFold(header[:len(bearer)], bearer) {
		return Principal{}, false
	}
	token := bytes.TrimSpace(header[len(bearer):])
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
	if a.orgs != nil && !a.orgs(e.p.OrgID) {
		return Principal{}, false
	}
	return e.p, true
}

// Active returns the principal of key id while the key can authenticate:
// not revoked (here or, through Reload, on any instance sharing the
// storage) and of a configured organization. Dashboard sessions call it
// on every request, so a session ends with its key everywhere. Keys are
// few (an operator issues them), so it scans the table.
func (a *Authenticator) Active(id string) (Principal, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	for _, e := range a.byHash {
		if e.p.KeyID == id {
			if a.orgs != nil && !a.orgs(e.p.OrgID) {
				return Principal{}, false
			}
			return e.p, true
		}
	}
	return Principal{}, false
}

// Create makes a key for org, stores its hash and activates it. The
// returned plaintext is shown once and never stored.
func (a *Authenticator) Create(ctx context.Context, org, name string) (string, *store.APIKey, error) {
	plain, k, err := CreateKey(ctx, a.st, org, name)
	if err != nil {
		return "", nil, err
	}
	a.add(k)
	return plain, k, nil
}

// Revoke revokes the key with id; it stops authenticating at once.
func (a *Authenticator) Revoke(ctx context.Context, id string) (*store.APIKey, error) {
	k, err := a.st.RevokeKey(ctx, id)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	for h, e := range a.byHash {
		if e.p.KeyID == id {
			delete(a.byHash, h)
		}
	}
	a.mu.Unlock()
	return k, nil
}

// CreateKey generates a key for org and stores its hash in st. It is used
// by the running gateway (through Authenticator.Create) and by the CLI when
// no gateway holds the database.
func CreateKey(ctx context.Context, st Keys, org, name string) (string, *store.APIKey, error) {
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
	}
	if err := st.CreateKey(ctx, k); err != nil {
		return "", nil, fmt.Errorf("store key: %w", err)
	}
	return plain, k, nil
}

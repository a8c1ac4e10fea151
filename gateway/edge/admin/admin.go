// Package admin serves the gateway's local administration socket.
//
// bbolt locks its file to one process, so while a gateway runs, the
// `voxgate keys` commands cannot open the database. They talk to the running
// gateway through this unix socket instead (mode 0600, next to the database
// by default), which also makes a revocation take effect at once. The socket
// speaks plain HTTP/JSON through net/http: it is off the hot path, and the
// standard library client is the simplest peer for the CLI.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
)

// KeyView is an API key as the admin API shows it: never the hash.
type KeyView struct {
	ID        string     `json:"id"`
	OrgID     string     `json:"org_id"`
	Name      string     `json:"name"`
	Prefix    string     `json:"prefix"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	// Key is the plaintext key; set only in the answer to a create.
	Key string `json:"key,omitempty"`
	// Scope is what the key may do; omitted for a key without one.
	Scope *ScopeView `json:"scope,omitempty"`
}

// ScopeView is a key's scope on the admin socket.
type ScopeView struct {
	ExpiresAt    *time.Time `json:"expires_at,omitempty"`
	Providers    []string   `json:"providers,omitempty"`
	Models       []string   `json:"models,omitempty"`
	Budget       int64      `json:"budget,omitempty"`
	BudgetPeriod string     `json:"budget_period,omitempty"`
}

// ScopeOf converts a scope view back.
func ScopeOf(v *ScopeView) store.KeyScope {
	if v == nil {
		return store.KeyScope{}
	}
	s := store.KeyScope{Providers: v.Providers, Models: v.Models, Budget: v.Budget, BudgetPeriod: v.BudgetPeriod}
	if v.ExpiresAt != nil {
		s.ExpiresAt = *v.ExpiresAt
	}
	return s
}

// View converts a stored key.
func View(k *store.APIKey) KeyView {
	v := KeyView{ID: k.ID, OrgID: k.OrgID, Name: k.Name, Prefix: k.Prefix, CreatedAt: k.CreatedAt}
	if !k.RevokedAt.IsZero() {
		t := k.RevokedAt
		v.RevokedAt = &t
	}
	sc := k.Scope
	if !sc.ExpiresAt.IsZero() || len(sc.Providers) > 0 || len(sc.Models) > 0 || sc.Budget > 0 {
		v.Scope = &ScopeView{Providers: sc.Providers, Models: sc.Models, Budget: sc.Budget, BudgetPeriod: sc.BudgetPeriod}
		if !sc.ExpiresAt.IsZero() {
			t := sc.ExpiresAt
			v.Scope.ExpiresAt = &t
		}
	}
	return v
}

// ReloadView is a reload's outcome on the admin socket and in /readyz.
type ReloadView struct {
	// Result is "ok" (swapped in) or "refused" (nothing changed).
	Result string `json:"result"`
	// At is when the reload ran.
	At time.Time `json:"at"`
	// Hash is the SHA-256 (first 12 hex digits) of the file read.
	Hash string `json:"hash,omitempty"`
	// Changes are what an accepted reload changed, one line per part
	// ("providers: +azure -polly ~espeak").
	Changes []string `json:"changes,omitempty"`
	// Mistakes are why a reload was refused, one per line.
	Mistakes []string `json:"mistakes,omitempty"`
}

// Keys is the gateway's API key table as the socket administers it;
// *auth.Authenticator is one, so that a key made or revoked here applies
// at once.
type Keys interface {
	// CreateWith makes a key of org and returns it in plain text (shown
	// once) with its record.
	CreateWith(ctx context.Context, org, name string, scope store.KeyScope) (string, *store.APIKey, error)
	// List returns org's keys, revoked ones included.
	List(ctx context.Context, org string) ([]store.APIKey, error)
	// Revoke revokes key id; an unknown id is store.ErrNotFound.
	Revoke(ctx context.Context, id string) (*store.APIKey, error)
	// OrgExists reports whether org is configured.
	OrgExists(org string) bool
	// CreateAdmin makes an admin key.
	CreateAdmin(ctx context.Context, name string) (string, *store.APIKey, error)
}

// Secrets is the organizations' own provider keys as the operator sets
// and removes them (`voxgate secrets`); *credentials.Resolver is one.
type Secrets interface {
	SetSecret(ctx context.Context, org, provider, value string) error
	DeleteSecret(ctx context.Context, org, provider string) error
}

// Deps are what the socket administers, each served by the package that
// owns it.
type Deps struct {
	Keys    Keys
	Secrets Secrets
	// Reload reads the configuration file again and swaps it in, as
	// SIGHUP does (`voxgate reload`); nil answers 404.
	Reload func(ctx context.Context) (ReloadView, error)
	// Metrics serves the gateway's metrics; nil serves none.
	Metrics http.Handler
}

// Server is the admin socket server.
type Server struct {
	path string
	ln   net.Listener
	srv  *http.Server
}

// Listen creates the socket at path (replacing a stale one) and serves d.
func Listen(path string, d Deps) (*Server, error) {
	if c, err := net.DialTimeout("unix", path, 200*time.Millisecond); err == nil {
		c.Close()
		return nil, fmt.Errorf("admin socket %s is in use: is another gateway running on this database?", path)
	}
	_ = os.Remove(path)
	// With PostgreSQL storage nothing else creates the data directory.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	mux := http.NewServeMux()
	// Go's profiler, for operators and `make bench`: on this socket only
	// (0600), never on the public listener.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	// The metrics, always: the public listener serves them only when
	// configured to (metrics: in the config).
	if d.Metrics != nil {
		mux.Handle("GET /metrics", d.Metrics)
	}
	mux.HandleFunc("POST /keys", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Org, Name string
			Scope     *ScopeView
			Admin     bool
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			reply(w, http.StatusBadRequest, errBody(err))
			return
		}
		if req.Admin {
			plain, k, err := d.Keys.CreateAdmin(r.Context(), req.Name)
			if err != nil {
				reply(w, http.StatusInternalServerError, errBody(err))
				return
			}
			v := View(k)
			v.Key = plain
			reply(w, http.StatusCreated, v)
			return
		}
		if !d.Keys.OrgExists(req.Org) {
			reply(w, http.StatusNotFound, errBody(fmt.Errorf("organization %q is not in the config", req.Org)))
			return
		}
		plain, k, err := d.Keys.CreateWith(r.Context(), req.Org, req.Name, ScopeOf(req.Scope))
		if err != nil {
			reply(w, http.StatusBadRequest, errBody(err))
			return
		}
		v := View(k)
		v.Key = plain
		reply(w, http.StatusCreated, v)
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		keys, err := d.Keys.List(r.Context(), r.URL.Query().Get("org"))
		if err != nil {
			reply(w, http.StatusInternalServerError, errBody(err))
			return
		}
		out := make([]KeyView, 0, len(keys))
		for i := range keys {
			out = append(out, View(&keys[i]))
		}
		reply(w, http.StatusOK, out)
	})
	mux.HandleFunc("POST /keys/{id}/revoke", func(w http.ResponseWriter, r *http.Request) {
		k, err := d.Keys.Revoke(r.Context(), r.PathValue("id"))
		switch {
		case errors.Is(err, store.ErrNotFound):
			reply(w, http.StatusNotFound, errBody(fmt.Errorf("no key %s", r.PathValue("id"))))
		case err != nil:
			reply(w, http.StatusInternalServerError, errBody(err))
		default:
			reply(w, http.StatusOK, View(k))
		}
	})
	mux.HandleFunc("PUT /secrets/{org}/{provider}", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Value string }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Value == "" {
			reply(w, http.StatusBadRequest, errBody(errors.New("send {\"value\": \"...\"}")))
			return
		}
		if err := d.Secrets.SetSecret(r.Context(), r.PathValue("org"), r.PathValue("provider"), req.Value); err != nil {
			reply(w, http.StatusBadRequest, errBody(err))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE /secrets/{org}/{provider}", func(w http.ResponseWriter, r *http.Request) {
		if err := d.Secrets.DeleteSecret(r.Context(), r.PathValue("org"), r.PathValue("provider")); err != nil {
			reply(w, http.StatusBadRequest, errBody(err))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	if d.Reload != nil {
		mux.HandleFunc("POST /reload", func(w http.ResponseWriter, r *http.Request) {
			v, err := d.Reload(r.Context())
			if err != nil {
				// Refused: nothing changed, and v says why, every
				// mistake on a line of its own.
				reply(w, http.StatusConflict, v)
				return
			}
			reply(w, http.StatusOK, v)
		})
	}
	s := &Server{path: path, ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}
	go s.srv.Serve(ln) //nolint:errcheck // returns on Close
	return s, nil
}

// Close stops the socket and removes its file.
func (s *Server) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	_ = os.Remove(s.path)
	return err
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func errBody(err error) map[string]string { return map[string]string{"error": err.Error()} }

package edge

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/voxgate/voxgate/gateway/edge/dialect"
	"github.com/voxgate/voxgate/gateway/providers/catalog"
	"github.com/voxgate/voxgate/gateway/providers/credentials"
	"github.com/voxgate/voxgate/gateway/resources"
	"github.com/voxgate/voxgate/gateway/speech"
)

// Live is the part of the configuration that a reload may change, as the
// edge serves it: the speech service (with its providers, fallbacks,
// limits, moderation and cache settings), the catalog, the credential
// rules, the aliases and the resource routes' service. (The
// organizations, with their rate limits, are the orgs.Directory's: a
// reload replaces the file's there, and the admin API adds its own.)
//
// A Live is immutable once built. The server holds the current one in an
// atomic pointer; a request takes it once, as it arrives (Server.hold), and
// uses that one to its end, streams included, so that it never sees half
// of one configuration and half of another. A reload builds a new Live and
// swaps it in (Server.SwapLive); no lock is taken on the request path.
type Live struct {
	// Speech serves the speech endpoints; nil (no providers) serves only
	// voices, media and logs.
	Speech *speech.Service
	// Catalog is the providers the catalog routes list, and Credentials
	// says which of them each organization may use; both are set with
	// Speech.
	Catalog     *catalog.Catalog
	Credentials *credentials.Resolver
	// Aliases are the model and voice names of the OpenAI and ElevenLabs
	// dialects; nil means none.
	Aliases *dialect.Aliases
	// Resources serves the resource routes: voices, media, pronunciation
	// dictionaries and provider keys.
	Resources *resources.Service

	// refs counts the requests (and realtime contexts) holding this Live.
	refs atomic.Int64
}

// LiveDeps are what NewLive builds a Live from.
type LiveDeps struct {
	Speech      *speech.Service
	Catalog     *catalog.Catalog
	Credentials *credentials.Resolver
	Aliases     *dialect.Aliases
	Resources   *resources.Service
}

// NewLive builds a Live.
func NewLive(d LiveDeps) *Live {
	return &Live{Speech: d.Speech, Catalog: d.Catalog, Credentials: d.Credentials, Aliases: d.Aliases, Resources: d.Resources}
}

// isProvider reports whether name is a configured provider.
func (l *Live) isProvider(name string) bool {
	return l.Catalog != nil && l.Catalog.Provider(name) != nil
}

// Wait returns once no request holds l any more, or when ctx ends: a
// reload waits for it before it stops the plugins l's requests may still
// call. Only a Live that has been swapped out is waited for (no request
// takes it any more), so polling is enough and costs the request path
// nothing.
func (l *Live) Wait(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for l.refs.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// Held is the number of requests holding l.
func (l *Live) Held() int64 { return l.refs.Load() }

// hold takes the current Live for a request, which gives it back with
// release when it has been answered (a stream: when it ends). Hot path:
// two atomic loads and an add.
//
// The pointer is read again after the count is raised: a reload that
// swapped the Live in between may already have seen its count at zero,
// and must not find a request on it afterwards, so such a request lets
// go and takes the new one.
func (s *Server) hold() *Live {
	for {
		l := s.live.Load()
		if l == nil {
			return nil // a Server built by hand in a test
		}
		l.refs.Add(1)
		if s.live.Load() == l {
			return l
		}
		l.refs.Add(-1)
	}
}

// release gives back a Live taken with hold; nil is a no-op.
func (l *Live) release() {
	if l != nil {
		l.refs.Add(-1)
	}
}

// Live returns the configuration requests are served with now.
func (s *Server) Live() *Live { return s.live.Load() }

// SwapLive makes l the configuration new requests are served with and
// returns the one it replaces; requests that hold the old one finish with
// it (see Live.Wait). l must have Speech exactly when the server was built
// with it: the speech routes are registered once, by New.
func (s *Server) SwapLive(l *Live) (old *Live) {
	return s.live.Swap(l)
}

// ServesSpeech reports whether the server registered the speech routes
// (it was built with providers).
func (s *Server) ServesSpeech() bool { return s.speechRoutes }

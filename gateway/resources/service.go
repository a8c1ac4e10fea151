// Package resources is what an organization keeps in the gateway and
// edits over the API: saved voices (voices.go; made from a provider's own
// voice, checked against the provider's list, or cloned from uploaded
// media: voicecheck.go, clone.go), the uploaded media (media.go),
// pronunciation dictionaries with their rules (dictionaries.go), and the
// provider keys it brings (providerkeys.go).
//
// Every resource route of the edge goes through a Service: the handlers
// decode, call one method, and encode. Each method checks what it is
// given, writes the store before it returns (a control route answers 503
// storage_unavailable while the store is away), and fails with a
// *problem.Error where the failure is the caller's to fix. The speech
// pipeline (gateway/speech) reads the same records, never edits them, and
// neither package imports the other: both find providers and models in
// gateway/providers/catalog.
package resources

import (
	"context"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/providers/catalog"
	"github.com/voxgate/voxgate/gateway/providers/credentials"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/sdk"
)

// Store is the storage of the resources, declared here by its user; any
// store backend satisfies it. The gateway gives it the read cache, so
// that the pipeline sees a change at once.
type Store interface {
	store.VoiceStore
	store.DictionaryStore
	PutMedia(ctx context.Context, m *store.Media, data []byte) error
	GetMedia(ctx context.Context, orgID, id string) (*store.Media, error)
	MediaData(ctx context.Context, orgID, id string) ([]byte, error)
}

// Deps are the Service's collaborators.
type Deps struct {
	Store Store
	// Catalog holds the providers voices are made with; nil when the
	// gateway runs none (a voice then cannot be created).
	Catalog *catalog.Catalog
	// Calls runs the plugin calls the resources make (voice lists,
	// clones, key checks); nil records none.
	Calls *catalog.Calls
	// Credentials picks the credentials of those calls and seals the
	// provider keys organizations bring.
	Credentials *credentials.Resolver
	// CheckRule checks a pronunciation rule as the pipeline that applies
	// it reads words and phonemes (speech.ValidateStoredRule), with
	// errors at ["word"], ["replacement"], ["kind"], ["alphabet"] and
	// ["phoneme"]. It is given rather than imported so that this package
	// and the pipeline stay apart. Required.
	CheckRule func(r *store.PronunciationRule) []problem.FieldError
}

// Service serves the resources of every organization; each method reads
// and writes only the organization it is given.
type Service struct {
	store     Store
	cat       *catalog.Catalog
	calls     *catalog.Calls
	creds     *credentials.Resolver
	checkRule func(r *store.PronunciationRule) []problem.FieldError
}

// New returns a Service.
func New(d Deps) *Service {
	s := &Service{store: d.Store, cat: d.Catalog, calls: d.Calls, creds: d.Credentials, checkRule: d.CheckRule}
	if s.calls == nil {
		s.calls = catalog.NewCalls(nil, nil, false)
	}
	if s.checkRule == nil {
		// A wiring mistake, not a request's: rules would go unchecked.
		panic("resources.New: Deps.CheckRule is nil")
	}
	return s
}

// resolve finds provider's model ("": its default) in the catalog.
func (s *Service) resolve(provider, model string) (*catalog.Provider, *sdk.Model, error) {
	if s.cat == nil {
		return nil, nil, problem.New(problem.UnknownProvider, "provider %q is not configured", provider)
	}
	return s.cat.Resolve(provider, model)
}

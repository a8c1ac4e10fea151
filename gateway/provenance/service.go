package provenance

import (
	"context"
	"time"
)

// Service is what the edge needs to mark, sign and index answers.
type Service struct {
	signer  *Signer
	gateway string
	index   *Index
}

// NewService returns a Service signing with signer under the gateway
// identity gateway; index may be nil (no fingerprints: identify finds
// nothing).
func NewService(signer *Signer, gateway string, index *Index) *Service {
	return &Service{signer: signer, gateway: gateway, index: index}
}

// Signer is the signing key.
func (s *Service) Signer() *Signer { return s.signer }

// Gateway is the gateway identity marks carry.
func (s *Service) Gateway() string { return s.gateway }

// NewMark returns the mark of a request answered now.
func (s *Service) NewMark(requestID, provider, model string, now time.Time) *Mark {
	return &Mark{RequestID: requestID, Gateway: s.gateway, Provider: provider, Model: model,
		Time: now.UTC(), SourceType: DigitalSourceType}
}

// Identify finds org's clips that sound like data; none without an
// index.
func (s *Service) Identify(ctx context.Context, org string, data []byte, mediaType string) ([]Match, error) {
	if s.index == nil {
		return nil, nil
	}
	return s.index.Identify(ctx, org, data, mediaType)
}

// Indexing reports whether answers are fingerprinted: callers skip the
// copy Index needs when they are not.
func (s *Service) Indexing() bool { return s.index != nil }

// Index hands a finished clip to the indexer, if any.
func (s *Service) Index(org, requestID, mediaType string, audio []byte) {
	if s.index != nil {
		s.index.Index(org, requestID, mediaType, audio)
	}
}

package resources

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/providers/credentials"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

// Bounds of a provider key given to PUT /v1/api-keys/{providerId}. Real
// keys are tens of characters; the floor keeps lastFour from being most
// of a key.
const (
	minProviderKeyLen = 8
	maxProviderKeyLen = 8192
)

// keyCheckText is what a key is checked with: the smallest real synthesis.
const keyCheckText = "Hi."

// ProviderKey is what the API shows of a stored provider key: never the
// key, only its last four characters and when it was stored.
type ProviderKey struct {
	ProviderID string
	LastFour   string
	UpdatedAt  time.Time
}

// PutProviderKey stores org's own key for provider after checking it with
// a tiny synthesis against one of the provider's own voices: a key the
// provider refuses is not stored, and the answer says why (400
// provider_key_rejected, the provider's message with the key redacted). A
// check that could not run (the provider down or slow) stores nothing
// either and is the provider's failure (502/503/504). The key is sealed
// (credentials.Resolver.StoreOwnKey) and never logged or returned.
func (s *Service) PutProviderKey(ctx context.Context, org, provider, key string, now time.Time) (*ProviderKey, error) {
	if fe := validateProviderKey(key); fe != nil {
		return nil, problem.Validation(*fe)
	}
	if err := s.creds.AllowOwnKey(org, provider); err != nil {
		return nil, err
	}
	if err := s.checkProviderKey(ctx, provider, key); err != nil {
		return nil, err
	}
	if err := s.creds.StoreOwnKey(ctx, org, provider, key, now); err != nil {
		return nil, fmt.Errorf("store the %s key: %w", provider, err)
	}
	return &ProviderKey{ProviderID: provider, LastFour: credentials.LastFour(key), UpdatedAt: now}, nil
}

// ListProviderKeys returns what may be shown of org's stored provider keys
// (GET /v1/api-keys), one page of at most limit after the position after
// (a provider id; nil: from the start), the position to go on from, and
// whether more follow.
func (s *Service) ListProviderKeys(ctx context.Context, org string, limit int, after []byte) ([]ProviderKey, []byte, bool, error) {
	infos, more, err := s.creds.ListOwnKeys(ctx, org, limit, string(after))
	if err != nil {
		return nil, nil, false, err
	}
	out := make([]ProviderKey, len(infos))
	for i, k := range infos {
		out[i] = ProviderKey{ProviderID: k.Provider, LastFour: k.LastFour, UpdatedAt: k.UpdatedAt}
	}
	var next []byte
	if len(out) > 0 {
		next = []byte(out[len(out)-1].ProviderID)
	}
	return out, next, more, nil
}

// DeleteProviderKey removes org's stored key for provider.
func (s *Service) DeleteProviderKey(ctx context.Context, org, provider string) error {
	if s.cat == nil || s.cat.Provider(provider) == nil {
		return problem.New(problem.NotFound, "no provider %q", provider)
	}
	return s.creds.DeleteOwnKey(ctx, org, provider)
}

// OwnKeys returns the providers for which org has a key of its own, stored
// or in the configuration (GET /v1/audio/providers' byok flag). No key is
// read, only their names.
func (s *Service) OwnKeys(ctx context.Context, org string) (map[string]bool, error) {
	return s.creds.OwnKeys(ctx, org)
}

// validateProviderKey checks the keyValue field.
func validateProviderKey(key string) *problem.FieldError {
	n := utf8.RuneCountInString(key) // the documented bound is in characters
	switch {
	case n == 0:
		f := problem.Field("is required", "keyValue")
		return &f
	case n < minProviderKeyLen || n > maxProviderKeyLen:
		f := problem.Field(fmt.Sprintf("must be %d to %d characters", minProviderKeyLen, maxProviderKeyLen), "keyValue")
		return &f
	case strings.TrimSpace(key) != key || strings.IndexFunc(key, unicode.IsControl) >= 0:
		// A pasted key with a newline or spaces around it would fail at
		// every request; say so now.
		f := problem.Field("must not contain spaces around it or control characters", "keyValue")
		return &f
	}
	return nil
}

// checkProviderKey renders keyCheckText with key on the provider's default
// model and the first of the voices the provider lists for it (asking for
// the list is itself a call the key must be good for). Neither call is
// billed or logged as a request.
func (s *Service) checkProviderKey(ctx context.Context, provider, key string) error {
	p, m, err := s.resolve(provider, "")
	if err != nil {
		return err
	}
	creds := sdk.Credentials{APIKey: key, BYOK: true}
	var voices []sdk.Voice
	if _, err := s.calls.Do(ctx, p, m.ID, "key_check", func(ctx context.Context) error {
		var err error
		voices, err = p.Plugin.Voices(ctx, &sdk.VoicesRequest{Model: m.ID, Credentials: creds})
		return err
	}); err != nil {
		return keyCheckProblem(err, p.ID, key)
	}
	if len(voices) == 0 {
		return problem.New(problem.ProviderError, "provider %s lists no voices for %s, so the key cannot be checked; it was not stored", p.ID, m.ID)
	}
	ids := make([]string, len(voices))
	for i, v := range voices {
		ids[i] = v.ID
	}
	slices.Sort(ids)
	if _, err := s.calls.Do(ctx, p, m.ID, "key_check", func(ctx context.Context) error {
		_, err := p.Plugin.Synthesize(ctx, &sdk.SynthesizeRequest{Model: m.ID, Voice: ids[0], Text: keyCheckText, Credentials: creds})
		return err
	}); err != nil {
		return keyCheckProblem(err, p.ID, key)
	}
	return nil
}

// keyCheckProblem turns a failed key check into the answer: the provider's
// refusal (unauthorized, forbidden, invalid) is the caller's 400
// provider_key_rejected; anything else means the check could not run.
// The provider's message is kept, with the key redacted once more (the
// plugins redact it already), and the cause is dropped so that nothing
// unredacted reaches the gateway's own log.
func keyCheckProblem(err error, provider, key string) error {
	pe := problem.From(err, provider)
	out := &problem.Error{
		Code: pe.Code, Provider: provider, UpstreamStatus: pe.UpstreamStatus,
		UpstreamCode: upstream.Redact(pe.UpstreamCode, key), RetryAfter: pe.RetryAfter,
	}
	msg := upstream.Redact(pe.Detail, key)
	switch k := sdk.AsError(err); {
	case k != nil && (k.Kind == sdk.KindUnauthorized || k.Kind == sdk.KindInvalidRequest):
		out.Code = problem.ProviderKeyRejected
		out.Detail = "the provider rejected the key, which was not stored: " + msg
	default:
		out.Detail = "the key could not be checked, so it was not stored: " + msg
	}
	return out
}

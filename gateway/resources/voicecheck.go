package resources

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/providers/catalog"
	"github.com/voxgate/voxgate/sdk"
)

// maxSuggestions is how many close matches an unknown voice id's problem
// names.
const maxSuggestions = 5

// checkVoiceID makes sure a voice about to be saved names one of the
// provider's own voices, so that a voice saved with 201 can speak.
//
// The provider's list is asked for with the organization's credentials
// (an account's list holds its cloned voices). When the provider does not
// list voices (KindUnsupported) there is nothing to check against and the
// id is kept as given. Any other failure of the list call fails the
// request with that failure and nothing is saved: saving unchecked is
// what this check exists to prevent, and the failure (an upstream outage,
// a timeout, missing credentials) is one the caller can retry or fix.
func (s *Service) checkVoiceID(ctx context.Context, org string, p *catalog.Provider, m *sdk.Model, id string) error {
	creds, err := s.creds.For(ctx, org, p.ID)
	if err != nil {
		return err
	}
	var voices []sdk.Voice
	if _, err := s.calls.Do(ctx, p, m.ID, "voices", func(ctx context.Context) error {
		var err error
		voices, err = p.Plugin.Voices(ctx, &sdk.VoicesRequest{Model: m.ID, Credentials: creds})
		return err
	}); err != nil {
		if sdk.AsError(err).Kind == sdk.KindUnsupported {
			return nil
		}
		return problem.From(err, p.ID)
	}
	for _, v := range voices {
		if v.ID == id {
			return nil
		}
	}
	msg := fmt.Sprintf("%q is not one of the voices of %s/%s", id, p.ID, m.ID)
	if close := closeVoices(id, voices, maxSuggestions); len(close) > 0 {
		msg += "; close matches: " + strings.Join(close, ", ")
	}
	msg += fmt.Sprintf(" (GET /v1/providers/%s/voices lists them)", p.ID)
	pe := problem.New(problem.UnknownVoice, "%s", msg)
	pe.Validation = []problem.FieldError{problem.Field(msg, "voice_id")}
	return pe
}

// ProviderVoices returns the provider's own voices for model ("": its
// default), as org's credentials list them (an account's list holds its
// cloned voices), sorted by id: the voices a saved voice may name. An
// unknown provider is not found.
func (s *Service) ProviderVoices(ctx context.Context, org, provider, model string) ([]sdk.Voice, error) {
	p, m, err := s.resolve(provider, model)
	if err != nil {
		if pe, ok := err.(*problem.Error); ok && pe.Code == problem.UnknownProvider {
			return nil, problem.New(problem.NotFound, "no provider %q", provider)
		}
		return nil, err
	}
	creds, err := s.creds.For(ctx, org, p.ID)
	if err != nil {
		return nil, err
	}
	// A plain call under the provider's timeout, not through Calls, as
	// this route has always made it: the list is not counted in the
	// provider-call metrics.
	ctx, cancel := context.WithTimeout(ctx, p.Policy.Timeout)
	defer cancel()
	voices, err := p.Plugin.Voices(ctx, &sdk.VoicesRequest{Model: m.ID, Credentials: creds})
	if err != nil {
		return nil, problem.From(err, p.ID)
	}
	voices = slices.Clone(voices) // the plugin's slice is its own
	slices.SortFunc(voices, func(a, b sdk.Voice) int { return strings.Compare(a.ID, b.ID) })
	return voices, nil
}

// closeVoices returns the ids of up to n voices that id likely meant, best
// first: the same id in another case, or a voice's name given for its id;
// then ids that extend id after a separator, the shortest extension first
// ("en-gb" for "en"); then ids or names within a few edits of id (typos,
// "en-gb" for "en_gb"); then ids that id extends after a separator, the
// longest first ("en-gb" for "en-gb+f3"). Ties go to the shorter id.
func closeVoices(id string, voices []sdk.Voice, n int) []string {
	type match struct {
		id         string
		rank, dist int
	}
	in := strings.ToLower(id)
	// A longer id may take more typos; a short one only one.
	maxDist := max(1, len([]rune(in))/3)
	var matches []match
	for _, v := range voices {
		vid, name := strings.ToLower(v.ID), strings.ToLower(v.Name)
		m := match{id: v.ID, rank: 2, dist: min(editDistance(in, vid, maxDist), editDistance(in, name, maxDist))}
		switch {
		case vid == in || name == in:
			m.rank, m.dist = 0, 0
		case extends(vid, in):
			m.rank, m.dist = 1, len(vid)-len(in)
		case m.dist <= maxDist:
		case extends(in, vid) && len(in)-len(vid) <= 9:
			// At most a separator and a short tag (BCP 47 subtags have
			// up to 8 characters) more: "no-such-voice" does not mean "no".
			m.rank, m.dist = 3, len(in)-len(vid)
		default:
			continue
		}
		matches = append(matches, m)
	}
	slices.SortFunc(matches, func(a, b match) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.dist, b.dist), cmp.Compare(len(a.id), len(b.id)), strings.Compare(a.id, b.id))
	})
	out := make([]string, 0, min(n, len(matches)))
	for _, m := range matches[:min(n, len(matches))] {
		out = append(out, m.id)
	}
	return out
}

// extends reports whether long is short followed by a separator and more
// ("en-gb" of "en", "en-gb+f3" of "en-gb").
func extends(long, short string) bool {
	if len(long) <= len(short)+1 || !strings.HasPrefix(long, short) {
		return false
	}
	c := long[len(short)]
	return !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9')
}

// editDistance is the Levenshtein distance between a and b, in runes, or
// limit+1 when it is more than limit (which lets it stop early: provider
// voice lists run to thousands).
func editDistance(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > limit || -d > limit {
		return limit + 1
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		best := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			best = min(best, cur[j])
		}
		if best > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return min(prev[len(rb)], limit+1)
}

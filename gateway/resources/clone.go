package resources

import (
	"context"
	"encoding/json"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/sdk"
)

// clone asks v's provider to create a voice from the media samples and
// returns the provider's new voice id. The call is never retried: a retry
// could create two voices upstream.
func (s *Service) clone(ctx context.Context, org string, v *store.Voice, mediaIDs []string, cloneOpts map[string]any) (string, error) {
	p, m, err := s.resolve(v.Provider, v.Model)
	if err != nil {
		return "", err
	}
	if !m.Capabilities.Cloning {
		return "", problem.New(problem.CloningUnsupported, "model %s/%s cannot clone voices", p.ID, m.ID)
	}
	creds, err := s.creds.For(ctx, org, p.ID)
	if err != nil {
		return "", err
	}
	samples := make([]sdk.Sample, 0, len(mediaIDs))
	for _, id := range mediaIDs {
		media, err := s.store.GetMedia(ctx, org, id)
		if err != nil {
			return "", problem.New(problem.MediaNotFound, "no media %s in this organization", id)
		}
		data, err := s.store.MediaData(ctx, org, id)
		if err != nil {
			return "", err
		}
		samples = append(samples, sdk.Sample{Filename: media.Filename, MediaType: media.MediaType, Data: data})
	}
	opts, err := cloneOptions(v.ProviderOptions, cloneOpts)
	if err != nil {
		return "", err
	}
	var resp *sdk.CloneResponse
	if _, err := s.calls.Do(ctx, p, m.ID, "clone", func(ctx context.Context) error {
		var err error
		resp, err = p.Plugin.Clone(ctx, &sdk.CloneRequest{
			Model: m.ID, Name: v.Title, Description: v.Description, Options: opts, Credentials: creds,
			Samples: samples,
		})
		return err
	}); err != nil {
		return "", problem.From(err, p.ID)
	}
	if resp.VoiceID == "" {
		return "", problem.New(problem.ProviderError, "provider %s returned no voice id", p.ID)
	}
	return resp.VoiceID, nil
}

// cloneOptions are the options of a clone call: the clone's own options
// over the voice's saved ones, as JSON. Without saved options the clone's
// go as given (nil: none).
func cloneOptions(saved, clone map[string]any) ([]byte, error) {
	if len(saved) == 0 {
		if clone == nil {
			return nil, nil
		}
		return json.Marshal(clone)
	}
	merged := make(map[string]any, len(saved)+len(clone))
	for k, v := range saved {
		merged[k] = v
	}
	for k, v := range clone {
		merged[k] = v
	}
	return json.Marshal(merged)
}

package speech

import (
	"context"
	"sync"
	"time"

	"github.com/voxgate/voxgate/sdk"
)

// The language of a provider's voice, for the aligner's reference: the
// provider's own voice list says it for many providers (ElevenLabs,
// Cartesia), and the list is asked for at most every voiceLangTTL per
// provider, model and organization (an organization's list holds its
// cloned voices).
const (
	voiceLangTTL = 10 * time.Minute
	// voiceLangFailTTL is how long a failed listing is not retried.
	voiceLangFailTTL = time.Minute
	// voiceLangEntries bounds the cache; past it, it starts over.
	voiceLangEntries = 1024
	// voiceLangWait bounds the wait for a listing: the reference is
	// rendered while the provider renders the clip, and must not make
	// the request slower than that.
	voiceLangWait = 3 * time.Second
)

type voiceLangs struct {
	mu      sync.Mutex
	entries map[string]voiceLangEntry
}

type voiceLangEntry struct {
	until time.Time
	langs map[string]string // voice id -> language
}

// voiceLanguage returns the language j's provider lists for j's voice,
// or "".
func (s *Service) voiceLanguage(ctx context.Context, j *Job) string {
	key := j.Provider.ID + "\x00" + j.Model.ID + "\x00" + j.Org
	now := time.Now()
	vl := &s.voiceLangs
	vl.mu.Lock()
	e, ok := vl.entries[key]
	vl.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.langs[j.Voice]
	}
	ctx, cancel := context.WithTimeout(ctx, min(voiceLangWait, j.Provider.Policy.Timeout))
	defer cancel()
	e = voiceLangEntry{until: now.Add(voiceLangTTL), langs: map[string]string{}}
	voices, err := j.Provider.Plugin.Voices(ctx, &sdk.VoicesRequest{Model: j.Model.ID, Credentials: j.Creds})
	if err != nil {
		e.until = now.Add(voiceLangFailTTL)
	}
	for _, v := range voices {
		if v.Language != "" {
			e.langs[v.ID] = v.Language
		}
	}
	vl.mu.Lock()
	if vl.entries == nil || len(vl.entries) >= voiceLangEntries {
		vl.entries = map[string]voiceLangEntry{}
	}
	vl.entries[key] = e
	vl.mu.Unlock()
	return e.langs[j.Voice]
}

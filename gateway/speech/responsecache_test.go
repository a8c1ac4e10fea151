package speech_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/voxgate/voxgate/gateway/admission/budget"
	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/sdk"
)

// answer is what a client gets of a Spoken: its audio, with the stream
// read to its end.
func answer(t *testing.T, out *speech.Spoken) []byte {
	t.Helper()
	if out.Stream != nil {
		return drain(t, out.Stream)
	}
	return out.Result.Audio
}

// TestResponseCache: the same request is rendered once. The first is a
// miss and is stored; the next is a hit, answered with the same bytes and
// metadata without calling the provider or charging anything; a request
// that asks for a fresh rendering bypasses the cache and is stored again;
// another text or another organization is a miss. Alike for each way of
// delivery (a stream is stored once read to its end, and a hit replays
// it).
func TestResponseCache(t *testing.T) {
	deliveries := []struct {
		name string
		ep   speech.Delivery
	}{{"clip", speech.DeliverClip}, {"timestamps", speech.DeliverTimestamps}, {"stream", speech.DeliverStream}}
	for _, d := range deliveries {
		t.Run(d.name, func(t *testing.T) {
			p := newPipeline(t, setup{cache: true, orgBudgets: map[string]budget.Limit{"acme": {Credits: 1000, Period: budget.Day}}})
			const text = "Say it once [laughs] and keep it"
			speak := func(org, text string, noCache bool) (*speech.Spoken, []byte) {
				t.Helper()
				r := req("testkit/test", "alpha", text)
				r.NoCache = noCache
				out, err := p.speak(t.Context(), org, r, d.ep)
				wantCode(t, err, "")
				return out, answer(t, out)
			}
			calls := func() int { return len(p.calls("testkit")) }

			miss, missAudio := speak("acme", text, false)
			if miss.Cache != "miss" || miss.Row.Cache != "miss" || miss.Row.CreditsUsed != len(text) || calls() != 1 {
				t.Fatalf("first: cache %q (row %q), %d credits, %d calls; want a miss charged %d after one call", miss.Cache, miss.Row.Cache, miss.Row.CreditsUsed, calls(), len(text))
			}
			p.cache.waitStored(t)
			held := p.budget.held("org:acme:")

			hit, hitAudio := speak("acme", text, false)
			if hit.Cache != "hit" || hit.Row.Cache != "hit" || hit.Row.CreditsUsed != 0 || hit.Charge != nil || calls() != 1 {
				t.Errorf("second: cache %q (row %q), %d credits, charge %v, %d calls; want a free hit without a call", hit.Cache, hit.Row.Cache, hit.Row.CreditsUsed, hit.Charge, calls())
			}
			if !bytes.Equal(hitAudio, missAudio) {
				t.Errorf("the hit's %d bytes are not the miss's %d", len(hitAudio), len(missAudio))
			}
			if d.ep != speech.DeliverStream {
				if !slices.Equal(hit.Result.Warnings, miss.Result.Warnings) || !slices.Equal(hit.Result.Timestamps, miss.Result.Timestamps) || hit.Result.MediaType != miss.Result.MediaType {
					t.Errorf("the hit's metadata %+v is not the miss's %+v", hit.Result, miss.Result)
				}
			}
			if got := p.budget.held("org:acme:"); got != held {
				t.Errorf("the hit moved the budget from %d to %d credits", held, got)
			}

			fresh, _ := speak("acme", text, true)
			if fresh.Cache != "bypass" || fresh.Row.Cache != "bypass" || fresh.Row.CreditsUsed != len(text) || calls() != 2 {
				t.Errorf("no-cache: cache %q (row %q), %d credits, %d calls; want a charged bypass with a call", fresh.Cache, fresh.Row.Cache, fresh.Row.CreditsUsed, calls())
			}
			p.cache.waitStored(t) // stored afresh

			if other, _ := speak("acme", "Another text", false); other.Cache != "miss" || calls() != 3 {
				t.Errorf("another text: cache %q, %d calls; want a miss", other.Cache, calls())
			}
			p.cache.waitStored(t)
			if other, _ := speak("globex", text, false); other.Cache != "miss" || calls() != 4 {
				t.Errorf("another organization: cache %q, %d calls; want a miss (entries are the organization's)", other.Cache, calls())
			}
			p.cache.waitStored(t) // before the cache's directory goes
		})
	}
}

// TestResponseCacheKeepsNoFailure: a failed rendering is not stored, so
// the same request is rendered again once the provider is back; and
// without a cache store there is nothing to say ("").
func TestResponseCacheKeepsNoFailure(t *testing.T) {
	p := newPipeline(t, setup{cache: true})
	p.providers["testkit"].failWith(&sdk.Error{Kind: sdk.KindUpstream, Message: "boom", UpstreamStatus: 500})
	out, err := p.speak(t.Context(), "acme", req("testkit/test", "alpha", "Try again later"), speech.DeliverClip)
	wantCode(t, err, problem.ProviderError)
	if out.Cache != "miss" {
		t.Errorf("cache %q, want miss", out.Cache)
	}
	p.cache.notStored(t)
	p.providers["testkit"].failWith(nil)
	out, err = p.speak(t.Context(), "acme", req("testkit/test", "alpha", "Try again later"), speech.DeliverClip)
	wantCode(t, err, "")
	if out.Cache != "miss" || len(p.calls("testkit")) != 2 {
		t.Errorf("cache %q after %d calls, want a miss rendered again", out.Cache, len(p.calls("testkit")))
	}
	p.cache.waitStored(t)

	off := newPipeline(t, setup{})
	out, err = off.speak(t.Context(), "acme", req("testkit/test", "alpha", "No cache here"), speech.DeliverClip)
	wantCode(t, err, "")
	if out.Cache != "" || out.Row.Cache != "" {
		t.Errorf("cache %q (row %q) without a cache, want none", out.Cache, out.Row.Cache)
	}
}

// TestResponseCacheKey: an entry is keyed by everything that changes the
// answer's bytes, and by nothing else: the second of each pair of
// requests is a hit exactly when it would sound the same.
func TestResponseCacheKey(t *testing.T) {
	type change func(p *pipeline, r *speech.Request)
	none := func(*pipeline, *speech.Request) {}
	tests := []struct {
		name          string
		first, second change
		ep            speech.Delivery // the second's (the first is a clip)
		hit           bool
	}{
		{"the same request", none, none, speech.DeliverClip, true},
		{"another voice", none, func(_ *pipeline, r *speech.Request) { r.Voice = "beta" }, speech.DeliverClip, false},
		{"another model", none, func(_ *pipeline, r *speech.Request) { r.Model = "testkit/basic" }, speech.DeliverClip, false},
		{"a pronunciation", none, func(_ *pipeline, r *speech.Request) {
			r.Pronunciations = &speech.Pronunciations{Rules: []speech.PronunciationRule{{Word: "bytes", Replacement: "bites"}}}
		}, speech.DeliverClip, false},
		{"a pronunciation of a word not in the text", none, func(_ *pipeline, r *speech.Request) {
			r.Pronunciations = &speech.Pronunciations{Rules: []speech.PronunciationRule{{Word: "absent", Replacement: "here"}}}
		}, speech.DeliverClip, true},
		{"the same options in another order",
			func(_ *pipeline, r *speech.Request) { r.ProviderOptions = []byte(`{"pad_ms": 10, "silent": false}`) },
			func(_ *pipeline, r *speech.Request) { r.ProviderOptions = []byte(`{"silent": false, "pad_ms": 10}`) }, speech.DeliverClip, true},
		{"other options", none, func(_ *pipeline, r *speech.Request) { r.ProviderOptions = []byte(`{"pad_ms": 10}`) }, speech.DeliverClip, false},
		{"another output", none, func(_ *pipeline, r *speech.Request) { r.Output = &audio.OutputParams{Format: "pcm"} }, speech.DeliverClip, false},
		{"a native speed", none, func(_ *pipeline, r *speech.Request) { r.Speed = floatp(1.5) }, speech.DeliverClip, false},
		{"a volume", none, func(_ *pipeline, r *speech.Request) { r.VolumeDbfs = floatp(-20) }, speech.DeliverClip, false},
		{"with timestamps", none, none, speech.DeliverTimestamps, false},
		{"as a stream", none, none, speech.DeliverStream, false},
		{"a saved voice is its provider voice", none, func(p *pipeline, r *speech.Request) {
			r.VoiceID, r.Model, r.Voice = p.saveVoice(t, "acme", store.Voice{Provider: "testkit", Model: "test", VoiceID: "alpha"}), "", ""
		}, speech.DeliverClip, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPipeline(t, setup{cache: true})
			speak := func(c change, ep speech.Delivery) *speech.Spoken {
				t.Helper()
				r := req("testkit/test", "alpha", "Keyed by what changes the bytes")
				c(p, r)
				out, err := p.speak(t.Context(), "acme", r, ep)
				wantCode(t, err, "")
				answer(t, out)
				return out
			}
			speak(tt.first, speech.DeliverClip)
			p.cache.waitStored(t)
			out := speak(tt.second, tt.ep)
			if hit := out.Cache == "hit"; hit != tt.hit {
				t.Errorf("the second was a %s, want a hit: %v", out.Cache, tt.hit)
			}
			if !tt.hit {
				p.cache.waitStored(t)
			}
		})
	}
}

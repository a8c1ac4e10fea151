package dialects

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestDocExamples runs the curl examples of the hosted service's
// documentation (its API reference and platform guides, as quoted in
// docExamples) against a real gateway, with fakes of OpenAI and
// ElevenLabs behind it: one or more per documented route. The commands
// are the documentation's own; what changes is only what cannot be the
// same on another deployment (docExample.subs): the base URL, the key,
// ids that exist only on the hosted service (replaced by ids of records
// this test creates), and the reference's schema placeholders ("string").
// docs/compatibility.md lists every route and what voxgate does with it.
func TestDocExamples(t *testing.T) {
	t.Parallel()
	oai := openai.New(t, fakeupstream.Options{})
	el := elevenlabs.New(t, fakeupstream.Options{Keys: []string{harness.AcmeElevenKey}})
	cfg := `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
providers:
  espeak: {plugin: voxgate-espeak, managed: true}
  openai:
    plugin: voxgate-openai
    base_url: ` + oai.BaseURL() + `
    api_key: ` + openai.Key + `
    managed: true
  elevenlabs:
    plugin: voxgate-elevenlabs
    base_url: ` + el.BaseURL() + `
    api_key: ` + harness.AcmeElevenKey + `
    managed: true
orgs:
  acme:
    providers:
      espeak: {enabled: true}
      openai: {enabled: true, byok: true}
      elevenlabs: {enabled: true}
`
	tg := harness.Start(t, cfg)
	tg.Secrets = append(tg.Secrets, openai.Key, harness.AcmeElevenKey)

	// Records the examples name by ids of the hosted service.
	espeakVoice := tg.Do("POST", "/v1/voices", "acme", map[string]any{"title": "Docs voice", "provider": "espeak", "model": "espeak-ng", "voice_id": "en"}).Voice(t).ID
	doomed := tg.Do("POST", "/v1/voices", "acme", map[string]any{"title": "To change and delete", "provider": "espeak", "model": "espeak-ng", "voice_id": "en-gb"}).Voice(t).ID
	logged := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody("A request to look up.")).Header.Get("X-Request-Id")
	var dict struct{ ID string }
	tg.Do("POST", "/v1/pronunciation-dictionaries", "acme", map[string]any{"name": "Docs"}).JSON(t, &dict)
	var narrator string // the voice the "Saved voices" guide creates

	for _, ex := range docExamples(espeakVoice, doomed, logged, dict.ID, &narrator) {
		t.Run(ex.name, func(t *testing.T) {
			cmd := ex.curl
			subs := append([]string{
				"https://api.speechbase.ai", tg.Base,
				"https://example.com", tg.Base,
				"$SPEECHBASE_API_KEY", tg.Keys["acme"],
			}, ex.subs()...)
			cmd = strings.NewReplacer(subs...).Replace(cmd)
			req, err := parseCurl(cmd)
			if err != nil {
				t.Fatalf("parse the example: %v\n%s", err, cmd)
			}
			if got := req.method + " " + routeOf(req.url, tg.Base); got != ex.route {
				t.Fatalf("the example is %s, filed under %s", got, ex.route)
			}
			resp := req.send(t, tg.Client)
			if resp.Header.Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id")
			}
			ex.check(t, resp)
		})
	}
}

// docExample is one curl command of the documentation.
type docExample struct {
	name string
	// route is "METHOD /path/pattern" of the documented route it tests.
	route string
	// source is the documentation page the command is from.
	source string
	// curl is the command, as the page has it.
	curl string
	// subs returns replacements (old, new, ...) for what cannot be the
	// same on this deployment; called when the example runs, so it can use
	// what earlier examples created.
	subs func() []string
	// check asserts the answer.
	check func(t *testing.T, r *harness.Response)
}

func none() []string { return nil }

// docExamples are the documentation's curl examples, in an order in which
// each can run (a voice is created before it is used, changed and
// deleted).
func docExamples(espeakVoice, doomed, logged, dictID string, narrator *string) []docExample {
	audio := func(mediaType string) func(t *testing.T, r *harness.Response) {
		return func(t *testing.T, r *harness.Response) {
			t.Helper()
			if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), mediaType) || len(r.Body) < 100 {
				t.Fatalf("%d %s, %d bytes: %.200s", r.Status, r.Header.Get("Content-Type"), len(r.Body), r.Body)
			}
		}
	}
	envelope := func(t *testing.T, r *harness.Response) {
		t.Helper()
		var env struct {
			Audio      string
			MediaType  string
			Warnings   []string
			Timestamps []struct{ Text string }
		}
		if r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		r.JSON(t, &env)
		if data, err := base64.StdEncoding.DecodeString(env.Audio); err != nil || len(data) < 100 || env.MediaType == "" || env.Warnings == nil || len(env.Timestamps) == 0 {
			t.Fatalf("envelope %.300s", r.Body)
		}
	}
	status := func(want int) func(t *testing.T, r *harness.Response) {
		return func(t *testing.T, r *harness.Response) {
			t.Helper()
			if r.Status != want {
				t.Fatalf("%d, want %d: %s", r.Status, want, r.Body)
			}
		}
	}
	jsonKeys := func(want int, keys ...string) func(t *testing.T, r *harness.Response) {
		return func(t *testing.T, r *harness.Response) {
			t.Helper()
			if r.Status != want {
				t.Fatalf("%d, want %d: %s", r.Status, want, r.Body)
			}
			var m map[string]any
			r.JSON(t, &m)
			for _, k := range keys {
				if _, ok := m[k]; !ok {
					t.Errorf("no %q in %.300s", k, r.Body)
				}
			}
		}
	}
	const (
		ref         = "https://www.speechbase.ai/docs/api/"
		guides      = "https://www.speechbase.ai/docs/platform/"
		constructed = guides + "concepts/pronunciations (route named, no example: command constructed)"
	)
	var rule, created string // ids the examples create
	return []docExample{
		{
			name: "health", route: "GET /health", source: ref + " (introduction: the public /health probe)",
			curl:  `curl https://api.speechbase.ai/health`,
			subs:  none,
			check: jsonKeys(200, "status"),
		},
		{
			name: "list providers", route: "GET /v1/audio/providers", source: ref + "audio/list-providers",
			curl: `curl -X GET "https://example.com/v1/audio/providers" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY"`,
			subs: none,
			check: func(t *testing.T, r *harness.Response) {
				var out struct {
					Data []struct {
						ID                     string
						Enabled, BYOK, Managed bool
						Models                 []string
					}
				}
				r.JSON(t, &out)
				if r.Status != 200 || len(out.Data) != 3 {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
				for _, p := range out.Data {
					if !p.Enabled || !p.Managed || len(p.Models) == 0 || !strings.HasPrefix(p.Models[0], p.ID+"/") {
						t.Errorf("entry %+v", p)
					}
				}
			},
		},
		{
			name: "create voice (guide)", route: "POST /v1/voices", source: guides + "guides/voices",
			curl: `curl https://api.speechbase.ai/v1/voices \
  -X POST \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY" \
  -H "Content-Type: application/json" \
  -d '{
    "title": "Podcast narrator",
    "provider": "elevenlabs",
    "model": "eleven_v3",
    "voice_id": "JBFqnCBsd6RMkjVDRZzb",
    "tags": ["podcast"],
    "provider_options": { "stability": 0.5 }
  }'`,
			// The fake knows its premade voices only.
			subs: func() []string {
				return []string{"JBFqnCBsd6RMkjVDRZzb", elevenlabs.VoiceRachel}
			},
			check: func(t *testing.T, r *harness.Response) {
				if r.Status != 201 {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
				v := r.Voice(t)
				if v.Title != "Podcast narrator" || v.Provider != "elevenlabs" || v.ProviderOptions["stability"] != 0.5 || len(v.Tags) != 1 {
					t.Errorf("voice %+v", v)
				}
				*narrator = v.ID
			},
		},
		{
			name: "create voice (reference)", route: "POST /v1/voices", source: ref + "voices/create-voice",
			curl: `curl -X POST "https://example.com/v1/voices" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY" \
  -H "Content-Type: application/json" \
  -d '{
  "title": "string",
  "provider": "string",
  "model": "string"
}'`,
			// The schema's placeholders; voxgate needs the provider voice
			// (or a media file to clone) as well.
			subs: func() []string {
				return []string{`"title": "string"`, `"title": "Reference"`, `"provider": "string"`, `"provider": "espeak"`,
					`"model": "string"`, `"model": "espeak-ng", "voice_id": "en"`}
			},
			check: func(t *testing.T, r *harness.Response) {
				if r.Status != 201 || r.Voice(t).Model != "espeak-ng" {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
			},
		},
		{
			name: "list voices", route: "GET /v1/voices", source: ref + "voices/list-voices",
			curl: `curl -X GET "https://example.com/v1/voices" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY"`,
			subs:  none,
			check: jsonKeys(200, "data", "next_cursor", "has_more", "limit"),
		},
		{
			name: "update voice", route: "PUT /v1/voices/{voiceId}", source: ref + "voices/update-voice",
			curl: `curl -X PUT "https://example.com/v1/voices/497f6eca-6276-4993-bfeb-53cbbbba6f08" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY" \
  -H "Content-Type: application/json" \
  -d '{}'`,
			subs: func() []string { return []string{"497f6eca-6276-4993-bfeb-53cbbbba6f08", doomed} },
			check: func(t *testing.T, r *harness.Response) {
				if r.Status != 200 || r.Voice(t).ID != doomed {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
			},
		},
		{
			name: "quickstart speech", route: "POST /v1/audio/speech", source: guides + "quickstart",
			curl: `curl -X POST https://api.speechbase.ai/v1/audio/speech \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY" \
  -H "Content-Type: application/json" \
  -d '{"model": "openai/gpt-4o-mini-tts", "voice": "alloy", "text": "Hello from Speechbase.", "output": {"format": "mp3"}}' \
  --output hello.mp3`,
			subs:  none,
			check: audio("audio/mpeg"),
		},
		{
			name: "speech with a saved voice (guide)", route: "POST /v1/audio/speech", source: guides + "guides/voices",
			curl: `curl https://api.speechbase.ai/v1/audio/speech \
  -X POST \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY" \
  -H "Content-Type: application/json" \
  -d '{
    "voiceId": "550e8400-e29b-41d4-a716-446655440000",
    "text": "Hello from a saved voice."
  }' \
  --output hello.mp3`,
			subs:  func() []string { return []string{"550e8400-e29b-41d4-a716-446655440000", *narrator} },
			check: audio("audio/"),
		},
		{
			name: "speech (reference)", route: "POST /v1/audio/speech", source: ref + "audio/generate-speech",
			curl: `curl -X POST "https://example.com/v1/audio/speech" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY" \
  -H "Content-Type: application/json" \
  -d '{
  "mode": "voice",
  "voiceId": "string",
  "text": "string"
}'`,
			subs: func() []string {
				return []string{`"voiceId": "string"`, `"voiceId": "` + espeakVoice + `"`, `"text": "string"`, `"text": "Hello there."`}
			},
			check: audio("audio/"),
		},
		{
			name: "speech with timestamps (guide)", route: "POST /v1/audio/speech/with-timestamps", source: guides + "guides/word-timestamps",
			curl: `curl -X POST https://api.speechbase.ai/v1/audio/speech/with-timestamps \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY" \
  -H "Content-Type: application/json" \
  -d '{
    "mode": "voice",
    "voiceId": "01940f8a-2dc1-7000-9b6c-fc6dd8a0a4d2",
    "text": "Hello from Speechbase.",
    "output": "mp3"
  }' | tee response.json`,
			subs: func() []string { return []string{"01940f8a-2dc1-7000-9b6c-fc6dd8a0a4d2", espeakVoice} },
			check: func(t *testing.T, r *harness.Response) {
				envelope(t, r)
				var env struct{ MediaType string }
				r.JSON(t, &env)
				if env.MediaType != "audio/mpeg" {
					t.Errorf("mediaType %q", env.MediaType)
				}
			},
		},
		{
			name: "speech with timestamps (reference)", route: "POST /v1/audio/speech/with-timestamps", source: ref + "audio/generate-speech-with-timestamps",
			curl: `curl -X POST "https://example.com/v1/audio/speech/with-timestamps" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY" \
  -H "Content-Type: application/json" \
  -d '{
  "voiceId": "550e8400-e29b-41d4-a716-446655440000",
  "text": "Hello from a saved voice."
}'`,
			subs:  func() []string { return []string{"550e8400-e29b-41d4-a716-446655440000", espeakVoice} },
			check: envelope,
		},
		{
			name: "stream speech", route: "POST /v1/audio/speech/stream", source: ref + "audio/stream-speech",
			curl: `curl -X POST "https://example.com/v1/audio/speech/stream" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY" \
  -H "Content-Type: application/json" \
  -d '{
  "voiceId": "550e8400-e29b-41d4-a716-446655440000",
  "text": "Hello from a saved voice."
}'`,
			subs:  func() []string { return []string{"550e8400-e29b-41d4-a716-446655440000", *narrator} },
			check: audio("audio/"),
		},
		{
			name: "conversation", route: "POST /v1/audio/conversation", source: ref + "audio/generate-conversation",
			curl: `curl -X POST "https://example.com/v1/audio/conversation" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY" \
  -H "Content-Type: application/json" \
  -d '{
  "model": "openai/gpt-4o-mini-tts",
  "turns": [
    {
      "voice": "alloy",
      "text": "How was your weekend?"
    },
    {
      "voice": "shimmer",
      "text": "Good, I finally caught up on sleep."
    }
  ],
  "gapMs": 500,
  "output": "mp3"
}'`,
			subs:  none,
			check: audio("audio/mpeg"),
		},
		{
			name: "conversation split", route: "POST /v1/audio/conversation", source: ref + "audio/generate-conversation (the split answer)",
			curl: `curl -X POST "https://example.com/v1/audio/conversation" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY" \
  -H "Content-Type: application/json" \
  -d '{
  "model": "openai/gpt-4o-mini-tts",
  "turns": [
    {
      "voice": "alloy",
      "text": "How was your weekend?"
    },
    {
      "voice": "shimmer",
      "text": "Good, I finally caught up on sleep."
    }
  ],
  "gapMs": 500,
  "output": "mp3",
  "split": true
}'`,
			subs: none,
			check: func(t *testing.T, r *harness.Response) {
				var out struct {
					AudioSegments []struct {
						Audio, MediaType string
						DurationMs       int64
						TurnIndex        int
					}
					Warnings []string
				}
				r.JSON(t, &out)
				if r.Status != 200 || len(out.AudioSegments) != 2 || out.AudioSegments[1].TurnIndex != 1 || out.AudioSegments[0].DurationMs <= 0 || out.AudioSegments[0].MediaType != "audio/mpeg" {
					t.Fatalf("%d %.300s", r.Status, r.Body)
				}
			},
		},
		{
			name: "conversation with timestamps (inline turns)", route: "POST /v1/audio/conversation/with-timestamps", source: ref + "audio/generate-conversation-with-timestamps",
			curl: `curl -X POST "https://example.com/v1/audio/conversation/with-timestamps" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY" \
  -H "Content-Type: application/json" \
  -d '{
  "turns": [
    {
      "mode": "inline",
      "model": "string",
      "voice": "string",
      "text": "string"
    }
  ]
}'`,
			subs: func() []string {
				return []string{`"model": "string"`, `"model": "espeak/espeak-ng"`, `"voice": "string"`, `"voice": "en"`, `"text": "string"`, `"text": "One turn of talk."`}
			},
			check: func(t *testing.T, r *harness.Response) {
				var env struct {
					Audio      string
					Timestamps []struct{ TurnIndex int }
				}
				r.JSON(t, &env)
				if r.Status != 200 || env.Audio == "" || len(env.Timestamps) != 4 {
					t.Fatalf("%d %.300s", r.Status, r.Body)
				}
			},
		},
		{
			// The example asks for timestamps ("on") from OpenAI, which
			// returns none: the gateway aligns them against eSpeak NG, as
			// the hosted service generated them. The fake's audio is a
			// tone, not speech, so the aligner finds no words in it and
			// the answer says so instead of guessing.
			name: "conversation with timestamps (on)", route: "POST /v1/audio/conversation/with-timestamps", source: ref + "audio/generate-conversation-with-timestamps",
			curl: `curl -X POST "https://example.com/v1/audio/conversation/with-timestamps" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY" \
  -H "Content-Type: application/json" \
  -d '{
  "model": "openai/gpt-4o-mini-tts",
  "turns": [
    {
      "voice": "alloy",
      "text": "How was your weekend?"
    },
    {
      "voice": "shimmer",
      "text": "Good, I finally caught up on sleep."
    }
  ],
  "gapMs": 500,
  "output": "mp3",
  "timestamps": "on"
}'`,
			subs: none,
			check: func(t *testing.T, r *harness.Response) {
				var env struct {
					Audio      string
					Timestamps []struct{ TurnIndex int }
					Warnings   []string
				}
				r.JSON(t, &env)
				if r.Status != 200 || env.Audio == "" {
					t.Fatalf("%d %.300s", r.Status, r.Body)
				}
				if len(env.Timestamps) != 0 || len(env.Warnings) != 2 || !strings.Contains(env.Warnings[0], "does not follow the text") {
					t.Errorf("a tone got %d words, warnings %q", len(env.Timestamps), env.Warnings)
				}
			},
		},
		{
			name: "store a provider key", route: "PUT /v1/api-keys/{providerId}", source: ref + "api-keys/upsert-api-key",
			curl: `curl -X PUT "https://example.com/v1/api-keys/string" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY" \
  -H "Content-Type: application/json" \
  -d '{
  "keyValue": "string"
}'`,
			subs: func() []string {
				return []string{"/v1/api-keys/string", "/v1/api-keys/openai", `"keyValue": "string"`, `"keyValue": "` + openai.Key + `"`}
			},
			check: func(t *testing.T, r *harness.Response) {
				var out struct {
					Data struct{ ProviderID, LastFour, UpdatedAt string }
				}
				r.JSON(t, &out)
				if r.Status != 200 || out.Data.ProviderID != "openai" || out.Data.LastFour != openai.Key[len(openai.Key)-4:] || out.Data.UpdatedAt == "" ||
					strings.Contains(string(r.Body), openai.Key) {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
			},
		},
		{
			name: "list provider keys", route: "GET /v1/api-keys", source: ref + "api-keys/list-api-keys",
			curl: `curl -X GET "https://example.com/v1/api-keys" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY"`,
			subs: none,
			check: func(t *testing.T, r *harness.Response) {
				var out struct {
					Data    []struct{ ProviderID, LastFour, UpdatedAt string }
					HasMore bool `json:"has_more"`
					Limit   int
				}
				r.JSON(t, &out)
				if r.Status != 200 || len(out.Data) != 1 || out.Data[0].ProviderID != "openai" || out.Data[0].LastFour != openai.Key[len(openai.Key)-4:] ||
					out.Data[0].UpdatedAt == "" || out.HasMore || out.Limit != 50 || strings.Contains(string(r.Body), openai.Key) {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
			},
		},
		{
			name: "delete a provider key", route: "DELETE /v1/api-keys/{providerId}", source: ref + "api-keys/delete-api-key",
			curl: `curl -X DELETE "https://example.com/v1/api-keys/string" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY"`,
			subs:  func() []string { return []string{"/v1/api-keys/string", "/v1/api-keys/openai"} },
			check: status(204),
		},
		{
			name: "create a pronunciation rule", route: "POST /v1/pronunciation-dictionaries/{id}/rules", source: ref + "pronunciation-dictionaries/create-pronunciation-rule",
			curl: `curl -X POST "https://example.com/v1/pronunciation-dictionaries/string/rules" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY" \
  -H "Content-Type: application/json" \
  -d '{
  "word": "string",
  "replacement": "string"
}'`,
			subs: func() []string {
				return []string{"/pronunciation-dictionaries/string/", "/pronunciation-dictionaries/" + dictID + "/", `"word": "string"`, `"word": "Speechbase"`,
					`"replacement": "string"`, `"replacement": "wave-form"`}
			},
			check: func(t *testing.T, r *harness.Response) {
				jsonKeys(201, "id", "dictionary_id", "word", "replacement", "case_sensitive", "created_at", "updated_at")(t, r)
				var ru struct{ ID string }
				r.JSON(t, &ru)
				rule = ru.ID
			},
		},
		{
			name: "list pronunciation rules", route: "GET /v1/pronunciation-dictionaries/{id}/rules", source: ref + "pronunciation-dictionaries/list-pronunciation-rules",
			curl: `curl -X GET "https://example.com/v1/pronunciation-dictionaries/string/rules" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY"`,
			subs: func() []string {
				return []string{"/pronunciation-dictionaries/string/", "/pronunciation-dictionaries/" + dictID + "/"}
			},
			check: func(t *testing.T, r *harness.Response) {
				var out struct {
					Data []struct{ Word string }
				}
				r.JSON(t, &out)
				if r.Status != 200 || len(out.Data) != 1 || out.Data[0].Word != "Speechbase" {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
			},
		},
		// The concept page "Pronunciations" names create, read, update and
		// delete for dictionaries and their rules, but the reference has no
		// page (and so no curl example) for these routes; the commands
		// below are written in the reference's curl style, with the
		// reference's placeholders.
		{
			name: "list dictionaries", route: "GET /v1/pronunciation-dictionaries", source: constructed,
			curl: `curl -X GET "https://example.com/v1/pronunciation-dictionaries" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY"`,
			subs: none,
			check: func(t *testing.T, r *harness.Response) {
				jsonKeys(200, "data", "next_cursor", "has_more", "limit")(t, r)
				var out struct {
					Data []map[string]any
				}
				r.JSON(t, &out)
				if len(out.Data) != 2 || !slices.ContainsFunc(out.Data, func(d map[string]any) bool { return d["is_default"] == true }) {
					t.Errorf("no default among %s", r.Body)
				}
			},
		},
		{
			name: "create a dictionary", route: "POST /v1/pronunciation-dictionaries", source: constructed,
			curl: `curl -X POST "https://example.com/v1/pronunciation-dictionaries" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY" \
  -H "Content-Type: application/json" \
  -d '{
  "name": "string",
  "description": "string"
}'`,
			subs: func() []string { return []string{`"name": "string"`, `"name": "Brand names"`} },
			check: func(t *testing.T, r *harness.Response) {
				jsonKeys(201, "id", "org_id", "name", "description", "is_default")(t, r)
				var d struct{ ID string }
				r.JSON(t, &d)
				created = d.ID
			},
		},
		{
			name: "create a dictionary with a taken name", route: "POST /v1/pronunciation-dictionaries", source: constructed,
			curl: `curl -X POST "https://example.com/v1/pronunciation-dictionaries" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY" \
  -H "Content-Type: application/json" \
  -d '{
  "name": "string"
}'`,
			subs:  func() []string { return []string{`"name": "string"`, `"name": "Brand names"`} },
			check: func(t *testing.T, r *harness.Response) { r.Problem(t, 409, "conflict") },
		},
		{
			name: "get the default dictionary", route: "GET /v1/pronunciation-dictionaries/{id}", source: constructed,
			curl: `curl -X GET "https://example.com/v1/pronunciation-dictionaries/default" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY"`,
			subs: none,
			check: func(t *testing.T, r *harness.Response) {
				var d struct {
					IsDefault bool `json:"is_default"`
				}
				r.JSON(t, &d)
				if r.Status != 200 || !d.IsDefault {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
			},
		},
		{
			name: "update a dictionary", route: "PUT /v1/pronunciation-dictionaries/{id}", source: constructed,
			curl: `curl -X PUT "https://example.com/v1/pronunciation-dictionaries/string" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY" \
  -H "Content-Type: application/json" \
  -d '{
  "description": "string"
}'`,
			subs: func() []string {
				return []string{"/pronunciation-dictionaries/string", "/pronunciation-dictionaries/" + created, `"description": "string"`, `"description": "Product names"`}
			},
			check: func(t *testing.T, r *harness.Response) {
				var d struct{ Name, Description string }
				r.JSON(t, &d)
				if r.Status != 200 || d.Name != "Brand names" || d.Description != "Product names" {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
			},
		},
		{
			name: "patch a dictionary", route: "PATCH /v1/pronunciation-dictionaries/{id}", source: constructed,
			curl: `curl -X PATCH "https://example.com/v1/pronunciation-dictionaries/string" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY" \
  -H "Content-Type: application/json" \
  -d '{
  "name": "string"
}'`,
			subs: func() []string {
				return []string{"/pronunciation-dictionaries/string", "/pronunciation-dictionaries/" + created, `"name": "string"`, `"name": "Brands"`}
			},
			check: func(t *testing.T, r *harness.Response) {
				var d struct{ Name, Description string }
				r.JSON(t, &d)
				if r.Status != 200 || d.Name != "Brands" || d.Description != "Product names" {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
			},
		},
		{
			name: "update a rule", route: "PUT /v1/pronunciation-dictionaries/{id}/rules/{ruleId}", source: constructed,
			curl: `curl -X PUT "https://example.com/v1/pronunciation-dictionaries/string/rules/string" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY" \
  -H "Content-Type: application/json" \
  -d '{
  "replacement": "string"
}'`,
			subs: func() []string {
				return []string{"/pronunciation-dictionaries/string/rules/string", "/pronunciation-dictionaries/" + dictID + "/rules/" + rule,
					`"replacement": "string"`, `"replacement": "speech base"`}
			},
			check: func(t *testing.T, r *harness.Response) {
				var ru struct{ Word, Replacement string }
				r.JSON(t, &ru)
				if r.Status != 200 || ru.Word != "Speechbase" || ru.Replacement != "speech base" {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
			},
		},
		{
			name: "patch a rule", route: "PATCH /v1/pronunciation-dictionaries/{id}/rules/{ruleId}", source: constructed,
			curl: `curl -X PATCH "https://example.com/v1/pronunciation-dictionaries/string/rules/string" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY" \
  -H "Content-Type: application/json" \
  -d '{
  "case_sensitive": true
}'`,
			subs: func() []string {
				return []string{"/pronunciation-dictionaries/string/rules/string", "/pronunciation-dictionaries/" + dictID + "/rules/" + rule}
			},
			check: func(t *testing.T, r *harness.Response) {
				var ru struct {
					Replacement   string
					CaseSensitive bool `json:"case_sensitive"`
				}
				r.JSON(t, &ru)
				if r.Status != 200 || !ru.CaseSensitive || ru.Replacement != "speech base" {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
			},
		},
		{
			name: "delete a rule", route: "DELETE /v1/pronunciation-dictionaries/{id}/rules/{ruleId}", source: constructed,
			curl: `curl -X DELETE "https://example.com/v1/pronunciation-dictionaries/string/rules/string" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY"`,
			subs: func() []string {
				return []string{"/pronunciation-dictionaries/string/rules/string", "/pronunciation-dictionaries/" + dictID + "/rules/" + rule}
			},
			check: status(204),
		},
		{
			name: "delete a dictionary", route: "DELETE /v1/pronunciation-dictionaries/{id}", source: constructed,
			curl: `curl -X DELETE "https://example.com/v1/pronunciation-dictionaries/string" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY"`,
			subs: func() []string {
				return []string{"/pronunciation-dictionaries/string", "/pronunciation-dictionaries/" + created}
			},
			check: status(204),
		},
		{
			name: "delete the default dictionary", route: "DELETE /v1/pronunciation-dictionaries/{id}", source: constructed,
			curl: `curl -X DELETE "https://example.com/v1/pronunciation-dictionaries/default" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY"`,
			subs:  none,
			check: func(t *testing.T, r *harness.Response) { r.Problem(t, 409, "conflict") },
		},
		{
			name: "list logs", route: "GET /v1/logs", source: ref + "logs/list-logs",
			curl: `curl -X GET "https://example.com/v1/logs" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY"`,
			subs:  none,
			check: jsonKeys(200, "data", "next_cursor", "has_more", "limit"),
		},
		{
			name: "get a log row", route: "GET /v1/logs/{requestId}", source: ref + "logs/get-log",
			curl: `curl -X GET "https://example.com/v1/logs/497f6eca-6276-4993-bfeb-53cbbbba6f08" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY"`,
			subs: func() []string { return []string{"497f6eca-6276-4993-bfeb-53cbbbba6f08", logged} },
			check: func(t *testing.T, r *harness.Response) {
				var out struct{ Data map[string]any }
				r.JSON(t, &out)
				if r.Status != 200 || out.Data["request_id"] != logged || out.Data["credits_used"] == nil || out.Data["moderation_confidence"] == nil {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
			},
		},
		{
			name: "delete voice", route: "DELETE /v1/voices/{voiceId}", source: ref + "voices/delete-voice",
			curl: `curl -X DELETE "https://example.com/v1/voices/497f6eca-6276-4993-bfeb-53cbbbba6f08" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY"`,
			subs:  func() []string { return []string{"497f6eca-6276-4993-bfeb-53cbbbba6f08", doomed} },
			check: status(204),
		},
		{
			name: "delete voice again", route: "DELETE /v1/voices/{voiceId}", source: ref + "voices/delete-voice (\"Returns 404 if the voice does not exist\")",
			curl: `curl -X DELETE "https://example.com/v1/voices/497f6eca-6276-4993-bfeb-53cbbbba6f08" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY"`,
			subs:  func() []string { return []string{"497f6eca-6276-4993-bfeb-53cbbbba6f08", doomed} },
			check: func(t *testing.T, r *harness.Response) { r.Problem(t, 404, "voice_not_found") },
		},
		{
			// Not served (docs/compatibility.md): a clear 404 problem.
			name: "speech feedback", route: "POST /v1/feedback", source: ref + "feedback/submit-speech-feedback",
			curl: `curl -X POST "https://example.com/v1/feedback" \
  -H "Authorization: Bearer $SPEECHBASE_API_KEY" \
  -H "Content-Type: application/json" \
  -d '{
  "requestId": "string",
  "score": 0
}'`,
			subs:  none,
			check: func(t *testing.T, r *harness.Response) { r.Problem(t, 404, "not_found") },
		},
	}
}

// routeOf returns url's path with ids replaced by the reference's path
// parameter names, to file an example under its route.
func routeOf(url, base string) string {
	path := strings.TrimPrefix(url, base)
	path, _, _ = strings.Cut(path, "?")
	parts := strings.Split(path, "/")
	names := map[string]string{"voices": "{voiceId}", "logs": "{requestId}", "api-keys": "{providerId}", "pronunciation-dictionaries": "{id}", "rules": "{ruleId}"}
	for i := 1; i+1 < len(parts); i++ {
		if name, ok := names[parts[i]]; ok && parts[i+1] != "" {
			parts[i+1] = name
			i++
		}
	}
	return strings.Join(parts, "/")
}

// curlRequest is what a curl command line asks for.
type curlRequest struct {
	method, url string
	header      http.Header
	body        *string
}

// parseCurl reads the curl command lines of the documentation: -X, -H,
// -d, the URL, and options that do not change the request (--output, -s);
// a pipe ends the command. Anything else is an error, so an example the
// parser does not understand fails instead of being sent half-read.
func parseCurl(cmd string) (*curlRequest, error) {
	words, err := shellWords(cmd)
	if err != nil {
		return nil, err
	}
	if len(words) == 0 || words[0] != "curl" {
		return nil, fmt.Errorf("not a curl command")
	}
	req := &curlRequest{header: http.Header{}}
	for i := 1; i < len(words); i++ {
		w := words[i]
		next := func() (string, error) {
			if i+1 >= len(words) {
				return "", fmt.Errorf("%s needs a value", w)
			}
			i++
			return words[i], nil
		}
		switch {
		case w == "|":
			i = len(words)
		case w == "-X" || w == "--request":
			if req.method, err = next(); err != nil {
				return nil, err
			}
		case w == "-H" || w == "--header":
			h, err := next()
			if err != nil {
				return nil, err
			}
			k, v, ok := strings.Cut(h, ":")
			if !ok {
				return nil, fmt.Errorf("header %q", h)
			}
			req.header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		case w == "-d" || w == "--data" || w == "--data-raw":
			d, err := next()
			if err != nil {
				return nil, err
			}
			req.body = &d
		case w == "-o" || w == "--output":
			if _, err := next(); err != nil {
				return nil, err
			}
		case w == "-s" || w == "-sS" || w == "-N" || w == "--silent":
		case strings.HasPrefix(w, "http://") || strings.HasPrefix(w, "https://"):
			req.url = w
		default:
			return nil, fmt.Errorf("unknown curl argument %q", w)
		}
	}
	if req.url == "" {
		return nil, fmt.Errorf("no URL")
	}
	if req.method == "" {
		req.method = http.MethodGet
		if req.body != nil {
			req.method = http.MethodPost
		}
	}
	return req, nil
}

// shellWords splits a command line as a POSIX shell would for the forms
// the examples use: single and double quotes, backslash-newline
// continuations, and a pipe.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i++ // a continuation
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated single quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte(`"\$`+"`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated double quote")
			}
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '|' && !inWord:
			words = append(words, "|")
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// send sends the request over loopback.
func (c *curlRequest) send(t *testing.T, hc *http.Client) *harness.Response {
	t.Helper()
	var body io.Reader
	if c.body != nil {
		body = strings.NewReader(*c.body)
		if !json.Valid([]byte(*c.body)) {
			t.Fatalf("the example's body is not JSON: %s", *c.body)
		}
	}
	req, err := http.NewRequest(c.method, c.url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = c.header
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &harness.Response{Status: resp.StatusCode, Header: resp.Header, Body: data}
}

// TestParseCurl pins the parser on the forms the examples use.
func TestParseCurl(t *testing.T) {
	t.Parallel()
	req, err := parseCurl(`curl -X PUT "https://x.test/v1/a" \
  -H "Authorization: Bearer $K" \
  -d '{"a": "it''s", "b": "q\"x"}' --output o.mp3 | tee r.json`)
	if err != nil {
		t.Fatal(err)
	}
	if req.method != "PUT" || req.url != "https://x.test/v1/a" || req.header.Get("Authorization") != "Bearer $K" || *req.body != `{"a": "its", "b": "q\"x"}` {
		t.Errorf("%+v %q", req, *req.body)
	}
	if req, _ := parseCurl(`curl https://x.test/health`); req.method != "GET" {
		t.Errorf("default method %q", req.method)
	}
	if req, _ := parseCurl(`curl https://x.test/v1 -d '{}'`); req.method != "POST" {
		t.Errorf("method with -d %q", req.method)
	}
	for _, bad := range []string{`wget x`, `curl`, `curl -Z https://x.test`, `curl "https://x.test`} {
		if _, err := parseCurl(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

package dialects

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestElevenLabsLongTextStitching: a text longer than the model takes is
// cut into pieces, and on an ElevenLabs model that has request stitching
// each piece carries its neighbours as ElevenLabs defines them: the
// request ids ElevenLabs gave the pieces before it (previous_request_ids;
// the pieces render in order for that), and the text after it
// (next_text). Zero retention keeps no history to stitch to, so the text
// before is sent instead of ids; eleven_v3 has no stitching and gets
// neither; a stream's pieces get the texts only.
func TestElevenLabsLongTextStitching(t *testing.T) {
	t.Parallel()
	const key = "xi-managed-key-000000000000"
	// Every clip is half a second long whatever its text: the pieces are
	// thousands of characters.
	el := elevenlabs.New(t, fakeupstream.Options{Keys: []string{key}, FixedSeconds: 0.5})
	tg := harness.Start(t, `
server:
  listen: 127.0.0.1:0
  max_body_bytes: 262144
limits:
  max_text_chars: 40000
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
providers:
  elevenlabs:
    plugin: voxgate-elevenlabs
    base_url: `+el.BaseURL()+`
    api_key: `+key+`
    managed: true
orgs:
  acme:
    providers:
      elevenlabs: {enabled: true}
`)
	tg.Secrets = append(tg.Secrets, key)
	voice := el.VoiceIDs()[0]
	// About 25,000 characters of distinct sentences: three pieces of
	// Multilingual v2 (10,000 characters at most), five of v3 (5,000).
	var b strings.Builder
	for i := 0; b.Len() < 25000; i++ {
		fmt.Fprintf(&b, "Sentence number %d of a long chapter goes on for a while. ", i)
	}
	text := strings.TrimSpace(b.String())

	type sent struct {
		Text               string   `json:"text"`
		PreviousText       *string  `json:"previous_text"`
		NextText           *string  `json:"next_text"`
		PreviousRequestIDs []string `json:"previous_request_ids"`
		NextRequestIDs     []string `json:"next_request_ids"`
	}
	// speak sends the text and returns the pieces ElevenLabs received,
	// in the text's order, and the request ids it gave them (in the
	// order it answered).
	speak := func(t *testing.T, path string, body map[string]any) ([]sent, []string) {
		t.Helper()
		before, beforeIDs := len(el.Requests()), len(el.RequestIDs())
		r := tg.Do("POST", path, "acme", body)
		if r.Status != 200 {
			t.Fatalf("%d %.300s", r.Status, r.Body)
		}
		var out []sent
		var ids []string
		for _, req := range el.Requests()[before:] {
			if !strings.HasPrefix(req.Path, "/v1/text-to-speech/") {
				continue
			}
			var s sent
			if err := json.Unmarshal(req.Body, &s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		ids = el.RequestIDs()[beforeIDs:]
		if len(out) < 3 {
			t.Fatalf("%d pieces reached ElevenLabs, want at least 3", len(out))
		}
		// A stream's later pieces render concurrently: put them in order.
		slices.SortStableFunc(out, func(a, b sent) int { return strings.Index(text, a.Text) - strings.Index(text, b.Text) })
		var parts []string
		for _, p := range out {
			parts = append(parts, p.Text)
		}
		if joined := strings.Join(parts, " "); joined != text {
			t.Fatalf("the pieces do not make up the text (%d characters of %d)", len(joined), len(text))
		}
		return out, ids
	}
	str := func(p *string) string {
		if p == nil {
			return "<none>"
		}
		return *p
	}

	t.Run("multilingual v2: request ids before, text after", func(t *testing.T) {
		pieces, ids := speak(t, "/v1/audio/speech", map[string]any{"model": "elevenlabs/eleven_multilingual_v2", "voice": voice, "text": text})
		for k, p := range pieces {
			wantIDs := ids[max(0, k-3):k]
			if len(wantIDs) == 0 {
				wantIDs = nil
			}
			if !slices.Equal(p.PreviousRequestIDs, wantIDs) || p.PreviousText != nil || p.NextRequestIDs != nil {
				t.Errorf("piece %d: previous_request_ids %v (want %v), previous_text %q, next_request_ids %v", k+1, p.PreviousRequestIDs, wantIDs, str(p.PreviousText), p.NextRequestIDs)
			}
			wantNext := "<none>"
			if k < len(pieces)-1 {
				wantNext = pieces[k+1].Text
			}
			if str(p.NextText) != wantNext {
				t.Errorf("piece %d: next_text %.40q, want %.40q", k+1, str(p.NextText), wantNext)
			}
		}
	})
	t.Run("zero retention: texts, no ids", func(t *testing.T) {
		pieces, _ := speak(t, "/v1/audio/speech", map[string]any{"model": "elevenlabs/eleven_multilingual_v2", "voice": voice, "text": text,
			"providerOptions": map[string]any{"enable_logging": false}})
		for k, p := range pieces {
			wantPrev := "<none>"
			if k > 0 {
				wantPrev = pieces[k-1].Text
			}
			if p.PreviousRequestIDs != nil || str(p.PreviousText) != wantPrev {
				t.Errorf("piece %d: previous_request_ids %v, previous_text %.40q (want %.40q)", k+1, p.PreviousRequestIDs, str(p.PreviousText), wantPrev)
			}
		}
	})
	t.Run("eleven_v3 has no stitching", func(t *testing.T) {
		pieces, _ := speak(t, "/v1/audio/speech", map[string]any{"model": "elevenlabs/eleven_v3", "voice": voice, "text": text})
		for k, p := range pieces {
			if p.PreviousRequestIDs != nil || p.PreviousText != nil || p.NextText != nil || p.NextRequestIDs != nil {
				t.Errorf("piece %d carries stitching to eleven_v3: %+v", k+1, p)
			}
		}
	})
	t.Run("a stream's pieces: texts either side", func(t *testing.T) {
		pieces, _ := speak(t, "/v1/audio/speech/stream", map[string]any{"model": "elevenlabs/eleven_multilingual_v2", "voice": voice, "text": text})
		for k, p := range pieces {
			if p.PreviousRequestIDs != nil {
				t.Errorf("piece %d: previous_request_ids %v on a stream", k+1, p.PreviousRequestIDs)
			}
		}
		if str(pieces[0].NextText) == "<none>" || str(pieces[len(pieces)-1].PreviousText) == "<none>" {
			t.Errorf("stream pieces without their neighbours' texts: first %+v", pieces[0])
		}
	})
}

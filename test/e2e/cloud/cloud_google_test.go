package cloud

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/pricing"
	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/google"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestCloudProviderGoogle runs the provider suite over the Gemini TTS
// plugin: clips and streams (streamGenerateContent), the static voice
// list; the models give no word timestamps.
func TestCloudProviderGoogle(t *testing.T) {
	t.Parallel()
	f := google.New(t, fakeupstream.Options{})
	runCloudSuite(t, cloudCase{ID: "google", Fake: f, Key: google.Key, Model: "gemini-2.5-flash-preview-tts", Voice: "Kore", Streams: true,
		Derived: []string{"wav_24000"}}) // Gemini sends PCM; the plugin puts it in a header
}

// TestCloudGoogleUsageWins: Gemini answers what a call used
// (usageMetadata: the prompt's text tokens, the audio's tokens), and that
// is what the log row bills, a clip's and a stream's alike, where the
// gateway's own count (four characters a token; the audio guessed from
// the text at 15 characters a second) differs; the row keeps the quote as its estimate.
func TestCloudGoogleUsageWins(t *testing.T) {
	t.Parallel()
	f := google.New(t, fakeupstream.Options{})
	tg := startCloudCase(t, cloudCase{ID: "google", Fake: f, Key: google.Key})
	const text = "Hello from the cloud." // 21 characters: 6 tokens counted, 5 by the fake
	body := map[string]any{"model": "google/gemini-3.1-flash-tts-preview", "voice": "Kore", "text": text}
	// The fake's usage: a token per four bytes of text, 32 a second of
	// audio; priced at $1 and $20 a million (1,000 and 20,000 nanos).
	textTokens, audioTokens := int64(max(len(text)/4, 1)), int64(math.Ceil(fakeupstream.Speak(text, 1).Seconds*google.AudioTokensPerSecond))
	want := pricing.Format(textTokens*1_000 + audioTokens*20_000)

	var q harness.Quote
	tg.Do("POST", "/v1/audio/speech/quote", "acme", body).JSON(t, &q)
	if q.Data.Cost == "" || q.Data.Cost == json.Number(want) {
		t.Fatalf("quote %s: want one that differs from the billed %s, to tell them apart", q.Data.Cost, want)
	}
	for _, path := range []string{"/v1/audio/speech", "/v1/audio/speech/stream"} {
		if r := tg.Do("POST", path, "acme", body); r.Status != 200 {
			t.Fatalf("%s: %d %s", path, r.Status, r.Body)
		}
		// A stream's row is recorded once it ended, as its last bytes go.
		var row harness.LogRow
		for range 100 {
			if row = lastLogRow(t, tg, "acme"); row.Path == path {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if row.Path != path || string(row.Cost) != want || row.CostEstimate != q.Data.Cost {
			t.Errorf("%s: row %s cost %s (estimate %s), want %s billed as Google said (estimate the quote's %s)", path, row.Path, row.Cost, row.CostEstimate, want, q.Data.Cost)
		}
	}
}

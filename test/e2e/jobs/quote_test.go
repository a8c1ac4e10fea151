package jobs

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// jobQuote is the answer of POST /v1/audio/jobs/quote.
type jobQuote struct {
	Data struct {
		Cost     json.Number `json:"cost"`
		Currency string      `json:"currency"`
		Chunks   int         `json:"chunks"`
		Calls    []struct {
			Provider string           `json:"provider"`
			Model    string           `json:"model"`
			Units    map[string]int64 `json:"units"`
			Cost     json.Number      `json:"cost"`
			Count    int              `json:"count"`
		} `json:"calls"`
	} `json:"data"`
}

func rat(t *testing.T, s string) *big.Rat {
	t.Helper()
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		t.Fatalf("%q is not a decimal", s)
	}
	return r
}

// TestQuoteEqualsBilled quotes a job (POST /v1/audio/jobs/quote), then
// makes it: the quote has the job's chunks, one group of calls per
// provider and model, and its cost is what the job's chunks are billed
// in their log rows, on eSpeak (priced per character in gateway.yaml)
// and on a cloud provider's fake (OpenAI's tts-1, priced per character
// by its list price). The quote makes no job and calls no provider.
func TestQuoteEqualsBilled(t *testing.T) {
	t.Parallel()
	fake := openai.New(t, fakeupstream.Options{FixedSeconds: 1})
	config := strings.Replace(jobsConfig, "providers:\n", `pricing:
  prices:
    "espeak/*": [{unit: characters, amount: 15, per: 1000000}]
providers:
  openai: {plugin: voxgate-openai, base_url: "`+fake.BaseURL()+`", api_key: "`+openai.Key+`", managed: true, max_attempts: 1}
`, 1)
	config = strings.Replace(config, "providers: {espeak: {enabled: true}}", "providers: {espeak: {enabled: true}, openai: {enabled: true}}", 1)
	tg := harness.Start(t, config)
	text, _ := book(12_000, 2)
	for _, tc := range []struct{ provider, model, voice string }{
		{"espeak", "espeak/espeak-ng", "en"},
		{"openai", "openai/tts-1", "alloy"},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			body := map[string]any{"text": text, "textFormat": "markdown", "model": tc.model, "voice": tc.voice, "output": "wav"}
			renders := fake.Calls()
			var q jobQuote
			qr := tg.Do("POST", "/v1/audio/jobs/quote", "acme", body)
			qr.JSON(t, &q)
			if qr.Status != 200 || q.Data.Currency != "USD" || len(q.Data.Calls) != 1 {
				t.Fatalf("quote: %d %s", qr.Status, qr.Body)
			}
			call := q.Data.Calls[0]
			if call.Provider != tc.provider || call.Model != strings.TrimPrefix(tc.model, tc.provider+"/") || call.Count != q.Data.Chunks ||
				call.Units["characters"] == 0 || call.Cost != q.Data.Cost || rat(t, string(q.Data.Cost)).Sign() <= 0 {
				t.Fatalf("quote: %s", qr.Body)
			}
			if fake.Calls() != renders {
				t.Errorf("the quote called the provider")
			}

			j := decodeJob(t, tg.Do("POST", "/v1/audio/jobs", "acme", body), 202)
			if j.ChunksTotal != q.Data.Chunks {
				t.Errorf("the job has %d chunks, the quote %d", j.ChunksTotal, q.Data.Chunks)
			}
			j = waitJob(t, func() job { return decodeJob(t, tg.Do("GET", "/v1/audio/jobs/"+j.ID, "acme", nil), 200) }, finished)
			if j.State != "succeeded" {
				t.Fatalf("finished %+v", j)
			}
			billed, rows := new(big.Rat), 0
			for _, row := range tg.LogsWhere("acme", "") {
				if row.Path != "/v1/audio/jobs/"+j.ID {
					continue
				}
				rows++
				billed.Add(billed, rat(t, string(row.Cost)))
				if row.Currency != "USD" {
					t.Errorf("row in %q", row.Currency)
				}
			}
			if rows != j.ChunksTotal {
				t.Fatalf("%d log rows for %d chunks", rows, j.ChunksTotal)
			}
			if billed.Cmp(rat(t, string(q.Data.Cost))) != 0 {
				t.Errorf("billed %s, quoted %s", billed.FloatString(9), q.Data.Cost)
			}
		})
	}
	// Nothing was made by the quotes: the organization has the two jobs
	// made after them.
	var list struct{ Data []job }
	tg.Do("GET", "/v1/audio/jobs", "acme", nil).JSON(t, &list)
	if len(list.Data) != 2 {
		t.Errorf("%d jobs after two quotes and two jobs", len(list.Data))
	}
	// A bad body is refused as POST /v1/audio/jobs refuses it.
	r := tg.Do("POST", "/v1/audio/jobs/quote", "acme", map[string]any{"text": " ", "model": "espeak/espeak-ng", "voice": "en"})
	harness.AssertPaths(t, r.Problem(t, 400, "validation_failed"), "text")
	tg.Do("POST", "/v1/audio/jobs/quote", "acme", map[string]any{"text": "Hi.", "model": "nope/x", "voice": "en"}).Problem(t, 422, "unknown_provider")
}

package speech

import (
	"testing"

	"github.com/voxgate/voxgate/gateway/pricing"
	"github.com/voxgate/voxgate/gateway/providers/catalog"
	"github.com/voxgate/voxgate/sdk"
)

// charsAndSeconds prices a model by characters in and audio seconds out.
var charsAndSeconds = []pricing.Price{
	{Unit: pricing.Characters, Amount: 15, Per: 1_000_000, Currency: "USD", Source: "test"},
	{Unit: pricing.AudioSeconds, Amount: 0.015, Per: 60, Currency: "USD", Source: "test"},
}

// o200kTokens prices a model as gpt-4o-mini-tts is priced: o200k text
// tokens in, audio tokens out.
var o200kTokens = []pricing.Price{
	{Unit: pricing.TextTokens, Amount: 0.6, Per: 1_000_000, Currency: "USD", Source: "test", Tokenizer: pricing.O200K},
	{Unit: pricing.AudioTokens, Amount: 12, Per: 1_000_000, Currency: "USD", Source: "test", TokensPerSecond: 1250.0 / 60},
}

// pricedJob is a prepared clip job of text on a model priced by
// characters in and audio seconds out.
func pricedJob(text string, pieces ...string) *Job {
	return pricedJobAt(charsAndSeconds, text, pieces...)
}

// pricedJobAt is a prepared clip job of text on a model priced at prices.
func pricedJobAt(prices []pricing.Price, text string, pieces ...string) *Job {
	p := &catalog.Provider{ID: "p", Policy: catalog.Policy{Currency: "USD", Prices: map[string][]pricing.Price{sdk.AnyModel: prices}}}
	return &Job{Provider: p, Model: &sdk.Model{ID: "m"}, Text: text, tagged: text, pieces: pieces}
}

// BenchmarkPricingPerRequest is what pricing costs one clip request, as
// Speak prices it: the log row's estimate (which is also the budget
// reservation) and the cost settled on the answer. Each round is a new
// job, as each request is.
func BenchmarkPricingPerRequest(b *testing.B) {
	const text = "Thanks for calling. Your order shipped this morning and should arrive on Thursday. " +
		"If you need to change the delivery address, say 'address'; to speak with someone, say 'agent'. " +
		"You can also track the parcel on our website at any time with the number in your confirmation email."
	for _, bc := range []struct {
		name   string
		prices []pricing.Price
	}{{"characters and seconds", charsAndSeconds}, {"o200k and audio tokens", o200kTokens}} {
		b.Run(bc.name, func(b *testing.B) {
			s := &Service{counter: pricing.NewCounter()}
			tmpl := pricedJobAt(bc.prices, text, text)
			res := &Result{providerMS: 18_700, billed: []sdk.BilledUsage{{Unit: sdk.UnitCharacters, Quantity: 281}}}
			b.ReportAllocs()
			for b.Loop() {
				j := *tmpl
				row := s.logRow(&j)
				row.Cost = s.finalCost(&j, res)
				if row.Cost == 0 || row.CostEstimate == 0 {
					b.Fatal("not priced")
				}
			}
		})
	}
}

// TestPriceOnce: a job is counted once for its row, reservation and
// settlement, the sum of its pieces' calls as the quote lists them, and
// counted again once its text changes (a realtime context's segments are
// copies of one job).
func TestPriceOnce(t *testing.T) {
	s := &Service{counter: pricing.NewCounter()}
	j := pricedJob("Hello there. General Kenobi.", "Hello there. ", "General Kenobi.")
	var quoted int64
	for _, c := range s.priceCalls(j) {
		quoted += c.Cost
	}
	if got := s.estimate(j); got != quoted || got == 0 {
		t.Errorf("estimate %d, the quote's calls sum to %d", got, quoted)
	}
	if got := s.price(j).units.Characters; got != 28 {
		t.Errorf("units %d characters, want the pieces' 28", got)
	}
	seg := *j
	seg.setText("Hi.")
	seg.pieces = nil
	if got, want := s.estimate(&seg), pricing.Cost(seg.cost.prices, s.counter.Estimate(seg.cost.prices, "Hi.")); got != want {
		t.Errorf("a segment's estimate %d, want its own text's %d", got, want)
	}
	if s.estimate(j) != quoted {
		t.Error("pricing the segment changed the job's")
	}
}

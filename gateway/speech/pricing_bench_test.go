package speech_test

import (
	"testing"

	"github.com/voxgate/voxgate/gateway/pricing"
	"github.com/voxgate/voxgate/gateway/speech"
)

// The cost of pricing on the request path. A typical clip body: one
// paragraph, one voice, a model priced by its text and its audio (as
// gpt-4o-mini-tts and Gemini are), so that every step of pricing runs:
// the count before the call (the quote, the reservation, the row's
// estimate) and the settlement on the answer's audio.

// clipText is a typical clip's text: 280 characters.
const clipText = "Thanks for calling. Your order shipped this morning and should arrive on Thursday. " +
	"If you need to change the delivery address, say 'address'; to speak with someone, say 'agent'. " +
	"You can also track the parcel on our website at any time with the number in your confirmation email."

// benchPrices prices the test kit's models by characters in and audio
// seconds out.
var benchPrices = []pricing.Price{
	{Unit: pricing.Characters, Amount: 15, Per: 1_000_000, Currency: "USD", Source: "test"},
	{Unit: pricing.AudioSeconds, Amount: 0.015, Per: 60, Currency: "USD", Source: "test"},
}

// BenchmarkQuote prices a typical clip body without running it
// (POST /v1/audio/speech/quote less the HTTP).
func BenchmarkQuote(b *testing.B) {
	p := newPipeline(b, setup{prices: benchPrices})
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		q, err := p.svc.Quote(ctx, "acme", req("testkit/test", "alpha", clipText), speech.DeliverClip)
		if err != nil || q.Cost == 0 {
			b.Fatalf("quote %+v: %v", q, err)
		}
	}
}

// BenchmarkSpeakPriced runs a typical clip request through Speak with
// its model priced, as the edge does (reserve, render, settle): the
// pricing's share is the difference to BenchmarkSpeakUnpriced.
func BenchmarkSpeakPriced(b *testing.B) { benchSpeak(b, benchPrices) }

// BenchmarkSpeakUnpriced is BenchmarkSpeakPriced with no price: pricing
// does nothing but look the prices up.
func BenchmarkSpeakUnpriced(b *testing.B) { benchSpeak(b, nil) }

func benchSpeak(b *testing.B, prices []pricing.Price) {
	p := newPipeline(b, setup{prices: prices})
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		out, err := p.speak(ctx, "acme", req("testkit/test", "alpha", clipText), speech.DeliverClip)
		if err != nil || (prices != nil && out.Row.Cost == 0) {
			b.Fatalf("speak: row %+v: %v", out.Row, err)
		}
	}
}

package pricing

import "testing"

// clipText is a typical clip's text (280 characters).
const clipText = "Thanks for calling. Your order shipped this morning and should arrive on Thursday. " +
	"If you need to change the delivery address, say 'address'; to speak with someone, say 'agent'. " +
	"You can also track the parcel on our website at any time with the number in your confirmation email."

// BenchmarkQuote is one call of a typical clip body priced the way each
// kind of model is: counted before the call (the quote, the reservation)
// and settled on the answer's audio and the provider's own figure.
func BenchmarkQuote(b *testing.B) {
	for _, bc := range []struct {
		name   string
		prices []Price
	}{
		{"characters", []Price{{Unit: Characters, Amount: 30, Per: 1e6, Currency: "USD"}}},
		{"half-credit characters", []Price{{Unit: Characters, Amount: 0.1, Per: 1e3, Currency: "USD", PerCharacter: 0.5}}},
		{"utf8 bytes", []Price{{Unit: UTF8Bytes, Amount: 15, Per: 1e6, Currency: "USD"}}},
		{"o200k and audio tokens", []Price{
			{Unit: TextTokens, Amount: 0.6, Per: 1e6, Currency: "USD", Tokenizer: O200K},
			{Unit: AudioTokens, Amount: 12, Per: 1e6, Currency: "USD", TokensPerSecond: 1250.0 / 60}}},
		{"estimated and audio tokens", []Price{
			{Unit: TextTokens, Amount: 1, Per: 1e6, Currency: "USD"},
			{Unit: AudioTokens, Amount: 20, Per: 1e6, Currency: "USD", TokensPerSecond: 25}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := NewCounter()
			billed := []Billed{{Unit: Characters, Quantity: 281}}
			b.ReportAllocs()
			for b.Loop() {
				u := c.Estimate(bc.prices, clipText)
				if Cost(bc.prices, u) == 0 || Cost(bc.prices, Settle(bc.prices, u, 18_700, billed)) == 0 {
					b.Fatal("not priced")
				}
			}
		})
	}
}

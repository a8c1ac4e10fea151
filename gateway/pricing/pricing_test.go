package pricing

import "testing"

func TestCost(t *testing.T) {
	usd := func(u Unit, amount float64, per int64) Price {
		return Price{Unit: u, Amount: amount, Per: per, Currency: "USD", Source: "test", TokensPerSecond: 1250.0 / 60}
	}
	for _, tc := range []struct {
		name   string
		prices []Price
		u      Usage
		want   int64
	}{
		{"characters at $15 per million", []Price{usd(Characters, 15, 1_000_000)}, Usage{Characters: 11}, 165_000},
		{"bytes at $15 per million", []Price{usd(UTF8Bytes, 15, 1_000_000)}, Usage{UTF8Bytes: 3}, 45_000},
		{"text and audio tokens", []Price{usd(TextTokens, 0.6, 1_000_000), usd(AudioTokens, 12, 1_000_000)}, Usage{TextTokens: 10, AudioTokens: 100}, 6_000 + 1_200_000},
		{"audio seconds round up", []Price{usd(AudioSeconds, 0.015, 60)}, Usage{AudioMS: 1001}, 500_000},
		{"a request", []Price{usd(Requests, 0.01, 0)}, Usage{Requests: 1}, 10_000_000},
		{"fractional nanos round up", []Price{usd(TextTokens, 0.6, 1_000_000)}, Usage{TextTokens: 1}, 600},
		{"unpriced", nil, Usage{Characters: 100}, 0},
		{"a third of a nano rounds up", []Price{usd(Characters, 1, 3_000_000_000)}, Usage{Characters: 1}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Cost(tc.prices, tc.u); got != tc.want {
				t.Errorf("Cost = %d nanos, want %d", got, tc.want)
			}
		})
	}
}

func TestEstimate(t *testing.T) {
	c := NewCounter()
	text := "Héllo, wörld" // 12 code points, 14 bytes
	for _, tc := range []struct {
		name  string
		price Price
		want  Usage
	}{
		{"characters count code points and spaces", Price{Unit: Characters}, Usage{Characters: 12}},
		{"half-credit characters", Price{Unit: Characters, PerCharacter: 0.5}, Usage{Characters: 6}},
		{"bytes count UTF-8", Price{Unit: UTF8Bytes}, Usage{UTF8Bytes: 14}},
		{"o200k tokens", Price{Unit: TextTokens, Tokenizer: O200K}, Usage{TextTokens: c.tokens(O200K, text, nil)}},
		{"estimated tokens", Price{Unit: TextTokens}, Usage{TextTokens: 3}},
		{"audio seconds from the text", Price{Unit: AudioSeconds}, Usage{AudioMS: 800}},
		{"audio tokens from the text", Price{Unit: AudioTokens, TokensPerSecond: 25}, Usage{AudioMS: 800, AudioTokens: 20}},
		{"requests", Price{Unit: Requests}, Usage{Requests: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.Estimate([]Price{tc.price}, text); got != tc.want {
				t.Errorf("Estimate = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestO200K pins the tokenizer to counts OpenAI's tiktoken gives.
func TestO200K(t *testing.T) {
	c := NewCounter()
	for text, want := range map[string]int64{"hello world": 2, "": 0, "The quick brown fox jumps over the lazy dog.": 10} {
		if got := c.tokens(O200K, text, nil); got != want {
			t.Errorf("tokens(%q) = %d, want %d", text, got, want)
		}
	}
}

func TestSettle(t *testing.T) {
	prices := []Price{{Unit: Characters}, {Unit: AudioTokens, TokensPerSecond: 25}}
	est := Usage{Characters: 10, AudioMS: 700, AudioTokens: 18}
	got := Settle(prices, est, 2000, []Billed{{Unit: Characters, Quantity: 12}})
	want := Usage{Characters: 12, AudioMS: 2000, AudioTokens: 50}
	if got != want {
		t.Errorf("Settle = %+v, want %+v", got, want)
	}
	if got := Settle(prices, est, 0, nil); got != est {
		t.Errorf("Settle without an answer's length = %+v, want the estimate %+v", got, est)
	}
}

func TestFormat(t *testing.T) {
	for nanos, want := range map[int64]string{0: "0", 450_000: "0.00045", 12_500_000_000: "12.5", -1: "-0.000000001"} {
		if got := Format(nanos); got != want {
			t.Errorf("Format(%d) = %q, want %q", nanos, got, want)
		}
	}
}

func TestPriceCheck(t *testing.T) {
	for _, p := range []Price{
		{Unit: "words", Currency: "USD"},
		{Unit: Characters, Amount: -1, Currency: "USD"},
		{Unit: Characters},
		{Unit: AudioTokens, Currency: "USD"},
		{Unit: TextTokens, Currency: "USD", Tokenizer: "cl100k"},
	} {
		if p.Check() == nil {
			t.Errorf("Check(%+v) = nil, want an error", p)
		}
	}
	if err := (Price{Unit: Characters, Amount: 30, Per: 1e6, Currency: "USD"}).Check(); err != nil {
		t.Errorf("Check of a good price: %v", err)
	}
}

func BenchmarkEstimateCharacters(b *testing.B) {
	c := NewCounter()
	prices := []Price{{Unit: Characters, Amount: 30, Per: 1e6, Currency: "USD"}}
	text := "The quick brown fox jumps over the lazy dog, and then some more words to speak."
	b.ReportAllocs()
	for b.Loop() {
		_ = Cost(prices, c.Estimate(prices, text))
	}
}

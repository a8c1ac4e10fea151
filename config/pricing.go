package config

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/voxgate/voxgate/sdk"
)

// Pricing is how the gateway prices requests in money: the currency it
// counts in and the operator's own prices (negotiated rates), which
// replace the plugins' list prices for a provider's model.
type Pricing struct {
	// Currency is what costs, usage and currency budgets are counted in
	// (ISO 4217; default USD). A plugin's list prices in another
	// currency are not converted: such a model costs 0 unless Prices
	// gives it a price.
	Currency string `yaml:"currency"`
	// Prices maps "provider/model" (or "provider/*" for every model of
	// the provider) to the prices that replace the model's list prices,
	// in Currency. A model listed by name wins over the provider's "*".
	Prices map[string][]*Price `yaml:"prices"`
}

// Price is one billing unit's price: Amount per Per units (0: one).
type Price struct {
	// Unit is characters, utf8_bytes, text_tokens, audio_tokens,
	// audio_seconds or requests.
	Unit   string  `yaml:"unit"`
	Amount float64 `yaml:"amount"`
	Per    int64   `yaml:"per"`
	// Tokenizer counts text_tokens ("o200k_base"; empty: four
	// characters a token).
	Tokenizer string `yaml:"tokenizer"`
	// TokensPerSecond converts audio to audio_tokens.
	TokensPerSecond float64 `yaml:"tokens_per_second"`
	// PerCharacter weighs characters (billed characters per character
	// sent; 0: one).
	PerCharacter float64 `yaml:"per_character"`
}

// DefaultCurrency is the currency when pricing.currency is not set: the
// one providers publish their list prices in.
const DefaultCurrency = "USD"

func (p *Pricing) defaults() {
	if p.Currency == "" {
		p.Currency = DefaultCurrency
	}
}

var currencyCode = regexp.MustCompile(`^[A-Z]{3}$`)

// units are the billing units a price may name.
var units = []string{sdk.UnitCharacters, sdk.UnitUTF8Bytes, sdk.UnitTextTokens, sdk.UnitAudioTokens, sdk.UnitAudioSeconds, sdk.UnitRequests}

// validatePricing checks the pricing section.
func (c *Config) validatePricing(bad report) {
	p := &c.Pricing
	if !currencyCode.MatchString(p.Currency) {
		bad("pricing.currency", "must be an ISO 4217 code of three capital letters (USD, EUR), got %q", p.Currency)
	}
	for _, target := range sortedKeys(p.Prices) {
		key := "pricing.prices." + target
		provider, model, ok := strings.Cut(target, "/")
		if !ok || provider == "" || model == "" {
			bad(key, "must be provider/model or provider/*")
			continue
		}
		if _, known := c.Providers[provider]; !known {
			bad(key, "provider %q is not configured under providers", provider)
		}
		seen := map[string]bool{}
		for i, pr := range p.Prices[target] {
			k := fmt.Sprintf("%s[%d]", key, i)
			switch {
			case pr == nil:
				bad(k, "empty price")
				continue
			case !contains(units, pr.Unit):
				bad(k+".unit", "must be one of %s, got %q", strings.Join(units, ", "), pr.Unit)
			case seen[pr.Unit]:
				bad(k+".unit", "%s is priced twice", pr.Unit)
			case pr.Amount < 0 || math.IsNaN(pr.Amount) || math.IsInf(pr.Amount, 0):
				bad(k+".amount", "must be 0 or more, got %v", pr.Amount)
			case pr.Per < 0:
				bad(k+".per", "must be 0 (one unit) or more, got %d", pr.Per)
			case pr.Unit == sdk.UnitAudioTokens && pr.TokensPerSecond <= 0:
				bad(k+".tokens_per_second", "an audio_tokens price needs how many tokens a second of audio is")
			case pr.PerCharacter < 0 || (pr.PerCharacter != 0 && pr.Unit != sdk.UnitCharacters):
				bad(k+".per_character", "applies to a characters price only and must not be negative")
			case pr.Tokenizer != "" && (pr.Unit != sdk.UnitTextTokens || pr.Tokenizer != "o200k_base"):
				bad(k+".tokenizer", "only o200k_base, on a text_tokens price, got %q", pr.Tokenizer)
			}
			seen[pr.Unit] = true
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

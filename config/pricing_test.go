package config

import (
	"strings"
	"testing"
)

func TestPricing(t *testing.T) {
	y := minimal + `
pricing:
  currency: EUR
  prices:
    espeak/*: [{unit: requests, amount: 0.001}]
    espeak/espeak-ng: [{unit: characters, amount: 12, per: 1000000}, {unit: audio_tokens, amount: 10, per: 1000000, tokens_per_second: 25}]
`
	y = strings.Replace(y, "      espeak: {enabled: true}\n", "      espeak: {enabled: true}\n    budget: {cost: 12.5, period: month}\n", 1)
	cfg, err := Parse([]byte(y), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Pricing.Currency != "EUR" || len(cfg.Pricing.Prices["espeak/espeak-ng"]) != 2 || cfg.Pricing.Prices["espeak/*"][0].Amount != 0.001 {
		t.Errorf("pricing %+v", cfg.Pricing)
	}
	if b := cfg.Orgs["acme"].Budget; b.Cost != 12.5 || b.Credits != 0 {
		t.Errorf("budget %+v", b)
	}
	def, err := Parse([]byte(minimal), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if def.Pricing.Currency != "USD" {
		t.Errorf("default currency %q, want USD", def.Pricing.Currency)
	}
}

func TestPricingMistakes(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"currency", "pricing: {currency: dollars}", "pricing.currency"},
		{"target", "pricing: {prices: {espeak: [{unit: characters, amount: 1}]}}", "must be provider/model"},
		{"provider", "pricing: {prices: {nobody/x: [{unit: characters, amount: 1}]}}", `provider "nobody" is not configured`},
		{"unit", "pricing: {prices: {espeak/x: [{unit: words, amount: 1}]}}", ".unit"},
		{"twice", "pricing: {prices: {espeak/x: [{unit: characters, amount: 1}, {unit: characters, amount: 2}]}}", "priced twice"},
		{"amount", "pricing: {prices: {espeak/x: [{unit: characters, amount: -1}]}}", ".amount"},
		{"per", "pricing: {prices: {espeak/x: [{unit: characters, amount: 1, per: -5}]}}", ".per"},
		{"audio tokens", "pricing: {prices: {espeak/x: [{unit: audio_tokens, amount: 1}]}}", ".tokens_per_second"},
		{"tokenizer", "pricing: {prices: {espeak/x: [{unit: text_tokens, amount: 1, tokenizer: gpt2}]}}", ".tokenizer"},
		{"unknown key", "pricing: {prices: {espeak/x: [{unit: characters, cost: 1}]}}", "cost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(minimal+tc.yaml+"\n"), env(nil))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
	neg := strings.Replace(minimal, "      espeak: {enabled: true}\n", "      espeak: {enabled: true}\n    budget: {cost: -1, period: day}\n", 1)
	if _, err := Parse([]byte(neg), env(nil)); err == nil || !strings.Contains(err.Error(), "budget.cost") {
		t.Errorf("negative cost budget: %v", err)
	}
}

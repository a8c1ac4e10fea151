// Package pricing turns what a provider call uses into money: the units a
// provider bills in, counted the provider's way, and the prices per unit
// (a plugin's list prices, or the operator's negotiated rates from
// gateway.yaml).
//
// Amounts are integers of nano-units of the currency (1e-9 USD): a
// character at $15 per million is 15,000 nanos, an audio token at $12 per
// million 12,000, so sums over millions of requests stay exact and fit a
// Redis counter, where float sums would drift.
//
// Counting lives here and nowhere else: the quote, the log row and the
// budget reservation all call Estimate, so the three agree by
// construction; only what the provider reports it billed (Usage from the
// answer) or the answer's length (audio seconds) replaces the estimate
// after the call.
package pricing

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Unit is what a provider bills by.
type Unit string

// The billing units. Characters are Unicode code points of the text the
// provider is sent (after the gateway's own text changes: tags removed,
// pronunciations applied); UTF8Bytes its UTF-8 length; TextTokens the
// provider's tokenizer's count of it; AudioTokens and AudioSeconds are
// of the answer's audio; Requests one per provider call.
const (
	Characters   Unit = "characters"
	UTF8Bytes    Unit = "utf8_bytes"
	TextTokens   Unit = "text_tokens"
	AudioTokens  Unit = "audio_tokens"
	AudioSeconds Unit = "audio_seconds"
	Requests     Unit = "requests"
)

// Units lists every unit, in the order the wire shows them.
var Units = []Unit{Characters, UTF8Bytes, TextTokens, AudioTokens, AudioSeconds, Requests}

// Valid reports whether u is one of Units.
func (u Unit) Valid() bool {
	for _, v := range Units {
		if u == v {
			return true
		}
	}
	return false
}

// Nano is one billionth of the currency unit.
const Nano = 1e-9

// Price is the price of one billing unit: Amount currency per Per units
// (Per 0 means 1), as the source (a URL or a document's name) listed it
// on Date (YYYY-MM-DD). A price with Source "unpublished" is zero: the
// provider does not publish one and the gateway does not invent it.
type Price struct {
	Unit     Unit
	Amount   float64
	Per      int64
	Currency string
	Source   string
	Date     string
	// Tokenizer names the tokenizer a TextTokens price counts with
	// ("o200k_base"); empty: the documented estimate of one token per
	// four characters.
	Tokenizer string
	// TokensPerSecond is how many AudioTokens a second of audio is, as
	// the provider documents it; 0 for other units.
	TokensPerSecond float64
	// PerCharacter is how many billed Characters one character sent is
	// (ElevenLabs bills its Flash and Turbo models half a credit a
	// character, and its character-cost header counts those); 0 means 1.
	PerCharacter float64
}

// Unpublished is the Source of a price the provider does not publish.
const Unpublished = "unpublished"

// nanosPerUnit is the price of one unit in nano-units (fractional: an
// audio token can cost 12,000.5 nanos).
func (p Price) nanosPerUnit() float64 {
	per := p.Per
	if per <= 0 {
		per = 1
	}
	return p.Amount / float64(per) / Nano
}

// Check reports what is wrong with p, or nil.
func (p Price) Check() error {
	switch {
	case !p.Unit.Valid():
		return fmt.Errorf("unit %q is not one of %s", p.Unit, unitList())
	case p.Amount < 0 || math.IsNaN(p.Amount) || math.IsInf(p.Amount, 0):
		return fmt.Errorf("amount must be 0 or more, got %v", p.Amount)
	case p.Per < 0:
		return fmt.Errorf("per must be 0 (one unit) or more, got %d", p.Per)
	case p.Currency == "":
		return fmt.Errorf("currency is missing")
	case p.PerCharacter < 0 || (p.PerCharacter != 0 && p.Unit != Characters):
		return fmt.Errorf("per_character applies to a characters price only, and must not be negative")
	case p.Unit == AudioTokens && p.TokensPerSecond <= 0:
		return fmt.Errorf("an audio_tokens price needs tokens_per_second")
	case p.Tokenizer != "" && p.Tokenizer != O200K:
		return fmt.Errorf("tokenizer %q is not known (only %s)", p.Tokenizer, O200K)
	}
	return nil
}

func unitList() string {
	s := make([]string, len(Units))
	for i, u := range Units {
		s[i] = string(u)
	}
	return strings.Join(s, ", ")
}

// Usage is what one provider call uses, in each unit. Audio is counted in
// milliseconds (AudioMS) and billed per second.
type Usage struct {
	Characters, UTF8Bytes, TextTokens, AudioTokens, AudioMS, Requests int64
}

// Get returns u's count in unit (audio seconds rounded up, as providers
// that bill by the second do).
func (u Usage) Get(unit Unit) int64 {
	switch unit {
	case Characters:
		return u.Characters
	case UTF8Bytes:
		return u.UTF8Bytes
	case TextTokens:
		return u.TextTokens
	case AudioTokens:
		return u.AudioTokens
	case AudioSeconds:
		return (u.AudioMS + 999) / 1000
	case Requests:
		return u.Requests
	}
	return 0
}

// Set sets u's count in unit (audio seconds as milliseconds).
func (u *Usage) Set(unit Unit, n int64) {
	switch unit {
	case Characters:
		u.Characters = n
	case UTF8Bytes:
		u.UTF8Bytes = n
	case TextTokens:
		u.TextTokens = n
	case AudioTokens:
		u.AudioTokens = n
	case AudioSeconds:
		u.AudioMS = n * 1000
	case Requests:
		u.Requests = n
	}
}

// Add adds o to u.
func (u *Usage) Add(o Usage) {
	u.Characters += o.Characters
	u.UTF8Bytes += o.UTF8Bytes
	u.TextTokens += o.TextTokens
	u.AudioTokens += o.AudioTokens
	u.AudioMS += o.AudioMS
	u.Requests += o.Requests
}

// Cost is what u costs at prices, in nano-units, rounded up: a provider
// never bills less than the gateway counts.
func Cost(prices []Price, u Usage) int64 {
	var n float64
	for _, p := range prices {
		n += float64(u.Get(p.Unit)) * p.nanosPerUnit()
	}
	return int64(math.Ceil(n - 1e-6)) // the epsilon forgives float noise
}

// Format writes nanos as a decimal amount of the currency with nine
// places, trailing zeros trimmed: "0.00045", "12.5", "0".
func Format(nanos int64) string {
	neg := nanos < 0
	if neg {
		nanos = -nanos
	}
	s := strconv.FormatInt(nanos/1e9, 10)
	if frac := nanos % 1e9; frac != 0 {
		f := strings.TrimRight(fmt.Sprintf("%09d", frac), "0")
		s += "." + f
	}
	if neg {
		s = "-" + s
	}
	return s
}

// Float is nanos as a float amount of the currency, for JSON.
func Float(nanos int64) float64 { return float64(nanos) * Nano }

// FromFloat is a currency amount (a budget in gateway.yaml) in nanos.
func FromFloat(amount float64) int64 { return int64(math.Round(amount / Nano)) }

package pricing

import (
	"math"
	"sync"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// O200K is OpenAI's tokenizer of the gpt-4o family, the one its
// gpt-4o-mini-tts bills text tokens by.
const O200K = "o200k_base"

// CharsPerSecond is the speech rate a quote assumes to estimate audio
// before it exists: 15 characters a second is about 150 words a minute,
// the middle of conversational English. The answer's length replaces it.
const CharsPerSecond = 15

// CharsPerToken is the estimate of text tokens where the provider's
// tokenizer is not available as a library (Google's Gemini): the four
// characters per token both Google and OpenAI quote for English.
const CharsPerToken = 4

// Counter counts billing units the providers' way. It holds the o200k
// tokenizer, loaded on first use (its table is 200k ranks: some
// milliseconds and megabytes a gateway without a token-priced model
// never pays). Safe for concurrent use.
type Counter struct {
	once sync.Once
	enc  *tiktoken.Tiktoken
	err  error
}

// NewCounter returns a Counter.
func NewCounter() *Counter { return &Counter{} }

// tokens counts text's tokens with tokenizer, or estimates them from its
// characters (chars counts them).
func (c *Counter) tokens(tokenizer, text string, chars func() int64) int64 {
	if tokenizer == O200K {
		c.once.Do(func() {
			// The library's loader is package state of its own; the
			// offline loader reads the table embedded in the binary
			// rather than downloading it at run time.
			tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
			c.enc, c.err = tiktoken.GetEncoding(O200K)
		})
		if c.err == nil {
			return int64(len(c.enc.EncodeOrdinary(text)))
		}
	}
	return int64(math.Ceil(float64(chars()) / CharsPerToken))
}

// Estimate counts what sending text costs in the units prices bill,
// before the call: text units exactly (characters, bytes, tokens with the
// provider's tokenizer where one is available), one request, and audio
// estimated from the text at CharsPerSecond. Units no price names stay
// zero, so an unpriced model costs no counting.
func (c *Counter) Estimate(prices []Price, text string) Usage {
	var u Usage
	runes := int64(-1) // counted once, when a price needs it
	chars := func() int64 {
		if runes < 0 {
			runes = int64(utf8.RuneCountInString(text))
		}
		return runes
	}
	for _, p := range prices {
		switch p.Unit {
		case Characters:
			// Code points, whitespace included: ElevenLabs, OpenAI and
			// Cartesia count every character sent, spaces too.
			u.Characters = chars()
			if p.PerCharacter > 0 && p.PerCharacter != 1 {
				u.Characters = int64(math.Ceil(float64(u.Characters)*p.PerCharacter - 1e-9))
			}
		case UTF8Bytes:
			u.UTF8Bytes = int64(len(text))
		case TextTokens:
			u.TextTokens = c.tokens(p.Tokenizer, text, chars)
		case AudioSeconds, AudioTokens:
			ms := int64(math.Ceil(float64(chars()) * 1000 / CharsPerSecond))
			u.AudioMS = ms
			if p.Unit == AudioTokens {
				u.AudioTokens = audioTokens(p, ms)
			}
		case Requests:
			u.Requests = 1
		}
	}
	return u
}

// audioTokens is ms of audio in p's audio tokens.
func audioTokens(p Price, ms int64) int64 {
	return int64(math.Ceil(float64(ms) * p.TokensPerSecond / 1000))
}

// Settle is the usage billed once the answer is in: est with the audio
// units taken from the answer's length (audioMS, when known: > 0) and
// every unit the provider reported in billed replacing the count.
func Settle(prices []Price, est Usage, audioMS int64, billed []Billed) Usage {
	u := est
	if audioMS > 0 {
		for _, p := range prices {
			switch p.Unit {
			case AudioSeconds:
				u.AudioMS = audioMS
			case AudioTokens:
				u.AudioMS = audioMS
				u.AudioTokens = audioTokens(p, audioMS)
			}
		}
	}
	for _, b := range billed {
		u.Set(b.Unit, b.Quantity)
	}
	return u
}

// Billed is a provider's own figure of what a call used, read from its
// answer (ElevenLabs' character-cost header): it wins over the count.
type Billed struct {
	Unit     Unit
	Quantity int64
}

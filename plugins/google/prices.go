package main

import "github.com/voxgate/voxgate/sdk"

// priceDate is when the prices below were read from their sources.
const priceDate = "2026-11-28"

// audioTokensPerSecond is how many audio tokens a second of audio is:
// the one figure ai.google.dev gives, "Gemini represents each second of
// audio as 32 tokens" (https://ai.google.dev/gemini-api/docs/audio,
// Technical details about audio, read 2026-11-28). That page speaks of
// audio sent to Gemini; no page of Google's in reach gives another rate
// for the speech a TTS model answers (the 25 a second this table used
// before is on no page of Google's in reach, only on other sites,
// which are not used). usageMetadata's audio tokens win over it after
// every call.
const audioTokensPerSecond = 32

// priceTable is the list price of each model, by id; a model it does not
// list (one passed through) is priced as unpublished.
var priceTable = map[string][]sdk.Price{
	// The Gemini API pricing page as reported for Gemini 3.1 Flash TTS
	// (April 2026): $1.00 per million text tokens in, $20.00 per million
	// audio tokens out, audio at audioTokensPerSecond. Google's tokenizer
	// is not a Go library: text tokens are estimated at four characters.
	"gemini-3.1-flash-tts-preview": {
		{Unit: sdk.UnitTextTokens, Amount: 1, Per: 1_000_000, Currency: "USD", Source: "https://ai.google.dev/gemini-api/docs/pricing", Date: priceDate},
		{Unit: sdk.UnitAudioTokens, Amount: 20, Per: 1_000_000, Currency: "USD", Source: "https://ai.google.dev/gemini-api/docs/pricing", Date: priceDate, TokensPerSecond: audioTokensPerSecond},
	},
}

package main

import "github.com/voxgate/voxgate/sdk"

// priceDate is when the prices below were read from their sources.
const priceDate = "2026-11-28"

// priceTable is the list price of each model, by id; a model it does not
// list (one passed through) is priced as unpublished.
var priceTable = map[string][]sdk.Price{
	// developers.openai.com model pages, read 28 November 2026.
	"tts-1":                      {sdk.USDPer(sdk.UnitCharacters, 15, 1_000_000, "https://developers.openai.com/api/docs/models/tts-1", priceDate)},
	"tts-1-hd":                   {sdk.USDPer(sdk.UnitCharacters, 30, 1_000_000, "https://developers.openai.com/api/docs/models/tts-1-hd", priceDate)},
	"gpt-4o-mini-tts":            miniTTS,
	"gpt-4o-mini-tts-2025-12-15": miniTTS,
	"gpt-4o-mini-tts-2025-03-20": miniTTS,
}

// miniTTS is gpt-4o-mini-tts's price: text tokens in (o200k, the gpt-4o
// tokenizer) and audio tokens out. OpenAI estimates the model at $0.015
// a minute of audio, which at $12 per million audio tokens is 1,250
// tokens a minute: the rate the gateway converts the answer's length by.
var miniTTS = []sdk.Price{
	{Unit: sdk.UnitTextTokens, Amount: 0.60, Per: 1_000_000, Currency: "USD", Source: "https://developers.openai.com/api/docs/models/gpt-4o-mini-tts", Date: priceDate, Tokenizer: "o200k_base"},
	{Unit: sdk.UnitAudioTokens, Amount: 12, Per: 1_000_000, Currency: "USD", Source: "https://developers.openai.com/api/docs/models/gpt-4o-mini-tts", Date: priceDate, TokensPerSecond: 1250.0 / 60},
}

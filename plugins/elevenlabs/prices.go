package main

import "github.com/voxgate/voxgate/sdk"

// priceDate is when the prices below were read from their sources.
const priceDate = "2026-11-28"

// priceTable is the list price of each model, by id; a model it does not
// list (one passed through) is priced as unpublished.
var priceTable = map[string][]sdk.Price{
	// The API pricing page (elevenlabs.io/pricing/api, June 2026): $0.10
	// per 1,000 characters for Multilingual v2 and v3, $0.05 for Flash
	// and Turbo, which bill half a credit a character: priced here per
	// billed character (the unit of the character-cost header the
	// answers carry) at $0.10 per 1,000, with Flash and Turbo weighing a
	// character sent at 0.5.
	"eleven_multilingual_v2": elevenFull,
	"eleven_v3":              elevenFull,
	"eleven_flash_v2_5":      elevenHalf,
	"eleven_turbo_v2_5":      elevenHalf,
	"eleven_flash_v2":        elevenHalf,
	"eleven_turbo_v2":        elevenHalf,
}

var (
	elevenFull = []sdk.Price{sdk.USDPer(sdk.UnitCharacters, 0.10, 1000, "https://elevenlabs.io/pricing/api", priceDate)}
	elevenHalf = []sdk.Price{{Unit: sdk.UnitCharacters, Amount: 0.10, Per: 1000, Currency: "USD", Source: "https://elevenlabs.io/pricing/api", Date: priceDate, PerCharacter: 0.5}}
)

package main

import "github.com/voxgate/voxgate/sdk"

// priceDate is when the prices below were read from their sources.
const priceDate = "2026-11-28"

// priceTable is the list price of each model, by id; a model it does not
// list (one passed through) is priced as unpublished.
var priceTable = map[string][]sdk.Price{
	// docs.x.ai, Models and Pricing, Text to Speech (last updated 15
	// April 2026): $4.20 per million input characters.
	modelID: {sdk.USDPer(sdk.UnitCharacters, 4.20, 1_000_000, "https://docs.x.ai/developers/models/text-to-speech", priceDate)},
}

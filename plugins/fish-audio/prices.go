package main

import "github.com/voxgate/voxgate/sdk"

// priceDate is when the prices below were read from their sources.
const priceDate = "2026-11-28"

// priceTable is the list price of each model, by id; a model it does not
// list (one passed through) is priced as unpublished.
var priceTable = map[string][]sdk.Price{
	// docs.fish.audio, Pricing and Rate Limits: $15 per million UTF-8
	// bytes of input text for s2-pro and s1; the page lists no price for
	// s2.1-pro (unpublished until it does).
	"s2-pro": {sdk.USDPer(sdk.UnitUTF8Bytes, 15, 1_000_000, "https://docs.fish.audio/developer-guide/models-pricing/pricing-and-rate-limits", priceDate)},
	"s1":     {sdk.USDPer(sdk.UnitUTF8Bytes, 15, 1_000_000, "https://docs.fish.audio/developer-guide/models-pricing/pricing-and-rate-limits", priceDate)},
}

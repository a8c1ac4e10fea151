package main

import "github.com/voxgate/voxgate/sdk"

// priceDate is when the prices below were read from their sources.
const priceDate = "2026-11-28"

// priceTable is the list price of each model, by id; a model it does not
// list (one passed through) is priced as unpublished.
var priceTable = map[string][]sdk.Price{
	// Murf's help centre, "Plans and Limits" of the API: pay as you go,
	// 1,000 characters for $0.03. The article names no model and
	// predates Falcon, so it prices GEN2 only. FALCON stays unpublished:
	// searched 2026-11-28, murf.ai/api/pricing was not in reach, and
	// murf.ai/api/docs (the streaming page, which introduces Falcon as
	// a beta model) gives no rate for it; the older streaming FAQ's
	// "billed per character", written before Falcon, names no rate
	// either. Figures on other sites are not used.
	"GEN2": {sdk.USDPer(sdk.UnitCharacters, 0.03, 1000, "https://help.murf.ai/murf-api-plans-and-limits", priceDate)},
}

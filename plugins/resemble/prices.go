package main

import "github.com/voxgate/voxgate/sdk"

// priceDate is when the prices below were read from their sources.
const priceDate = "2026-11-28"

// priceTable is empty: no rate for Chatterbox on a page of Resemble's
// in reach. Searched 2026-11-28 for resemble.ai/pricing and
// docs.app.resemble.ai billing (neither in reach). Figures on other
// sites (resellers' per-character prices) are not used.
// Every model is priced as unpublished (zero, said so) until the
// operator prices it in pricing.prices.
var priceTable = map[string][]sdk.Price{}

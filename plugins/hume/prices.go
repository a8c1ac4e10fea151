package main

import "github.com/voxgate/voxgate/sdk"

// priceDate is when the prices below were read from their sources.
const priceDate = "2026-11-28"

// priceTable is empty: Hume sells TTS by subscription with included
// usage and overage rates on its pricing page (hume.ai/pricing, not in
// reach). Searched 2026-11-28: dev.hume.ai/docs/resources/billing
// (billing models, no rate) and dev.hume.ai's TTS overview. Figures on
// other sites are not used.
// Every model is priced as unpublished (zero, said so) until the
// operator prices it in pricing.prices.
var priceTable = map[string][]sdk.Price{}

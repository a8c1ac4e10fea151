package main

import "github.com/voxgate/voxgate/sdk"

// priceDate is when the prices below were read from their sources.
const priceDate = "2026-11-28"

// priceTable is empty: Cartesia meters TTS in credits, "~1 credit per
// character" (~1.5 with a Pro Voice Clone, docs.cartesia.ai/pricing,
// read 2026-11-28), and sells credits by subscription plan
// (cartesia.ai/pricing, not in reach). A credit is no currency
// (pricing.currency is ISO 4217), so the price stays unpublished.
// Every model is priced as unpublished (zero, said so) until the
// operator prices it in pricing.prices.
var priceTable = map[string][]sdk.Price{}

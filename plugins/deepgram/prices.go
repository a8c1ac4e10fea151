package main

import "github.com/voxgate/voxgate/sdk"

// priceDate is when the prices below were read from their sources.
const priceDate = "2026-11-28"

// priceTable is empty: Deepgram publishes Aura prices per 1,000 characters; none was confirmed from its own page in this round: set them in pricing.prices.
// Every model is priced as unpublished (zero, said so).
var priceTable = map[string][]sdk.Price{}

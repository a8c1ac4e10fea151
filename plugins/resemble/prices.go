package main

import "github.com/voxgate/voxgate/sdk"

// priceDate is when the prices below were read from their sources.
const priceDate = "2026-11-28"

// priceTable is empty: Resemble bills by plan; no per-character list price was confirmed from its own page in this round: set it in pricing.prices.
// Every model is priced as unpublished (zero, said so).
var priceTable = map[string][]sdk.Price{}

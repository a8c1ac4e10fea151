package main

import "github.com/voxgate/voxgate/sdk"

// priceDate is when the prices below were read from their sources.
const priceDate = "2026-11-28"

// priceTable is empty: Cartesia bills credits (about one a character) whose dollar price depends on the subscription plan: no per-character list price in USD.
// Every model is priced as unpublished (zero, said so).
var priceTable = map[string][]sdk.Price{}

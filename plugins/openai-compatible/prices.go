package main

import "github.com/voxgate/voxgate/sdk"

// priceDate is when the prices below were read from their sources.
const priceDate = "2026-11-28"

// priceTable is empty: An OpenAI-compatible server is whoever runs it: no list price.
// Every model is priced as unpublished (zero, said so).
var priceTable = map[string][]sdk.Price{}

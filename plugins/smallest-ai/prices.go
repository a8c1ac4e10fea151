package main

import "github.com/voxgate/voxgate/sdk"

// priceDate is when the prices below were read from their sources.
const priceDate = "2026-11-28"

// priceTable is empty: no Lightning rate on a page of Smallest AI's in
// reach. Searched 2026-11-28: docs.smallest.ai's Lightning overview and
// Lightning v3.1 Pro model card, waves-docs.smallest.ai's Lightning
// v3.1 model card (no price on any); smallest.ai/pricing was not in
// reach. Figures on other sites are not used.
// Every model is priced as unpublished (zero, said so) until the
// operator prices it in pricing.prices.
var priceTable = map[string][]sdk.Price{}

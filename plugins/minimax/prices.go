package main

import "github.com/voxgate/voxgate/sdk"

// priceDate is when the prices below were read from their sources.
const priceDate = "2026-11-28"

// priceTable is empty: MiniMax bills speech per character, but its
// speech rates were not in reach. Searched 2026-11-28:
// platform.minimax.io/docs/guides/pricing-paygo (not in reach) and
// platform.minimaxi.com/docs/guides/pricing-paygo, of which only the
// text models' section (in CNY, for the China platform) was read.
// Figures on other sites are not used.
// Every model is priced as unpublished (zero, said so) until the
// operator prices it in pricing.prices.
var priceTable = map[string][]sdk.Price{}

package main

import "github.com/voxgate/voxgate/sdk"

// priceDate is when the prices below were read from their sources.
const priceDate = "2026-11-28"

// priceTable is empty: Deepgram bills Aura per character, but no page
// of its own in reach gives the rate. Searched 2026-11-28:
// deepgram.com/pricing (not in reach); developers.deepgram.com's
// text-to-speech getting-started page, its API rate limits page (Pay
// as You Go and Growth plans, limits only) and its AWS Marketplace
// (x402) page, whose per-request price is a quote the API answers, not
// a listed rate. Figures on other sites are not used.
// Every model is priced as unpublished (zero, said so) until the
// operator prices it in pricing.prices.
var priceTable = map[string][]sdk.Price{}

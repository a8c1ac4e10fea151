package main

import "github.com/voxgate/voxgate/sdk"

// priceDate is when the prices below were read from their sources.
const priceDate = "2026-11-28"

// priceTable is empty: no Voxtral TTS rate on a page of Mistral's in
// reach. Searched 2026-11-28: docs.mistral.ai's model selection guide
// (it has a price column, but its Voxtral TTS row was not in reach),
// docs.mistral.ai/studio/audio/overview and the speech generation
// guide (no price); mistral.ai/pricing was not in reach. The rates on
// other sites are not used.
// Every model is priced as unpublished (zero, said so) until the
// operator prices it in pricing.prices.
var priceTable = map[string][]sdk.Price{}

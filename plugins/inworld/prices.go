package main

import "github.com/voxgate/voxgate/sdk"

// priceDate is when the prices below were read from their sources.
const priceDate = "2026-11-28"

// inworldBilling is Inworld's own billing page, the only page of its
// domains in reach that gives a model's rate (the page shows no date of
// its own; read on priceDate).
const inworldBilling = "https://docs.inworld.ai/docs/portal/billing"

// priceTable is the list price of each model, by id; a model it does not
// list (one passed through) is priced as unpublished.
var priceTable = map[string][]sdk.Price{
	// docs.inworld.ai, Billing, the On-demand plan: "TTS-1.5 Mini $5/1M
	// chars", "TTS-1.5 Max $10/1M chars". The page names the models as
	// the model list (models()) names inworld-tts-1.5-mini and
	// inworld-tts-1.5-max, so those two ids take them. It names neither
	// TTS-2 nor TTS-1 nor TTS-1 Max: inworld-tts-2, inworld-tts-1 and
	// inworld-tts-1-max stay unpublished rather than borrow a rate.
	// Inworld's newer billing page (docs.inworld.ai/portal/billing)
	// lists plans only and sends model rates to inworld.ai/pricing,
	// which could not be read: an operator on a paid plan prices them
	// in pricing.prices.
	"inworld-tts-1.5-mini": {sdk.USDPer(sdk.UnitCharacters, 5, 1_000_000, inworldBilling, priceDate)},
	"inworld-tts-1.5-max":  {sdk.USDPer(sdk.UnitCharacters, 10, 1_000_000, inworldBilling, priceDate)},
}

package engine

import "github.com/voxgate/voxgate/sdk"

// priceDate is when the prices below were read from their sources.
const priceDate = "2026-11-28"

// localPrice is eSpeak NG's: it runs inside the plugin, so no provider
// bills a call (the host's own cost is the operator's to price, in
// pricing.prices).
var localPrice = []sdk.Price{{Unit: sdk.UnitRequests, Currency: "USD", Source: "local engine: no provider bill", Date: priceDate}}

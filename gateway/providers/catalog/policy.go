package catalog

import (
	"time"

	"github.com/voxgate/voxgate/gateway/pricing"
)

// Policy is how the gateway treats one provider: the typed view of its
// configuration that the pipeline and the resources decide by. Neither
// reads *config.Config.
type Policy struct {
	// Timeout bounds each call (504 provider_timeout past it).
	Timeout time.Duration
	// CreditsPer1kChars is the credit rate, ModelCredits its per-model
	// overrides.
	CreditsPer1kChars float64
	ModelCredits      map[string]float64
	// Currency is what the gateway counts money in (pricing.currency);
	// Prices the operator's prices by model id (sdk.AnyModel: every
	// model of the provider), which replace the plugin's list prices.
	Currency string
	Prices   map[string][]pricing.Price
	// Direct lets the gateway send the requests the plugin plans.
	Direct bool
	// Timestamps is where the provider's word timestamps come from:
	// speech.TimingAuto, TimingNative, TimingAligned or TimingSTT.
	Timestamps string
}

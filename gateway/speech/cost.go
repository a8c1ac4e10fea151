package speech

import (
	"github.com/voxgate/voxgate/gateway/admission/budget"
	"github.com/voxgate/voxgate/gateway/pricing"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/sdk"
)

// Money. A job's cost is counted in one place (pricing.Counter) from the
// text each provider call is sent: the quote (Quote), the log row's
// estimate and the budget reservation are the same figure by
// construction. After a clip is rendered the audio units are taken from
// the provider's own audio and any figure the provider reported
// (sdk.SynthesizeResponse.Billed) replaces the count (finalCost); a
// stream's audio is known only at its end, at the edge (StreamCost).

// Call is one provider call a request makes, priced.
type Call struct {
	Provider, Model string
	// Units are the call's units in each unit its model is priced in.
	Units pricing.Usage
	// Prices are what the units are priced at (the catalog's; read only).
	Prices []pricing.Price
	// Cost is the call's cost in nano-units of the currency.
	Cost int64
}

// Quoted is what a request will cost before it runs.
type Quoted struct {
	// Cost is the calls' sum, in nano-units of Currency.
	Cost     int64
	Currency string
	Calls    []Call
}

// priceCalls prices j's provider calls: one per piece of its text (a text the
// model takes whole is one piece).
func (s *Service) priceCalls(j *Job) []Call {
	prices := j.Provider.Prices(j.Model.ID)
	pieces := j.pieces
	if len(pieces) == 0 {
		pieces = []string{j.spokenText()}
	}
	out := make([]Call, len(pieces))
	for i, text := range pieces {
		u := s.counter.Estimate(prices, text)
		out[i] = Call{Provider: j.Provider.ID, Model: j.Model.ID, Units: u, Prices: prices, Cost: pricing.Cost(prices, u)}
	}
	return out
}

// estimate is j's cost before its calls, in nano-units of the currency.
func (s *Service) estimate(j *Job) int64 {
	prices := j.Provider.Prices(j.Model.ID)
	if len(prices) == 0 {
		return 0
	}
	var n int64
	for _, c := range s.priceCalls(j) {
		n += c.Cost
	}
	return n
}

// usage is j's estimated units over all its calls.
func (s *Service) usage(j *Job) pricing.Usage {
	var u pricing.Usage
	for _, c := range s.priceCalls(j) {
		u.Add(c.Units)
	}
	return u
}

// finalCost is what rendering j into res cost: the estimate's text units,
// the provider's audio's length for audio units, and the provider's own
// figures where its answer gave them.
func (s *Service) finalCost(j *Job, res *Result) int64 {
	prices := j.Provider.Prices(j.Model.ID)
	if len(prices) == 0 || res == nil {
		return 0
	}
	u := pricing.Settle(prices, s.usage(j), res.providerMS, billedUnits(res.billed))
	return pricing.Cost(prices, u)
}

// StreamCost is what j's stream cost once it ended after audioMS of the
// provider's audio (before any time-stretch the gateway applied).
func (s *Service) StreamCost(j *Job, audioMS int64) int64 {
	prices := j.Provider.Prices(j.Model.ID)
	if len(prices) == 0 {
		return 0
	}
	if st := j.Params.Stretch; st > 0 && st != 1 {
		audioMS = int64(float64(audioMS) * st)
	}
	return pricing.Cost(prices, pricing.Settle(prices, s.usage(j), audioMS, nil))
}

func billedUnits(b []sdk.BilledUsage) []pricing.Billed {
	if len(b) == 0 {
		return nil
	}
	out := make([]pricing.Billed, 0, len(b))
	for _, u := range b {
		if pricing.Unit(u.Unit).Valid() {
			out = append(out, pricing.Billed{Unit: pricing.Unit(u.Unit), Quantity: u.Quantity})
		}
	}
	return out
}

// addBilled adds b's figures to sum, unit by unit (a long text's pieces).
func addBilled(sum []sdk.BilledUsage, b []sdk.BilledUsage) []sdk.BilledUsage {
next:
	for _, u := range b {
		for i := range sum {
			if sum[i].Unit == u.Unit {
				sum[i].Quantity += u.Quantity
				continue next
			}
		}
		sum = append(sum, u)
	}
	return sum
}

// amount is what a row spends, for the budgets.
func amount(r *store.LogRow) budget.Amount {
	return budget.Amount{Credits: int64(r.CreditsUsed), Cost: r.Cost}
}

// Amount is what a finished row spent, as the budgets count it.
func Amount(r *store.LogRow) budget.Amount { return amount(r) }

// unbill marks r as charged nothing: a failure, a cache hit, a turn
// rendered but discarded.
func unbill(r *store.LogRow) {
	r.CreditsUsed, r.Cost = 0, 0
}

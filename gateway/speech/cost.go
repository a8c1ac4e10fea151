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

// jobCost is a job's calls priced once (Service.price): the count of
// every piece summed, and the estimate the quote, the reservation and the
// log row share. A request reads it three times or more (the log row,
// the budget reservation, the settlement, a conversation's totals); it
// is counted on the first and kept on the job, which allocates nothing.
type jobCost struct {
	// priced says the fields below are j's.
	priced bool
	// prices are the model's (the catalog's slice; read only).
	prices []pricing.Price
	// units are the estimated units of all the job's calls together.
	units pricing.Usage
	// estimate is the calls' costs summed (each rounded up on its own,
	// as the provider bills each call), in nano-units of the currency.
	estimate int64
}

// price returns j's calls priced, counting them on the first call. The
// count follows j's text: setText resets it. A job is priced from the
// goroutine that prepared it before any other goroutine reads it (the
// log row is made before the provider is called).
func (s *Service) price(j *Job) *jobCost {
	c := &j.cost
	if c.priced {
		return c
	}
	c.priced, c.prices = true, j.Provider.Prices(j.Model.ID)
	c.units, c.estimate = pricing.Usage{}, 0
	if len(c.prices) == 0 {
		return c
	}
	if len(j.pieces) == 0 {
		c.units = s.counter.Estimate(c.prices, j.spokenText())
		c.estimate = pricing.Cost(c.prices, c.units)
		return c
	}
	for _, text := range j.pieces {
		u := s.counter.Estimate(c.prices, text)
		c.units.Add(u)
		c.estimate += pricing.Cost(c.prices, u)
	}
	return c
}

// priceCalls prices j's provider calls one by one, for a quote: one per
// piece of its text (a text the model takes whole is one piece). The
// request path reads the sum instead (price), which allocates nothing.
func (s *Service) priceCalls(j *Job) []Call {
	prices := j.Provider.Prices(j.Model.ID) // not price(j): that would count the text twice
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
func (s *Service) estimate(j *Job) int64 { return s.price(j).estimate }

// finalCost is what rendering j into res cost: the estimate's text units,
// the provider's audio's length for audio units, and the provider's own
// figures where its answer gave them.
func (s *Service) finalCost(j *Job, res *Result) int64 {
	c := s.price(j)
	if len(c.prices) == 0 || res == nil {
		return 0
	}
	return pricing.Cost(c.prices, pricing.Settle(c.prices, c.units, res.providerMS, billedUnits(res.billed)))
}

// StreamCost is what j's stream cost once it ended after audioMS of the
// provider's audio (before any time-stretch the gateway applied), and
// what the provider said it billed where its answer said (a header with
// the stream's first bytes, a final message), which wins as a clip's
// does. Call it once the stream is closed, from the goroutine that read
// it.
func (s *Service) StreamCost(j *Job, audioMS int64) int64 {
	c := s.price(j)
	if len(c.prices) == 0 {
		return 0
	}
	if st := j.Params.Stretch; st > 0 && st != 1 {
		audioMS = int64(float64(audioMS) * st)
	}
	return pricing.Cost(c.prices, pricing.Settle(c.prices, c.units, audioMS, billedUnits(j.streamBilled)))
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

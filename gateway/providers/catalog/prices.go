package catalog

import (
	"github.com/voxgate/voxgate/gateway/pricing"
	"github.com/voxgate/voxgate/sdk"
)

// Prices returns what a call to modelID is priced at, in the gateway's
// currency (Policy.Currency): the operator's prices for the model, else
// theirs for every model of the provider ("*"), else the model's list
// prices as its plugin declares them. List prices in another currency
// are not converted (nil: the model costs nothing counted). The slices
// are the catalog's own, made once: callers must not change them.
func (p *Provider) Prices(modelID string) []pricing.Price {
	if ps, ok := p.Policy.Prices[modelID]; ok {
		return ps
	}
	if ps, ok := p.Policy.Prices[sdk.AnyModel]; ok {
		return ps
	}
	if ps, ok := p.listPrices[modelID]; ok {
		return ps
	}
	return p.listPrices[sdk.AnyModel]
}

// PriceSource says where modelID's prices come from: "config" for the
// operator's, else the plugin's sources ("" when the model has none).
func (p *Provider) PriceSource(modelID string) string {
	if _, ok := p.Policy.Prices[modelID]; ok {
		return "config"
	}
	if _, ok := p.Policy.Prices[sdk.AnyModel]; ok {
		return "config"
	}
	return ""
}

// listPrices converts m's declared prices in currency.
func listPrices(m *sdk.Model, currency string) []pricing.Price {
	var out []pricing.Price
	for _, d := range m.Prices {
		p := pricing.Price{Unit: pricing.Unit(d.Unit), Amount: d.Amount, Per: d.Per, Currency: d.Currency, Source: d.Source,
			Date: d.Date, Tokenizer: d.Tokenizer, TokensPerSecond: d.TokensPerSecond, PerCharacter: d.PerCharacter}
		if p.Currency != currency || p.Check() != nil {
			continue // checked by sdktest; never priced wrongly here
		}
		out = append(out, p)
	}
	return out
}

// Package catalog is the providers the gateway serves, as their plugins
// describe them at start-up: each provider's models, the model a request
// names resolved to one of them, how the gateway treats the provider
// (Policy: timeout, credits, direct sending), and the calls made to the
// plugins (Calls: under the provider's timeout, traced and counted).
//
// Both the speech pipeline (gateway/speech) and the resources the
// organizations edit (gateway/resources: voices checked against a
// provider's list, clones, provider keys checked with a call) use it;
// neither imports the other.
package catalog

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/voxgate/voxgate/gateway/observe/metrics"
	"github.com/voxgate/voxgate/gateway/pricing"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/sdk"
)

// Provider is a configured provider with its plugin and description.
type Provider struct {
	ID     string
	Name   string
	Plugin sdk.Provider
	// Desc is the plugin's description, except that Models holds only the
	// listed models: the sdk.AnyModel entry, if any, is kept apart (see
	// PassThrough), so that everything listing Desc.Models (the catalog
	// endpoints, the dialects' model lists, the start-up log) shows only
	// models that exist, never "*".
	Desc *sdk.Description
	// Policy is how the gateway treats the provider (timeout, credits).
	Policy Policy
	// Healthy reports whether the plugin has a live instance.
	Healthy  func() bool
	models   map[string]*sdk.Model
	wildcard *sdk.Model
	// listPrices are the models' declared prices in Policy.Currency, by
	// model id (sdk.AnyModel: the pass-through entry's).
	listPrices map[string][]pricing.Price
	// series are the listed models' metric series, by model id
	// (SetSeries); a model passed through has none.
	series map[string]*metrics.ModelSeries
}

// SetSeries gives the listed model id its metric series, found once when
// the provider is set up rather than by label on every call. It is called
// before the provider serves requests.
func (p *Provider) SetSeries(id string, s *metrics.ModelSeries) {
	if p.series == nil {
		p.series = map[string]*metrics.ModelSeries{}
	}
	p.series[id] = s
}

// Series returns the listed model id's metric series, or nil (a model
// passed through, or a provider set up without metrics).
func (p *Provider) Series(id string) *metrics.ModelSeries { return p.series[id] }

// Model returns the listed model with id, or nil. Resolve also resolves
// the ids the provider passes through.
func (p *Provider) Model(id string) *sdk.Model { return p.models[id] }

// PassThrough returns what the provider's sdk.AnyModel entry says of the
// model ids it accepts without listing them, or nil when it accepts only
// its listed models.
func (p *Provider) PassThrough() *sdk.Model { return p.wildcard }

// MetricModel is the model label of a call's metrics: the model's id when
// the provider lists it, else sdk.AnyModel. A passed-through id comes
// from the caller, and a label per such id would let callers grow the
// metrics without bound; its logs and log rows still carry the id.
func (p *Provider) MetricModel(id string) string {
	if p.Model(id) == nil {
		return sdk.AnyModel
	}
	return id
}

// Planner returns the provider's plugin as an sdk.Planner when the
// gateway may send the provider's requests itself: the plugin plans and
// the provider's configuration does not turn direct sending off. Nil
// otherwise; whether the gateway sends at all is the caller's to say.
func (p *Provider) Planner() sdk.Planner {
	if !p.Desc.Plans || !p.Policy.Direct {
		return nil
	}
	pl, _ := p.Plugin.(sdk.Planner)
	return pl
}

// Catalog holds the providers the gateway serves, described by their
// plugins at start-up.
type Catalog struct {
	providers map[string]*Provider
	order     []string
}

// New asks every plugin to describe itself. plugins maps provider id
// to its plugin; healthy reports liveness per id.
func New(ctx context.Context, policies map[string]Policy, plugins map[string]sdk.Provider, healthy func(id string) bool) (*Catalog, error) {
	c := &Catalog{providers: map[string]*Provider{}}
	for id, pl := range plugins {
		d, err := pl.Describe(ctx)
		if err != nil {
			return nil, fmt.Errorf("describe provider %s: %w", id, err)
		}
		listed, wildcard, err := splitModels(d)
		if err != nil {
			return nil, fmt.Errorf("provider %s: %w", id, err)
		}
		// A copy, so that the plugin's value keeps its wildcard entry.
		desc := *d
		desc.Models = listed
		p := &Provider{ID: id, Name: d.Name, Plugin: pl, Desc: &desc, Policy: policies[id], models: map[string]*sdk.Model{},
			wildcard: wildcard, Healthy: func() bool { return healthy(id) }}
		p.listPrices = map[string][]pricing.Price{}
		for i := range listed {
			p.models[listed[i].ID] = &listed[i]
			p.listPrices[listed[i].ID] = listPrices(&listed[i], p.Policy.Currency)
		}
		if wildcard != nil {
			p.listPrices[sdk.AnyModel] = listPrices(wildcard, p.Policy.Currency)
		}
		c.providers[id] = p
		c.order = append(c.order, id)
	}
	sort.Strings(c.order)
	return c, nil
}

// splitModels checks d and separates its listed models from its
// sdk.AnyModel entry (nil if it has none). The default model must be a
// listed one: a request that names only the provider has to reach a model
// the provider actually has, not the stand-in for unnamed ones.
func splitModels(d *sdk.Description) (listed []sdk.Model, wildcard *sdk.Model, err error) {
	if d == nil {
		return nil, nil, fmt.Errorf("plugin describes no models")
	}
	listed = make([]sdk.Model, 0, len(d.Models))
	for i := range d.Models {
		if d.Models[i].ID != sdk.AnyModel {
			listed = append(listed, d.Models[i])
			continue
		}
		if wildcard != nil {
			return nil, nil, fmt.Errorf("plugin describes the pass-through model %q twice", sdk.AnyModel)
		}
		w := d.Models[i]
		wildcard = &w
	}
	if len(listed) == 0 {
		return nil, nil, fmt.Errorf("plugin describes no models")
	}
	for _, m := range listed {
		if m.ID == d.DefaultModel {
			return listed, wildcard, nil
		}
	}
	return nil, nil, fmt.Errorf("default model %q is not among its listed models", d.DefaultModel)
}

// Provider returns the provider with id, or nil.
func (c *Catalog) Provider(id string) *Provider { return c.providers[id] }

// Providers returns all providers in id order.
func (c *Catalog) Providers() []*Provider {
	out := make([]*Provider, 0, len(c.order))
	for _, id := range c.order {
		out = append(out, c.providers[id])
	}
	return out
}

// ResolveModel resolves "provider/model" or "provider" (its default model).
func (c *Catalog) ResolveModel(ref string) (*Provider, *sdk.Model, error) {
	pid, mid, _ := strings.Cut(ref, "/")
	return c.Resolve(pid, mid)
}

// Resolve resolves a provider id and model id ("" = default model). A
// provider with an sdk.AnyModel entry resolves an id it does not list to
// a copy of that entry carrying the id, which the plugin then validates;
// the copy goes through key scopes, credits and logs like a listed model,
// under the id the caller wrote.
func (c *Catalog) Resolve(providerID, modelID string) (*Provider, *sdk.Model, error) {
	p := c.providers[providerID]
	if p == nil {
		return nil, nil, problem.New(problem.UnknownProvider, "unknown provider %q (known: %s)", providerID, strings.Join(c.order, ", "))
	}
	if modelID == "" {
		modelID = p.Desc.DefaultModel
	}
	if m := p.models[modelID]; m != nil {
		return p, m, nil
	}
	if p.wildcard != nil && modelID != sdk.AnyModel {
		if !passThroughID(modelID) {
			return nil, nil, problem.New(problem.UnknownModel,
				"provider %s has no model %q: a model id it passes through is 1 to %d printable ASCII characters without spaces", providerID, modelID, maxPassThroughID)
		}
		m := *p.wildcard
		m.ID = modelID
		return p, &m, nil
	}
	ids := make([]string, 0, len(p.models))
	for id := range p.models {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return nil, nil, problem.New(problem.UnknownModel, "provider %s has no model %q (models: %s)", providerID, modelID, strings.Join(ids, ", "))
}

// maxPassThroughID bounds a passed-through model id, far above any real
// one, so that a caller cannot make it a large string.
const maxPassThroughID = 256

// passThroughID reports whether id may be passed through: the plugin
// judges whether it names a model, but the gateway echoes the id in a
// response header (X-Voxgate-Provider), logs, log rows and metrics, so it
// keeps to printable ASCII without spaces, as every model id is.
func passThroughID(id string) bool {
	if id == "" || len(id) > maxPassThroughID {
		return false
	}
	for i := range len(id) {
		if c := id[i]; c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

// Package speech turns a validated speech request into a provider call:
// it resolves the voice (saved or inline), applies the organization's
// provider policy and credentials, runs moderation, calls the plugin with
// the provider's timeout, applies pronunciations and whole-clip audio
// processing, and reports what happened for the request log.
//
// Around the provider call it also removes the audio tags a model does
// not perform (tags.go), cuts a text longer than the model accepts into
// pieces rendered concurrently and joined, or streamed in order
// (text.go, pieces.go, piecestream.go), times the words of models without
// timestamps by aligning their audio against eSpeak references or by
// speech-to-text (timing.go, stt.go, package align), and lays timestamps
// out as captions (captions.go).
package speech

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/sdk"
)

// ProviderEntry is a configured provider with its plugin and description.
type ProviderEntry struct {
	ID     string
	Name   string
	Plugin sdk.Provider
	Desc   *sdk.Description
	// Policy is how the gateway treats the provider (timeout, credits).
	Policy ProviderPolicy
	// Healthy reports whether the plugin has a live instance.
	Healthy func() bool
	models  map[string]*sdk.Model
}

// Model returns the model with id, or nil.
func (p *ProviderEntry) Model(id string) *sdk.Model { return p.models[id] }

// Catalog holds the providers the gateway serves, described by their
// plugins at start-up.
type Catalog struct {
	providers map[string]*ProviderEntry
	order     []string
}

// NewCatalog asks every plugin to describe itself. plugins maps provider id
// to its plugin; healthy reports liveness per id.
func NewCatalog(ctx context.Context, policies map[string]ProviderPolicy, plugins map[string]sdk.Provider, healthy func(id string) bool) (*Catalog, error) {
	c := &Catalog{providers: map[string]*ProviderEntry{}}
	for id, pl := range plugins {
		d, err := pl.Describe(ctx)
		if err != nil {
			return nil, fmt.Errorf("describe provider %s: %w", id, err)
		}
		if err := checkDescription(d); err != nil {
			return nil, fmt.Errorf("provider %s: %w", id, err)
		}
		p := &ProviderEntry{ID: id, Name: d.Name, Plugin: pl, Desc: d, Policy: policies[id], models: map[string]*sdk.Model{},
			Healthy: func() bool { return healthy(id) }}
		for i := range d.Models {
			p.models[d.Models[i].ID] = &d.Models[i]
		}
		c.providers[id] = p
		c.order = append(c.order, id)
	}
	sort.Strings(c.order)
	return c, nil
}

func checkDescription(d *sdk.Description) error {
	if d == nil || len(d.Models) == 0 {
		return fmt.Errorf("plugin describes no models")
	}
	for _, m := range d.Models {
		if m.ID == d.DefaultModel {
			return nil
		}
	}
	return fmt.Errorf("default model %q is not among its models", d.DefaultModel)
}

// Provider returns the provider with id, or nil.
func (c *Catalog) Provider(id string) *ProviderEntry { return c.providers[id] }

// Providers returns all providers in id order.
func (c *Catalog) Providers() []*ProviderEntry {
	out := make([]*ProviderEntry, 0, len(c.order))
	for _, id := range c.order {
		out = append(out, c.providers[id])
	}
	return out
}

// ResolveModel resolves "provider/model" or "provider" (its default model).
func (c *Catalog) ResolveModel(ref string) (*ProviderEntry, *sdk.Model, error) {
	pid, mid, _ := strings.Cut(ref, "/")
	return c.Resolve(pid, mid)
}

// Resolve resolves a provider id and model id ("" = default model).
func (c *Catalog) Resolve(providerID, modelID string) (*ProviderEntry, *sdk.Model, error) {
	p := c.providers[providerID]
	if p == nil {
		return nil, nil, problem.New(problem.UnknownProvider, "unknown provider %q (known: %s)", providerID, strings.Join(c.order, ", "))
	}
	if modelID == "" {
		modelID = p.Desc.DefaultModel
	}
	m := p.models[modelID]
	if m == nil {
		ids := make([]string, 0, len(p.models))
		for id := range p.models {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		return nil, nil, problem.New(problem.UnknownModel, "provider %s has no model %q (models: %s)", providerID, modelID, strings.Join(ids, ", "))
	}
	return p, m, nil
}

package catalog

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/sdk"
)

// describer is a plugin that only describes itself.
type describer struct {
	sdk.UnimplementedProvider
	desc *sdk.Description
}

func (d *describer) Describe(context.Context) (*sdk.Description, error) { return d.desc, nil }

func (d *describer) Synthesize(context.Context, *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	return nil, sdk.Errorf(sdk.KindUnsupported, "the catalog tests synthesize nothing")
}

// listed is a provider of two models and no wildcard.
func listed(id string) *sdk.Description {
	return &sdk.Description{ID: id, Name: id, DefaultModel: "one", Models: []sdk.Model{
		{ID: "one", OutputFormats: []string{sdk.FormatPCM}, Capabilities: sdk.Capabilities{Streaming: true}},
		{ID: "two", OutputFormats: []string{sdk.FormatMP3}},
	}}
}

// wildcard is listed(id) with an sdk.AnyModel entry, between the listed
// ones so that its position is not what keeps it apart.
func wildcard(id string) *sdk.Description {
	d := listed(id)
	wild := sdk.Model{ID: sdk.AnyModel, Name: "anything", OutputFormats: []string{sdk.FormatWAV, sdk.FormatMP3}, MaxTextChars: 1000}
	d.Models = []sdk.Model{d.Models[0], wild, d.Models[1]}
	return d
}

func testCatalog(t *testing.T, descs ...*sdk.Description) *Catalog {
	t.Helper()
	plugins := map[string]sdk.Provider{}
	for _, d := range descs {
		plugins[d.ID] = &describer{desc: d}
	}
	c, err := New(t.Context(), nil, plugins, func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCatalogResolve: a provider without an sdk.AnyModel entry resolves
// only its listed models; one with it also resolves any other id to a
// copy of the entry carrying that id, never the entry itself ("*"), and
// not an id the gateway could not echo safely.
func TestCatalogResolve(t *testing.T) {
	c := testCatalog(t, listed("plain"), wildcard("open"))
	tests := []struct {
		name, provider, model string
		wantID                string       // the resolved model's ID
		wantFormats           []string     // its output formats
		wantCode              problem.Code // "" means resolved
	}{
		{"listed", "plain", "two", "two", []string{sdk.FormatMP3}, ""},
		{"default", "plain", "", "one", []string{sdk.FormatPCM}, ""},
		{"unlisted without wildcard", "plain", "three", "", nil, problem.UnknownModel},
		{"wildcard id without wildcard", "plain", sdk.AnyModel, "", nil, problem.UnknownModel},
		{"unknown provider", "nobody", "one", "", nil, problem.UnknownProvider},
		{"listed with wildcard", "open", "two", "two", []string{sdk.FormatMP3}, ""},
		{"default with wildcard", "open", "", "one", []string{sdk.FormatPCM}, ""},
		{"passed through", "open", "vendor/app/v3", "vendor/app/v3", []string{sdk.FormatWAV, sdk.FormatMP3}, ""},
		{"the wildcard itself", "open", sdk.AnyModel, "", nil, problem.UnknownModel},
		{"space", "open", "vendor/a b", "", nil, problem.UnknownModel},
		{"newline", "open", "vendor/a\nX-Injected: 1", "", nil, problem.UnknownModel},
		{"not ASCII", "open", "vendor/ümlaut", "", nil, problem.UnknownModel},
		{"too long", "open", strings.Repeat("a", maxPassThroughID+1), "", nil, problem.UnknownModel},
		{"longest", "open", strings.Repeat("a", maxPassThroughID), strings.Repeat("a", maxPassThroughID), []string{sdk.FormatWAV, sdk.FormatMP3}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, m, err := c.Resolve(tt.provider, tt.model)
			if tt.wantCode != "" {
				var pe *problem.Error
				if !errors.As(err, &pe) || pe.Code != tt.wantCode {
					t.Fatalf("got %v, %v; want a %s problem", m, err, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.ID != tt.provider || m.ID != tt.wantID || strings.Join(m.OutputFormats, ",") != strings.Join(tt.wantFormats, ",") {
				t.Errorf("got %s/%s %v, want %s/%s %v", p.ID, m.ID, m.OutputFormats, tt.provider, tt.wantID, tt.wantFormats)
			}
		})
	}
}

// TestCatalogPassThroughCopies: each passed-through id is a copy of the
// wildcard with its own ID and the wildcard's other fields; resolving
// one changes neither the wildcard nor an earlier copy.
func TestCatalogPassThroughCopies(t *testing.T) {
	c := testCatalog(t, wildcard("open"))
	_, a, err := c.ResolveModel("open/vendor/a")
	if err != nil {
		t.Fatal(err)
	}
	_, b, err := c.ResolveModel("open/vendor/b")
	if err != nil {
		t.Fatal(err)
	}
	w := c.Provider("open").PassThrough()
	if a.ID != "vendor/a" || b.ID != "vendor/b" || w.ID != sdk.AnyModel || a.MaxTextChars != 1000 || a.Name != "anything" {
		t.Errorf("copies %+v %+v of %+v", a, b, w)
	}
	if c.Provider("open").Model("vendor/a") != nil {
		t.Error("Model finds a passed-through id: it is for the listed models")
	}
}

// TestCatalogListsNoWildcard: Desc.Models, which every listing iterates,
// holds only the listed models; the plugin's own description keeps its
// entry. A provider without one has no PassThrough.
func TestCatalogListsNoWildcard(t *testing.T) {
	open, plain := wildcard("open"), listed("plain")
	c := testCatalog(t, open, plain)
	var ids []string
	for _, m := range c.Provider("open").Desc.Models {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "one,two" {
		t.Errorf("listed models %v", ids)
	}
	if len(open.Models) != 3 || open.Models[1].ID != sdk.AnyModel {
		t.Errorf("the plugin's description was changed: %+v", open.Models)
	}
	if c.Provider("open").PassThrough() == nil || c.Provider("plain").PassThrough() != nil {
		t.Error("PassThrough does not say which provider has the wildcard")
	}
}

// TestCatalogRefusesBadWildcards: the default model must be a listed one,
// a description holds the wildcard at most once, and a wildcard alone
// lists nothing.
func TestCatalogRefusesBadWildcards(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(d *sdk.Description)
		want   string
	}{
		{"wildcard as default", func(d *sdk.Description) { d.DefaultModel = sdk.AnyModel }, "not among its listed models"},
		{"wildcard twice", func(d *sdk.Description) { d.Models = append(d.Models, d.Models[1]) }, "twice"},
		{"wildcard alone", func(d *sdk.Description) { d.Models = d.Models[1:2]; d.DefaultModel = sdk.AnyModel }, "describes no models"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := wildcard("open")
			tt.mutate(d)
			_, err := New(t.Context(), nil, map[string]sdk.Provider{"open": &describer{desc: d}}, func(string) bool { return true })
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

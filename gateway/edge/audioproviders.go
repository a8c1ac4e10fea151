package edge

import (
	"github.com/valyala/fasthttp"
)

// documentedProvider is one entry of GET /v1/audio/providers, the
// providers list in the hosted service's documented shape: the
// organization's flags at the top level and models as the prefixed
// strings a synthesis request takes. GET /v1/providers keeps voxgate's
// richer catalog entry.
type documentedProvider struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Enabled bool     `json:"enabled"`
	BYOK    bool     `json:"byok"`
	Managed bool     `json:"managed"`
	Models  []string `json:"models"`
}

// listAudioProviders serves GET /v1/audio/providers. byok is what the
// documentation defines it as: whether a key of the organization's own is
// stored (or configured) for the provider, so a client can tell which
// providers still need `PUT /v1/api-keys/{providerId}`.
func (s *Server) listAudioProviders(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	own, err := s.res.OwnKeys(c.ctx, c.p.OrgID)
	if err != nil {
		return err
	}
	out := struct {
		Data []documentedProvider `json:"data"`
	}{Data: []documentedProvider{}}
	for _, p := range s.catalog.Providers() {
		f := s.creds.Flags(c.p.OrgID, p.ID)
		e := documentedProvider{ID: p.ID, Name: p.Name, Enabled: f.Enabled, BYOK: own[p.ID], Managed: f.Managed, Models: make([]string, 0, len(p.Desc.Models))}
		for _, m := range p.Desc.Models {
			e.Models = append(e.Models, p.ID+"/"+m.ID)
		}
		out.Data = append(out.Data, e)
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, out)
}

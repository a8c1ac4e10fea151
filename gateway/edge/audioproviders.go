package edge

import (
	"github.com/valyala/fasthttp"
)

// listAudioProviders serves GET /v1/audio/providers. byok is what the
// documentation defines it as: whether a key of the organization's own is
// stored (or configured) for the provider, so a client can tell which
// providers still need `PUT /v1/api-keys/{providerId}`.
func (s *Server) listAudioProviders(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	own, err := c.live.Resources.OwnKeys(c.ctx, c.p.OrgID)
	if err != nil {
		return err
	}
	out := envelope[[]documentedProvider]{Data: []documentedProvider{}}
	for _, p := range c.live.Catalog.Providers() {
		f := c.live.Credentials.Flags(c.p.OrgID, p.ID)
		e := documentedProvider{ID: p.ID, Name: p.Name, Enabled: f.Enabled, BYOK: own[p.ID], Managed: f.Managed, Models: make([]string, 0, len(p.Desc.Models))}
		for _, m := range p.Desc.Models {
			e.Models = append(e.Models, p.ID+"/"+m.ID)
		}
		out.Data = append(out.Data, e)
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, out)
}

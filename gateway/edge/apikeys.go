package edge

import (
	"context"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/resources"
	"github.com/voxgate/voxgate/gateway/store"
)

// putProviderKey serves PUT /v1/api-keys/{providerId}: the caller's
// organization stores (or replaces) its own key for a provider, checked
// with a tiny synthesis first. The answer is {data: {providerId,
// lastFour, updatedAt}}; the key itself is never returned or logged.
func (s *Server) putProviderKey(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	var req putKeyRequest
	if err := s.decodeJSON(ctx, &req); err != nil {
		return err
	}
	provider, _ := ctx.UserValue("providerId").(string)
	cctx, cancel := context.WithTimeout(c.ctx, s.opts.RequestTimeout)
	defer cancel()
	k, err := c.live.Resources.PutProviderKey(cctx, c.p.OrgID, provider, req.KeyValue, time.Now().UTC())
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, envelope[providerKeyJSON]{providerKeyOut(k)})
}

// listProviderKeys serves GET /v1/api-keys: a cursor-paged list of the
// organization's stored provider keys, each shown by its last four
// characters only. Keys set in gateway.yaml are not listed (the API
// cannot replace or remove them).
func (s *Server) listProviderKeys(ctx *fasthttp.RequestCtx, c *exchange) error {
	q, limit, err := pageQuery(ctx)
	if err != nil {
		return err
	}
	return servePage(s, ctx, c, q, limit, "api-keys", func(after store.Position) ([]resources.ProviderKey, store.Position, bool, error) {
		return c.live.Resources.ListProviderKeys(c.ctx, c.p.OrgID, limit, after)
	}, providerKeyOut)
}

// deleteProviderKey serves DELETE /v1/api-keys/{providerId}: 204, or 404
// when the organization has no key stored for the provider.
func (s *Server) deleteProviderKey(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	provider, _ := ctx.UserValue("providerId").(string)
	if err := c.live.Resources.DeleteProviderKey(c.ctx, c.p.OrgID, provider); err != nil {
		return err
	}
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

package server

import (
	"context"
	"time"

	"github.com/valyala/fasthttp"
)

// putKeyRequest is the body of PUT /v1/api-keys/{providerId}.
type putKeyRequest struct {
	KeyValue string `json:"keyValue"`
}

// providerKeyJSON is what the API shows of a stored provider key.
type providerKeyJSON struct {
	ProviderID string    `json:"providerId"`
	LastFour   string    `json:"lastFour"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

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
	k, err := s.speech.PutProviderKey(cctx, c.p.OrgID, provider, req.KeyValue, time.Now().UTC())
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, struct {
		Data providerKeyJSON `json:"data"`
	}{providerKeyJSON{ProviderID: k.ProviderID, LastFour: k.LastFour, UpdatedAt: k.UpdatedAt}})
}

// deleteProviderKey serves DELETE /v1/api-keys/{providerId}: 204, or 404
// when the organization has no key stored for the provider.
func (s *Server) deleteProviderKey(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	provider, _ := ctx.UserValue("providerId").(string)
	if err := s.speech.DeleteProviderKey(c.ctx, c.p.OrgID, provider); err != nil {
		return err
	}
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

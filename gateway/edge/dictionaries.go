package edge

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/resources"
	"github.com/voxgate/voxgate/gateway/store"
)

// The pronunciation dictionary routes: CRUD for an organization's
// dictionaries and their rules. Answers are the bare resource, as the
// hosted service documents for its rules; lists are page envelopes.

func pathParam(ctx *fasthttp.RequestCtx, name string) string {
	v, _ := ctx.UserValue(name).(string)
	return v
}

func (s *Server) listDictionaries(ctx *fasthttp.RequestCtx, c *exchange) error {
	q, limit, err := pageQuery(ctx)
	if err != nil {
		return err
	}
	return servePage(s, ctx, c, q, limit, "dictionaries", func(after store.Position) ([]store.Dictionary, store.Position, bool, error) {
		return c.live.Resources.ListDictionaries(c.ctx, c.p.OrgID, limit, after)
	}, dictionaryOut)
}

func (s *Server) createDictionary(ctx *fasthttp.RequestCtx, c *exchange) error {
	if isPLSBody(ctx) {
		return s.importDictionary(ctx, c) // dictionaries_pls.go
	}
	var req dictionaryRequest
	if err := s.decodeJSON(ctx, &req); err != nil {
		return err
	}
	d, err := c.live.Resources.CreateDictionary(c.ctx, c.p.OrgID, resources.DictionarySpec(req), time.Now().UTC())
	if err != nil {
		return err
	}
	ctx.Response.Header.Set(fasthttp.HeaderLocation, "/v1/pronunciation-dictionaries/"+d.ID)
	return s.writeJSON(ctx, fasthttp.StatusCreated, dictionaryOut(d))
}

func (s *Server) getDictionary(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	if wantsPLS(ctx) {
		return s.exportDictionary(ctx, c) // dictionaries_pls.go
	}
	d, err := c.live.Resources.Dictionary(c.ctx, c.p.OrgID, pathParam(ctx, "id"))
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, dictionaryOut(d))
}

func (s *Server) updateDictionary(ctx *fasthttp.RequestCtx, c *exchange) error {
	var req dictionaryRequest
	if err := s.decodeJSON(ctx, &req); err != nil {
		return err
	}
	d, err := c.live.Resources.UpdateDictionary(c.ctx, c.p.OrgID, pathParam(ctx, "id"), resources.DictionarySpec(req), time.Now().UTC())
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, dictionaryOut(d))
}

func (s *Server) deleteDictionary(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	if err := c.live.Resources.DeleteDictionary(c.ctx, c.p.OrgID, pathParam(ctx, "id")); err != nil {
		return err
	}
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

func (s *Server) listRules(ctx *fasthttp.RequestCtx, c *exchange) error {
	q, limit, err := pageQuery(ctx)
	if err != nil {
		return err
	}
	d, err := c.live.Resources.Dictionary(c.ctx, c.p.OrgID, pathParam(ctx, "id"))
	if err != nil {
		return err
	}
	return servePage(s, ctx, c, q, limit, "rules|"+d.ID, func(after store.Position) ([]store.PronunciationRule, store.Position, bool, error) {
		return c.live.Resources.ListRules(c.ctx, c.p.OrgID, d.ID, limit, after)
	}, ruleOut)
}

func (s *Server) createRule(ctx *fasthttp.RequestCtx, c *exchange) error {
	var req ruleRequest
	if err := s.decodeJSON(ctx, &req); err != nil {
		return err
	}
	spec, err := req.spec()
	if err != nil {
		return err
	}
	r, err := c.live.Resources.CreateRule(c.ctx, c.p.OrgID, pathParam(ctx, "id"), spec, time.Now().UTC())
	if err != nil {
		return err
	}
	ctx.Response.Header.Set(fasthttp.HeaderLocation, "/v1/pronunciation-dictionaries/"+r.DictionaryID+"/rules/"+r.ID)
	return s.writeJSON(ctx, fasthttp.StatusCreated, ruleOut(r))
}

func (s *Server) getRule(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	r, err := c.live.Resources.Rule(c.ctx, c.p.OrgID, pathParam(ctx, "id"), pathParam(ctx, "ruleId"))
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, ruleOut(r))
}

func (s *Server) updateRule(ctx *fasthttp.RequestCtx, c *exchange) error {
	var req ruleRequest
	if err := s.decodeJSON(ctx, &req); err != nil {
		return err
	}
	spec, err := req.spec()
	if err != nil {
		return err
	}
	r, err := c.live.Resources.UpdateRule(c.ctx, c.p.OrgID, pathParam(ctx, "id"), pathParam(ctx, "ruleId"), spec, time.Now().UTC())
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, ruleOut(r))
}

func (s *Server) deleteRule(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	if err := c.live.Resources.DeleteRule(c.ctx, c.p.OrgID, pathParam(ctx, "id"), pathParam(ctx, "ruleId")); err != nil {
		return err
	}
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

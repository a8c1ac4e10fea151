package edge

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/resources"
	"github.com/voxgate/voxgate/gateway/store"
)

// The pronunciation dictionary routes: CRUD for an organization's
// dictionaries and their rules. Answers are the bare resource, as the
// hosted service documents for its rules; lists are page envelopes.

// dictionaryJSON is a pronunciation dictionary on the wire.
type dictionaryJSON struct {
	ID          string    `json:"id"`
	OrgID       string    `json:"org_id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	IsDefault   bool      `json:"is_default"`
	RuleCount   int       `json:"rule_count"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

func dictionaryOut(d *store.Dictionary) dictionaryJSON { return dictionaryJSON(*d) }

// ruleJSON is a pronunciation rule on the wire.
type ruleJSON struct {
	ID            string    `json:"id"`
	DictionaryID  string    `json:"dictionary_id"`
	Word          string    `json:"word"`
	Replacement   string    `json:"replacement"`
	CaseSensitive bool      `json:"case_sensitive"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

func ruleOut(r *store.PronunciationRule) ruleJSON {
	return ruleJSON{ID: r.ID, DictionaryID: r.DictionaryID, Word: r.Word, Replacement: r.Replacement,
		CaseSensitive: r.CaseSensitive, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// dictionaryRequest is the body of creating or changing a dictionary.
type dictionaryRequest struct {
	Name        *string `json:"name"`
	Description *string `json:"description"`
}

// ruleRequest is the body of creating or changing a rule. The resource
// says case_sensitive and a request's inline rules caseSensitive: both
// are taken.
type ruleRequest struct {
	Word              *string `json:"word"`
	Replacement       *string `json:"replacement"`
	CaseSensitive     *bool   `json:"case_sensitive"`
	CaseSensitiveAlso *bool   `json:"caseSensitive"`
}

func (r *ruleRequest) spec() (resources.RuleSpec, error) {
	cs := r.CaseSensitive
	if r.CaseSensitiveAlso != nil {
		if cs != nil && *cs != *r.CaseSensitiveAlso {
			return resources.RuleSpec{}, problem.Validation(problem.Field("give case_sensitive once (caseSensitive says otherwise)", "caseSensitive"))
		}
		cs = r.CaseSensitiveAlso
	}
	return resources.RuleSpec{Word: r.Word, Replacement: r.Replacement, CaseSensitive: cs}, nil
}

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
		return s.res.ListDictionaries(c.ctx, c.p.OrgID, limit, after)
	}, dictionaryOut)
}

func (s *Server) createDictionary(ctx *fasthttp.RequestCtx, c *exchange) error {
	var req dictionaryRequest
	if err := s.decodeJSON(ctx, &req); err != nil {
		return err
	}
	d, err := s.res.CreateDictionary(c.ctx, c.p.OrgID, resources.DictionarySpec(req), time.Now().UTC())
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
	d, err := s.res.Dictionary(c.ctx, c.p.OrgID, pathParam(ctx, "id"))
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
	d, err := s.res.UpdateDictionary(c.ctx, c.p.OrgID, pathParam(ctx, "id"), resources.DictionarySpec(req), time.Now().UTC())
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, dictionaryOut(d))
}

func (s *Server) deleteDictionary(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	if err := s.res.DeleteDictionary(c.ctx, c.p.OrgID, pathParam(ctx, "id")); err != nil {
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
	d, err := s.res.Dictionary(c.ctx, c.p.OrgID, pathParam(ctx, "id"))
	if err != nil {
		return err
	}
	return servePage(s, ctx, c, q, limit, "rules|"+d.ID, func(after store.Position) ([]store.PronunciationRule, store.Position, bool, error) {
		return s.res.ListRules(c.ctx, c.p.OrgID, d.ID, limit, after)
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
	r, err := s.res.CreateRule(c.ctx, c.p.OrgID, pathParam(ctx, "id"), spec, time.Now().UTC())
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
	r, err := s.res.Rule(c.ctx, c.p.OrgID, pathParam(ctx, "id"), pathParam(ctx, "ruleId"))
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
	r, err := s.res.UpdateRule(c.ctx, c.p.OrgID, pathParam(ctx, "id"), pathParam(ctx, "ruleId"), spec, time.Now().UTC())
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, ruleOut(r))
}

func (s *Server) deleteRule(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	if err := s.res.DeleteRule(c.ctx, c.p.OrgID, pathParam(ctx, "id"), pathParam(ctx, "ruleId")); err != nil {
		return err
	}
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

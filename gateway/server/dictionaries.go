package server

import (
	"errors"
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/speech"
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

func (r *ruleRequest) spec() (speech.RuleSpec, error) {
	cs := r.CaseSensitive
	if r.CaseSensitiveAlso != nil {
		if cs != nil && *cs != *r.CaseSensitiveAlso {
			return speech.RuleSpec{}, problem.Validation(problem.Field("give case_sensitive once (caseSensitive says otherwise)", "caseSensitive"))
		}
		cs = r.CaseSensitiveAlso
	}
	return speech.RuleSpec{Word: r.Word, Replacement: r.Replacement, CaseSensitive: cs}, nil
}

func pathParam(ctx *fasthttp.RequestCtx, name string) string {
	v, _ := ctx.UserValue(name).(string)
	return v
}

func (s *Server) listDictionaries(ctx *fasthttp.RequestCtx, c *exchange) error {
	q, err := parseQuery(ctx, "limit", "cursor")
	if err != nil {
		return err
	}
	limit, err := q.limit()
	if err != nil {
		return err
	}
	const scope = "dictionaries"
	after, err := s.decodeCursor(c, scope, q)
	if err != nil {
		return err
	}
	dicts, next, more, err := s.speech.ListDictionaries(c.ctx, c.p.OrgID, limit, after)
	if errors.Is(err, store.ErrInvalidPosition) {
		return problem.New(problem.InvalidCursor, "the cursor does not point into this list")
	}
	if err != nil {
		return fmt.Errorf("list dictionaries: %w", err)
	}
	out := page[dictionaryJSON]{Data: make([]dictionaryJSON, len(dicts)), HasMore: more, Limit: limit}
	for i := range dicts {
		out.Data[i] = dictionaryOut(&dicts[i])
	}
	if more {
		out.NextCursor = s.cursors.Encode(c.p.OrgID, scope, next)
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, out)
}

func (s *Server) createDictionary(ctx *fasthttp.RequestCtx, c *exchange) error {
	var req dictionaryRequest
	if err := s.decodeJSON(ctx, &req); err != nil {
		return err
	}
	d, err := s.speech.CreateDictionary(c.ctx, c.p.OrgID, speech.DictionarySpec(req), time.Now().UTC())
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
	d, err := s.speech.Dictionary(c.ctx, c.p.OrgID, pathParam(ctx, "id"))
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
	d, err := s.speech.UpdateDictionary(c.ctx, c.p.OrgID, pathParam(ctx, "id"), speech.DictionarySpec(req), time.Now().UTC())
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, dictionaryOut(d))
}

func (s *Server) deleteDictionary(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	if err := s.speech.DeleteDictionary(c.ctx, c.p.OrgID, pathParam(ctx, "id")); err != nil {
		return err
	}
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

func (s *Server) listRules(ctx *fasthttp.RequestCtx, c *exchange) error {
	q, err := parseQuery(ctx, "limit", "cursor")
	if err != nil {
		return err
	}
	limit, err := q.limit()
	if err != nil {
		return err
	}
	d, err := s.speech.Dictionary(c.ctx, c.p.OrgID, pathParam(ctx, "id"))
	if err != nil {
		return err
	}
	scope := "rules|" + d.ID
	after, err := s.decodeCursor(c, scope, q)
	if err != nil {
		return err
	}
	rules, next, more, err := s.speech.ListRules(c.ctx, c.p.OrgID, d.ID, limit, after)
	if errors.Is(err, store.ErrInvalidPosition) {
		return problem.New(problem.InvalidCursor, "the cursor does not point into this list")
	}
	if err != nil {
		return fmt.Errorf("list rules: %w", err)
	}
	out := page[ruleJSON]{Data: make([]ruleJSON, len(rules)), HasMore: more, Limit: limit}
	for i := range rules {
		out.Data[i] = ruleOut(&rules[i])
	}
	if more {
		out.NextCursor = s.cursors.Encode(c.p.OrgID, scope, next)
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, out)
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
	r, err := s.speech.CreateRule(c.ctx, c.p.OrgID, pathParam(ctx, "id"), spec, time.Now().UTC())
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
	r, err := s.speech.Rule(c.ctx, c.p.OrgID, pathParam(ctx, "id"), pathParam(ctx, "ruleId"))
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
	r, err := s.speech.UpdateRule(c.ctx, c.p.OrgID, pathParam(ctx, "id"), pathParam(ctx, "ruleId"), spec, time.Now().UTC())
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, ruleOut(r))
}

func (s *Server) deleteRule(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	if err := s.speech.DeleteRule(c.ctx, c.p.OrgID, pathParam(ctx, "id"), pathParam(ctx, "ruleId")); err != nil {
		return err
	}
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

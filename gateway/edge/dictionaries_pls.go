package edge

import (
	"bytes"
	"errors"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/resources"
	"github.com/voxgate/voxgate/gateway/speech"
)

// W3C PLS import and export of pronunciation dictionaries (issue 33):
// GET /v1/pronunciation-dictionaries/{id} with Accept: application/pls+xml
// answers the dictionary as a PLS document; POST
// /v1/pronunciation-dictionaries with Content-Type: application/pls+xml
// creates one from a PLS document, named by the name query parameter.

// wantsPLS reports whether the request's Accept header names PLS.
func wantsPLS(ctx *fasthttp.RequestCtx) bool {
	return bytes.Contains(ctx.Request.Header.Peek(fasthttp.HeaderAccept), []byte(speech.PLSMediaType))
}

// isPLSBody reports whether the request's body is declared PLS.
func isPLSBody(ctx *fasthttp.RequestCtx) bool {
	mt, _, _ := bytes.Cut(ctx.Request.Header.ContentType(), []byte(";"))
	mt = bytes.TrimSpace(mt)
	return bytes.EqualFold(mt, []byte(speech.PLSMediaType))
}

func (s *Server) exportDictionary(ctx *fasthttp.RequestCtx, c *exchange) error {
	d, rules, err := c.live.Resources.AllRules(c.ctx, c.p.OrgID, pathParam(ctx, "id"))
	if err != nil {
		return err
	}
	ctx.Response.Header.Set("Content-Disposition", `attachment; filename="`+strings.Map(safeFileRune, d.Name)+`.pls"`)
	ctx.SetContentType(speech.PLSMediaType + "; charset=utf-8")
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetBody(speech.ExportDictionaryPLS(rules, "en-US"))
	return nil
}

// safeFileRune keeps a file name's letters, digits, '-' and '_'.
func safeFileRune(r rune) rune {
	if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
		return r
	}
	return '_'
}

func (s *Server) importDictionary(ctx *fasthttp.RequestCtx, c *exchange) error {
	body := ctx.PostBody()
	if len(body) > speech.MaxPLSBytes {
		return problem.New(problem.PayloadTooLarge, "a PLS document may have at most %d bytes", speech.MaxPLSBytes)
	}
	name := string(ctx.QueryArgs().Peek("name"))
	if name == "" {
		return problem.Validation(problem.Field("is required: the new dictionary's name (?name=...)", "name"))
	}
	parsed, err := speech.ParsePLS(body)
	if err != nil {
		msg := err.Error()
		if errors.Is(err, speech.ErrPLSDoctype) {
			msg = speech.ErrPLSDoctype.Error() + "; entities are not expanded"
		}
		return problem.Validation(problem.Field(msg, "body"))
	}
	specs := make([]resources.RuleSpec, len(parsed))
	for i := range parsed {
		r := parsed[i]
		cs := false
		specs[i] = resources.RuleSpec{Word: &r.Word, Replacement: &r.Replacement, CaseSensitive: &cs, Kind: &r.Kind}
		if r.Kind == "phoneme" {
			specs[i].Alphabet, specs[i].Phoneme = &r.Alphabet, &r.Phoneme
		}
	}
	var desc *string
	if v := ctx.QueryArgs().Peek("description"); len(v) > 0 {
		d := string(v)
		desc = &d
	}
	d, err := c.live.Resources.ImportDictionary(c.ctx, c.p.OrgID, resources.DictionarySpec{Name: &name, Description: desc}, specs, time.Now().UTC())
	if err != nil {
		return err
	}
	ctx.Response.Header.Set(fasthttp.HeaderLocation, "/v1/pronunciation-dictionaries/"+d.ID)
	return s.writeJSON(ctx, fasthttp.StatusCreated, dictionaryOut(d))
}

package edge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/resources"
	"github.com/voxgate/voxgate/gateway/store"
)

// Limits of a saved voice's free-text fields.
const (
	maxTitleLen       = 200
	maxTags           = 50
	maxTagLen         = 64
	maxDescriptionLen = 2000
	maxGenderLen      = 32
	maxVoiceIDLen     = 256
	// maxCloneSamples bounds the samples of one clone, and with
	// limits.max_media_bytes the memory a clone request holds.
	maxCloneSamples = 5
)

func (r *createVoiceRequest) validate() []problem.FieldError {
	var fe []problem.FieldError
	str := func(v, name string, required bool, limit int) {
		switch {
		case required && strings.TrimSpace(v) == "":
			fe = append(fe, problem.Field("is required", name))
		case utf8.RuneCountInString(v) > limit:
			fe = append(fe, problem.Field(fmt.Sprintf("must be at most %d characters", limit), name))
		}
	}
	str(r.Title, "title", true, maxTitleLen)
	str(r.Provider, "provider", true, 64)
	str(r.Model, "model", true, 128)
	str(r.VoiceID, "voice_id", false, maxVoiceIDLen)
	str(r.Gender, "gender", false, maxGenderLen)
	str(r.Description, "description", false, maxDescriptionLen)
	if r.VoiceID == "" && r.MediaID == "" && len(r.MediaIDs) == 0 {
		fe = append(fe, problem.Field("give voice_id, or mediaId (or mediaIds) to clone a voice from uploaded audio", "voice_id"))
	}
	if r.MediaID != "" {
		if _, err := uuid.Parse(r.MediaID); err != nil {
			fe = append(fe, problem.Field("must be a media id (uuid)", "mediaId"))
		}
	}
	if len(r.samples()) > maxCloneSamples {
		fe = append(fe, problem.Field(fmt.Sprintf("at most %d samples per voice", maxCloneSamples), "mediaIds"))
	}
	if len(r.Fallbacks) > maxFallbacks {
		fe = append(fe, problem.Field(fmt.Sprintf("at most %d fallbacks", maxFallbacks), "fallbacks"))
	}
	for i, f := range r.Fallbacks {
		if f.Provider == "" || f.Model == "" || f.VoiceID == "" {
			fe = append(fe, problem.Field("needs provider, model and voice_id", "fallbacks", strconv.Itoa(i)))
		}
	}
	for i, id := range r.MediaIDs {
		if _, err := uuid.Parse(id); err != nil {
			fe = append(fe, problem.Field("must be a media id (uuid)", "mediaIds", strconv.Itoa(i)))
		}
	}
	if len(r.Tags) > maxTags {
		fe = append(fe, problem.Field(fmt.Sprintf("at most %d tags", maxTags), "tags"))
	}
	for i, t := range r.Tags {
		if strings.TrimSpace(t) == "" || utf8.RuneCountInString(t) > maxTagLen {
			fe = append(fe, problem.Field(fmt.Sprintf("tags must be 1 to %d characters", maxTagLen), "tags", strconv.Itoa(i)))
		}
	}
	return fe
}

// maxFallbacks bounds a saved voice's fallbacks.
const maxFallbacks = 5

// fallbacks are the request's fallbacks as the domain takes them.
func (r *createVoiceRequest) fallbacks() []store.VoiceTarget {
	out := make([]store.VoiceTarget, len(r.Fallbacks))
	for i, f := range r.Fallbacks {
		out[i] = store.VoiceTarget(f)
	}
	return out
}

// samples are the media ids to clone from, mediaId first, each once.
func (r *createVoiceRequest) samples() []string {
	var out []string
	for _, id := range append([]string{r.MediaID}, r.MediaIDs...) {
		if id != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

func (s *Server) createVoice(ctx *fasthttp.RequestCtx, c *exchange) error {
	var req createVoiceRequest
	if err := s.decodeJSON(ctx, &req); err != nil {
		return err
	}
	fe := req.validate()
	fe = append(fe, req.validateConsent(!s.orgProvenance(c.p.OrgID).ConsentOptional)...)
	if len(fe) > 0 {
		return problem.Validation(fe...)
	}
	cctx, cancel := context.WithTimeout(c.ctx, s.opts.RequestTimeout)
	defer cancel()
	v, err := c.live.Resources.CreateVoice(cctx, c.p.OrgID, resources.VoiceSpec{
		Title: strings.TrimSpace(req.Title), Provider: req.Provider, Model: req.Model, VoiceID: req.VoiceID,
		MediaIDs: req.samples(), Gender: req.Gender, Description: req.Description, Tags: req.Tags,
		ProviderOptions: req.ProviderOptions, CloneOptions: req.CloneOptions, Fallbacks: req.fallbacks(),
		Consent: req.consent(time.Now().UTC()),
	}, uuid.NewString(), time.Now().UTC())
	if err != nil {
		return err
	}
	ctx.Response.Header.Set(fasthttp.HeaderLocation, "/v1/voices/"+v.ID)
	return s.writeJSON(ctx, fasthttp.StatusCreated, envelope[voiceJSON]{voiceOut(v)})
}

func (s *Server) getVoice(ctx *fasthttp.RequestCtx, c *exchange) error {
	v, err := c.live.Resources.Voice(c.ctx, c.p.OrgID, pathID(ctx))
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, envelope[voiceJSON]{voiceOut(v)})
}

func (s *Server) deleteVoice(ctx *fasthttp.RequestCtx, c *exchange) error {
	if err := c.live.Resources.DeleteVoice(c.ctx, c.p.OrgID, pathID(ctx)); err != nil {
		return err
	}
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

func pathID(ctx *fasthttp.RequestCtx) string {
	id, _ := ctx.UserValue("id").(string)
	return id
}

func (s *Server) listVoices(ctx *fasthttp.RequestCtx, c *exchange) error {
	q, limit, err := pageQuery(ctx)
	if err != nil {
		return err
	}
	return servePage(s, ctx, c, q, limit, "voices", func(after store.Position) ([]store.Voice, store.Position, bool, error) {
		return c.live.Resources.ListVoices(c.ctx, c.p.OrgID, limit, after)
	}, voiceOut)
}

// pageQuery reads a plain list route's query: limit and cursor only.
func pageQuery(ctx *fasthttp.RequestCtx) (query, int, error) {
	q, err := parseQuery(ctx, "limit", "cursor")
	if err != nil {
		return q, 0, err
	}
	limit, err := q.limit()
	return q, limit, err
}

// servePage answers one page of a cursor-paged list of the caller's
// organization: the cursor (signed, bound to the org and scope) gives the
// position list starts after, render turns each record into its wire
// shape, and a next cursor is signed when more remain.
func servePage[R, J any](s *Server, ctx *fasthttp.RequestCtx, c *exchange, q query, limit int, scope string,
	list func(after store.Position) ([]R, store.Position, bool, error), render func(*R) J) error {
	after, err := s.decodeCursor(c, scope, q)
	if err != nil {
		return err
	}
	recs, next, more, err := list(after)
	if errors.Is(err, store.ErrInvalidPosition) {
		return problem.New(problem.InvalidCursor, "the cursor does not point into this list")
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", scope, err)
	}
	out := page[J]{Data: make([]J, len(recs)), HasMore: more, Limit: limit}
	for i := range recs {
		out.Data[i] = render(&recs[i])
	}
	if more {
		out.NextCursor = s.cursors.Encode(c.p.OrgID, scope, next)
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, out)
}

// Limits of a consent attestation's fields.
const (
	maxAttestedByLen = 200
	maxRelationLen   = 100
	maxStatementLen  = 2000
)

// validateConsent checks the consent attestation: required for a voice
// cloned from uploaded media when the organization requires one
// (orgs.<id>.provenance.consent), and whole when given.
func (r *createVoiceRequest) validateConsent(required bool) []problem.FieldError {
	c := r.Consent
	if c == nil {
		if required && len(r.samples()) > 0 {
			return []problem.FieldError{problem.Field("is required to clone a voice from uploaded media: who attests (attested_by), their relation to the speaker (relation) and what they attest (statement)", "consent")}
		}
		return nil
	}
	var fe []problem.FieldError
	for _, f := range []struct {
		v, name string
		limit   int
	}{{c.AttestedBy, "attested_by", maxAttestedByLen}, {c.Relation, "relation", maxRelationLen}, {c.Statement, "statement", maxStatementLen}} {
		switch {
		case strings.TrimSpace(f.v) == "":
			fe = append(fe, problem.Field("is required", "consent", f.name))
		case utf8.RuneCountInString(f.v) > f.limit:
			fe = append(fe, problem.Field(fmt.Sprintf("must be at most %d characters", f.limit), "consent", f.name))
		}
	}
	return fe
}

// consent is the request's attestation as stored, its time now when the
// client gave none.
func (r *createVoiceRequest) consent(now time.Time) *store.VoiceConsent {
	c := r.Consent
	if c == nil {
		return nil
	}
	at := c.Time.UTC()
	if c.Time.IsZero() {
		at = now
	}
	return &store.VoiceConsent{AttestedBy: strings.TrimSpace(c.AttestedBy), Relation: strings.TrimSpace(c.Relation),
		Statement: strings.TrimSpace(c.Statement), Time: at}
}

package edge

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/resources"
)

// validate checks the given fields against the bounds of a new voice's.
func (r *updateVoiceRequest) validate() []problem.FieldError {
	var fe []problem.FieldError
	str := func(v *string, name string, required bool, limit int) {
		switch {
		case v == nil:
		case required && strings.TrimSpace(*v) == "":
			fe = append(fe, problem.Field("must not be empty", name))
		case utf8.RuneCountInString(*v) > limit:
			fe = append(fe, problem.Field(fmt.Sprintf("must be at most %d characters", limit), name))
		}
	}
	str(r.Title, "title", true, maxTitleLen)
	str(r.Provider, "provider", true, 64)
	str(r.Model, "model", true, 128)
	str(r.VoiceID, "voice_id", true, maxVoiceIDLen)
	str(r.Gender, "gender", false, maxGenderLen)
	str(r.Description, "description", false, maxDescriptionLen)
	if r.Tags != nil {
		if len(*r.Tags) > maxTags {
			fe = append(fe, problem.Field(fmt.Sprintf("at most %d tags", maxTags), "tags"))
		}
		for i, t := range *r.Tags {
			if strings.TrimSpace(t) == "" || utf8.RuneCountInString(t) > maxTagLen {
				fe = append(fe, problem.Field(fmt.Sprintf("tags must be 1 to %d characters", maxTagLen), "tags", strconv.Itoa(i)))
			}
		}
	}
	return fe
}

// updateVoice serves PUT /v1/voices/{voiceId}: `{data: voice}`.
func (s *Server) updateVoice(ctx *fasthttp.RequestCtx, c *exchange) error {
	var req updateVoiceRequest
	if err := s.decodeJSON(ctx, &req); err != nil {
		return err
	}
	if fe := req.validate(); len(fe) > 0 {
		return problem.Validation(fe...)
	}
	if req.Title != nil {
		t := strings.TrimSpace(*req.Title)
		req.Title = &t
	}
	cctx, cancel := context.WithTimeout(c.ctx, s.opts.RequestTimeout)
	defer cancel()
	v, err := c.live.Resources.UpdateVoice(cctx, c.p.OrgID, pathID(ctx), resources.VoiceUpdate{
		Title: req.Title, Provider: req.Provider, Model: req.Model, VoiceID: req.VoiceID, Gender: req.Gender,
		Description: req.Description, Tags: req.Tags, ProviderOptions: req.ProviderOptions,
	}, time.Now().UTC())
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, envelope[voiceJSON]{voiceOut(v)})
}

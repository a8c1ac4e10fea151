package edge

import (
	"bytes"
	"encoding/base64"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/admission/auth"
	"github.com/voxgate/voxgate/gateway/admission/moderation"
	"github.com/voxgate/voxgate/gateway/edge/dialect"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/speech"
)

// The other APIs voxgate speaks (gateway/edge/dialect): OpenAI's speech body on
// POST /v1/audio/speech and its GET /v1/models, and ElevenLabs' API under
// /elevenlabs/v1. Handlers decode the dialect, run the same speech use
// cases as voxgate's own endpoints, and encode the dialect, errors
// included.

// dialectKind is the API a request speaks.
type dialectKind uint8

const (
	dialectVoxgate dialectKind = iota
	dialectOpenAI
	dialectElevenLabs
)

// elevenLabsPrefix is where the ElevenLabs dialect lives, apart from
// voxgate's own /v1 routes (its /v1/voices would collide).
const elevenLabsPrefix = "/elevenlabs"

// headerWarnings carries what a dialect request asked for that was
// dropped (instructions to a model that ignores them, ElevenLabs settings
// sent to another provider), where the answer is raw audio with no room
// for warnings.
const headerWarnings = "X-Voxgate-Warnings"

var headerXIAPIKey = []byte("xi-api-key")

// speechDialect tells an OpenAI body on POST /v1/audio/speech from
// voxgate's own by its `input` member (HasTopLevelKey: one pass, no
// allocation).
func speechDialect(ctx *fasthttp.RequestCtx) dialectKind {
	if dialect.HasTopLevelKey(ctx.PostBody(), "input") {
		return dialectOpenAI
	}
	return dialectVoxgate
}

// pathDialect answers unmatched requests under /elevenlabs in
// ElevenLabs' shape, all others in voxgate's.
func pathDialect(ctx *fasthttp.RequestCtx) dialectKind {
	if bytes.HasPrefix(ctx.Path(), []byte(elevenLabsPrefix+"/")) {
		return dialectElevenLabs
	}
	return dialectVoxgate
}

func openAIDialect(*fasthttp.RequestCtx) dialectKind     { return dialectOpenAI }
func elevenLabsDialect(*fasthttp.RequestCtx) dialectKind { return dialectElevenLabs }

// authenticate finds the request's API key: the Authorization header, or
// in the ElevenLabs dialect (and only there) its xi-api-key header.
func (s *Server) authenticate(ctx *fasthttp.RequestCtx, d dialectKind) (auth.Principal, bool) {
	p, st := s.checkKey(ctx, d)
	return p, st == auth.StatusOK
}

// checkKey is authenticate saying why a known key is refused (expired, or
// of a disabled organization), so that the answer can say so.
func (s *Server) checkKey(ctx *fasthttp.RequestCtx, d dialectKind) (auth.Principal, auth.Status) {
	if d == dialectElevenLabs {
		if key := ctx.Request.Header.PeekBytes(headerXIAPIKey); len(key) > 0 {
			return s.auth.CheckKey(bytes.TrimSpace(key))
		}
	}
	return s.auth.Check(ctx.Request.Header.Peek(fasthttp.HeaderAuthorization))
}

// writeRefusedIn answers a request whose key did not authenticate: 401
// for an unknown key (saying so when it expired), 403 org_disabled for a
// key of a disabled organization.
func (s *Server) writeRefusedIn(ctx *fasthttp.RequestCtx, d dialectKind, p auth.Principal, st auth.Status) {
	switch st {
	case auth.StatusExpired:
		ctx.Response.Header.Set(fasthttp.HeaderWWWAuthenticate, `Bearer realm="voxgate", error="invalid_token", error_description="the key expired"`)
		s.writeProblemIn(ctx, d, problem.New(problem.Unauthorized, "this API key expired at %s; ask for a new one", p.Scope.ExpiresAt.UTC().Format(time.RFC3339)))
	case auth.StatusOrgDisabled:
		s.writeProblemIn(ctx, d, problem.New(problem.OrgDisabled, "organization %q is disabled; its keys are refused until an administrator enables it", p.OrgID))
	default:
		s.writeUnauthorizedIn(ctx, d)
	}
}

// writeUnauthorizedIn answers a request without a valid key.
func (s *Server) writeUnauthorizedIn(ctx *fasthttp.RequestCtx, d dialectKind) {
	switch d {
	case dialectVoxgate:
		s.writeUnauthorized(ctx)
	case dialectElevenLabs:
		ctx.Response.Header.Set(fasthttp.HeaderWWWAuthenticate, `Bearer realm="voxgate"`)
		s.writeProblemIn(ctx, d, &problem.Error{Code: problem.Unauthorized, Detail: "send a valid API key as 'xi-api-key: <key>' or 'Authorization: Bearer <key>'"})
	default:
		ctx.Response.Header.Set(fasthttp.HeaderWWWAuthenticate, `Bearer realm="voxgate"`)
		s.writeProblemIn(ctx, d, &problem.Error{Code: problem.Unauthorized, Detail: "send a valid API key as 'Authorization: Bearer <key>'"})
	}
}

// writeProblemIn writes pe in the dialect's error shape, with the status
// voxgate uses for its code.
func (s *Server) writeProblemIn(ctx *fasthttp.RequestCtx, d dialectKind, pe *problem.Error) {
	var v any
	switch d {
	case dialectOpenAI:
		v = dialect.NewOpenAIError(pe)
	case dialectElevenLabs:
		v = dialect.NewElevenLabsError(pe)
	default:
		s.writeProblem(ctx, pe)
		return
	}
	setRetryHeaders(ctx, pe)
	_ = s.writeJSON(ctx, pe.Status(), v)
}

// writeDialectBlocked renders a moderation block in a dialect's shape.
func (s *Server) writeDialectBlocked(ctx *fasthttp.RequestCtx, d dialectKind, be *moderation.BlockedError, msg string) {
	reason := &dialect.Reason{Type: be.Verdict.ReasonType, Detail: be.Verdict.ReasonDetail}
	if d == dialectOpenAI {
		_ = s.writeJSON(ctx, be.Verdict.Status(), dialect.OpenAIError{Error: dialect.OpenAIErrorBody{
			Message: msg, Type: "invalid_request_error", Param: nil, Code: string(problem.ModerationBlocked), Reason: reason}})
		return
	}
	_ = s.writeJSON(ctx, be.Verdict.Status(), dialect.ElevenLabsError{Detail: dialect.ElevenLabsErrorDetail{
		Status: string(problem.ModerationBlocked), Message: msg, Reason: reason}})
}

// openAISpeech serves OpenAI's body on POST /v1/audio/speech: a whole
// clip in response_format, or with stream_format "sse" the provider's
// stream as speech.audio.delta events.
func (s *Server) openAISpeech(ctx *fasthttp.RequestCtx, c *exchange) {
	c.route = "speech.openai"
	ctx.SetUserValue(userValueRoute, c.route)
	var body dialect.OpenAISpeech
	if err := s.decodeSpeechJSON(ctx, &body); err != nil {
		s.failSpeech(ctx, c, err, &speech.Spoken{})
		return
	}
	req, ep, err := body.Speech(c.p.OrgID, c.live.Aliases, c.live.isProvider)
	if err != nil {
		s.failSpeech(ctx, c, err, &speech.Spoken{})
		return
	}
	s.speak(ctx, c, req, ep, func(res *speech.Result) { s.writeClip(ctx, speech.DeliverClip, res) }, true)
}

// listOpenAIModels serves GET /v1/models in OpenAI's list shape: every
// model of the providers enabled for the organization as
// "provider/model", and the model aliases.
func (s *Server) listOpenAIModels(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	out := dialect.OpenAIModelList{Object: "list", Data: []dialect.OpenAIModel{}}
	for _, p := range c.live.Catalog.Providers() {
		if !c.live.Credentials.Flags(c.p.OrgID, p.ID).Enabled {
			continue
		}
		for _, m := range p.Desc.Models {
			out.Data = append(out.Data, dialect.OpenAIModel{ID: p.ID + "/" + m.ID, Object: "model", OwnedBy: p.ID})
		}
	}
	for _, name := range c.live.Aliases.ModelNames(c.p.OrgID) {
		target, _ := c.live.Aliases.Model(c.p.OrgID, name)
		owner, _, _ := strings.Cut(target, "/")
		out.Data = append(out.Data, dialect.OpenAIModel{ID: name, Object: "model", OwnedBy: owner})
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, out)
}

// elevenLabsQuery are the query parameters ElevenLabs' text-to-speech
// endpoints take. output_format is voxgate's to honour; enable_logging
// (false: zero retention) and optimize_streaming_latency tune ElevenLabs'
// own service and reach it as providerOptions when the request goes
// there (see dialect.ElevenLabsSpeech.SetQuery).
var elevenLabsQuery = map[string]bool{"output_format": true, "enable_logging": true, "optimize_streaming_latency": true}

// elevenLabsSpeech serves ElevenLabs' text-to-speech/{voice_id} (a whole
// clip), its /stream and its /with-timestamps.
func (s *Server) elevenLabsSpeech(ep speech.Delivery) handlerFunc {
	return func(ctx *fasthttp.RequestCtx, c *exchange) error {
		var bad []problem.FieldError
		ctx.QueryArgs().VisitAll(func(k, _ []byte) {
			if !elevenLabsQuery[string(k)] {
				bad = append(bad, problem.Field("unknown query parameter", string(k)))
			}
		})
		if len(bad) > 0 {
			s.failSpeech(ctx, c, problem.Validation(bad...), &speech.Spoken{})
			return nil
		}
		var body dialect.ElevenLabsSpeech
		if err := s.decodeJSONLenient(ctx, &body); err != nil {
			s.failSpeech(ctx, c, err, &speech.Spoken{})
			return nil
		}
		q := ctx.QueryArgs()
		if err := body.SetQuery(string(q.Peek("enable_logging")), string(q.Peek("optimize_streaming_latency"))); err != nil {
			s.failSpeech(ctx, c, err, &speech.Spoken{})
			return nil
		}
		voiceID, _ := ctx.UserValue("voice_id").(string)
		req, err := body.Speech(c.p.OrgID, voiceID, string(ctx.QueryArgs().Peek("output_format")), ep, c.live.Aliases, c.live.isProvider)
		if err != nil {
			s.failSpeech(ctx, c, err, &speech.Spoken{})
			return nil
		}
		s.speak(ctx, c, req, ep, func(res *speech.Result) {
			if ep != speech.DeliverTimestamps {
				s.writeClip(ctx, ep, res)
				return
			}
			defer res.Release()
			a := dialect.CharacterAlignment(*body.Text, res.Timestamps)
			_ = s.writeJSON(ctx, fasthttp.StatusOK, dialect.WithTimestamps{
				AudioBase64: base64.StdEncoding.EncodeToString(res.Audio), Alignment: a, NormalizedAlignment: a,
			})
		}, false)
		return nil
	}
}

// maxElevenLabsVoices bounds the saved voices GET /elevenlabs/v1/voices
// lists: ElevenLabs' v1 list has no pages, and one answer must stay
// small.
const maxElevenLabsVoices = 200

// listElevenLabsVoices serves GET /elevenlabs/v1/voices: the voice
// aliases, then the organization's saved voices (newest first), each
// usable as a voice_id.
func (s *Server) listElevenLabsVoices(ctx *fasthttp.RequestCtx, c *exchange) error {
	out := dialect.ElevenLabsVoices{Voices: []dialect.ElevenLabsVoice{}}
	for _, name := range c.live.Aliases.VoiceNames(c.p.OrgID) {
		va, _ := c.live.Aliases.Voice(c.p.OrgID, name)
		labels := map[string]string{"alias": "true"}
		if va.Model != "" {
			labels["model"] = va.Model
		}
		if va.SavedVoice != "" {
			labels["saved_voice"] = va.SavedVoice
		}
		out.Voices = append(out.Voices, dialect.ElevenLabsVoice{VoiceID: name, Name: name, Category: "premade", Labels: labels})
	}
	voices, _, _, err := c.live.Resources.ListVoices(c.ctx, c.p.OrgID, maxElevenLabsVoices, nil)
	if err != nil {
		return err
	}
	for _, v := range voices {
		out.Voices = append(out.Voices, dialect.ElevenLabsVoice{
			VoiceID: v.ID, Name: v.Title, Category: "cloned", Description: v.Description,
			Labels: map[string]string{"provider": v.Provider, "model": v.Model, "gender": v.Gender},
		})
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, out)
}

// listElevenLabsModels serves GET /elevenlabs/v1/models: the models of
// the providers enabled for the organization, as "provider/model", and
// the model aliases.
func (s *Server) listElevenLabsModels(ctx *fasthttp.RequestCtx, c *exchange) error {
	out := []dialect.ElevenLabsModel{}
	for _, p := range c.live.Catalog.Providers() {
		if !c.live.Credentials.Flags(c.p.OrgID, p.ID).Enabled {
			continue
		}
		for _, m := range p.Desc.Models {
			limit := m.MaxTextChars
			if limit <= 0 {
				limit = s.opts.MaxTextChars
			}
			el := p.ID == dialect.ElevenLabsHome
			out = append(out, dialect.ElevenLabsModel{
				ModelID: p.ID + "/" + m.ID, Name: m.Name, CanDoTextToSpeech: true, CanUseStyle: el, CanUseSpeakerBoost: el,
				Description: p.Name + " " + m.Name, MaximumTextLengthPerRequest: limit,
			})
		}
	}
	for _, name := range c.live.Aliases.ModelNames(c.p.OrgID) {
		target, _ := c.live.Aliases.Model(c.p.OrgID, name)
		out = append(out, dialect.ElevenLabsModel{ModelID: name, Name: name, CanDoTextToSpeech: true, Description: "alias of " + target})
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, out)
}

package edge

import (
	"bytes"
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/admission/auth"
	"github.com/voxgate/voxgate/gateway/admission/moderation"
	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/edge/dialect"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
)

// The other APIs voxgate speaks (gateway/edge/dialect): OpenAI's speech body on
// POST /v1/audio/speech and its GET /v1/models and /v1/models/{model},
// and ElevenLabs' API under /elevenlabs (v1, and v2's voice search). Handlers decode the dialect, run the same speech use
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

// openAIPaths are paths of OpenAI's API that only its dialect uses:
// /v1/models and below, and the OpenAI endpoints voxgate does not serve,
// so that an OpenAI SDK sent there shows why (its error shape) instead
// of "(no body)".
var openAIPaths = [][]byte{
	[]byte("/v1/models"), []byte("/v1/audio/transcriptions"), []byte("/v1/audio/translations"),
	[]byte("/v1/chat/"), []byte("/v1/completions"), []byte("/v1/embeddings"), []byte("/v1/responses"),
	[]byte("/v1/moderations"), []byte("/v1/images/"), []byte("/v1/files"),
}

// pathDialect answers unmatched requests (no route, a method the route
// lacks, an unreadable body) under /elevenlabs in ElevenLabs' shape, on
// OpenAI's own paths (openAIPaths) in OpenAI's, all others in voxgate's.
func pathDialect(ctx *fasthttp.RequestCtx) dialectKind {
	p := ctx.Path()
	if bytes.HasPrefix(p, []byte(elevenLabsPrefix+"/")) {
		return dialectElevenLabs
	}
	for _, o := range openAIPaths {
		if bytes.HasPrefix(p, o) {
			return dialectOpenAI
		}
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
	// The connection remembers its last key: the next request with it
	// skips the key's hash and the table (auth.Memo).
	var memo *auth.Memo
	if lc, ok := ctx.Conn().(*limitedConn); ok {
		memo = &lc.memo
	}
	if d == dialectElevenLabs {
		if key := ctx.Request.Header.PeekBytes(headerXIAPIKey); len(key) > 0 {
			return s.auth.CheckKeyMemo(bytes.TrimSpace(key), memo)
		}
	}
	return s.auth.CheckMemo(ctx.Request.Header.Peek(fasthttp.HeaderAuthorization), memo)
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
	const route = "speech.openai"
	c.route = route
	setRoute(ctx, route)
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
	s.speak(ctx, c, req, ep, func(res *speech.Result) { s.writeClip(ctx, c, speech.DeliverClip, res) }, true)
}

// openAIModels are the models of GET /v1/models for org under live:
// every model of the providers enabled for it as "provider/model", and
// the model aliases.
func openAIModels(live *Live, org string) []dialect.OpenAIModel {
	out := []dialect.OpenAIModel{}
	for _, p := range live.Catalog.Providers() {
		if !live.Credentials.Flags(org, p.ID).Enabled {
			continue
		}
		for _, m := range p.Desc.Models {
			out = append(out, dialect.OpenAIModel{ID: p.ID + "/" + m.ID, Object: "model", OwnedBy: p.ID})
		}
	}
	for _, name := range live.Aliases.ModelNames(org) {
		target, _ := live.Aliases.Model(org, name)
		owner, _, _ := strings.Cut(target, "/")
		out = append(out, dialect.OpenAIModel{ID: name, Object: "model", OwnedBy: owner})
	}
	return out
}

// listOpenAIModels serves GET /v1/models in OpenAI's list shape.
func (s *Server) listOpenAIModels(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, dialect.OpenAIModelList{Object: "list", Data: openAIModels(c.live, c.p.OrgID)})
}

// getOpenAIModel serves GET /v1/models/{model}: one entry of the list.
// Model ids hold a slash ("espeak/espeak-ng"), which OpenAI's SDKs send
// escaped (%2F) and curl users write plainly: the route takes the rest
// of the path, unescaped.
func (s *Server) getOpenAIModel(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	id, _ := ctx.UserValue("model").(string)
	if u, err := url.PathUnescape(id); err == nil {
		id = u
	}
	for _, m := range openAIModels(c.live, c.p.OrgID) {
		if m.ID == id {
			return s.writeJSON(ctx, fasthttp.StatusOK, m)
		}
	}
	return problem.New(problem.NotFound, "the model %q does not exist: GET /v1/models lists the models of the providers enabled for the organization (provider/model) and the model aliases", id)
}

// elevenLabsQuery are the query parameters ElevenLabs' text-to-speech
// endpoints take. output_format is voxgate's to honour; enable_logging
// (false: zero retention) and optimize_streaming_latency tune ElevenLabs'
// own service and reach it as providerOptions when the request goes
// there (see dialect.ElevenLabsSpeech.SetQuery).
var elevenLabsQuery = map[string]bool{"output_format": true, "enable_logging": true, "optimize_streaming_latency": true}

// elevenLabsSpeech serves ElevenLabs' text-to-speech/{voice_id} (a whole
// clip), its /stream, its /with-timestamps and, with lines set, its
// /stream/with-timestamps (the timed clip as newline-ended JSON objects,
// dialect.AppendTimestampChunks).
func (s *Server) elevenLabsSpeech(ep speech.Delivery, lines bool) handlerFunc {
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
				s.writeClip(ctx, c, ep, res)
				return
			}
			defer res.Release()
			a := dialect.CharacterAlignment(*body.Text, res.Timestamps)
			if lines {
				s.writeTimestampLines(ctx, res, a)
				return
			}
			_ = s.writeJSON(ctx, fasthttp.StatusOK, dialect.WithTimestamps{
				AudioBase64: base64.StdEncoding.EncodeToString(res.Audio), Alignment: a, NormalizedAlignment: a,
			})
		}, false)
		return nil
	}
}

// writeTimestampLines answers /stream/with-timestamps: the timed clip
// cut into JSON objects, one a line, as ElevenLabs streams them. The
// providers' streams carry no timings, so the clip is rendered whole
// with its timings first; the objects then leave together.
func (s *Server) writeTimestampLines(ctx *fasthttp.RequestCtx, res *speech.Result, a *dialect.Alignment) {
	frame := 1
	if mt := res.MediaType; strings.HasPrefix(mt, "audio/pcm") || strings.HasPrefix(mt, "audio/wav") || strings.HasPrefix(mt, "audio/L16") {
		frame = 2 // 16-bit samples: a piece never ends inside one
	}
	secs := audio.Length(res.Audio, res.MediaType).Seconds()
	ctx.Response.Header.SetContentTypeBytes(contentJSON)
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.Response.SetBodyRaw(dialect.AppendTimestampChunks(nil, res.Audio, secs, frame, a))
}

// maxElevenLabsVoices bounds the saved voices GET /elevenlabs/v1/voices
// lists: ElevenLabs' v1 list has no pages, and one answer must stay
// small.
const maxElevenLabsVoices = 200

// maxSearchedVoices bounds the saved voices GET /elevenlabs/v2/voices
// searches. It filters and sorts in memory (the store pages by creation
// only), so a search reads the organization's voices up to this many,
// newest first.
const maxSearchedVoices = 5000

// elevenLabsVoices returns the voices of org as ElevenLabs describes
// them: the voice aliases, then up to limit saved voices, newest first.
func (s *Server) elevenLabsVoices(c *exchange, limit int) ([]dialect.ElevenLabsVoice, error) {
	var out []dialect.ElevenLabsVoice
	for _, name := range c.live.Aliases.VoiceNames(c.p.OrgID) {
		out = append(out, elevenLabsAlias(c.live, c.p.OrgID, name))
	}
	var after store.Position
	for n := 0; n < limit; {
		voices, next, more, err := c.live.Resources.ListVoices(c.ctx, c.p.OrgID, min(limit-n, maxElevenLabsVoices), after)
		if err != nil {
			return nil, err
		}
		for i := range voices {
			out = append(out, elevenLabsSaved(&voices[i]))
		}
		n += len(voices)
		if !more || len(voices) == 0 {
			break
		}
		after = next
	}
	return out, nil
}

// elevenLabsAlias describes voice alias name of org under live.
func elevenLabsAlias(live *Live, org, name string) dialect.ElevenLabsVoice {
	va, _ := live.Aliases.Voice(org, name)
	labels := map[string]string{"alias": "true"}
	if va.Model != "" {
		labels["model"] = va.Model
	}
	if va.SavedVoice != "" {
		labels["saved_voice"] = va.SavedVoice
	}
	return dialect.NewElevenLabsVoice(name, name, "", labels, false, 0)
}

// elevenLabsSaved describes a saved voice.
func elevenLabsSaved(v *store.Voice) dialect.ElevenLabsVoice {
	labels := map[string]string{"provider": v.Provider, "model": v.Model}
	if v.Gender != "" {
		labels["gender"] = v.Gender
	}
	return dialect.NewElevenLabsVoice(v.ID, v.Title, v.Description, labels, true, v.CreatedAt.Unix())
}

// listElevenLabsVoices serves GET /elevenlabs/v1/voices: the voice
// aliases, then the organization's saved voices (newest first), each
// usable as a voice_id. Its one parameter, show_legacy, changes nothing
// here: the gateway has no legacy voices.
func (s *Server) listElevenLabsVoices(ctx *fasthttp.RequestCtx, c *exchange) error {
	q, err := parseQuery(ctx, "show_legacy")
	if err != nil {
		return err
	}
	if v, ok := q["show_legacy"]; ok {
		if _, err := strconv.ParseBool(v); err != nil {
			return problem.Validation(problem.Field("must be true or false", "show_legacy"))
		}
	}
	voices, err := s.elevenLabsVoices(c, maxElevenLabsVoices)
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, dialect.ElevenLabsVoices{Voices: append([]dialect.ElevenLabsVoice{}, voices...)})
}

// searchElevenLabsVoices serves GET /elevenlabs/v2/voices: the voices of
// GET /v1/voices searched, filtered, sorted and paged as ElevenLabs'
// v2 list does (dialect.VoiceSearch).
func (s *Server) searchElevenLabsVoices(ctx *fasthttp.RequestCtx, c *exchange) error {
	q := map[string][]string{}
	ctx.QueryArgs().VisitAll(func(k, v []byte) { q[string(k)] = append(q[string(k)], string(v)) })
	search, err := dialect.ParseVoiceSearch(q)
	if err != nil {
		return err
	}
	voices, err := s.elevenLabsVoices(c, maxSearchedVoices)
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, search.Page(voices))
}

// getElevenLabsVoice serves GET /elevenlabs/v1/voices/{voice_id}: a voice
// alias by name, or a saved voice by id. with_settings is deprecated
// and ignored, as at ElevenLabs.
func (s *Server) getElevenLabsVoice(ctx *fasthttp.RequestCtx, c *exchange) error {
	q, err := parseQuery(ctx, "with_settings")
	if err != nil {
		return err
	}
	if v, ok := q["with_settings"]; ok {
		if _, err := strconv.ParseBool(v); err != nil {
			return problem.Validation(problem.Field("must be true or false", "with_settings"))
		}
	}
	id, _ := ctx.UserValue("voice_id").(string)
	if _, ok := c.live.Aliases.Voice(c.p.OrgID, id); ok {
		return s.writeJSON(ctx, fasthttp.StatusOK, elevenLabsAlias(c.live, c.p.OrgID, id))
	}
	if _, perr := uuid.Parse(id); perr == nil {
		v, err := c.live.Resources.Voice(c.ctx, c.p.OrgID, id)
		if err != nil {
			return err
		}
		return s.writeJSON(ctx, fasthttp.StatusOK, elevenLabsSaved(v))
	}
	return problem.New(problem.VoiceNotFound, "no voice %q: the gateway describes its voice aliases and the organization's saved voices (GET /v2/voices lists them); a provider's own voice id still works in text-to-speech", id)
}

// listElevenLabsModels serves GET /elevenlabs/v1/models: the models of
// the providers enabled for the organization, as "provider/model", and
// the model aliases.
func (s *Server) listElevenLabsModels(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
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
			out = append(out, dialect.NewElevenLabsModel(p.ID+"/"+m.ID, m.Name, p.Name+" "+m.Name, limit, p.ID == dialect.ElevenLabsHome))
		}
	}
	for _, name := range c.live.Aliases.ModelNames(c.p.OrgID) {
		target, _ := c.live.Aliases.Model(c.p.OrgID, name)
		out = append(out, dialect.NewElevenLabsModel(name, name, "alias of "+target, s.opts.MaxTextChars, false))
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, out)
}

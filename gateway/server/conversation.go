package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
)

// conversationEnvelope is the with-timestamps conversation response.
type conversationEnvelope struct {
	Audio            string                         `json:"audio"`
	MediaType        string                         `json:"mediaType"`
	Timestamps       []speech.ConversationTimestamp `json:"timestamps"`
	Warnings         []string                       `json:"warnings"`
	ProviderMetadata map[string]any                 `json:"providerMetadata"`
	AudioSegments    []segmentJSON                  `json:"audioSegments,omitempty"`
	FailedTurns      []failedTurn                   `json:"failedTurns,omitempty"`
}

type segmentJSON struct {
	TurnIndex  int         `json:"turnIndex"`
	Audio      string      `json:"audio"`
	MediaType  string      `json:"mediaType"`
	Timestamps []timestamp `json:"timestamps"`
}

// failedTurn names a turn that did not render and why, as a problem object.
type failedTurn struct {
	TurnIndex int             `json:"turnIndex"`
	Error     json.RawMessage `json:"error"`
}

// conversationHandler serves POST /v1/audio/conversation and its
// with-timestamps twin.
func (s *Server) conversationHandler(timestamps bool) handlerFunc {
	return func(ctx *fasthttp.RequestCtx, c *call) error {
		var req speech.ConversationRequest
		var jobs []*speech.Job
		var res *speech.ConversationResult
		err := s.decodeJSON(ctx, &req)
		if err == nil {
			rctx, cancel := context.WithTimeout(context.Background(), s.cfg.Server.RequestTimeout.D())
			defer cancel()
			jobs, err = s.speech.PrepareConversation(rctx, c.p.OrgID, &req, timestamps)
			if err == nil {
				res, err = s.speech.RenderConversation(rctx, &req, jobs, timestamps)
			}
		}
		var parent store.LogRow
		if err != nil {
			pe := s.writeError(ctx, c, err, "")
			parent.ErrorCode, parent.ErrorDetail = string(pe.Code), pe.Detail
		} else {
			s.writeConversation(ctx, &req, res, timestamps)
		}
		if len(jobs) > 0 {
			parent.Provider, parent.Model = speech.ProviderSummary(jobs)
			parent.CharCount = speech.Chars(jobs)
		}
		if res != nil {
			s.recordTurns(ctx, c, res, &parent)
		}
		s.record(ctx, c, parent)
		return nil
	}
}

func (s *Server) writeConversation(ctx *fasthttp.RequestCtx, req *speech.ConversationRequest, res *speech.ConversationResult, timestamps bool) {
	var failed []failedTurn
	var failedIdx []string
	for _, t := range res.Turns {
		if t.Err != nil {
			pe := s.turnProblem(t)
			failed = append(failed, failedTurn{TurnIndex: t.Index, Error: pe.AppendJSON(nil)})
			failedIdx = append(failedIdx, strconv.Itoa(t.Index))
		}
	}
	if !timestamps {
		if len(failedIdx) > 0 {
			ctx.Response.Header.Set("X-Voxgate-Failed-Turns", strings.Join(failedIdx, ","))
		}
		ctx.Response.Header.SetContentType(res.MediaType)
		ctx.SetStatusCode(fasthttp.StatusOK)
		ctx.Response.SetBodyRaw(res.Audio)
		return
	}
	env := conversationEnvelope{
		Audio:            base64.StdEncoding.EncodeToString(res.Audio),
		MediaType:        res.MediaType,
		Timestamps:       res.Timestamps,
		Warnings:         nonNil(res.Warnings),
		ProviderMetadata: metadata(res),
	}
	if env.Timestamps == nil {
		env.Timestamps = []speech.ConversationTimestamp{}
	}
	for i := range env.Timestamps {
		env.Timestamps[i].Start, env.Timestamps[i].End = round3(env.Timestamps[i].Start), round3(env.Timestamps[i].End)
	}
	if req.Split {
		env.AudioSegments = make([]segmentJSON, 0, len(res.Segments))
		for _, seg := range res.Segments {
			env.AudioSegments = append(env.AudioSegments, segmentJSON{TurnIndex: seg.TurnIndex, Audio: base64.StdEncoding.EncodeToString(seg.Audio),
				MediaType: seg.MediaType, Timestamps: wireTimestamps(seg.Timestamps)})
		}
		env.FailedTurns = failed
		if env.FailedTurns == nil {
			env.FailedTurns = []failedTurn{}
		}
	}
	_ = s.writeJSON(ctx, fasthttp.StatusOK, env)
}

// metadata describes how each turn was rendered.
func metadata(res *speech.ConversationResult) map[string]any {
	turns := make([]map[string]any, 0, len(res.Turns))
	for _, t := range res.Turns {
		if t.Job == nil || t.Err != nil {
			continue
		}
		turns = append(turns, map[string]any{
			"turnIndex": t.Index, "provider": t.Job.Provider.ID, "model": t.Job.Model.ID, "voice": t.Job.Voice,
			"start": round3(res.Offsets[t.Index]), "duration": round3(t.Clip.Seconds()),
		})
	}
	return map[string]any{"voxgate": map[string]any{"turns": turns}}
}

// turnProblem is the problem object of a failed turn; a moderation block
// becomes a 422 problem with the envelope's code.
func (s *Server) turnProblem(t *speech.TurnResult) *problem.Error {
	if be, ok := isBlocked(t.Err); ok {
		pe := &problem.Error{Code: problem.ModerationBlocked, Detail: be.Verdict.ReasonType + ": " + be.Verdict.ReasonDetail}
		return pe.WithTurn(t.Index)
	}
	provider := ""
	if t.Job != nil {
		provider = t.Job.Provider.ID
	}
	return problem.From(t.Err, provider).WithTurn(t.Index)
}

// recordTurns writes one child log row per turn and totals the credits of
// the turns that rendered into the parent row.
func (s *Server) recordTurns(ctx *fasthttp.RequestCtx, c *call, res *speech.ConversationResult, parent *store.LogRow) {
	for _, t := range res.Turns {
		if t.Job == nil {
			continue
		}
		row := s.speech.LogRow(t.Job)
		row.RequestID = uuid.NewString()
		row.ParentRequestID = c.reqID
		row.LatencyMS = t.Latency.Milliseconds()
		row.Status = fasthttp.StatusOK
		switch {
		case t.Err == nil:
			parent.CreditsUsed += row.CreditsUsed
		default:
			row.CreditsUsed = 0
			pe := s.turnProblem(t)
			row.Status, row.ErrorCode, row.ErrorDetail = pe.Status(), string(pe.Code), pe.Detail
			if be, ok := isBlocked(t.Err); ok {
				row.Status = be.Verdict.Status()
			}
		}
		s.record(ctx, c, row)
	}
}

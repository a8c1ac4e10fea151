package edge

import (
	"context"
	"encoding/base64"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
)

// conversationHandler serves POST /v1/audio/conversation and its
// with-timestamps twin: decode, Converse, encode, record the rows.
func (s *Server) conversationHandler(timestamps bool) handlerFunc {
	return func(ctx *fasthttp.RequestCtx, c *exchange) error {
		var body conversationRequestJSON
		out := &speech.Conversed{}
		err := s.decodeJSON(ctx, &body)
		var req *speech.ConversationRequest
		if err == nil {
			req, err = body.domain()
		}
		if err == nil {
			req.NoCache = noCache(ctx)
			rctx, cancel := context.WithTimeout(c.ctx, s.opts.RequestTimeout)
			defer cancel()
			out, err = c.live.Speech.Converse(rctx, c.p.OrgID, req, timestamps)
			c.charge = out.Charge
		}
		parent := out.Row
		if err != nil {
			pe := s.writeError(ctx, c, err, "")
			parent.ErrorCode, parent.ErrorDetail = string(pe.Code), pe.Detail
		} else {
			parent.AudioMS = audio.Length(out.Result.Audio, out.Result.MediaType).Milliseconds()
			c.seal = s.markConversation(ctx, c, &parent, out.Result, req.Split && !timestamps)
			s.writeConversation(ctx, req, out.Result, timestamps)
		}
		for _, row := range out.Turns {
			row.RequestID = store.NewRequestID()
			row.ParentRequestID = c.reqID
			s.record(ctx, c, row)
		}
		s.recordSealed(ctx, c, parent, c.seal)
		return nil
	}
}

// conversationStream serves POST /v1/audio/conversation/stream: the
// conversation's audio sent turn by turn as each is done, so a long
// conversation shows progress and a request that runs out of time has
// delivered every turn it finished.
func (s *Server) conversationStream(ctx *fasthttp.RequestCtx, c *exchange) error {
	var body conversationRequestJSON
	err := s.decodeJSON(ctx, &body)
	var req *speech.ConversationRequest
	if err == nil {
		req, err = body.domain()
	}
	if err != nil {
		pe := s.writeError(ctx, c, err, "")
		s.record(ctx, c, store.LogRow{ErrorCode: string(pe.Code), ErrorDetail: pe.Detail})
		return nil
	}
	rctx, cancel := context.WithTimeout(c.ctx, s.opts.RequestTimeout)
	req.NoCache = noCache(ctx)
	out, err := c.live.Speech.ConverseStream(rctx, c.p.OrgID, req)
	c.charge = out.Charge
	var first []byte
	if err == nil {
		// The first turn decides between a problem response and a stream.
		if first, err = out.Stream.Next(); err != nil {
			_ = out.Stream.Close()
			out.Row, out.Turns = out.Stream.Rows()
		}
	}
	if err != nil {
		cancel()
		pe := s.writeError(ctx, c, err, "")
		for _, row := range out.Turns {
			row.RequestID = store.NewRequestID()
			row.ParentRequestID = c.reqID
			s.record(ctx, c, row)
		}
		parent := out.Row
		parent.CreditsUsed, parent.Cost = 0, 0
		parent.ErrorCode, parent.ErrorDetail = string(pe.Code), pe.Detail
		s.record(ctx, c, parent)
		return nil
	}
	first, ps := s.markFirst(ctx, c, out.Row.Provider, out.Row.Model, first, out.Stream.MediaType(), false, false)
	s.relay(ctx, c, cancel, "", out.Row, out.Stream, first, false, -1).prov = ps
	return nil
}

func (s *Server) writeConversation(ctx *fasthttp.RequestCtx, req *speech.ConversationRequest, res *speech.ConversationResult, timestamps bool) {
	if res.Conversion != nil {
		ctx.Response.Header.Set(headerTranscoded, res.Conversion.String())
	}
	var failed []failedTurn
	for _, t := range res.Turns {
		if t.Err != nil {
			pe := speech.TurnProblem(t)
			failed = append(failed, failedTurn{TurnIndex: t.Index, Error: pe.AppendJSON(nil)})
		}
	}
	if !timestamps && req.Split {
		// The documented split answer: one segment per rendered turn.
		env := splitEnvelope{AudioSegments: make([]plainSegmentJSON, 0, len(res.Segments)), Warnings: nonNil(res.Warnings), FailedTurns: failed}
		for _, seg := range res.Segments {
			env.AudioSegments = append(env.AudioSegments, plainSegmentJSON{TurnIndex: seg.TurnIndex, Audio: base64.StdEncoding.EncodeToString(seg.Audio),
				MediaType: seg.MediaType, DurationMs: seg.DurationMS})
		}
		if env.FailedTurns == nil {
			env.FailedTurns = []failedTurn{}
		}
		_ = s.writeJSON(ctx, fasthttp.StatusOK, env)
		return
	}
	if !timestamps {
		// Without split a failed turn failed the whole request: every
		// turn is in the clip.
		ctx.Response.Header.SetContentType(res.MediaType)
		ctx.SetStatusCode(fasthttp.StatusOK)
		ctx.Response.SetBodyRaw(res.Audio)
		return
	}
	env := conversationEnvelope{
		Audio:            base64.StdEncoding.EncodeToString(res.Audio),
		MediaType:        res.MediaType,
		Timestamps:       make([]conversationTimestamp, len(res.Timestamps)),
		Warnings:         nonNil(res.Warnings),
		ProviderMetadata: metadata(res),
		Captions:         res.Captions,
	}
	for i, w := range res.Timestamps {
		env.Timestamps[i] = conversationTimestamp{Text: w.Text, Start: round3(w.Start), End: round3(w.End), TurnIndex: w.TurnIndex}
	}
	if req.Split {
		env.AudioSegments = make([]segmentJSON, 0, len(res.Segments))
		for _, seg := range res.Segments {
			env.AudioSegments = append(env.AudioSegments, segmentJSON{TurnIndex: seg.TurnIndex, Audio: base64.StdEncoding.EncodeToString(seg.Audio),
				MediaType: seg.MediaType, DurationMs: seg.DurationMS, Timestamps: wireTimestamps(seg.Timestamps)})
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
	sources := map[string]bool{}
	for _, t := range res.Turns {
		if t.Job == nil || t.Err != nil {
			continue
		}
		turn := timingMetadata(t.Result)
		for k, v := range map[string]any{
			"turnIndex": t.Index, "provider": t.Job.Provider.ID, "model": t.Job.Model.ID, "voice": t.Job.Voice,
			"start": round3(res.Offsets[t.Index]), "duration": round3(t.Clip.Seconds()),
		} {
			turn[k] = v
		}
		turns = append(turns, turn)
		sources[t.Result.Source] = true
	}
	meta := map[string]any{"turns": turns}
	// One source for the whole conversation when every turn agrees;
	// otherwise each turn says its own.
	if len(sources) == 1 {
		for src := range sources {
			if src != "" {
				meta["timestamps_source"] = src
			}
		}
	} else if len(sources) > 1 {
		meta["timestamps_source"] = "mixed"
	}
	return map[string]any{"voxgate": meta}
}

// markConversation marks a conversation's audio where its format allows
// (the whole clip; with split, each segment) and returns the seal of its
// signed record, the parent row's: its hash is of the audio the answer
// carries (split: the segments' bytes one after another, in order).
func (s *Server) markConversation(ctx *fasthttp.RequestCtx, c *exchange, parent *store.LogRow, res *speech.ConversationResult, split bool) *seal {
	ps := s.newProvState(c, res.MediaType)
	if ps == nil {
		return nil
	}
	if split {
		for i := range res.Segments {
			seg := &res.Segments[i]
			if seg.MediaType != "" {
				ps.mediaType = seg.MediaType
			}
			seg.Audio = s.markInto(c, ps, parent.Provider, parent.Model, seg.Audio, true, false)
			ps.write(seg.Audio)
		}
		ctx.Response.Header.Set(headerMark, ps.how)
		return s.newSeal(c, ps, true)
	}
	res.Audio = s.markInto(c, ps, parent.Provider, parent.Model, res.Audio, true, false)
	ctx.Response.Header.Set(headerMark, ps.how)
	sl := s.newSeal(c, ps, true)
	if sl != nil {
		sl.audio = res.Audio // hashed by the seal, off the request path
	}
	return sl
}

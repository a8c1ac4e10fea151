package server

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/moderation"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/sdk"
)

// timestamp is a word timing on the wire.
type timestamp struct {
	Text  string  `json:"text"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

// timestampsEnvelope is the with-timestamps response.
type timestampsEnvelope struct {
	Audio      string      `json:"audio"`
	MediaType  string      `json:"mediaType"`
	Timestamps []timestamp `json:"timestamps"`
	Warnings   []string    `json:"warnings"`
}

func wireTimestamps(ts []sdk.WordTimestamp) []timestamp {
	out := make([]timestamp, len(ts))
	for i, t := range ts {
		out[i] = timestamp{Text: t.Text, Start: round3(t.Start), End: round3(t.End)}
	}
	return out
}

// round3 rounds seconds to milliseconds: providers report sample-accurate
// floats, and clients compare against millisecond clocks.
func round3(f float64) float64 {
	return float64(int64(f*1000+0.5)) / 1000
}

// speechHandler serves one of the speech endpoints. It writes its own
// error responses so that the log row sees the final status.
func (s *Server) speechHandler(ep speech.Endpoint) handlerFunc {
	return func(ctx *fasthttp.RequestCtx, c *call) error {
		var job *speech.Job
		streaming, err := s.runSpeech(ctx, c, ep, &job)
		if streaming {
			return nil // the stream writer records the row when it ends
		}
		var row store.LogRow
		if job != nil {
			row = s.speech.LogRow(job)
		}
		if err != nil {
			pe := s.writeError(ctx, c, err, providerOf(job))
			row.ErrorDetail = pe.Detail
			row.ErrorCode = string(pe.Code)
		}
		s.record(ctx, c, row)
		return nil
	}
}

func providerOf(j *speech.Job) string {
	if j == nil {
		return ""
	}
	return j.Provider.ID
}

// runSpeech decodes, prepares, moderates and runs a speech request. It
// reports streaming=true when a stream writer took over the response.
func (s *Server) runSpeech(ctx *fasthttp.RequestCtx, c *call, ep speech.Endpoint, jobOut **speech.Job) (streaming bool, err error) {
	var req speech.Request
	if err := s.decodeJSON(ctx, &req); err != nil {
		return false, err
	}
	rctx, cancel := context.WithTimeout(context.Background(), s.cfg.Server.RequestTimeout.D())
	defer func() {
		if !streaming {
			cancel()
		}
	}()
	job, err := s.speech.Prepare(rctx, c.p.OrgID, &req, ep)
	if err != nil {
		return false, err
	}
	*jobOut = job
	if err := s.speech.Moderate(rctx, job); err != nil {
		return false, err
	}
	if ep == speech.EndpointStream {
		return s.stream(ctx, c, rctx, cancel, job)
	}
	res, err := s.speech.Synthesize(rctx, job)
	if err != nil {
		return false, err
	}
	if ep == speech.EndpointTimestamps {
		return false, s.writeJSON(ctx, fasthttp.StatusOK, timestampsEnvelope{
			Audio:      base64.StdEncoding.EncodeToString(res.Audio),
			MediaType:  res.MediaType,
			Timestamps: wireTimestamps(res.Timestamps),
			Warnings:   nonNil(res.Warnings),
		})
	}
	ctx.Response.Header.SetContentType(res.MediaType)
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.Response.SetBodyRaw(res.Audio) // the clip is ours; no copy
	return false, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// stream relays provider chunks to the client as they arrive. It waits for
// the first chunk before committing the response, so that a provider that
// fails at once still gets a proper problem response.
//
// Hot path: one channel hop and one flush per chunk; chunks are written
// straight from the plugin's buffers.
func (s *Server) stream(ctx *fasthttp.RequestCtx, c *call, sctx context.Context, cancel context.CancelFunc, job *speech.Job) (bool, error) {
	chunks := make(chan sdk.Chunk, 8)
	errc := make(chan error, 1)
	go func() {
		defer close(chunks)
		errc <- s.speech.Stream(sctx, job, func(ch sdk.Chunk) error {
			select {
			case chunks <- ch:
				return nil
			case <-sctx.Done():
				return sctx.Err()
			}
		})
	}()
	first, ok := <-chunks
	if !ok {
		cancel()
		err := <-errc
		if err == nil {
			err = &sdk.Error{Kind: sdk.KindUpstream, Message: "the provider returned an empty stream"}
		}
		return false, err
	}
	mediaType := first.MediaType
	if mediaType == "" {
		mediaType = "application/octet-stream"
	}
	ctx.Response.Header.SetContentType(mediaType)
	ctx.Response.Header.Set("X-Content-Type-Options", "nosniff")
	ctx.SetStatusCode(fasthttp.StatusOK)
	row := s.speech.LogRow(job)
	row.Status = fasthttp.StatusOK
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		defer cancel()
		var werr error
		write := func(b []byte) {
			if werr != nil {
				return
			}
			if _, werr = w.Write(b); werr == nil {
				werr = w.Flush()
			}
			if werr != nil {
				cancel() // the client went away: stop the provider
			}
		}
		write(first.Data)
		n := len(first.Data)
		for ch := range chunks {
			write(ch.Data)
			n += len(ch.Data)
		}
		err := <-errc
		switch {
		case werr != nil:
			row.ErrorCode = "client_disconnected"
			row.ErrorDetail = "the client closed the connection during the stream"
		case err != nil:
			// Headers are gone; the truncated stream is the signal, and the
			// log row says why.
			pe := problem.From(err, job.Provider.ID)
			row.ErrorCode, row.ErrorDetail = string(pe.Code), pe.Detail
			s.log.Warn("stream ended with an error", zap.String("request_id", c.reqID), zap.String("code", row.ErrorCode), zap.Error(err))
		}
		row.LatencyMS = time.Since(c.start).Milliseconds()
		s.record(ctx, c, row)
	})
	return true, nil
}

// moderationEnvelope is the spec's moderation error body.
type moderationEnvelope struct {
	Error moderationError `json:"error"`
}

type moderationError struct {
	Code      string           `json:"code"`
	Message   string           `json:"message"`
	Reason    moderationReason `json:"reason"`
	TurnIndex *int             `json:"turn_index,omitempty"`
}

type moderationReason struct {
	Type   string `json:"type"`
	Detail string `json:"detail"`
}

// writeBlocked renders a moderation block.
func (s *Server) writeBlocked(ctx *fasthttp.RequestCtx, be *moderation.BlockedError) {
	msg := "the request was blocked by content moderation"
	if be.Verdict.ReasonType == moderation.ReasonErrorFailClosed {
		msg = "the content moderation check failed and the ruleset fails closed"
	}
	env := moderationEnvelope{Error: moderationError{
		Code:    "content_moderation_blocked",
		Message: msg,
		Reason:  moderationReason{Type: be.Verdict.ReasonType, Detail: be.Verdict.ReasonDetail},
	}}
	if be.TurnIndex >= 0 {
		ti := be.TurnIndex
		env.Error.TurnIndex = &ti
	}
	_ = s.writeJSON(ctx, be.Verdict.Status(), env)
}

// isBlocked extracts a moderation block from err.
func isBlocked(err error) (*moderation.BlockedError, bool) {
	var be *moderation.BlockedError
	ok := errors.As(err, &be)
	return be, ok
}

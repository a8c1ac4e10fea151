package edge

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	rtrace "runtime/trace"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/admission/moderation"
	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/edge/dialect"
	"github.com/voxgate/voxgate/gateway/internal/lazydeadline"
	"github.com/voxgate/voxgate/gateway/observe/stages"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/sdk"
)

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

// speechHandler serves one of the speech endpoints: decode, Speak,
// encode. It writes its own error responses so that the log row sees the
// final status.
func (s *Server) speechHandler(ep speech.Delivery) handlerFunc {
	return func(ctx *fasthttp.RequestCtx, c *exchange) error {
		if c.dialect == dialectOpenAI {
			s.openAISpeech(ctx, c)
			return nil
		}
		decode := rtrace.StartRegion(c.ctx, stages.Decode)
		var body speechRequestJSON
		err := s.decodeSpeechBody(ctx, &body)
		var req *speech.Request
		if err == nil {
			req, err = body.domain()
		}
		decode.End()
		if err != nil {
			s.failSpeech(ctx, c, err, &speech.Spoken{})
			return nil
		}
		s.speak(ctx, c, req, ep, func(res *speech.Result) { s.writeClip(ctx, c, ep, res) }, false)
		return nil
	}
}

// speak runs a speech request of any dialect and answers it: a stream as
// raw chunks (or, with sse, OpenAI's SSE events), a clip through
// writeClip. It records the request's log row (a stream's when it ends)
// and those of the fallback attempts that failed before the answer.
func (s *Server) speak(ctx *fasthttp.RequestCtx, c *exchange, req *speech.Request, ep speech.Delivery, writeClip func(*speech.Result), sse bool) {
	// c.ctx carries the caller (the key's scope and budget) and the trace.
	// The deadline's timer is armed only if something waits on it: a
	// stream the gateway sends itself never does (its connection carries
	// the deadline, and this goroutine reads and cancels it), which saves
	// a timer on every stream's first byte (lazydeadline).
	rctx, cancel := lazydeadline.WithTimeout(c.ctx, s.opts.RequestTimeout)
	req.NoCache = noCache(ctx)
	out, err := c.live.Speech.Speak(rctx, c.p.OrgID, req, ep)
	answer := rtrace.StartRegion(c.ctx, stages.Answer)
	defer answer.End()
	c.charge = out.Charge
	if out.Cache != "" {
		ctx.Response.Header.SetCanonical(headerCacheKey, []byte(out.Cache)) // "hit", "miss" or "bypass": the copy stays on the stack
	}
	if err == nil && out.Job != nil {
		// Which target served: the one asked for, or a fallback.
		// Written from a stack buffer: no string is made for it.
		var b [96]byte
		v := append(append(append(b[:0], out.Job.Provider.ID...), '/'), out.Job.Model.ID...)
		ctx.Response.Header.SetCanonical(headerProviderKey, v)
	}
	if conv := out.Conversion(); err == nil && conv != nil {
		ctx.Response.Header.Set(headerTranscoded, conv.String())
	}
	if c.dialect != dialectVoxgate && out.Job != nil && len(out.Job.Warnings) > 0 {
		ctx.Response.Header.Set(headerWarnings, strings.Join(out.Job.Warnings, "; "))
	}
	for _, row := range out.Attempts {
		row.RequestID = store.NewRequestID()
		row.ParentRequestID = c.reqID
		s.record(ctx, c, row)
	}
	switch {
	case err != nil:
		cancel()
		s.failSpeech(ctx, c, err, out)
	case out.Stream != nil:
		sseChars := -1
		if sse {
			sseChars = utf8.RuneCountInString(*req.Text)
		}
		s.stream(ctx, c, cancel, out, sseChars) // the stream records its row when it ends
	default:
		defer cancel()
		s.answerClip(ctx, c, out, ep, writeClip)
	}
}

// answerClip answers a whole clip: marked, written, and its row recorded
// once its provenance record is signed (off the request path: seal.go).
func (s *Server) answerClip(ctx *fasthttp.RequestCtx, c *exchange, out *speech.Spoken, ep speech.Delivery, writeClip func(*speech.Result)) {
	ps := s.markClip(ctx, c, out)
	out.Row.AudioMS = audio.Length(out.Result.Audio, out.Result.MediaType).Milliseconds()
	// A clip's first audio is all of it, ready to be written now.
	s.firstAudio(out).Observe(time.Since(c.start).Seconds())
	c.seal = s.sealClip(c, ps, out.Result, ep)
	writeClip(out.Result)
	s.recordSealed(ctx, c, out.Row, c.seal)
}

// headerCache says what the response cache did: hit, miss or bypass;
// headerProvider which provider and model served the request;
// headerTranscoded what the gateway converted the audio from and to
// ("pcm_24000->mp3_24000_96"), absent when the provider's bytes passed
// through untouched.
const (
	headerCache      = "X-Voxgate-Cache"
	headerProvider   = "X-Voxgate-Provider"
	headerTranscoded = "X-Voxgate-Transcoded"
)

// headerProviderKey and headerCacheKey are headerProvider and headerCache
// for ResponseHeader.SetCanonical; headerNoSniffKey and noSniff a
// stream's X-Content-Type-Options.
var (
	headerProviderKey = []byte(headerProvider)
	headerCacheKey    = []byte(headerCache)
	headerNoSniffKey  = []byte("X-Content-Type-Options")
	noSniff           = []byte("nosniff")
)

// firstAudio is the time-to-first-audio histogram of out's provider and
// model, cache hits apart.
func (s *Server) firstAudio(out *speech.Spoken) prometheus.Observer {
	cache, i := "miss", 0
	if out.Cache == "hit" {
		cache, i = "hit", 1
	}
	if ms := out.Job.Provider.Series(out.Job.Model.ID); ms != nil {
		return ms.FirstAudio[i]
	}
	return s.metrics.TimeToFirstAudio.WithLabelValues(out.Job.Provider.ID, out.Job.MetricModel(), cache)
}

// noCache reports whether the client asked for a fresh rendering
// (Cache-Control: no-cache, or the older Pragma: no-cache).
func noCache(ctx *fasthttp.RequestCtx) bool {
	return hasNoCache(ctx.Request.Header.Peek(fasthttp.HeaderCacheControl)) || hasNoCache(ctx.Request.Header.Peek(fasthttp.HeaderPragma))
}

// hasNoCache reports whether the comma-separated directives h include
// no-cache or no-store, without splitting h into a slice (bytes.Split
// allocated twice a request, most of which send neither header).
func hasNoCache(h []byte) bool {
	for len(h) > 0 {
		d := h
		if i := bytes.IndexByte(h, ','); i >= 0 {
			d, h = h[:i], h[i+1:]
		} else {
			h = nil
		}
		if d = bytes.TrimSpace(d); bytes.EqualFold(d, []byte("no-cache")) || bytes.EqualFold(d, []byte("no-store")) {
			return true
		}
	}
	return false
}

// failSpeech answers a failed speech request and records its row.
func (s *Server) failSpeech(ctx *fasthttp.RequestCtx, c *exchange, err error, out *speech.Spoken) {
	provider := ""
	if out.Job != nil {
		provider = out.Job.Provider.ID
	}
	pe := s.writeError(ctx, c, err, provider)
	row := out.Row
	row.ErrorCode, row.ErrorDetail = string(pe.Code), pe.Detail
	s.record(ctx, c, row)
}

// writeClip encodes a whole clip: raw audio, or the with-timestamps JSON
// envelope.
func (s *Server) writeClip(ctx *fasthttp.RequestCtx, c *exchange, ep speech.Delivery, res *speech.Result) {
	if ep == speech.DeliverTimestamps {
		defer res.Release()
		_ = s.writeJSON(ctx, fasthttp.StatusOK, timestampsEnvelope{
			Audio:            base64.StdEncoding.EncodeToString(res.Audio),
			MediaType:        res.MediaType,
			Timestamps:       wireTimestamps(res.Timestamps),
			Warnings:         nonNil(res.Warnings),
			ProviderMetadata: map[string]any{"voxgate": timingMetadata(res)},
			Captions:         res.Captions,
		})
		return
	}
	ctx.Response.Header.SetContentType(res.MediaType)
	setWarnings(ctx, res.Warnings)
	ctx.SetStatusCode(fasthttp.StatusOK)
	if res.Pooled() {
		// The clip is still in the upstream answer's pooled buffer: it is
		// written from there, and the buffer goes back once written.
		release := res.Release
		if c.seal != nil {
			release = c.seal.takeBody(release) // the seal hashes it first
		}
		ctx.SetBodyStream(&clipBody{b: res.Audio, release: release}, len(res.Audio))
	} else {
		ctx.Response.SetBodyRaw(res.Audio) // the clip is ours; no copy
	}
}

// timingMetadata describes where a clip's timestamps came from and how it
// was rendered: providerMetadata.voxgate of the with-timestamps envelope.
func timingMetadata(res *speech.Result) map[string]any {
	m := map[string]any{}
	if res.Source != "" {
		m["timestamps_source"] = res.Source
	}
	if !math.IsNaN(res.Match) && res.Match != 0 {
		m["alignment_match"] = math.Round(res.Match*1000) / 1000
	}
	if res.ReferenceVoice != "" {
		m["alignment_reference"] = res.ReferenceVoice
	}
	if res.Conversion != nil {
		m["transcoded"] = res.Conversion.String()
	}
	if len(res.Pieces) > 1 {
		starts := make([]float64, len(res.Pieces))
		for i, p := range res.Pieces {
			starts[i] = round3(p)
		}
		m["pieces"] = starts
	}
	return m
}

// maxWarningHeaders bounds the X-Voxgate-Warning headers of one
// response: a text full of audio tags must not make the headers huge.
const maxWarningHeaders = 16

// setWarnings puts warnings where a response with raw audio can carry
// them: one X-Voxgate-Warning header each, as printable ASCII (anything
// else is replaced by "?").
func setWarnings(ctx *fasthttp.RequestCtx, warnings []string) {
	for i, w := range warnings {
		if i == maxWarningHeaders {
			ctx.Response.Header.Add("X-Voxgate-Warning", fmt.Sprintf("and %d more warnings", len(warnings)-i))
			break
		}
		ctx.Response.Header.Add("X-Voxgate-Warning", strings.Map(func(r rune) rune {
			if r < 0x20 || r > 0x7e {
				return '?'
			}
			return r
		}, w))
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// stream relays the provider's audio to the client as it arrives. Speak
// has waited for the first piece, so a provider that fails at once got a
// proper problem response instead.
//
// Hot path: fasthttp's connection goroutine writes the body straight from
// the source (chunkStream.WriteTo), one flushed HTTP chunk per piece;
// SetBodyStreamWriter would add a goroutine and an in-memory pipe (two
// more hand-overs, each a wake-up of another thread) before the first
// byte. A planned request's source is the provider's own answer, so no
// goroutine stands between the provider and the client at all.
//
// sseChars, when not negative, sends the stream as OpenAI's SSE events
// instead of raw audio; it is the text's length, reported as usage.
func (s *Server) stream(ctx *fasthttp.RequestCtx, c *exchange, cancel context.CancelFunc, out *speech.Spoken, sseChars int) {
	st := out.Stream
	setWarnings(ctx, st.Warnings)
	var ps *provState
	st.First, ps = s.markFirst(ctx, c, out.Job.Provider.ID, out.Job.Model.ID, st.First, st.MediaType(), false, false)
	if ps != nil && s.prov.Indexing() {
		ps.kept = make([]byte, 0, 64<<10) // the stream is fingerprinted when it ends
	}
	cs := s.relay(ctx, c, cancel, out.Job.Provider.ID, out.Row, st.Source, st.First, st.Ended, sseChars)
	cs.firstAudio = s.firstAudio(out)
	cs.prov = ps
	if out.Cache != "hit" {
		// A stream's audio units are known at its end: priced then.
		job, svc := out.Job, c.live.Speech
		cs.cost = func(audioMS int64) int64 { return svc.StreamCost(job, audioMS) }
	}
}

// relay answers 200 and sends src's audio as it comes, first being what
// src returned first (ended: and nothing after it). The row is recorded,
// and the request observed, when the stream ends.
//
// sseChars, when not negative, frames the audio as OpenAI's SSE events.
func (s *Server) relay(ctx *fasthttp.RequestCtx, c *exchange, cancel context.CancelFunc, provider string, row store.LogRow, src speech.Source, first []byte, ended bool, sseChars int) *chunkStream {
	mediaType := src.MediaType()
	if mediaType == "" {
		mediaType = "application/octet-stream"
	}
	if sseChars >= 0 {
		mediaType = "text/event-stream"
		ctx.Response.Header.Set(fasthttp.HeaderCacheControl, "no-cache")
	}
	ctx.Response.Header.SetContentType(mediaType)
	ctx.Response.Header.SetCanonical(headerNoSniffKey, noSniff)
	ctx.SetStatusCode(fasthttp.StatusOK)
	cs := &chunkStream{s: s, c: c, provider: provider, row: row, pending: first, ended: ended, src: src, cancel: cancel,
		conn: ctx.Conn(), writeTimeout: s.opts.WriteTimeout}
	if sseChars >= 0 {
		cs.sse, cs.chars = true, sseChars
		cs.pending = cs.frame(first)
	}
	cs.row.Status = fasthttp.StatusOK
	// The meter reads the audio as the provider sends it, before any SSE
	// framing, for the row's audio_ms; first is metered and hashed once
	// written (account).
	cs.meter = audio.NewMeter(src.MediaType())
	cs.raw = first
	// The row is recorded when the stream ends, possibly while fasthttp is
	// already resetting ctx: take what it needs from ctx now.
	cs.row.Path = pathName(ctx.Path())
	ctx.SetBodyStream(cs, -1)
	return cs
}

// clipBody is a whole clip written from a pooled buffer that is released
// when fasthttp closes the body, after the write (or when the response is
// dropped). WriteTo makes the write one call with no copy.
type clipBody struct {
	b       []byte
	release func()
}

func (c *clipBody) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.b)
	c.b = c.b[n:]
	return n, nil
}

func (c *clipBody) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(c.b)
	c.b = c.b[n:]
	return int64(n), err
}

// Close implements io.Closer; fasthttp calls it once the body is done.
func (c *clipBody) Close() error {
	c.b = nil
	c.release()
	return nil
}

// errNotWritten ends a stream whose response fasthttp dropped before
// writing it (the connection closed first).
var errNotWritten = errors.New("the response was not written")

// errStreamBroken ends the response of a stream that failed after its
// status line went out. Returned from the body's WriteTo (or Read), it
// makes fasthttp leave out the terminating chunk and close the
// connection: the client sees an incomplete transfer (curl exits non-zero,
// fetch rejects) instead of a complete-looking, truncated clip. The log
// row says what failed.
var errStreamBroken = errors.New("the stream failed after it started")

// chunkStream is a streamed response body. fasthttp writes it with WriteTo
// (one HTTP chunk, flushed, per piece of audio) and always closes it with
// CloseWithError, which is where the provider call is stopped if the
// client went away and the request-log row is recorded.
type chunkStream struct {
	s        *Server
	c        *exchange
	provider string // for problems; "" for a conversation
	row      store.LogRow
	pending  []byte // the part of the current piece (framed) not yet written
	raw      []byte // the current piece as the source gave it, until account
	ended    bool   // the source has nothing more
	src      speech.Source
	cancel   context.CancelFunc
	once     sync.Once
	// conn and writeTimeout give each write its own deadline: fasthttp
	// sets one for the whole response, which would cut any stream longer
	// than server.write_timeout. The stream as a whole is bounded by the
	// request timeout instead.
	conn         interface{ SetWriteDeadline(time.Time) error }
	writeTimeout time.Duration
	// armed is when the write deadline was last set (extendDeadline).
	armed time.Time

	// sent counts the bytes written to the client.
	sent int64
	// firstAudio, when set, observes the time from the request's start to
	// its first audio written to the client (time to first audio).
	firstAudio prometheus.Observer
	// access is the request's record from the edge, observed when the
	// stream ends (see lateObserver); failure is the error code of a
	// stream that broke off. mu guards access and finished: the edge
	// hands the record over after the handler returns, normally before
	// fasthttp writes the body, but the order is not relied on.
	mu       sync.Mutex
	access   *access
	finished bool
	failure  string
	// cost prices the stream once its audio's length is known; nil for
	// a conversation (its turns are priced by their rows) or a replay.
	cost func(audioMS int64) int64
	// sse frames each piece as an OpenAI speech.audio.delta event and
	// ends with speech.audio.done (chars is its usage); buf is reused
	// for the framing.
	sse      bool
	chars    int
	buf      []byte
	doneSent bool
	// meter measures the audio relayed, for the row's audio_ms.
	meter audio.Meter
	// prov hashes the audio relayed for the provenance record (nil:
	// provenance off).
	prov *provState
}

// observeAtEnd implements lateObserver.
func (cs *chunkStream) observeAtEnd(a *access) {
	cs.mu.Lock()
	cs.access = a
	done := cs.finished
	cs.mu.Unlock()
	if done {
		cs.s.observeEnd(a, cs.sent, cs.failure)
	}
}

// wrote accounts for n bytes sent to the client.
func (cs *chunkStream) wrote(n int) {
	cs.sent += int64(n)
	if n > 0 && cs.firstAudio != nil {
		cs.firstAudio.Observe(time.Since(cs.c.start).Seconds())
		cs.firstAudio = nil
	}
}

// frame returns what to write for a piece of audio: the piece itself, or
// its SSE event.
func (cs *chunkStream) frame(b []byte) []byte {
	if !cs.sse || len(b) == 0 {
		return b
	}
	cs.buf = dialect.AppendSSEDelta(cs.buf[:0], b)
	return cs.buf
}

// trailer returns what ends a complete stream: the SSE done event, once.
func (cs *chunkStream) trailer() []byte {
	if !cs.sse || cs.doneSent {
		return nil
	}
	cs.doneSent = true
	cs.buf = dialect.AppendSSEDone(cs.buf[:0], cs.chars)
	return cs.buf
}

// SupportsBodyWriteTo implements fasthttp.BodyWriterTo: WriteTo writes
// exactly what Read would.
func (cs *chunkStream) SupportsBodyWriteTo() bool { return true }

// WriteTo writes every piece to w as it arrives; fasthttp's w frames and
// flushes each write as one HTTP chunk. The row is recorded before it
// returns, so before the client sees the end of the stream.
func (cs *chunkStream) WriteTo(w io.Writer) (int64, error) {
	var n int64
	// fasthttp has just set the connection's write deadline for this
	// response (Server.WriteTimeout, the same server.write_timeout).
	cs.armed = time.Now()
	b := cs.pending
	cs.pending = nil
	first := rtrace.StartRegion(context.Background(), stages.FirstWrite)
	for {
		if len(b) > 0 {
			cs.extendDeadline()
			k, err := w.Write(b)
			n += int64(k)
			cs.wrote(k)
			if err != nil {
				first.End()
				cs.finish(err) // the client went away: stop the provider
				return n, err
			}
		}
		if first != nil {
			first.End()
			first = nil
		}
		cs.account()
		if cs.ended {
			break
		}
		raw, err := cs.src.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				cs.finish(nil)
				return n, errStreamBroken
			}
			cs.ended = true // write the last piece, then end
		}
		cs.raw = raw
		b = cs.frame(raw)
	}
	if t := cs.trailer(); t != nil {
		k, err := w.Write(t)
		n += int64(k)
		if err != nil {
			cs.finish(err)
			return n, err
		}
	}
	cs.finish(nil)
	return n, nil
}

// account meters and hashes (for the provenance record) the piece last
// taken from the source, once. It runs after the piece was written, so
// that neither is on the way of the audio to the client (the SHA-256 of
// a provider's 4,800-byte first piece was before the first byte), and
// before the next Next or Close, which may reuse the piece's buffer.
func (cs *chunkStream) account() {
	if cs.raw != nil {
		cs.meter.Write(cs.raw)
		cs.prov.write(cs.raw)
		cs.raw = nil
	}
}

// extendDeadline gives the next write at least three quarters of
// server.write_timeout: the deadline moves once a quarter of it has
// passed, as fasthttp moves its own between responses. Moving it is a
// timer update in Go's runtime, which a stream paid for every piece (one
// each 100 ms or less), its first before the first byte.
func (cs *chunkStream) extendDeadline() {
	if cs.conn == nil || cs.writeTimeout <= 0 {
		return
	}
	if now := time.Now(); now.Sub(cs.armed) >= cs.writeTimeout/4 {
		_ = cs.conn.SetWriteDeadline(now.Add(cs.writeTimeout))
		cs.armed = now
	}
}

// Read implements io.Reader, for a server that does not use WriteTo.
func (cs *chunkStream) Read(p []byte) (int, error) {
	for len(cs.pending) == 0 {
		cs.account()
		if cs.ended {
			if t := cs.trailer(); t != nil {
				cs.pending = t
				break
			}
			cs.finish(nil)
			return 0, io.EOF
		}
		b, err := cs.src.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				cs.finish(nil)
				return 0, errStreamBroken
			}
			cs.ended = true
		}
		cs.raw = b
		cs.pending = cs.frame(b)
	}
	n := copy(p, cs.pending)
	cs.pending = cs.pending[n:]
	cs.wrote(n)
	return n, nil
}

// CloseWithError implements fasthttp.ReadCloserWithError. fasthttp calls it
// when the response is written (err is the write error, if any) or
// dropped.
func (cs *chunkStream) CloseWithError(err error) error {
	if err == nil {
		err = errNotWritten // a no-op when WriteTo or Read already finished
	}
	cs.finish(err)
	return nil
}

// finish stops the provider call if it still runs and records the row,
// once. werr is the error writing to the client, if any.
func (cs *chunkStream) finish(werr error) {
	cs.once.Do(func() {
		cs.account() // before Close, which may release the piece
		err := cs.src.Close()
		cs.cancel()
		row := &cs.row
		rs, conversation := cs.src.(turnRows)
		if conversation {
			// A conversation: its own row gains the credits of the turns
			// sent, and each turn has a row of its own.
			parent, turns := rs.Rows()
			parent.Status, parent.Path = row.Status, row.Path
			*row = parent
			for _, t := range turns {
				t.RequestID = store.NewRequestID()
				t.ParentRequestID = cs.c.reqID
				t.Path = row.Path
				cs.s.record(nil, cs.c, t)
			}
		}
		// The row's status is the request's outcome, so it never disagrees
		// with its error code: the client saw 200 headers, but a stream
		// that broke off failed.
		switch {
		case werr != nil:
			row.Status = (&problem.Error{Code: problem.Cancelled}).Status()
			row.ErrorCode = "client_disconnected"
			row.ErrorDetail = "the client closed the connection during the stream"
		case err != nil:
			// Headers are gone; the early end of the stream is the
			// signal, and the log row says why.
			pe := problem.From(err, cs.provider)
			row.Status, row.ErrorCode, row.ErrorDetail = pe.Status(), string(pe.Code), pe.Detail
			cs.s.log.Warn("stream ended with an error", zap.String("request_id", cs.c.reqID), zap.String("code", row.ErrorCode), zap.Error(err))
		}
		if werr == nil && err != nil && !conversation {
			// A stream the provider or the gateway broke off is not billed
			// (a client that left is: it spent the provider's work); a
			// conversation is billed for the turns it sent (Rows).
			row.CreditsUsed, row.Cost = 0, 0
		}
		row.LatencyMS = time.Since(cs.c.start).Milliseconds()
		row.AudioMS = cs.meter.Length().Milliseconds()
		if cs.cost != nil && row.Cost != 0 {
			row.Cost = cs.cost(row.AudioMS)
		}
		// No ctx: fasthttp may be reusing it by now; the row already has
		// the path and status record would read from it. The record is
		// signed off the stream's path (seal.go).
		cs.s.recordSealed(nil, cs.c, *row, cs.s.newSeal(cs.c, cs.prov, werr == nil && err == nil))
		cs.mu.Lock()
		cs.finished = true
		cs.failure = row.ErrorCode
		a := cs.access
		cs.mu.Unlock()
		if a != nil {
			cs.s.observeEnd(a, cs.sent, cs.failure)
		}
	})
}

// turnRows is a stream made of conversation turns, which log rows of
// their own once the stream is closed.
type turnRows interface {
	Rows() (parent store.LogRow, turns []store.LogRow)
}

// writeBlocked renders a moderation block: voxgate's envelope, or the
// dialect's error shape with the same code and reason.
func (s *Server) writeBlocked(ctx *fasthttp.RequestCtx, d dialectKind, be *moderation.BlockedError) {
	msg := "the request was blocked by content moderation"
	if be.Verdict.ReasonType == moderation.ReasonErrorFailClosed {
		msg = "the content moderation check failed and the ruleset fails closed"
	}
	if d != dialectVoxgate {
		s.writeDialectBlocked(ctx, d, be, msg)
		return
	}
	env := moderationEnvelope{Code: string(problem.ModerationBlocked), Error: moderationError{
		Code:    string(problem.ModerationBlocked),
		Message: msg,
		Reason:  moderationReason{Type: be.Verdict.ReasonType, Detail: be.Verdict.ReasonDetail, Confidence: be.Verdict.Confidence, RuleName: be.Verdict.RuleName},
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

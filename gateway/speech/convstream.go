package speech

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/voxgate/voxgate/gateway/admission/budget"
	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/store"
)

// A streamed conversation (POST /v1/audio/conversation/stream) makes long
// conversations show progress: turns render concurrently as in Converse,
// and each is sent as soon as it and every turn before it are done, so the
// first turn plays while the last is still being made, and a request that
// runs out of time has delivered every turn it finished. The price is the
// encoding: the stream is 16-bit PCM, raw or in a WAV header of unknown
// length, at a rate fixed before any turn is rendered.

// ConversationStreamed is the outcome of ConverseStream.
type ConversationStreamed struct {
	// Stream is the audio, nil when the request failed before it.
	Stream *ConversationStream
	// Row is the conversation's log row so far; Stream.Rows completes it.
	Row store.LogRow
	// Turns are the turns' log rows when the request failed before the
	// stream started.
	Turns []store.LogRow
	// Charge is the credits reserved for the turns; the edge settles it
	// with the conversation row's final credits.
	Charge *budget.Charge
}

// ConversationStream is a conversation's audio, turn by turn. It
// implements Source.
type ConversationStream struct {
	s      *Service
	req    *ConversationRequest
	turns  []*TurnResult
	done   []chan struct{}
	cancel context.CancelFunc
	ctx    context.Context
	wg     sync.WaitGroup
	out    audio.Output
	vol    float64
	// level says turns are normalized to vol (normalizeVolume, default true).
	level   bool
	gap     []byte
	header  []byte
	next    int  // the next turn to send
	sent    bool // some turn's audio went out
	err     error
	row     store.LogRow
	stopped bool
}

// streamFormats are the outputs a conversation stream can encode turn by
// turn.
var streamFormats = map[string]bool{audio.FormatWAV: true, audio.FormatPCM: true}

// ConverseStream validates and prepares a conversation and starts
// rendering it; the caller reads the stream (Next) and must Close it.
// Failures before any audio are returned here.
func (s *Service) ConverseStream(ctx context.Context, org string, req *ConversationRequest) (*ConversationStreamed, error) {
	out := &ConversationStreamed{}
	if req.Output != nil && !streamFormats[req.Output.Format] {
		return out, problem.Validation(problem.Field(`a conversation stream is "wav" or "pcm"`, "output", "format"))
	}
	jobs, err := s.prepareConversation(ctx, org, req, false)
	if len(jobs) > 0 {
		out.Row.Provider, out.Row.Model = ProviderSummary(jobs)
		out.Row.CharCount = Chars(jobs)
	}
	if err != nil {
		return out, err
	}
	if out.Charge, err = s.reserve(ctx, org, s.conversationCredits(jobs)); err != nil {
		return out, err
	}
	cs := &ConversationStream{s: s, req: req, turns: make([]*TurnResult, len(jobs)), done: make([]chan struct{}, len(jobs)), row: out.Row}
	cs.out = streamOutput(req, jobs)
	cs.vol = DefaultConvoVolume
	if req.VolumeDbfs != nil {
		cs.vol = *req.VolumeDbfs
	}
	cs.level = req.NormalizeVolume == nil || *req.NormalizeVolume
	gap := DefaultGapMs
	if req.GapMs != nil {
		gap = *req.GapMs
	}
	cs.gap = make([]byte, 2*(cs.out.SampleRate*gap/1000))
	if cs.out.Format == audio.FormatWAV {
		cs.header = wavStreamHeader(cs.out.SampleRate)
	}
	cs.ctx, cs.cancel = context.WithCancel(ctx)
	for i, j := range jobs {
		cs.turns[i], cs.done[i] = &TurnResult{Index: i, Job: j}, make(chan struct{})
	}
	// Turns start in order, at most conversation_concurrency at once, so
	// the turn to be sent next is always among those rendering.
	cs.wg.Add(1)
	go func() {
		defer cs.wg.Done()
		sem := make(chan struct{}, s.limits.ConversationConcurrency)
		for i, tr := range cs.turns {
			select {
			case sem <- struct{}{}:
			case <-cs.ctx.Done():
				for _, rest := range cs.turns[i:] {
					rest.Err = stopped(cs.ctx)
					close(cs.done[rest.Index])
				}
				return
			}
			cs.wg.Add(1)
			go func() {
				defer cs.wg.Done()
				defer close(cs.done[tr.Index])
				defer func() { <-sem }()
				tr.Err = s.renderTurn(cs.ctx, tr)
			}()
		}
	}()
	out.Stream = cs
	return out, nil
}

// streamOutput is the stream's encoding: the request's format (WAV by
// default) at the requested rate, else the highest native rate of the
// turns' models, known before anything renders.
func streamOutput(r *ConversationRequest, jobs []*Job) audio.Output {
	out := audio.Output{Format: audio.FormatWAV}
	if r.Output != nil {
		out.Format = r.Output.Format
		if r.Output.SampleRate != nil {
			out.SampleRate = *r.Output.SampleRate
		}
	}
	if out.SampleRate == 0 {
		for _, j := range jobs {
			out.SampleRate = max(out.SampleRate, j.Model.NativeSampleRate)
		}
	}
	if out.SampleRate == 0 {
		out.SampleRate = 24000
	}
	return out
}

// stopped is the error of work that ctx stopped before it began: the
// request's deadline, or a cancellation (another turn failed, the client
// left).
func stopped(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return problem.New(problem.RequestTimeout, "not rendered: the request timeout (server.request_timeout) ran out first")
	}
	return problem.New(problem.Cancelled, "not rendered: the conversation was stopped before this turn")
}

// MediaType implements Source.
func (cs *ConversationStream) MediaType() string {
	if cs.out.Format == audio.FormatPCM {
		return audio.MediaType{Format: audio.FormatPCM, Rate: cs.out.SampleRate}.String()
	}
	return audio.MediaType{Format: cs.out.Format}.String()
}

// Next implements Source: the next turn's audio, in order, once it and
// every turn before it are done. A turn that failed ends the stream with
// its error, unless split is set: then it is left out.
func (cs *ConversationStream) Next() ([]byte, error) {
	for cs.next < len(cs.turns) {
		i := cs.next
		select {
		case <-cs.done[i]:
		case <-cs.ctx.Done():
			<-cs.done[i] // the turn sees the same context and ends
		}
		cs.next++
		tr := cs.turns[i]
		if tr.Err != nil {
			if cs.req.Split {
				continue
			}
			cs.err = turnError(tr.Err, i)
			cs.cancel()
			return nil, cs.err
		}
		pcm, err := cs.encode(tr)
		if err != nil {
			cs.err = err
			cs.cancel()
			return nil, err
		}
		var b []byte
		if !cs.sent {
			b = append(cs.header, pcm...)
		} else {
			b = append(append(make([]byte, 0, len(cs.gap)+len(pcm)), cs.gap...), pcm...)
		}
		cs.sent = true
		tr.Clip = nil // sent: the memory goes
		return b, nil
	}
	if !cs.sent {
		cs.err = turnError(cs.turns[0].Err, 0)
		return nil, cs.err
	}
	return nil, io.EOF
}

// encode levels a rendered turn and writes it as 16-bit PCM at the
// stream's rate.
func (cs *ConversationStream) encode(tr *TurnResult) ([]byte, error) {
	c, err := audio.Resample(tr.Clip, cs.out.SampleRate)
	if err != nil {
		return nil, fmt.Errorf("resample turn %d: %w", tr.Index, err)
	}
	if c == tr.Clip {
		c = &audio.Clip{Rate: c.Rate, Samples: append([]float32(nil), c.Samples...)}
	}
	switch {
	case cs.req.Loudness != nil:
		// Each turn is measured whole before it is sent, so every turn
		// of a conversation stream lands at the target.
		if _, err := audio.NormalizeLoudness(c, cs.req.Loudness.Target(), 0); err != nil {
			return nil, fmt.Errorf("level turn %d: %w", tr.Index, err)
		}
	case cs.level:
		audio.Normalize(c, cs.vol)
	}
	data, _, err := audio.Encode(c, audio.Output{Format: audio.FormatPCM, SampleRate: cs.out.SampleRate})
	if err != nil {
		return nil, fmt.Errorf("encode turn %d: %w", tr.Index, err)
	}
	return data, nil
}

// Close implements Source: it stops the turns still rendering, waits for
// them and returns what ended the stream (nil when it was complete).
func (cs *ConversationStream) Close() error {
	if !cs.stopped {
		cs.stopped = true
		if cs.err == nil && cs.next < len(cs.turns) {
			cs.err = problem.New(problem.Cancelled, "the conversation stream ended before turn %d was sent", cs.next)
		}
		cs.cancel()
		cs.wg.Wait()
	}
	return cs.err
}

// Rows returns, after Close, the conversation's log row (credits of the
// turns that rendered) and one row per turn with its own status and error.
func (cs *ConversationStream) Rows() (store.LogRow, []store.LogRow) {
	parent := cs.row
	rows := make([]store.LogRow, 0, len(cs.turns))
	for _, t := range cs.turns {
		row := cs.s.logRow(t.Job)
		row.Cache = t.Cache
		if t.Result != nil {
			row.Cost = cs.s.finalCost(t.Job, t.Result)
		}
		if t.Cache == "hit" {
			unbill(&row)
		}
		row.LatencyMS = t.Latency.Milliseconds()
		row.Status = 200
		switch {
		case t.Err == nil && t.Index < cs.next:
			parent.CreditsUsed += row.CreditsUsed
			parent.Cost += row.Cost
			parent.CostEstimate += row.CostEstimate
			parent.Currency = row.Currency
		case t.Err == nil:
			// Rendered, but the stream ended before it was sent.
			unbill(&row)
			pe := problem.New(problem.Cancelled, "rendered but not sent: the stream ended first")
			row.Status, row.ErrorCode, row.ErrorDetail = pe.Status(), string(pe.Code), pe.Detail
		default:
			pe := TurnProblem(t)
			unbill(&row)
			row.Status, row.ErrorCode, row.ErrorDetail = pe.Status(), string(pe.Code), pe.Detail
			if be, ok := blocked(t.Err); ok {
				row.Status = be.Verdict.Status()
			}
		}
		rows = append(append(rows, t.Attempts...), row)
	}
	return parent, rows
}

// wavStreamHeader is a 16-bit mono WAV header whose sizes say "unknown"
// (0xFFFFFFFF): the data runs to the end of the stream, which players and
// decoders accept.
func wavStreamHeader(rate int) []byte {
	h := make([]byte, 44)
	copy(h[0:], "RIFF")
	binary.LittleEndian.PutUint32(h[4:], 0xFFFFFFFF)
	copy(h[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(h[16:], 16)
	binary.LittleEndian.PutUint16(h[20:], 1) // PCM
	binary.LittleEndian.PutUint16(h[22:], 1) // mono
	binary.LittleEndian.PutUint32(h[24:], uint32(rate))
	binary.LittleEndian.PutUint32(h[28:], uint32(rate*2))
	binary.LittleEndian.PutUint16(h[32:], 2)
	binary.LittleEndian.PutUint16(h[34:], 16)
	copy(h[36:], "data")
	binary.LittleEndian.PutUint32(h[40:], 0xFFFFFFFF)
	return h
}

var _ Source = (*ConversationStream)(nil)

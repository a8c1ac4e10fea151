package speech

import (
	"context"
	"errors"
	"io"
	rtrace "runtime/trace"
	"time"

	"github.com/voxgate/voxgate/gateway/observe/stages"
	"github.com/voxgate/voxgate/gateway/providers/dispatch"
	"github.com/voxgate/voxgate/sdk"
)

// Source is a stream of audio being rendered for one job.
type Source interface {
	// MediaType is the stream's media type; known once Next has
	// returned for the first time.
	MediaType() string
	// Next returns the next piece of audio as it arrives; the slice is
	// valid until the next call. The end of the stream is io.EOF; any
	// other error ended it early.
	Next() ([]byte, error)
	// Close stops the stream if it is still running, releases it and
	// returns what ended it: nil for a complete stream, else the error.
	// It records the provider call's metrics.
	Close() error
}

// openStream starts rendering the job as a stream, under the provider's
// timeout, converted by the gateway when the model does not stream the
// format asked for (transcode). The caller reads it with Next and must
// Close it. A failure to start is returned here when the provider reports
// it before any audio (always, for planned requests: the answer's status
// is known first).
func (s *Service) openStream(ctx context.Context, j *Job) (Source, error) {
	j.streamBilled = nil // a retry's (another key) start again
	if len(j.pieces) > 1 {
		req := j.requestIn(j.pieces[0], streamFormat(j.Model))
		req.Neighbours = j.neighbours(0, nil)
		first, err := s.openStreamRequest(ctx, j, req, true)
		if err != nil {
			return nil, err
		}
		return transcode(j, s.levelStream(j, s.openPieces(ctx, j, first)), true), nil
	}
	src, err := s.openOne(ctx, j, j.spokenText(), "")
	if err != nil {
		return nil, err
	}
	return transcode(j, s.levelStream(j, src), false), nil
}

// openOne starts rendering text (all of j's, or its first piece) as a
// stream, in format ("" = the job's stream format, or the model's
// default).
func (s *Service) openOne(ctx context.Context, j *Job, text, format string) (Source, error) {
	return s.openStreamRequest(ctx, j, j.requestIn(text, format), true)
}

// openStreamRequest is openStream with the provider request given.
// owned says that the goroutine calling it is the one that reads the
// source and closes it, and the only one that cancels ctx (a stream
// relayed by its request's goroutine): a planned stream's body then does
// not register with ctx (dispatch.Client.OpenOwned), so that the
// request's timer stays unarmed (gateway/internal/lazydeadline).
//
// The call ends by the provider's timeout or the request's deadline,
// whichever comes first. A planned stream makes no context for it: the
// connection carries the deadline (dispatch.Client.OpenUntil), which
// saved a timer, a context and its registration with the request's on
// every stream's first byte. The plugin's own Stream still gets a
// context with the deadline, since a plugin call has no other.
func (s *Service) openStreamRequest(ctx context.Context, j *Job, req *sdk.SynthesizeRequest, owned bool) (Source, error) {
	parent := ctx
	start := time.Now()
	planning := rtrace.StartRegion(ctx, stages.Plan)
	deadline := s.calls.Deadline(parent, j.Provider, start)
	ctx = s.calls.Start(ctx, j.Provider, j.Model.ID, "stream")
	plan, explain, err := s.plan(ctx, j, req, true, deadline)
	planning.End()
	if err == nil && plan != nil {
		var body *dispatch.Body
		open := s.dispatch.OpenUntil
		if owned {
			open = s.dispatch.OpenOwned
		}
		if body, err = open(ctx, plan, req.Text, deadline, explain); err == nil {
			j.streamBilled = addBilled(j.streamBilled, body.Billed())
			return &directSource{Body: body, done: s.ender(parent, ctx, deadline, nil, j, start)}, nil
		}
	}
	if err != nil {
		return nil, s.ender(parent, ctx, deadline, nil, j, start)(err)
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	ps := &pluginSource{job: j, chunks: make(chan sdk.Chunk, 8), errc: make(chan error, 1), cancel: cancel, done: s.ender(parent, ctx, deadline, cancel, j, start)}
	go func() {
		defer close(ps.chunks)
		ps.errc <- j.Provider.Plugin.Stream(ctx, req, func(ch sdk.Chunk) error {
			select {
			case ps.chunks <- ch:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	return ps, nil
}

// ender returns the function that ends a stream's provider call, due by
// deadline: it records the call's metrics, releases its context (cancel,
// when it has one of its own) and returns the error as the caller should
// see it.
func (s *Service) ender(parent, ctx context.Context, deadline time.Time, cancel context.CancelFunc, j *Job, start time.Time) func(error) error {
	return func(err error) error {
		err = s.calls.EndBy(parent, ctx, deadline, j.Provider, j.Model.ID, "stream", time.Since(start), err)
		if cancel != nil {
			cancel()
		}
		return err
	}
}

// directSource is a planned stream read straight from the provider.
type directSource struct {
	*dispatch.Body
	done func(error) error
	err  error // what ended the stream early
}

func (d *directSource) Next() ([]byte, error) {
	b, err := d.Body.Next()
	if err != nil && !errors.Is(err, io.EOF) {
		d.err = err
	}
	return b, err
}

func (d *directSource) Close() error {
	d.Body.Close()
	return d.done(d.err)
}

// pluginSource is a stream the plugin renders, relayed through a channel:
// the plugin's Stream pushes and Next pulls.
type pluginSource struct {
	// job is the stream's: the chunks' billed figures go to it.
	job       *Job
	chunks    chan sdk.Chunk
	errc      chan error
	cancel    context.CancelFunc
	done      func(error) error
	mediaType string
	err       error
	ended     bool
}

func (p *pluginSource) MediaType() string { return p.mediaType }

func (p *pluginSource) Next() ([]byte, error) {
	for !p.ended {
		ch, ok := <-p.chunks
		if !ok {
			p.ended = true
			p.err = <-p.errc
			break
		}
		if p.mediaType == "" {
			p.mediaType = ch.MediaType
		}
		if ch.Billed != nil {
			p.job.streamBilled = addBilled(p.job.streamBilled, ch.Billed)
		}
		if len(ch.Data) > 0 {
			return ch.Data, nil
		}
	}
	if p.err != nil {
		return nil, p.err
	}
	return nil, io.EOF
}

func (p *pluginSource) Close() error {
	if !p.ended {
		p.cancel() // stop the plugin, then let its Stream return
		for ch := range p.chunks {
			if ch.Billed != nil { // a final message the client did not wait for
				p.job.streamBilled = addBilled(p.job.streamBilled, ch.Billed)
			}
		}
		p.ended, p.err = true, <-p.errc
	}
	return p.done(p.err)
}

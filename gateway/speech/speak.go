package speech

import (
	"context"
	rtrace "runtime/trace"
	"time"

	"github.com/voxgate/voxgate/gateway/admission/budget"
	"github.com/voxgate/voxgate/gateway/observe/stages"
	"github.com/voxgate/voxgate/gateway/store"
)

// The use cases. Each runs the whole pipeline of one kind of request,
// in order: resolve (voice, model, options) → policy (enabled provider,
// credentials, limits) → moderation → provider → processing, and returns
// what it produced with its finished request-log rows, billing included.
// Handlers decode, call one of these, and encode; they never order steps.
// Speak is here; Converse and ConverseStream are in conversation.go and
// convstream.go, StartLive in live.go.

// Speak runs a speech request on endpoint ep. On error, the returned
// Spoken still carries the log row as far as the request got.
//
// A stream (DeliverStream) is read and closed by the goroutine that
// called Speak, which is the only one to cancel ctx before it closes the
// stream: the reads of a stream the gateway sends to the provider itself
// do not watch ctx, they end by its deadline (openStreamRequest).
func (s *Service) Speak(ctx context.Context, org string, req *Request, ep Delivery) (*Spoken, error) {
	out := &Spoken{}
	if req.Loudness == nil && !req.LoudnessOff {
		// Streams too: leveled, then encoded as they would have been
		// (prepareLoudness); one the gateway cannot level passes as it is.
		req.Loudness = s.defaultLoudness(org, req.VolumeDbfs, req.Loudness)
		req.loudnessByDefault = req.Loudness != nil
	}
	prep := rtrace.StartRegion(ctx, stages.Prepare)
	j, err := s.prepare(ctx, org, req, ep)
	prep.End()
	if err != nil {
		return out, err
	}
	out.Job = j
	mod := rtrace.StartRegion(ctx, stages.Moderate)
	err = s.moderate(ctx, j)
	out.Row = s.logRow(j) // with the verdict, whatever it was
	mod.End()
	if err != nil {
		unbill(&out.Row)
		return out, err
	}
	// The request's target, then its fallbacks while a target fails in a
	// way another provider may not (down, timed out, throttled, 5xx).
	// Every failed attempt is logged as a row of its own. The fallbacks
	// are the first target's, looked up only once it has failed: most
	// requests never need them.
	first := j
	var next func() *Job
	for {
		start := time.Now()
		err = s.attempt(ctx, org, j, out)
		if err == nil {
			if c := out.Conversion(); c != nil {
				out.Row.Transcoded = c.String()
				if out.Cache != "hit" {
					s.countConversion(c)
				}
			}
			if out.Result != nil && req.Captions != "" {
				out.Result.Captions = Captions(req.Captions, j.Text, out.Result.Timestamps)
			}
			return out, nil
		}
		if next == nil {
			next = s.fallbacks(ctx, org, req, first)
		}
		alt := next()
		if alt == nil || !fallbackable(err) {
			break
		}
		out.Attempts = append(out.Attempts, s.attemptRow(j, err, time.Since(start)))
		s.fellBack(j, alt, err)
		alt.Verdict = j.Verdict // the same text, the same ruleset: moderated once
		j = alt
		out.Job, out.Row = j, s.logRow(j)
	}
	unbill(&out.Row)
	return out, err
}

// Spoken is the outcome of Speak.
type Spoken struct {
	// Job is the resolved request; nil when it failed before resolving.
	Job *Job
	// Row is the request-log row: provider, model, voice, characters,
	// moderation and credits. Credits are charged only for audio that
	// was produced. The edge adds the request id, path, status and
	// latency, which only it knows.
	Row store.LogRow
	// Result is the clip (clip and with-timestamps endpoints).
	Result *Result
	// Stream is the open stream (stream endpoint).
	Stream *Stream
	// Charge holds the credits reserved from the budgets; the edge
	// settles it with the row's final credits once the request is done
	// (a stream's only when it ends).
	Charge *budget.Charge
	// Cache says what the response cache did: "hit", "miss", "bypass",
	// or "" when the cache is off.
	Cache string
	// Attempts are the rows of targets that failed before the one that
	// served (or the last to fail): the edge records them as the
	// request's children.
	Attempts []store.LogRow
}

// Conversion is what the gateway converted the answer from and to; nil
// when the provider's bytes passed through untouched (or nothing was
// answered).
func (o *Spoken) Conversion() *Conversion {
	switch {
	case o.Result != nil:
		return o.Result.Conversion
	case o.Stream != nil:
		return o.Stream.Conversion
	}
	return nil
}

// Stream is a provider stream that has produced its first audio: a
// provider that fails at once has failed Speak instead, so the edge can
// still answer with a problem.
type Stream struct {
	Source
	// First is the first piece of audio.
	First []byte
	// Ended says the stream had nothing after First.
	Ended bool
	// Warnings are what the caller should know about the request (audio
	// tags removed); a stream has no envelope to carry them.
	Warnings []string
	// Conversion is what the gateway converts the stream from and to;
	// nil when the provider's bytes pass through untouched.
	Conversion *Conversion
}

// countConversion counts a conversion the gateway made.
func (s *Service) countConversion(c *Conversion) {
	if c != nil && s.metrics != nil {
		s.metrics.AudioConversions.WithLabelValues(c.From.Format, c.To.Format, c.Reason).Inc()
	}
}

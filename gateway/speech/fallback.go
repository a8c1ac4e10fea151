package speech

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/store"
)

// Fallbacks (#20): when a request's provider is down, times out, throttles
// or fails on its side, the next target of its route renders it instead.
// A route is the saved voice's own list of equivalent voices when it has
// one (so a fallback keeps the voice's character), else the deployment's
// fallbacks for the model. Never on a failure that would fail everywhere
// (a bad request, a refused voice, moderation, a budget): those are the
// caller's to fix. Streams fall back only before their first byte: once
// audio went out, the answer is that provider's.

// Route is the deployment's fallbacks for one "provider/model".
type Route []FallbackTarget

// FallbackTarget is one target of a route.
type FallbackTarget struct {
	// Model is "provider/model".
	Model string
	// Voices maps the failing request's voice to this target's; Voice is
	// the target's voice for any other. A target with neither for the
	// request's voice is skipped.
	Voices map[string]string
	Voice  string
}

// voiceFor is the target's voice for a request in voice v.
func (t FallbackTarget) voiceFor(v string) string {
	if tv, ok := t.Voices[v]; ok {
		return tv
	}
	return t.Voice
}

// fallbacks returns a function that prepares j's next fallback target
// each time it is called, nil when there is none. A target that cannot
// take the request (not enabled for the org, outside the key's scope, no
// timestamps on a with-timestamps request) is skipped. The request's
// providerOptions are the first provider's and are not carried over.
func (s *Service) fallbacks(ctx context.Context, org string, req *Request, j *Job) func() *Job {
	type target struct{ model, voice string }
	var targets []target
	if len(j.fallbacks) > 0 {
		for _, f := range j.fallbacks {
			targets = append(targets, target{f.Provider + "/" + f.Model, f.VoiceID})
		}
	} else {
		for _, t := range s.routes[j.Provider.ID+"/"+j.Model.ID] {
			if v := t.voiceFor(j.Voice); v != "" {
				targets = append(targets, target{t.Model, v})
			}
		}
	}
	return func() *Job {
		for len(targets) > 0 {
			t := targets[0]
			targets = targets[1:]
			alt := *req
			alt.VoiceID, alt.Model, alt.Voice, alt.ProviderOptions = "", t.model, t.voice, nil
			if aj, err := s.prepare(ctx, org, &alt, j.Delivery); err == nil {
				aj.VoiceRef = j.VoiceRef
				return aj
			}
		}
		return nil
	}
}

// fallbackable reports whether another provider may succeed where err
// failed: the provider was unreachable, timed out, throttled or failed on
// its side. The gateway's own limits (request timeout, budgets) and the
// caller's mistakes are final.
func fallbackable(err error) bool {
	pe := problem.From(err, "")
	switch pe.Code {
	case problem.ProviderUnavailable, problem.ProviderTimeout:
		return true
	case problem.ProviderError:
		return pe.UpstreamStatus == 0 || pe.UpstreamStatus == 429 || pe.UpstreamStatus >= 500
	}
	return false
}

// fellBack logs (one line: from, to, reason) and counts
// (voxgate_fallbacks_total) a fallback from j to alt after err.
func (s *Service) fellBack(j, alt *Job, err error) {
	from, to := j.Provider.ID+"/"+j.Model.ID, alt.Provider.ID+"/"+alt.Model.ID
	reason := string(problem.From(err, j.Provider.ID).Code)
	if s.metrics != nil {
		s.metrics.Fallbacks.WithLabelValues(from, to, reason).Inc()
	}
	if s.log != nil {
		s.log.Warn("fallback", zap.String("from", from), zap.String("to", to), zap.String("reason", reason), zap.String("org", j.Org))
	}
}

// attemptRow is the log row of a target that failed and was fallen back
// from.
func (s *Service) attemptRow(j *Job, err error, took time.Duration) store.LogRow {
	row := s.logRow(j)
	pe := problem.From(err, j.Provider.ID)
	row.Status, row.ErrorCode, row.ErrorDetail = pe.Status(), string(pe.Code), pe.Detail
	unbill(&row)
	row.LatencyMS = took.Milliseconds()
	return row
}

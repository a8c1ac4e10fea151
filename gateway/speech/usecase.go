package speech

import (
	"cmp"
	"context"
	"errors"
	"io"
	"time"

	"github.com/voxgate/voxgate/gateway/admission/budget"
	"github.com/voxgate/voxgate/gateway/admission/moderation"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/sdk"
)

// The use cases. Each runs the whole pipeline of one kind of request,
// in order: resolve (voice, model, options) → policy (enabled provider,
// credentials, limits) → moderation → provider → processing, and returns
// what it produced with its finished request-log rows, billing included.
// Handlers decode, call one of these, and encode; they never order steps.

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

// countConversion counts a conversion the gateway made.
func (s *Service) countConversion(c *Conversion) {
	if c != nil && s.metrics != nil {
		s.metrics.AudioConversions.WithLabelValues(c.From.Format, c.To.Format, c.Reason).Inc()
	}
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

// Speak runs a speech request on endpoint ep. On error, the returned
// Spoken still carries the log row as far as the request got.
func (s *Service) Speak(ctx context.Context, org string, req *Request, ep Delivery) (*Spoken, error) {
	out := &Spoken{}
	j, err := s.prepare(ctx, org, req, ep)
	if err != nil {
		return out, err
	}
	out.Job = j
	err = s.moderate(ctx, j)
	out.Row = s.logRow(j) // with the verdict, whatever it was
	if err != nil {
		out.Row.CreditsUsed = 0
		return out, err
	}
	// The request's target, then its fallbacks while a target fails in a
	// way another provider may not (down, timed out, throttled, 5xx).
	// Every failed attempt is logged as a row of its own.
	next := s.fallbacks(ctx, org, req, j)
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
		alt := next()
		if alt == nil || !fallbackable(err) {
			break
		}
		out.Attempts = append(out.Attempts, s.attemptRow(j, err, time.Since(start)))
		alt.Verdict = j.Verdict // the same text, the same ruleset: moderated once
		j = alt
		out.Job, out.Row = j, s.logRow(j)
	}
	out.Row.CreditsUsed = 0
	return out, err
}

// attempt runs j once: from the cache, or reserved from the budgets and
// rendered by the provider. On failure nothing stays reserved.
func (s *Service) attempt(ctx context.Context, org string, j *Job, out *Spoken) error {
	// A hit is moderated like any request, and costs nothing.
	key, hit := s.lookup(ctx, j, "answer")
	if hit != nil {
		out.Cache, out.Row.Cache, out.Row.CreditsUsed = "hit", "hit", 0
		if j.Delivery == DeliverStream {
			out.Stream, _ = s.replay(hit)
		} else {
			out.Result = hit
		}
		return nil
	}
	out.Cache = cacheState(key, j)
	out.Row.Cache = out.Cache
	var err error
	var release func()
	if j.Delivery == DeliverStream {
		if release, err = s.streams.acquire(org); err != nil {
			return err
		}
	}
	if out.Charge, err = s.reserve(ctx, org, int64(out.Row.CreditsUsed)); err != nil {
		if release != nil {
			release()
		}
		return err
	}
	if j.Delivery == DeliverStream {
		if out.Stream, err = s.startStream(ctx, j, key); err == nil {
			out.Stream.Source = &slotSource{Source: out.Stream.Source, release: release}
		} else {
			release()
		}
	} else if out.Result, err = s.synthesize(ctx, j); err == nil && key != "" {
		s.cache.put(key, out.Result, false)
	}
	if err != nil {
		out.Charge.Settle(context.WithoutCancel(ctx), 0)
		out.Charge = nil
	}
	return err
}

// cacheState is what a request that missed the cache reports.
func cacheState(key string, j *Job) string {
	switch {
	case key == "":
		return ""
	case j.noCache:
		return "bypass"
	}
	return "miss"
}

// replay plays a cached stream back as a stream.
func (s *Service) replay(hit *Result) (*Stream, error) {
	src := &replaySource{mediaType: hit.MediaType, data: hit.Audio}
	first, err := src.Next()
	return &Stream{Source: src, First: first, Ended: err != nil, Conversion: hit.Conversion}, nil
}

// startStream opens j's stream and waits for its first audio. With a
// cache key, the stream is kept once it ended complete.
func (s *Service) startStream(ctx context.Context, j *Job, key string) (*Stream, error) {
	keys := s.pooled(j)
	var last error
	for {
		creds, err := keys.next(ctx, j)
		if err != nil {
			return nil, cmp.Or(last, err)
		}
		// The job is the stream's alone here, and the stream's later
		// pieces keep this key: it holds the lease to the stream's end.
		j.Creds = creds
		st, err := s.firstAudio(ctx, j, key)
		if keys.retry(s, j, err, true) {
			last = err
			continue
		}
		if err != nil {
			return nil, err
		}
		if keys != nil {
			st.Source = &leasedSource{Source: st.Source, keys: keys}
		}
		return st, nil
	}
}

// firstAudio opens j's stream and reads its first audio.
func (s *Service) firstAudio(ctx context.Context, j *Job, key string) (*Stream, error) {
	src, err := s.openStream(ctx, j)
	if err != nil {
		return nil, err
	}
	if key != "" {
		src = &teeSource{Source: src, c: s.cache, key: key, conv: j.conv}
	}
	first, err := src.Next()
	if err != nil && !(errors.Is(err, io.EOF) && src.MediaType() != "") {
		cerr := src.Close()
		if errors.Is(err, io.EOF) {
			return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "the provider returned an empty stream"}
		}
		if cerr != nil {
			err = cerr // the same failure, with the timeout made explicit
		}
		return nil, err
	}
	return &Stream{Source: src, First: first, Ended: err != nil, Warnings: j.Warnings, Conversion: j.conv}, nil
}

// Conversed is the outcome of Converse.
type Conversed struct {
	// Result is the rendered conversation; nil when it failed before
	// rendering.
	Result *ConversationResult
	// Row is the conversation's own log row; its credits are the sum of
	// the turns that rendered.
	Row store.LogRow
	// Turns are one log row per prepared turn, with the turn's own
	// status, error and credits (0 for a failed turn). The edge adds
	// request ids and the parent's id.
	Turns []store.LogRow
	// Charge is the credits reserved for the turns; settled by the edge
	// with the conversation row's final credits.
	Charge *budget.Charge
}

// Converse runs a conversation request.
func (s *Service) Converse(ctx context.Context, org string, req *ConversationRequest, timestamps bool) (*Conversed, error) {
	out := &Conversed{}
	jobs, err := s.prepareConversation(ctx, org, req, timestamps)
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
	res, err := s.renderConversation(ctx, req, jobs, timestamps)
	out.Result = res
	if err == nil && res.Conversion != nil {
		out.Row.Transcoded = res.Conversion.String()
		s.countConversion(res.Conversion)
	}
	if err == nil && req.Captions != "" {
		texts := make([]string, len(jobs))
		for i, j := range jobs {
			texts[i] = j.Text
		}
		res.Captions = ConversationCaptions(req.Captions, texts, res.Timestamps)
	}
	if res != nil {
		for _, t := range res.Turns {
			if t.Job == nil {
				continue
			}
			row := s.logRow(t.Job)
			row.Cache = t.Cache
			if t.Cache == "hit" {
				row.CreditsUsed = 0
			}
			row.LatencyMS = t.Latency.Milliseconds()
			row.Status = 200
			switch {
			case t.Err == nil && err != nil:
				// Rendered, then discarded with the whole conversation: not
				// billed, like the conversation, and the row says so.
				pe := problem.New(problem.Cancelled, "rendered, but the conversation failed and nothing was sent")
				row.CreditsUsed = 0
				row.Status, row.ErrorCode, row.ErrorDetail = pe.Status(), string(pe.Code), pe.Detail
			case t.Err == nil:
				out.Row.CreditsUsed += row.CreditsUsed
			default:
				pe := TurnProblem(t)
				row.CreditsUsed = 0
				row.Status, row.ErrorCode, row.ErrorDetail = pe.Status(), string(pe.Code), pe.Detail
				if be, ok := blocked(t.Err); ok {
					row.Status = be.Verdict.Status()
				}
			}
			out.Turns = append(append(out.Turns, t.Attempts...), row)
		}
	}
	if err != nil {
		out.Row.CreditsUsed = 0
	}
	return out, err
}

// conversationCredits is what the conversation costs if every turn
// renders: the most it can be charged.
func (s *Service) conversationCredits(jobs []*Job) int64 {
	var n int64
	for _, j := range jobs {
		n += int64(s.credits(j))
	}
	return n
}

// TurnProblem is the problem object of a failed turn; a moderation block
// becomes a 422 problem with the moderation envelope's code.
func TurnProblem(t *TurnResult) *problem.Error {
	if be, ok := blocked(t.Err); ok {
		pe := &problem.Error{Code: problem.ModerationBlocked, Detail: be.Verdict.ReasonType + ": " + be.Verdict.ReasonDetail}
		return pe.WithTurn(t.Index)
	}
	provider := ""
	if t.Job != nil {
		provider = t.Job.Provider.ID
	}
	return problem.From(t.Err, provider).WithTurn(t.Index)
}

func blocked(err error) (*moderation.BlockedError, bool) {
	var be *moderation.BlockedError
	ok := errors.As(err, &be)
	return be, ok
}

// VoiceSpec is a voice to save, as the caller gave it.
type VoiceSpec struct {
	Title, Provider, Model, VoiceID, Gender, Description string
	// MediaIDs are the uploaded samples to clone from (the voice records
	// the first); a provider that needs several gets them all.
	MediaIDs        []string
	Tags            []string
	ProviderOptions map[string]any
	// CloneOptions are passed to the clone call only, over
	// ProviderOptions; they are not saved.
	CloneOptions map[string]any
	// Fallbacks are equivalent voices on other providers, in order.
	Fallbacks []store.VoiceTarget
}

// CreateVoice saves a voice for org: it resolves the provider and model,
// checks the media it names, checks a given provider voice id against the
// provider's voice list (checkVoiceID), asks the provider to clone a voice
// from the media when no provider voice id is given, and stores the voice.
// A clone that succeeded upstream but could not be stored is reported,
// never silently half-done: the error says so.
func (s *Service) CreateVoice(ctx context.Context, org string, spec VoiceSpec, id string, now time.Time) (*store.Voice, error) {
	p, m, err := s.cat.Resolve(spec.Provider, spec.Model)
	if err != nil {
		return nil, err
	}
	v := &store.Voice{
		ID: id, OrgID: org, Title: spec.Title, Provider: spec.Provider, Model: m.ID,
		VoiceID: spec.VoiceID, Tags: spec.Tags, Gender: spec.Gender, Description: spec.Description,
		ProviderOptions: spec.ProviderOptions, CreatedAt: now, UpdatedAt: now,
	}
	if len(spec.MediaIDs) > 0 {
		v.MediaID = spec.MediaIDs[0]
	}
	if v.Tags == nil {
		v.Tags = []string{}
	}
	if v.ProviderOptions == nil {
		v.ProviderOptions = map[string]any{}
	}
	for _, id := range spec.MediaIDs {
		if _, err := s.store.GetMedia(ctx, org, id); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, problem.New(problem.MediaNotFound, "no media %s in this organization", id)
			}
			return nil, err
		}
	}
	if len(spec.MediaIDs) > 0 && spec.VoiceID == "" {
		if v.VoiceID, err = s.clone(ctx, org, v, spec.MediaIDs, spec.CloneOptions); err != nil {
			return nil, err
		}
	}
	if spec.VoiceID != "" {
		if err := s.checkVoiceID(ctx, org, p, m, spec.VoiceID); err != nil {
			return nil, err
		}
	}
	if v.Fallbacks, err = s.checkFallbacks(ctx, org, spec.Fallbacks); err != nil {
		return nil, err
	}
	if err := s.store.CreateVoice(ctx, v); err != nil {
		return nil, err
	}
	return v, nil
}

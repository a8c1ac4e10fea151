package speech

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/voxgate/voxgate/gateway/moderation"
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
	if err == nil {
		if ep == DeliverStream {
			out.Stream, err = s.startStream(ctx, j)
		} else {
			out.Result, err = s.synthesize(ctx, j)
			if err == nil && req.Captions != "" {
				out.Result.Captions = Captions(req.Captions, j.Text, out.Result.Timestamps)
			}
		}
	}
	if err != nil {
		out.Row.CreditsUsed = 0
	}
	return out, err
}

// startStream opens j's stream and waits for its first audio.
func (s *Service) startStream(ctx context.Context, j *Job) (*Stream, error) {
	src, err := s.openStream(ctx, j)
	if err != nil {
		return nil, err
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
	return &Stream{Source: src, First: first, Ended: err != nil, Warnings: j.warnings}, nil
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
	res, err := s.renderConversation(ctx, req, jobs, timestamps)
	out.Result = res
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
			row.LatencyMS = t.Latency.Milliseconds()
			row.Status = 200
			if t.Err == nil {
				out.Row.CreditsUsed += row.CreditsUsed
			} else {
				pe := TurnProblem(t)
				row.CreditsUsed = 0
				row.Status, row.ErrorCode, row.ErrorDetail = pe.Status(), string(pe.Code), pe.Detail
				if be, ok := blocked(t.Err); ok {
					row.Status = be.Verdict.Status()
				}
			}
			out.Turns = append(out.Turns, row)
		}
	}
	if err != nil {
		out.Row.CreditsUsed = 0
	}
	return out, err
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
	Title, Provider, Model, VoiceID, MediaID, Gender, Description string
	Tags                                                          []string
	ProviderOptions                                               map[string]any
}

// CreateVoice saves a voice for org: it resolves the provider and model,
// checks the media it names, asks the provider to clone a voice from it
// when no provider voice id is given, and stores the voice. A clone that
// succeeded upstream but could not be stored is reported, never silently
// half-done: the error says so.
func (s *Service) CreateVoice(ctx context.Context, org string, spec VoiceSpec, id string, now time.Time) (*store.Voice, error) {
	_, m, err := s.cat.Resolve(spec.Provider, spec.Model)
	if err != nil {
		return nil, err
	}
	v := &store.Voice{
		ID: id, OrgID: org, Title: spec.Title, Provider: spec.Provider, Model: m.ID,
		VoiceID: spec.VoiceID, Tags: spec.Tags, Gender: spec.Gender, Description: spec.Description,
		ProviderOptions: spec.ProviderOptions, MediaID: spec.MediaID, CreatedAt: now, UpdatedAt: now,
	}
	if v.Tags == nil {
		v.Tags = []string{}
	}
	if v.ProviderOptions == nil {
		v.ProviderOptions = map[string]any{}
	}
	if spec.MediaID != "" {
		if _, err := s.store.GetMedia(ctx, org, spec.MediaID); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, problem.New(problem.MediaNotFound, "no media %s in this organization", spec.MediaID)
			}
			return nil, err
		}
		if spec.VoiceID == "" {
			if v.VoiceID, err = s.clone(ctx, org, v); err != nil {
				return nil, err
			}
		}
	}
	if err := s.store.CreateVoice(ctx, v); err != nil {
		return nil, err
	}
	return v, nil
}

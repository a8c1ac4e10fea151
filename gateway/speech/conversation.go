package speech

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/voxgate/voxgate/gateway/admission/budget"
	"github.com/voxgate/voxgate/gateway/admission/moderation"
	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/sdk"
)

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
			if t.Result != nil {
				row.Cost = s.finalCost(t.Job, t.Result)
			}
			if t.Cache == "hit" {
				unbill(&row)
			}
			row.LatencyMS = t.Latency.Milliseconds()
			row.Status = 200
			switch {
			case t.Err == nil && err != nil:
				// Rendered, then discarded with the whole conversation: not
				// billed, like the conversation, and the row says so.
				pe := problem.New(problem.Cancelled, "rendered, but the conversation failed and nothing was sent")
				unbill(&row)
				row.Status, row.ErrorCode, row.ErrorDetail = pe.Status(), string(pe.Code), pe.Detail
			case t.Err == nil:
				out.Row.CreditsUsed += row.CreditsUsed
				out.Row.Cost += row.Cost
				out.Row.CostEstimate += row.CostEstimate
				out.Row.Currency = row.Currency
			default:
				pe := TurnProblem(t)
				unbill(&row)
				row.Status, row.ErrorCode, row.ErrorDetail = pe.Status(), string(pe.Code), pe.Detail
				if be, ok := blocked(t.Err); ok {
					row.Status = be.Verdict.Status()
				}
			}
			out.Turns = append(append(out.Turns, t.Attempts...), row)
		}
	}
	if err != nil {
		unbill(&out.Row)
	}
	return out, err
}

// conversationCredits is what the conversation costs if every turn
// renders: the most it can be charged, in credits and in money (the
// turns' quotes).
func (s *Service) conversationCredits(jobs []*Job) budget.Amount {
	var n budget.Amount
	for _, j := range jobs {
		n.Credits += int64(s.credits(j))
		n.Cost += s.estimate(j)
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

// ConversationRequest is the body of the conversation endpoints, shaped like
// the @speech-sdk/core gateway client's generateConversation call.
type ConversationRequest struct {
	Mode       string
	Model      string
	Turns      []Turn
	GapMs      *int
	VolumeDbfs *float64
	// Loudness levels every turn, then the whole, to an EBU R128 target;
	// not with VolumeDbfs or normalizeVolume false.
	Loudness            *audio.LoudnessParams
	Output              *audio.OutputParams
	Speed               *float64
	Split               bool
	Pronunciations      *Pronunciations
	ProviderOptions     json.RawMessage
	ModerationRulesetID string
	// NoCache renders every turn afresh (Cache-Control: no-cache).
	NoCache bool
	// Captions asks the with-timestamps endpoint for captions:
	// CaptionsSRT or CaptionsVTT.
	Captions string
	// Timestamps is "on" (default), "auto" or "off", per turn as for a
	// speech request (with-timestamps endpoint only).
	Timestamps string
	// NormalizeVolume levels every turn to VolumeDbfs (nil: true); false
	// joins the turns as the providers rendered them.
	NormalizeVolume *bool
	// Instructions apply to every turn that gives none of its own.
	Instructions *string
}

// Turn is one speaker turn.
type Turn struct {
	// Mode is "inline" or "voice", checked against the turn's fields.
	Mode            string
	VoiceID         string
	Model           string
	Voice           string
	Text            *string
	ProviderOptions json.RawMessage
	Speed           *float64
	Instructions    *string
}

// Conversation defaults and bounds.
const (
	DefaultGapMs       = 300
	MaxGapMs           = 5000
	DefaultConvoVolume = -20.0
)

// TurnResult is what happened to one turn.
type TurnResult struct {
	Index   int
	Job     *Job // nil when the turn failed before it was prepared
	Clip    *audio.Clip
	Result  *Result
	Err     error
	Latency time.Duration
	// Cache says what the response cache did for the turn, as
	// Spoken.Cache; a hit costs no credits.
	Cache string
	// Attempts are the rows of targets that failed before the one that
	// rendered the turn.
	Attempts []store.LogRow
}

// ConversationResult is a rendered conversation.
type ConversationResult struct {
	Audio      []byte
	MediaType  string
	Timestamps []ConversationTimestamp
	Warnings   []string
	// Turns has one entry per turn, in order.
	Turns []*TurnResult
	// Offsets are the rendered turns' start times in the joined clip, by
	// turn index (-1 for a failed turn).
	Offsets []float64
	// Segments holds each rendered turn encoded alone (split mode).
	Segments []Segment
	// Captions are the timestamps as captions, when asked for.
	Captions string
	// Conversion is what the gateway encoded the conversation from and to
	// (always ReasonJoin: turns are leveled and joined).
	Conversion *Conversion
}

// ConversationTimestamp is a word on the whole conversation's timeline.
type ConversationTimestamp struct {
	Text      string
	Start     float64
	End       float64
	TurnIndex int
}

// Segment is one rendered turn, encoded on its own.
type Segment struct {
	TurnIndex int
	Audio     []byte
	MediaType string
	// DurationMS is the segment's length in milliseconds.
	DurationMS int64
	Timestamps []sdk.WordTimestamp
}

// validate checks the conversation-level rules and returns per-turn speech
// requests.
func (s *Service) validateConversation(r *ConversationRequest, timestamps bool) ([]*Request, error) {
	var fe []problem.FieldError
	switch r.Mode {
	case "", "conversation":
	default:
		fe = append(fe, problem.Field(`must be "conversation"`, "mode"))
	}
	if len(r.Turns) == 0 {
		fe = append(fe, problem.Field("at least one turn is required", "turns"))
	}
	if len(r.Turns) > s.limits.MaxTurns {
		fe = append(fe, problem.Field(fmt.Sprintf("at most %d turns", s.limits.MaxTurns), "turns"))
	}
	gap := DefaultGapMs
	if r.GapMs != nil {
		gap = *r.GapMs
		if gap < 0 || gap > MaxGapMs {
			fe = append(fe, problem.Field(fmt.Sprintf("must be from 0 to %d", MaxGapMs), "gapMs"))
		}
	}
	if r.Speed != nil && !(*r.Speed >= MinSpeed && *r.Speed <= MaxSpeed) {
		fe = append(fe, problem.Field(fmt.Sprintf("must be between %g and %g", MinSpeed, MaxSpeed), "speed"))
	}
	fe = append(fe, validateOptions(r.ProviderOptions, "providerOptions")...)
	fe = append(fe, r.Pronunciations.Validate("pronunciations")...)
	if err := unavailableOutput(r.Output); err != nil {
		return nil, err
	}
	fe = append(fe, validateCaptions(r.Captions, timestamps)...)
	params := audio.Params{VolumeDbfs: r.VolumeDbfs, Loudness: r.Loudness, Output: r.Output}
	for _, e := range params.Validate() {
		fe = append(fe, problem.FieldError{Path: e.Path, Message: e.Message})
	}
	if r.NormalizeVolume != nil && !*r.NormalizeVolume && r.VolumeDbfs != nil {
		fe = append(fe, problem.Field("volumeDbfs is the level turns are normalized to; it has no effect with normalizeVolume false", "volumeDbfs"))
	}
	if r.NormalizeVolume != nil && !*r.NormalizeVolume && r.Loudness != nil {
		fe = append(fe, problem.Field("loudness is the level turns are normalized to; it has no effect with normalizeVolume false", "loudness"))
	}
	fe = append(fe, validateTimestamps(r.Timestamps, timestamps, "timestamps")...)
	fe = append(fe, validateInstructions(r.Instructions, "instructions")...)
	anyTurnModel := false
	total := 0
	for i, t := range r.Turns {
		if t.Model != "" {
			anyTurnModel = true
		}
		if t.VoiceID == "" && t.Model == "" && r.Model == "" && t.Voice != "" {
			fe = append(fe, problem.Field("needs a model: give a shared top-level model or one on every turn", "turns", strconv.Itoa(i), "model"))
		}
		if t.Text != nil {
			total += utf8.RuneCountInString(*t.Text)
		}
	}
	if r.Model != "" && anyTurnModel {
		fe = append(fe, problem.Field("give either a shared top-level model or a model on every turn, not both", "model"))
	}
	if total > s.limits.MaxConversationChars {
		fe = append(fe, problem.Field(fmt.Sprintf("the turns hold %d characters; at most %d per conversation", total, s.limits.MaxConversationChars), "turns"))
	}
	if len(fe) > 0 {
		return nil, problem.Validation(fe...)
	}
	reqs := make([]*Request, len(r.Turns))
	for i, t := range r.Turns {
		model := t.Model
		if model == "" && t.VoiceID == "" {
			model = r.Model
		}
		speed := r.Speed
		if t.Speed != nil {
			speed = t.Speed
		}
		opts, err := overlayOptions(r.ProviderOptions, t.ProviderOptions)
		if err != nil {
			return nil, err
		}
		instructions := r.Instructions
		if t.Instructions != nil {
			instructions = t.Instructions
		}
		reqs[i] = &Request{Mode: t.Mode, VoiceID: t.VoiceID, Model: model, Voice: t.Voice, Text: t.Text, ProviderOptions: opts,
			Speed: speed, Pronunciations: r.Pronunciations, ModerationRulesetID: r.ModerationRulesetID, NoCache: r.NoCache,
			Instructions: instructions, Timestamps: r.Timestamps}
	}
	return reqs, nil
}

// overlayOptions merges turn options over the conversation's.
func overlayOptions(shared, turn json.RawMessage) (json.RawMessage, error) {
	if len(shared) == 0 || string(shared) == "null" {
		return turn, nil
	}
	if len(turn) == 0 || string(turn) == "null" {
		return shared, nil
	}
	var a, b map[string]any
	if json.Unmarshal(shared, &a) != nil || json.Unmarshal(turn, &b) != nil {
		return nil, problem.Validation(problem.Field("must be an object", "providerOptions"))
	}
	for k, v := range b {
		a[k] = v
	}
	return json.Marshal(a)
}

// turnError prefixes a turn's problem paths with ["turns", i] and names the
// turn.
func turnError(err error, i int) error {
	var be *moderation.BlockedError
	if errors.As(err, &be) {
		c := *be
		c.TurnIndex = i
		return &c
	}
	pe := problem.From(err, "")
	c := *pe.WithTurn(i)
	if len(c.Validation) > 0 {
		c.Validation = make([]problem.FieldError, len(pe.Validation))
		for k, f := range pe.Validation {
			c.Validation[k] = problem.FieldError{Path: append([]string{"turns", strconv.Itoa(i)}, f.Path...), Message: f.Message}
		}
	}
	return &c
}

// prepareConversation validates the request and prepares every turn. A
// turn that cannot be prepared (unknown voice or model, disabled provider)
// fails the whole request, with turn_index: those are the caller's mistakes
// whatever split says.
func (s *Service) prepareConversation(ctx context.Context, org string, r *ConversationRequest, timestamps bool) ([]*Job, error) {
	if r.NormalizeVolume == nil || *r.NormalizeVolume {
		r.Loudness = s.defaultLoudness(org, r.VolumeDbfs, r.Loudness)
	}
	reqs, err := s.validateConversation(r, timestamps)
	if err != nil {
		return nil, err
	}
	// Every turn applies the same pronunciations: resolve them once.
	rules, err := s.requestRules(ctx, org, r.Pronunciations)
	if err != nil {
		return nil, err
	}
	for _, req := range reqs {
		req.rules = rules
	}
	ep := DeliverClip
	if timestamps {
		ep = DeliverTimestamps
	}
	jobs := make([]*Job, len(reqs))
	for i, req := range reqs {
		j, err := s.prepare(ctx, org, req, ep)
		if err != nil {
			return nil, turnError(err, i)
		}
		jobs[i] = j
	}
	return jobs, nil
}

// renderConversation moderates and synthesizes the turns concurrently (at
// most limits.conversation_concurrency at once), levels each to volumeDbfs,
// joins them with gapMs of silence and encodes once. Without split the
// first failed turn cancels the others and fails the request; with split
// the request fails only when no turn rendered.
func (s *Service) renderConversation(ctx context.Context, r *ConversationRequest, jobs []*Job, timestamps bool) (*ConversationResult, error) {
	// A conversation is whole-clip work from its first turn to its
	// encoding: one of the organization's turns covers all of it.
	done, err := s.slots.acquire(ctx, jobs[0].Org)
	if err != nil {
		return nil, err
	}
	defer done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	turns := make([]*TurnResult, len(jobs))
	sem := make(chan struct{}, s.limits.ConversationConcurrency)
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	for i, j := range jobs {
		turns[i] = &TurnResult{Index: i, Job: j}
		wg.Add(1)
		go func(tr *TurnResult) {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				tr.Err = stopped(ctx)
				return
			}
			defer func() { <-sem }()
			tr.Err = s.renderTurn(ctx, tr)
			if tr.Err != nil && !r.Split {
				once.Do(func() { firstErr = turnError(tr.Err, tr.Index); cancel() })
			}
		}(turns[i])
	}
	wg.Wait()
	res := &ConversationResult{Turns: turns, Offsets: make([]float64, len(turns))}
	if firstErr != nil {
		return res, firstErr
	}
	var clips []*audio.Clip
	var rendered []*TurnResult
	for _, t := range turns {
		if t.Err == nil {
			clips = append(clips, t.Clip)
			rendered = append(rendered, t)
		}
	}
	if len(rendered) == 0 {
		return res, turnError(turns[0].Err, 0)
	}
	out := convOutput(r, clips)
	var vol *float64 // nil: the turns keep the providers' levels
	var loud *audio.LoudnessTarget
	if r.Loudness != nil {
		t := r.Loudness.Target()
		loud = &t
	} else if r.NormalizeVolume == nil || *r.NormalizeVolume {
		v := DefaultConvoVolume
		if r.VolumeDbfs != nil {
			v = *r.VolumeDbfs
		}
		vol = &v
	}
	gap := DefaultGapMs
	if r.GapMs != nil {
		gap = *r.GapMs
	}
	if err := s.limits.Output.Check(joinedLen(clips, out, gap), out); err != nil {
		return res, processError(err, "", jobs[0])
	}
	learn := func(i int, lufs float64) { s.voices.learn(voiceKey(rendered[i].Job), lufs) }
	joined, offsets, err := audio.Concat(clips, audio.ConcatOptions{Rate: out.SampleRate, Gap: time.Duration(gap) * time.Millisecond,
		VolumeDbfs: vol, Loudness: loud, Measured: learn})
	if err != nil {
		return res, fmt.Errorf("join turns: %w", err)
	}
	if loud != nil {
		// Every turn is at the target; the whole is leveled once more (a
		// few tenths of a LU at most) and limited for its output format.
		var rep audio.LoudnessLeveling
		res.Audio, res.MediaType, rep, err = audio.EncodeLoudness(joined, *loud, out, audio.Limits{})
		if err == nil && rep.Missed {
			res.Warnings = append(res.Warnings, missedLoudnessWarning(*loud))
		}
	} else {
		res.Audio, res.MediaType, err = audio.Encode(joined, out)
	}
	if err != nil {
		return res, fmt.Errorf("encode conversation: %w", err)
	}
	// Turns are always decoded, leveled and joined: the conversation is
	// the gateway's own encoding, from what its first turn was asked in.
	res.Conversion = &Conversion{From: sourceEncoding(rendered[0].Job.Model, 0), Reason: ReasonJoin,
		To: sdk.Encoding{Format: out.Format, SampleRate: out.SampleRate, Bitrate: out.Bitrate}}
	for i := range res.Offsets {
		res.Offsets[i] = -1
	}
	for k, t := range rendered {
		res.Offsets[t.Index] = offsets[k]
		res.Warnings = append(res.Warnings, t.Result.Warnings...)
		if timestamps {
			for _, w := range t.Result.Timestamps {
				res.Timestamps = append(res.Timestamps, ConversationTimestamp{Text: w.Text, Start: w.Start + offsets[k], End: w.End + offsets[k], TurnIndex: t.Index})
			}
		}
		if r.Split {
			seg, err := segment(t, vol, loud, out)
			if err != nil {
				return res, err
			}
			res.Segments = append(res.Segments, seg)
		}
	}
	return res, nil
}

// renderTurn moderates and synthesizes one turn and decodes its audio,
// time-stretched when the turn's speed needs it. The turn's clip is only
// decoded, never encoded: the conversation encodes once.
func (s *Service) renderTurn(ctx context.Context, tr *TurnResult) error {
	start := time.Now()
	defer func() { tr.Latency = time.Since(start) }()
	if err := s.moderate(ctx, tr.Job); err != nil {
		return err
	}
	// A turn is cached as the provider's clip, before it is decoded,
	// stretched and leveled with the others; a turn whose provider fails
	// falls back like a speech request.
	next := s.fallbacks(ctx, tr.Job.Org, tr.Job.req, tr.Job)
	var res *Result
	for {
		var key string
		key, res = s.lookup(ctx, tr.Job, "turn")
		if res != nil {
			tr.Cache = "hit"
			break
		}
		tr.Cache = cacheState(key, tr.Job)
		attempt := time.Now()
		var err error
		if res, err = s.turnClip(ctx, tr.Job); err == nil {
			if key != "" {
				s.cache.put(key, res, false)
			}
			break
		}
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			// Stopped because another turn failed (or the client left),
			// not the provider's failure.
			return stopped(ctx)
		}
		alt := next()
		if alt == nil || !fallbackable(err) {
			return err
		}
		tr.Attempts = append(tr.Attempts, s.attemptRow(tr.Job, err, time.Since(attempt)))
		s.fellBack(tr.Job, alt, err)
		alt.Verdict = tr.Job.Verdict
		tr.Job = alt
	}
	clip, err := audio.Decode(res.Audio, res.MediaType)
	res.Release()
	res.Audio = nil
	if err != nil {
		return fmt.Errorf("decode %s audio of turn %d: %w", res.MediaType, tr.Index, err)
	}
	if sp := tr.Job.Params.Stretch; sp != 0 && sp != 1 {
		if clip, err = audio.Stretch(clip, sp); err != nil {
			return fmt.Errorf("turn %d: %w", tr.Index, err)
		}
	}
	tr.Result, tr.Clip = res, clip
	return nil
}

// joinedLen is the length in samples of the conversation's joined clip at
// out's rate.
func joinedLen(clips []*audio.Clip, out audio.Output, gapMs int) int {
	n := 0
	for i, c := range clips {
		n += int(math.Round(float64(len(c.Samples)) * float64(out.SampleRate) / float64(c.Rate)))
		if i > 0 {
			n += int(math.Round(float64(gapMs) / 1000 * float64(out.SampleRate)))
		}
	}
	return n
}

// turnClip renders a turn's clip for the conversation to decode: in one
// provider call in a format the gateway decodes cheaply, or piece by
// piece when the text is longer than the model takes or the gateway times
// its words (alignment, speech to text). Its timestamps are on the
// stretched turn's timeline either way; the conversation stretches and
// levels the turn itself, so the pieces' path gets no whole-clip
// processing.
func (s *Service) turnClip(ctx context.Context, j *Job) (*Result, error) {
	if len(j.pieces) <= 1 && j.timing != SourceAligned && j.timing != SourceSTT {
		return s.fetch(ctx, j, sourceEncoding(j.Model, 0))
	}
	pj := *j
	pj.Params = audio.Params{}
	res, err := s.synthesizePieces(ctx, &pj)
	if err != nil {
		return nil, err
	}
	if sp := j.Params.Stretch; sp != 0 && sp != 1 {
		for i := range res.Timestamps {
			res.Timestamps[i].Start /= sp
			res.Timestamps[i].End /= sp
		}
	}
	return res, nil
}

// convOutput picks the conversation's encoding: the request's output, else
// WAV at the highest rate among the turns (so no turn is downsampled).
func convOutput(r *ConversationRequest, clips []*audio.Clip) audio.Output {
	rate := 0
	for _, c := range clips {
		rate = max(rate, c.Rate)
	}
	out := audio.Output{Format: audio.FormatWAV}
	if r.Output != nil {
		out = r.Output.Output()
	}
	resolved, err := out.Resolve(rate)
	if err != nil {
		return audio.Output{Format: audio.FormatWAV, SampleRate: rate}
	}
	return resolved
}

// segment encodes one rendered turn alone, leveled like in the joined clip
// (vol nil: as rendered).
func segment(t *TurnResult, vol *float64, loud *audio.LoudnessTarget, out audio.Output) (Segment, error) {
	c, err := audio.Resample(t.Clip, out.SampleRate)
	if err != nil {
		return Segment{}, err
	}
	cp := &audio.Clip{Rate: c.Rate, Samples: append([]float32(nil), c.Samples...)}
	if vol != nil {
		audio.Normalize(cp, *vol)
	}
	var data []byte
	var mt string
	if loud != nil {
		data, mt, _, err = audio.EncodeLoudness(cp, *loud, out, audio.Limits{})
	} else {
		data, mt, err = audio.Encode(cp, out)
	}
	if err != nil {
		return Segment{}, fmt.Errorf("encode turn %d: %w", t.Index, err)
	}
	var ms int64
	if cp.Rate > 0 {
		ms = int64(len(cp.Samples)) * 1000 / int64(cp.Rate)
	}
	return Segment{TurnIndex: t.Index, Audio: data, MediaType: mt, DurationMS: ms, Timestamps: t.Result.Timestamps}, nil
}

// Chars returns a conversation's total characters.
func Chars(jobs []*Job) int {
	n := 0
	for _, j := range jobs {
		n += utf8.RuneCountInString(j.Text)
	}
	return n
}

// ProviderSummary names the conversation's provider, or "mixed".
func ProviderSummary(jobs []*Job) (provider, model string) {
	for i, j := range jobs {
		if i == 0 {
			provider, model = j.Provider.ID, j.Model.ID
			continue
		}
		if j.Provider.ID != provider {
			provider = "mixed"
		}
		if j.Model.ID != model {
			model = "mixed"
		}
	}
	return provider, model
}

package speech

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/voxgate/voxgate/gateway/admission/moderation"
	"github.com/voxgate/voxgate/gateway/observe/tracing"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/store"
)

// prepare validates r for org on endpoint ep and resolves everything the
// provider call needs. Failures are *problem.Error values.
func (s *Service) prepare(ctx context.Context, org string, r *Request, ep Delivery) (*Job, error) {
	if err := r.Validate(ep); err != nil {
		return nil, err
	}
	j := &Job{Org: org, Delivery: ep, Text: *r.Text, Params: r.Params(), noCache: r.NoCache, req: r}
	var savedOpts map[string]any
	if r.VoiceID != "" {
		v, err := s.savedVoice(ctx, org, r.VoiceID)
		if err != nil {
			return nil, err
		}
		p, m, err := s.cat.Resolve(v.Provider, v.Model)
		if err != nil {
			return nil, err
		}
		j.Provider, j.Model, j.Voice, j.VoiceRef = p, m, v.VoiceID, v.ID
		j.fallbacks = v.Fallbacks
		savedOpts = v.ProviderOptions
	} else {
		p, m, err := s.cat.ResolveModel(r.Model)
		if err != nil {
			return nil, err
		}
		j.Provider, j.Model, j.Voice = p, m, r.Voice
	}
	if err := checkScope(ctx, j); err != nil {
		return nil, err
	}
	reqOpts, warnings, err := r.dialectOptions(j)
	if err != nil {
		return nil, err
	}
	j.Warnings = warnings
	opts, err := mergeOptions(savedOpts, reqOpts)
	if err != nil {
		return nil, err
	}
	j.Options = opts
	if err := s.checkCapabilities(j, r); err != nil {
		return nil, err
	}
	if err := j.applyStreamFormat(r.StreamFormat); err != nil {
		return nil, err
	}
	if n := utf8.RuneCountInString(j.Text); n > s.limits.MaxTextChars {
		return nil, problem.New(problem.TextTooLong, "text has %d characters; a request may have at most %d (limits.max_text_chars)", n, s.limits.MaxTextChars)
	}
	var tagWarnings []string
	j.tagged, tagWarnings = applyTags(j.Text, j.Model, j.name)
	j.Warnings = append(j.Warnings, tagWarnings...)
	if strings.TrimSpace(j.tagged) == "" {
		return nil, problem.Validation(problem.Field(fmt.Sprintf("has nothing to say once the audio tags %s does not perform are removed", j.name()), "text"))
	}
	sources := r.rules
	if sources == nil {
		if sources, err = s.requestRules(ctx, org, r.Pronunciations); err != nil {
			return nil, err
		}
	}
	j.rules = sources
	j.setText(j.tagged)
	j.pieces = splitText(j.spokenText(), s.pieceLimit(j))
	if err := j.checkEncodable(); err != nil {
		return nil, err
	}
	if err := s.prepareLoudness(j, r); err != nil {
		return nil, err
	}
	if j.Creds, err = s.creds.For(ctx, org, j.Provider.ID); err != nil {
		return nil, err
	}
	if s.mod != nil {
		if j.Ruleset, err = s.mod.Ruleset(org, r.ModerationRulesetID); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// savedVoice loads a saved voice of org.
func (s *Service) savedVoice(ctx context.Context, org, id string) (*store.Voice, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, problem.New(problem.VoiceNotFound, "no voice %q in this organization (voiceId is a saved voice's uuid)", id)
	}
	v, err := s.store.GetVoice(ctx, org, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, problem.New(problem.VoiceNotFound, "no voice %s in this organization", id)
	}
	if err != nil {
		return nil, err
	}
	if v.Provider == "" || v.Model == "" || v.VoiceID == "" {
		return nil, problem.New(problem.VoiceIncomplete, "saved voice %s lacks a provider, model or provider voice id", id)
	}
	return v, nil
}

func (s *Service) checkCapabilities(j *Job, r *Request) error {
	caps := j.Model.Capabilities
	switch j.Delivery {
	case DeliverTimestamps:
		if r.Timestamps == TimestampsOff {
			j.timing = SourceNone
			break
		}
		var err error
		if j.timing, err = s.chooseTiming(j); err != nil {
			if r.Timestamps != TimestampsAuto {
				return err
			}
			j.timing = SourceNone
			j.Warnings = append(j.Warnings, fmt.Sprintf("No word timestamps (timestamps: auto): %s.", problem.From(err, "").Detail))
		}
	case DeliverStream:
		if !caps.Streaming {
			return problem.New(problem.StreamingUnsupported, "model %s cannot stream; use POST /v1/audio/speech", j.name())
		}
	}
	if r.Speed != nil && *r.Speed != 1 {
		switch {
		case caps.Speed && inRange(*r.Speed, j.Model.MinSpeed, j.Model.MaxSpeed):
			j.Speed = *r.Speed
		case j.Delivery == DeliverStream:
			// Without native speed, speed is a whole-clip parameter.
			return &problem.Error{Code: problem.ParamNotAllowedOnStream,
				Detail:     fmt.Sprintf("model %s cannot speak at speed %g natively; that needs the whole clip, use POST /v1/audio/speech", j.name(), *r.Speed),
				Validation: []problem.FieldError{problem.Field("whole-clip parameter for this model", "speed")}}
		default:
			// The gateway renders at normal speed and stretches the
			// whole clip, keeping pitch.
			j.Params.Stretch = *r.Speed
		}
	}
	return nil
}

// inRange reports whether a model's native speed range (0 = unbounded on
// that side) holds speed.
func inRange(speed, lo, hi float64) bool {
	return (lo == 0 || speed >= lo) && (hi == 0 || speed <= hi)
}

// mergeOptions overlays the request's providerOptions on a saved voice's.
func mergeOptions(saved map[string]any, req json.RawMessage) ([]byte, error) {
	if len(saved) == 0 {
		if len(req) == 0 || string(req) == "null" {
			return nil, nil
		}
		return req, nil
	}
	merged := make(map[string]any, len(saved))
	for k, v := range saved {
		merged[k] = v
	}
	if len(req) > 0 && string(req) != "null" {
		var over map[string]any
		if err := json.Unmarshal(req, &over); err != nil {
			return nil, problem.Validation(problem.Field("must be an object", "providerOptions"))
		}
		for k, v := range over {
			merged[k] = v
		}
	}
	return json.Marshal(merged)
}

// requestRules returns the rule sources a request of org applies, lowest
// precedence first: the org's default dictionary, p's dictionaries in the
// order listed, p's inline rules (layerRules puts them together per
// text). A listed dictionary that is not org's is 404
// dictionary_not_found. The rules come from memory: the gateway gives the
// service a store that caches them (gateway/store/readcache).
func (s *Service) requestRules(ctx context.Context, org string, p *Pronunciations) ([][]PronunciationRule, error) {
	var ids []string
	var inline []PronunciationRule
	if p != nil {
		ids, inline = p.DictionaryIDs, p.Rules
	}
	if s.dicts == nil {
		return [][]PronunciationRule{inline}, nil
	}
	if len(ids) == 0 {
		stored, _, err := s.dicts.DictionaryRules(ctx, org, nil)
		if err != nil {
			return nil, fmt.Errorf("read the default pronunciation dictionary: %w", err)
		}
		if len(stored) == 0 && len(inline) == 0 {
			return nil, nil // the commonest request: nothing to apply, nothing to allocate
		}
		return [][]PronunciationRule{toRules(stored), inline}, nil
	}
	stored, byID, err := s.dicts.DictionaryRules(ctx, org, ids)
	if err != nil {
		var missing *store.MissingDictionaryError
		if errors.As(err, &missing) {
			return nil, &problem.Error{Code: problem.DictionaryNotFound, Detail: fmt.Sprintf("no pronunciation dictionary %s in this organization", missing.ID),
				Validation: []problem.FieldError{problem.Field("not a dictionary of this organization", "pronunciations", "dictionaryIds")}}
		}
		return nil, fmt.Errorf("read pronunciation dictionaries: %w", err)
	}
	sources := make([][]PronunciationRule, 0, len(ids)+2)
	sources = append(sources, toRules(stored))
	for _, rs := range byID {
		sources = append(sources, toRules(rs))
	}
	return append(sources, inline), nil
}

func toRules(rs []store.PronunciationRule) []PronunciationRule {
	out := make([]PronunciationRule, len(rs))
	for i := range rs {
		out[i] = fromStored(&rs[i])
	}
	return out
}

// moderate runs the job's ruleset over its text. A blocked request gets a
// *moderation.BlockedError and must not reach the provider.
func (s *Service) moderate(ctx context.Context, j *Job) error {
	if s.mod == nil {
		return nil
	}
	ctx, span := s.tracer.Start(ctx, "moderation", trace.SpanKindInternal)
	defer func() {
		if span.IsRecording() {
			span.SetAttributes(tracing.Ruleset.String(j.Ruleset), tracing.Decision.String(j.Verdict.Decision))
		}
		span.End()
	}()
	j.Verdict = s.mod.Check(ctx, j.Ruleset, j.Text)
	// Pronunciation rules change what the provider speaks, so the spoken
	// text is checked too: a rule must not smuggle blocked words past the
	// check of the written text.
	if spoken := stripMarks(j.spokenText()); !j.Verdict.Blocked() && j.subst != nil && spoken != j.tagged {
		v := s.mod.Check(ctx, j.Ruleset, spoken)
		v.Latency += j.Verdict.Latency
		if v.Blocked() || j.Verdict.Decision != moderation.DecisionAllowOnError {
			j.Verdict = v
		}
	}
	if j.Verdict.Blocked() {
		return &moderation.BlockedError{Verdict: j.Verdict, TurnIndex: -1}
	}
	return nil
}

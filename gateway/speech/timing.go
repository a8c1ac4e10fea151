package speech

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"

	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/audio/align"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/providers/catalog"
	"github.com/voxgate/voxgate/sdk"
)

// Where a response's word timestamps came from
// (providerMetadata.voxgate.timestamps_source).
const (
	// SourceNative: the provider's own timestamps.
	SourceNative = "native"
	// SourceAligned: the gateway's offline aligner (package align).
	SourceAligned = "aligned"
	// SourceSTT: a speech-to-text transcription of the audio, mapped to
	// the text's words.
	SourceSTT = "stt"
	// SourceNone: no timestamps, as asked (timestamps: off) or because
	// none could be had (timestamps: auto).
	SourceNone = "none"
)

// chooseTiming decides where j's word timestamps come from, from the
// model's capabilities, the provider's timestamps setting and the
// deployment's alignment method. It fails with 503 timestamps_unavailable when none is
// available, saying what configuration would give one.
func (s *Service) chooseTiming(j *Job) (string, error) {
	name := j.Provider.ID + "/" + j.Model.ID
	native := j.Model.Capabilities.Timestamps
	method := j.Provider.Policy.Timestamps
	switch method {
	case "", TimingAuto:
		if native {
			return SourceNative, nil
		}
		method = s.align.Method
	case TimingNative:
		if native {
			return SourceNative, nil
		}
		return "", problem.New(problem.TimestampsUnavailable, "model %s does not return word timestamps, and provider %s takes no others (providers.%s.timestamps: native)", name, j.Provider.ID, j.Provider.ID)
	}
	switch method {
	case TimingAligned:
		if s.reference() == nil {
			return "", problem.New(problem.TimestampsUnavailable, "model %s does not return word timestamps, and this deployment has no reference provider to align them with (alignment.reference, e.g. espeak)", name)
		}
		return SourceAligned, nil
	case TimingSTT:
		if s.transcriber() == nil {
			return "", problem.New(problem.TimestampsUnavailable, "model %s does not return word timestamps, and this deployment's speech-to-text provider (alignment.stt.provider) cannot transcribe", name)
		}
		return SourceSTT, nil
	}
	return "", problem.New(problem.TimestampsUnavailable, "model %s does not return word timestamps (alignment is off in this deployment)", name)
}

// TimestampsSource says where the with-timestamps endpoints take the word
// timestamps of model m of provider p from: SourceNative, SourceAligned,
// SourceSTT, or SourceNone when they answer 503 timestamps_unavailable.
func (s *Service) TimestampsSource(p *catalog.Provider, m *sdk.Model) string {
	src, err := s.chooseTiming(&Job{Provider: p, Model: m})
	if err != nil {
		return SourceNone
	}
	return src
}

// reference returns the provider that renders references, or nil when
// offline alignment is unavailable: none configured, or one whose
// default model reports no word timestamps.
func (s *Service) reference() *catalog.Provider {
	p := s.cat.Provider(s.align.Reference)
	if p == nil || !p.Model(p.Desc.DefaultModel).Capabilities.Timestamps {
		return nil
	}
	return p
}

// transcriber returns the speech-to-text provider, or nil.
func (s *Service) transcriber() *catalog.Provider {
	p := s.cat.Provider(s.align.STTProvider)
	if p == nil || !p.Desc.Transcribes {
		return nil
	}
	if _, ok := p.Plugin.(sdk.Transcriber); !ok {
		return nil
	}
	return p
}

// timed is the outcome of timing one piece's words.
type timed struct {
	// words are the piece's timestamps, relative to its start; nil when
	// the piece could not be timed (warning says why).
	words   []sdk.WordTimestamp
	warning string
	// match is the aligner's Match (aligned only).
	match float64
	// reference is the reference voice the words were aligned against.
	reference string
}

// references renders text with the reference provider in the voice for
// the job's language, male and female, for the aligner. The references
// are internal work: no credits, no organization policy (the reference
// provider needs no credentials), the reference provider's timeout.
type references struct {
	done   chan struct{}
	refs   []align.Reference
	voices []string
	err    error
}

// startReferences renders the references of text in the background, so
// they are ready by the time the provider's clip is.
func (s *Service) startReferences(ctx context.Context, j *Job, text string) *references {
	r := &references{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.refs, r.voices, r.err = s.renderReferences(ctx, j, text)
	}()
	return r
}

// wait returns the references once rendered.
func (r *references) wait(ctx context.Context) ([]align.Reference, error) {
	select {
	case <-r.done:
		return r.refs, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// referenceVariant is the eSpeak variant of the female reference voice:
// a clip is aligned against whichever reference voice it matches best,
// which halves the errors on voices far from eSpeak's male default.
const referenceVariant = "+f3"

func (s *Service) renderReferences(ctx context.Context, j *Job, text string) ([]align.Reference, []string, error) {
	p := s.reference()
	if p == nil {
		return nil, nil, errors.New("no reference provider")
	}
	voice := s.referenceVoice(ctx, p, j, text)
	voices := []string{voice, voice + referenceVariant}
	refs := make([]align.Reference, len(voices))
	errs := make([]error, len(voices))
	var wg sync.WaitGroup
	for i, v := range voices {
		wg.Add(1)
		go func() {
			defer wg.Done()
			refs[i], errs[i] = s.renderReference(ctx, p, v, text)
		}()
	}
	wg.Wait()
	if errs[0] != nil {
		return nil, nil, errs[0]
	}
	if errs[1] != nil {
		return refs[:1], voices[:1], nil // a reference provider without eSpeak's variants
	}
	return refs, voices, nil
}

// renderReference renders text in voice, in pieces of the reference
// model's limit joined end to end.
func (s *Service) renderReference(ctx context.Context, p *catalog.Provider, voice, text string) (align.Reference, error) {
	m := p.Model(p.Desc.DefaultModel)
	limit := m.MaxTextChars
	if limit <= 0 {
		limit = DefaultModelTextChars
	}
	var clips []*audio.Clip
	var words [][]sdk.WordTimestamp
	for _, part := range splitText(text, limit) {
		var resp *sdk.SynthesizeResponse
		err := s.callProvider(ctx, p, m.ID, "reference", func(ctx context.Context) error {
			var err error
			resp, err = p.Plugin.Synthesize(ctx, &sdk.SynthesizeRequest{Model: m.ID, Voice: voice, Text: part, Format: decodableFormat(m), Timestamps: true})
			return err
		})
		if err != nil {
			return align.Reference{}, fmt.Errorf("reference in %s: %w", voice, err)
		}
		c, err := audio.Decode(resp.Audio, resp.MediaType)
		if err != nil {
			return align.Reference{}, fmt.Errorf("decode reference: %w", err)
		}
		clips, words = append(clips, c), append(words, resp.Timestamps)
	}
	joined, offsets, err := audio.Concat(clips, audio.ConcatOptions{})
	if err != nil {
		return align.Reference{}, err
	}
	ref := align.Reference{Clip: joined}
	for k, ws := range words {
		for _, w := range ws {
			ref.Words = append(ref.Words, sdk.WordTimestamp{Text: w.Text, Start: w.Start + offsets[k], End: w.End + offsets[k]})
		}
	}
	return ref, nil
}

// callProvider runs one call to model of provider p (not the job's) under
// the provider's timeout and records its metrics.
func (s *Service) callProvider(parent context.Context, p *catalog.Provider, model, op string, fn func(ctx context.Context) error) error {
	_, err := s.calls.Do(parent, p, model, op, fn)
	return err
}

// alignPiece times the words of one rendered piece with the offline
// aligner. It waits for the piece's references and for a free aligner
// slot (alignment.concurrency).
func (s *Service) alignPiece(ctx context.Context, j *Job, clip *audio.Clip, refs *references) (timed, error) {
	rs, err := refs.wait(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return timed{}, ctx.Err()
		}
		s.log.Warn("alignment reference failed", zap.String("provider", s.align.Reference), zap.Error(err))
		return timed{warning: "No word timestamps: the reference speech for aligning them could not be rendered (" + sdk.AsError(err).Message + ")."}, nil
	}
	select {
	case s.alignSlots <- struct{}{}:
	case <-ctx.Done():
		return timed{}, ctx.Err()
	}
	start := time.Now()
	res, err := align.Align(clip, rs...)
	<-s.alignSlots
	if s.metrics != nil {
		s.metrics.ProviderLatency.WithLabelValues(j.Provider.ID, j.MetricModel(), "align").Observe(time.Since(start).Seconds())
	}
	switch {
	case errors.Is(err, align.ErrNoSpeech):
		return timed{warning: fmt.Sprintf("No word timestamps: the audio from %s holds no speech to align.", j.name())}, nil
	case errors.Is(err, align.ErrNoMatch):
		return timed{match: res.Match, warning: fmt.Sprintf("No word timestamps: the audio from %s does not follow the text closely enough to align its words (match %.2f, at most %.2f); they are left out rather than guessed.", j.name(), res.Match, align.MaxMatch)}, nil
	case err != nil:
		return timed{}, fmt.Errorf("align: %w", err)
	}
	return timed{words: res.Words, match: res.Match, reference: refs.voices[res.Reference]}, nil
}

// name is the job's model as "provider/model".
func (j *Job) name() string { return j.Provider.ID + "/" + j.Model.ID }

// referenceVoice picks the reference provider's voice for the job's
// language: the language the request's providerOptions name
// ("language", "language_code" or "lang"), else the job's own voice when
// the job is the reference provider's, else the language the provider's
// voice list gives the voice, else the language the text looks like;
// mapped onto the reference provider's voices (exact, then by the main
// language subtag), English when it has none.
func (s *Service) referenceVoice(ctx context.Context, p *catalog.Provider, j *Job, text string) string {
	voices := s.referenceVoices(ctx, p)
	candidates := []func() string{
		func() string { return optionLanguage(j.Options) },
		func() string {
			if j.Provider == p {
				return strings.SplitN(j.Voice, "+", 2)[0]
			}
			return ""
		},
		func() string { return s.voiceLanguage(ctx, j) },
		func() string { return guessLanguage(text) },
	}
	for _, c := range candidates {
		lang := strings.ToLower(strings.ReplaceAll(c(), "_", "-"))
		if lang == "" {
			continue
		}
		if len(voices) == 0 {
			return lang // nothing to check against: let the provider say
		}
		main, _, _ := strings.Cut(lang, "-")
		for _, want := range []string{lang, main} {
			for _, v := range voices {
				if strings.EqualFold(v.ID, want) {
					return v.ID
				}
			}
		}
	}
	return "en"
}

// referenceVoices lists the reference provider's voices once; a failed
// listing is retried on the next request.
func (s *Service) referenceVoices(ctx context.Context, p *catalog.Provider) []sdk.Voice {
	s.refMu.Lock()
	defer s.refMu.Unlock()
	if s.refVoices == nil {
		vs, err := p.Plugin.Voices(ctx, &sdk.VoicesRequest{Model: p.Desc.DefaultModel})
		if err != nil {
			s.log.Warn("listing the reference provider's voices failed", zap.String("provider", p.ID), zap.Error(err))
			return nil
		}
		s.refVoices = vs
	}
	return s.refVoices
}

// optionLanguage returns the language a request's providerOptions name.
func optionLanguage(opts []byte) string {
	if len(opts) == 0 {
		return ""
	}
	var o map[string]any
	if json.Unmarshal(opts, &o) != nil {
		return ""
	}
	for _, k := range []string{"language", "language_code", "lang"} {
		if v, ok := o[k].(string); ok && v != "" && len(v) <= 16 {
			return v
		}
	}
	return ""
}

// scriptLanguages maps writing systems that (nearly) name their language
// to an eSpeak voice.
var scriptLanguages = []struct {
	table *unicode.RangeTable
	lang  string
}{
	{unicode.Hiragana, "ja"}, {unicode.Katakana, "ja"}, {unicode.Hangul, "ko"}, {unicode.Han, "cmn"},
	{unicode.Cyrillic, "ru"}, {unicode.Greek, "el"}, {unicode.Arabic, "ar"}, {unicode.Hebrew, "he"},
	{unicode.Devanagari, "hi"}, {unicode.Thai, "th"}, {unicode.Georgian, "ka"}, {unicode.Armenian, "hy"},
}

// stopwords are frequent short words of languages written in Latin
// script, enough to tell them apart in a sentence or two.
var stopwords = map[string][]string{
	"en": {"the", "and", "is", "of", "to", "in", "that", "it", "you", "was", "for", "are", "with", "this", "have"},
	"de": {"der", "die", "und", "das", "ist", "nicht", "ein", "ich", "zu", "den", "mit", "sie", "es", "auf", "sich"},
	"fr": {"le", "la", "les", "et", "est", "un", "une", "des", "du", "que", "pas", "je", "vous", "il", "pour"},
	"es": {"el", "los", "las", "y", "es", "un", "una", "que", "en", "por", "no", "con", "para", "lo", "del"},
	"it": {"il", "che", "di", "non", "per", "sono", "è", "gli", "del", "della", "un", "una", "ho", "questo", "anche"},
	"pt": {"o", "os", "e", "é", "um", "uma", "que", "não", "em", "do", "da", "com", "para", "se", "mais"},
	"nl": {"de", "het", "een", "en", "is", "van", "niet", "dat", "ik", "je", "met", "op", "zijn", "voor", "ook"},
}

// guessLanguage guesses the language of text: by its script when that
// names one, by frequent words among languages written in Latin script,
// English when nothing tells.
func guessLanguage(text string) string {
	counts := make([]int, len(scriptLanguages))
	letters := 0
	for _, r := range text {
		if !unicode.IsLetter(r) {
			continue
		}
		letters++
		for i, sl := range scriptLanguages {
			if unicode.Is(sl.table, r) {
				counts[i]++
				break
			}
		}
	}
	// Japanese mixes kana with kanji: any kana decides.
	if counts[0]+counts[1] > 0 {
		return "ja"
	}
	for i, c := range counts {
		if c > letters/2 {
			return scriptLanguages[i].lang
		}
	}
	hits := map[string]int{}
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) }) {
		for lang, ws := range stopwords {
			for _, sw := range ws {
				if w == sw {
					hits[lang]++
				}
			}
		}
	}
	best, n := "en", 1
	for _, lang := range []string{"en", "de", "fr", "es", "it", "pt", "nl"} {
		if hits[lang] > n {
			best, n = lang, hits[lang]
		}
	}
	return best
}

package speech

import (
	"strings"

	"github.com/voxgate/voxgate/gateway/admission/moderation"
	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/providers/catalog"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/sdk"
)

// Job is a resolved, policy-checked speech request, ready to run.
type Job struct {
	Org      string
	Delivery Delivery
	Provider *catalog.Provider
	Model    *sdk.Model
	// Voice is the provider-side voice id; VoiceRef the saved voice's id.
	Voice    string
	VoiceRef string
	// Text is the request's text. tagged is the text with the audio
	// tags the model does not perform removed; spokenText is what the
	// provider receives, after pronunciations too.
	Text   string
	tagged string
	subst  *substitution
	// lex renders the phoneme rules the spoken text marks, for the
	// model (compile.go); nil when no rule applies.
	lex *compiler
	// rules are the pronunciation rule sources the text is spoken with
	// (the organization's default dictionary, the listed ones, inline).
	rules [][]PronunciationRule
	// pieces is the spoken text cut to the model's limit: one piece
	// unless the text is longer.
	pieces []string
	// timing is where word timestamps come from (DeliverTimestamps).
	timing string
	// noCache asks for a fresh rendering (Cache-Control: no-cache).
	noCache bool
	// fallbacks are the saved voice's equivalent voices, if any.
	fallbacks []store.VoiceTarget
	// req is the request the job was prepared from (for its fallbacks).
	req     *Request
	Options []byte
	Creds   sdk.Credentials
	Speed   float64
	Params  audio.Params
	Ruleset string
	Verdict moderation.Verdict
	// Stream is the encoding a stream asks the provider for; zero is
	// the model's preferred one.
	Stream StreamFormat
	// conv is what the gateway converts the job's stream from and to
	// (applyStreamFormat, transcode); nil while it passes through.
	conv *Conversion
	// missedLoudness is set by whole-clip processing when the loudness
	// target was out of reach (audio.LoudnessLeveling.Missed).
	missedLoudness bool
	// Warnings say what of the request was dropped or changed (removed
	// audio tags, options meant for another provider, instructions the
	// model ignores); the answer carries them.
	Warnings []string
	// cost is the job's calls priced (Service.price), counted once for
	// the row, the reservation and the settlement; setText resets it.
	cost jobCost
	// streamBilled is what the providers' answers said the job's stream
	// was billed (headers, chunks, its later pieces), for StreamCost.
	// Written by the goroutine reading the stream, which also settles it.
	streamBilled []sdk.BilledUsage
}

// setText makes tagged (the text with the audio tags the model does not
// perform removed) the job's text to speak, with its pronunciation rules
// applied. The private-use runes the rules mark words with (compile.go)
// are taken out of the caller's text first, so a caller cannot write a
// mark of its own and have a word spoken by another word's rule.
func (j *Job) setText(tagged string) {
	tagged = stripMarks(tagged)
	j.tagged, j.subst, j.lex = tagged, nil, nil
	j.cost = jobCost{}
	if rules := layerRules(tagged, j.rules...); rules != nil {
		j.lex = newCompiler(j.Model)
		j.subst = rules.apply(tagged, j.lex)
		j.lex.buildLexicons(j.rules)
		if w := j.lex.warning(j.name()); w != "" {
			j.Warnings = append(j.Warnings, w)
		}
	}
}

// inputText is a segment's spoken text for a provider's input stream,
// which carries no markup (compiler.plain).
func (j *Job) inputText() string { return j.lex.plain(j.spokenText()) }

// renderedText is the whole spoken text as the provider gets it, with
// the versions of the lexicons that go with it: what a cached answer
// must match (a changed pronunciation is another answer).
func (j *Job) renderedText() string {
	text, markup, marked := j.lex.render(j.spokenText())
	if !marked {
		return text
	}
	var b strings.Builder
	b.WriteString(markup)
	b.WriteByte(0)
	b.WriteString(text)
	for _, l := range j.lex.lexicons {
		b.WriteByte(0)
		b.WriteString(l.Version)
	}
	return b.String()
}

func (j *Job) spokenText() string {
	if j.subst != nil {
		return j.subst.text
	}
	return j.tagged
}

// request is the provider request for the job's whole spoken text.
func (j *Job) request() *sdk.SynthesizeRequest { return j.requestFor(j.spokenText()) }

// requestIn is requestFor in format ("": the job's stream format): in
// another format than the job's, the model's first encoding of it, at the
// job's rate when the model has that rate in it. Every piece of a long
// text's stream is asked for this way, so all come alike.
func (j *Job) requestIn(text, format string) *sdk.SynthesizeRequest {
	req := j.requestFor(text)
	if format != "" && format != req.Format {
		req.Format, req.Bitrate = format, 0
		if !hasRate(j.Model, format, req.SampleRate) {
			req.SampleRate = 0
		}
	}
	return req
}

// requestFor is the provider request for text (the whole or a piece).
func (j *Job) requestFor(text string) *sdk.SynthesizeRequest {
	text, markup, marked := j.lex.render(text)
	var lexicons []sdk.Lexicon
	if marked {
		lexicons = j.lex.lexicons
	}
	return &sdk.SynthesizeRequest{
		Markup:      markup,
		Lexicons:    lexicons,
		Model:       j.Model.ID,
		Voice:       j.Voice,
		Text:        text,
		Speed:       j.Speed,
		Options:     j.Options,
		Credentials: j.Creds,
		Format:      j.Stream.Format,
		SampleRate:  j.Stream.SampleRate,
		Bitrate:     j.Stream.Bitrate,
	}
}

// processing is the reason j's samples must go through the gateway
// whatever its model offers (volumeDbfs, loudness, a time-stretch), or "".
func (j *Job) processing() string {
	if p := j.Params; p.VolumeDbfs != nil || p.Loudness != nil || (p.Stretch != 0 && p.Stretch != 1) {
		return ReasonProcessing
	}
	return ""
}

// checkEncodable refuses a clip whose output the gateway would have to
// encode in a format it cannot produce (AAC): the model does not produce
// it, or the gateway works on the samples.
func (j *Job) checkEncodable() error {
	if j.Delivery == DeliverStream || j.Params.Output == nil || audio.Encodes(j.Params.Output.Format) {
		return nil
	}
	r := j.rendition()
	if len(j.pieces) > 1 || j.timing == SourceAligned || j.timing == SourceSTT {
		r = j.piecesRendition()
	}
	if r.passThrough() {
		return nil
	}
	return unavailableOutput(j.Params.Output)
}

// rendition negotiates j's clip when it renders in one provider call.
func (j *Job) rendition() rendition {
	return negotiate(j.Model, j.Params.Output, j.processing())
}

// MetricModel is the model label of j's metrics (Provider.MetricModel).
func (j *Job) MetricModel() string { return j.Provider.MetricModel(j.Model.ID) }

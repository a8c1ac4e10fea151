package speech

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/voxgate/voxgate/gateway/admission/budget"
	"github.com/voxgate/voxgate/gateway/admission/moderation"
	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/pricing"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/sdk"
)

// The realtime use case (docs/realtime.md): a context of the realtime
// WebSocket is resolved once, when it starts (StartLive), and then speaks
// segment after segment of text that keeps arriving, either one provider
// call per segment (Render) or through the provider's own input stream
// (OpenInput). The WebSocket layer cuts the text into segments and orders
// the steps; everything that knows providers, moderation and credits is
// here.

// LiveRequest starts a realtime context: the speech body without text.
type LiveRequest struct {
	// Request holds the voice, model, options, speed and ruleset; its Text
	// is ignored, and Output names a format the model streams itself
	// (pcm or mp3) with an optional sample rate.
	Request
	// Timestamps asks for word timings.
	Timestamps bool
}

// Live is a started realtime context. Its methods may be called from one
// goroutine at a time, except Row, which is safe once the context's work
// has ended.
type Live struct {
	s          *Service
	org        string
	job        *Job
	format     string
	rate       int
	bitrate    int
	mediaType  string
	timestamps bool
	input      bool
	// loudness is the organization's default loudness target, for a
	// context of raw PCM, which the gateway levels as it passes (level,
	// newLeveler); nil: the audio passes as the provider sends it.
	loudness *audio.LoudnessTarget
	// req is the start's request (text a placeholder), for fallbacks;
	// next yields the voice's fallback targets in turn (Failover).
	req  Request
	next func() *Job

	mu    sync.Mutex
	chars int // characters sent to the provider
	// units are the billing units of the text sent, counted segment by
	// segment (the context's cost, cost.go).
	units     pricing.Usage
	produced  bool    // some audio arrived
	offset    float64 // seconds of audio so far (segments rendered one by one)
	verdict   moderation.Verdict
	moderated bool
	modTime   time.Duration
	// charges are the credits and money reserved from the organization's
	// and the key's budgets, one charge per segment that needed more
	// (spend); Settle gives back what was not spent.
	charges  []*budget.Charge
	amounts  []budget.Amount
	reserved budget.Amount
}

// liveFormats are the output formats a realtime context may ask for: the
// ones whose segments can simply follow each other (a WAV header or an
// Ogg stream per segment could not).
var liveFormats = []string{sdk.FormatPCM, sdk.FormatMP3, sdk.FormatULaw, sdk.FormatALaw}

// StartLive validates and resolves a realtime context for org: voice,
// model, policy, credentials, format and ruleset. Failures are
// *problem.Error values, as for Speak.
func (s *Service) StartLive(ctx context.Context, org string, r *LiveRequest) (*Live, error) {
	if r.VolumeDbfs != nil {
		return nil, &problem.Error{Code: problem.ParamNotAllowedOnStream, Detail: "volumeDbfs is a whole-clip parameter; the realtime socket sends audio as it is made",
			Validation: []problem.FieldError{problem.Field("whole-clip parameter", "volumeDbfs")}}
	}
	if r.Pronunciations != nil {
		return nil, problem.Validation(problem.Field("pronunciations are not available on the realtime socket", "pronunciations"))
	}
	// Validation and resolution are the speech body's: a placeholder
	// stands for the text that has not arrived yet, and output is checked
	// below as a streaming format instead of whole-clip processing.
	q := r.Request
	placeholder := "-"
	q.Text, q.Output = &placeholder, nil
	ep := DeliverClip
	if r.Timestamps {
		ep = DeliverTimestamps
	}
	j, err := s.prepare(ctx, org, &q, ep)
	if err != nil {
		return nil, err
	}
	if j.Params.Stretch != 0 {
		return nil, &problem.Error{Code: problem.ParamNotAllowedOnStream,
			Detail:     fmt.Sprintf("model %s/%s cannot speak at speed %g natively; the realtime socket cannot stretch audio it sends as it is made", j.Provider.ID, j.Model.ID, *r.Speed),
			Validation: []problem.FieldError{problem.Field("not available natively for this model", "speed")}}
	}
	l := &Live{s: s, org: org, job: j, timestamps: r.Timestamps, req: q}
	if err := l.chooseFormat(r.Output); err != nil {
		return nil, err
	}
	if l.format == sdk.FormatPCM {
		// The organization's loudness default, as clips and streams take
		// it (docs/loudness.md): raw PCM is samples the gateway can level
		// on their way; MP3 and G.711 pass as they are.
		if lp := s.defaultLoudness(org, nil, nil); lp != nil {
			t := lp.Target()
			l.loudness = &t
		}
	}
	// With timestamps, prepare has already required the model to have
	// them, so its input stream sends word timings too.
	_, streamer := j.Provider.Plugin.(sdk.InputStreamer)
	l.input = streamer && j.Model.Capabilities.InputStreaming
	return l, nil
}

// chooseFormat picks the context's encoding: exactly the one requested
// when the model produces it itself (the realtime socket never converts:
// every segment passes through as the provider sends it), else its first
// streaming format at its native rate.
func (l *Live) chooseFormat(out *audio.OutputParams) error {
	m := l.job.Model
	name := l.job.Provider.ID + "/" + m.ID
	var e sdk.Encoding
	if out != nil && out.Format != "" {
		if !slices.Contains(liveFormats, out.Format) {
			return problem.Validation(problem.Field(fmt.Sprintf("must be one of %s on the realtime socket", strings.Join(liveFormats, ", ")), "output", "format"))
		}
		if _, ok := m.FindStreamEncoding(out.Format, 0, 0); !ok {
			return problem.Validation(problem.Field(fmt.Sprintf("model %s does not stream %s (it streams %s)", name, out.Format, encodingList(m, "")), "output", "format"))
		}
		var ok bool
		if e, ok = m.FindStreamEncoding(out.Format, deref(out.SampleRate), deref(out.Bitrate)); !ok {
			field := "bitrate"
			if !hasRate(m, out.Format, deref(out.SampleRate)) {
				field = "sampleRate"
			}
			return problem.Validation(problem.Field(fmt.Sprintf("model %s produces %s as %s", name, out.Format, encodingList(m, out.Format)), "output", field))
		}
	} else {
		var rate, bitrate int
		if out != nil {
			rate, bitrate = deref(out.SampleRate), deref(out.Bitrate)
		}
		f := ""
		for _, se := range m.NativeStreamEncodings() {
			if slices.Contains(liveFormats, se.Format) {
				f = se.Format
				break
			}
		}
		if f == "" {
			return problem.New(problem.StreamingUnsupported, "model %s produces none of %s", name, strings.Join(liveFormats, ", "))
		}
		var ok bool
		if e, ok = m.FindStreamEncoding(f, rate, bitrate); !ok {
			field := "bitrate"
			if !hasRate(m, f, rate) {
				field = "sampleRate"
			}
			return problem.Validation(problem.Field(fmt.Sprintf("model %s produces %s as %s", name, f, encodingList(m, f)), "output", field))
		}
	}
	l.format, l.rate, l.bitrate = e.Format, e.SampleRate, e.Bitrate
	if e.SampleRate > 0 || e.Format == sdk.FormatMP3 {
		l.mediaType = sdk.MediaType(e)
	}
	return nil
}

// encodingList names the encodings m streams in format ("": all), for an
// error message.
func encodingList(m *sdk.Model, format string) string {
	var names []string
	for _, e := range m.NativeStreamEncodings() {
		if format == "" || e.Format == format {
			names = append(names, e.String())
		}
	}
	return strings.Join(names, ", ")
}

// Provider, Model and Voice name what the context speaks with.
func (l *Live) Provider() string { return l.job.Provider.ID }

// MetricModel is the model's label in metrics (Job.MetricModel).
func (l *Live) MetricModel() string { return l.job.MetricModel() }

// Model is the resolved model id.
func (l *Live) Model() string { return l.job.Model.ID }

// Voice is the provider-side voice id.
func (l *Live) Voice() string { return l.job.Voice }

// MediaType is the audio's media type, as far as it is known before the
// first audio ("" when the model does not state its rate).
func (l *Live) MediaType() string { return l.mediaType }

// InputStreaming reports whether the context goes through the provider's
// own input stream (OpenInput) rather than one call per segment.
func (l *Live) InputStreaming() bool { return l.input }

// Timestamps reports whether the client asked for word timings. (An input
// stream may send timings anyway, OpenInput: they say what was heard.)
func (l *Live) Timestamps() bool { return l.timestamps }

// StreamTimings reports whether the context's input stream sends word
// timings: OpenInput asks for them whenever the model has them, so that
// what was heard can be told. Ask before a Failover, which leaves the
// input stream.
func (l *Live) StreamTimings() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.input && (l.timestamps || l.job.Model.Capabilities.Timestamps)
}

// Speed is the context's speaking speed (1 unless its start set one).
func (l *Live) Speed() float64 {
	if l.req.Speed != nil && *l.req.Speed > 0 {
		return *l.req.Speed
	}
	return 1
}

// BytesPerSecond is how many bytes of the context's audio, of mediaType
// (its first audio's), make a second: from the rate of PCM and G.711,
// from the bitrate of MP3 when the context's encoding states one; 0 when
// unknown.
func (l *Live) BytesPerSecond(mediaType string) float64 {
	mt, err := audio.ParseMediaType(mediaType)
	if err != nil {
		return 0
	}
	switch mt.Format {
	case audio.FormatPCM:
		return float64(mt.Rate * 2 * max(1, mt.Channels))
	case audio.FormatULaw, audio.FormatALaw:
		return float64(mt.Rate)
	case audio.FormatMP3:
		return float64(l.bitrate) * 1000 / 8
	}
	return 0
}

// Failover moves the context to the next target of its voice's fallback
// chain after err, when err is one a fallback may not meet (the provider
// down, timing out, throttling or failing on its side) and a target
// streams the context's encoding (its audio follows the audio already
// sent). It reports whether it did; later segments go to the new target
// through its ordinary calls (Render), and audio tags it cannot perform
// are removed from them. The caller decides whether the context may
// still switch voices (the failover window).
func (l *Live) Failover(ctx context.Context, err error) bool {
	if !fallbackable(err) {
		return false
	}
	if l.next == nil {
		q := l.req
		l.next = l.s.fallbacks(ctx, l.org, &q, l.job)
	}
	for {
		alt := l.next()
		if alt == nil {
			return false
		}
		if _, ok := alt.Model.FindStreamEncoding(l.format, l.rate, l.bitrate); !ok {
			continue
		}
		l.s.fellBack(l.job, alt, err)
		l.mu.Lock()
		l.job, l.input = alt, false
		l.mu.Unlock()
		return true
	}
}

// Unspend takes text the provider failed before speaking (a segment
// without audio, or the part of one after the last word heard) back out
// of the context's characters: it is spoken again, and billed, by the
// fallback (the credits reserved for it stay reserved).
func (l *Live) Unspend(text string) {
	l.mu.Lock()
	l.chars = max(0, l.chars-utf8.RuneCountInString(text))
	l.mu.Unlock()
}

// Moderate runs the context's ruleset over one segment. A blocked segment
// returns a *moderation.BlockedError and must not be spoken.
func (l *Live) Moderate(ctx context.Context, text string) error {
	if l.s.mod == nil {
		return nil
	}
	j := *l.job
	j.Text = text
	err := l.s.moderate(ctx, &j)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.modTime += j.Verdict.Latency
	// The row keeps the most telling verdict: a block, else an
	// allow-on-error, else the latest allow.
	if !l.moderated || j.Verdict.Blocked() || !l.verdict.Blocked() && j.Verdict.Decision == moderation.DecisionAllowOnError {
		l.verdict = j.Verdict
	}
	l.moderated = true
	return err
}

// segment is the context's job for one segment of text: its audio tags
// (those the model does not perform removed, with warnings) and the
// organization's pronunciation rules applied, as for a speech request.
func (l *Live) segment(text string) *Job {
	j := *l.job
	j.Text = text
	tagged, warnings := applyTags(text, j.Model, j.name)
	j.Warnings = warnings
	j.setText(tagged)
	j.pieces = nil
	return &j
}

// InputWords is how many words of text the provider's input stream gets
// (after audio tags and pronunciation rules): what its word timings count
// up to once the segment is spoken, for the input-stream failover.
func (l *Live) InputWords(text string) int {
	return len(strings.Fields(l.segment(text).inputText()))
}

// Render speaks one segment through the provider's ordinary calls: its
// stream (audio as it renders), or its whole clip with word timings when
// the context asked for timestamps or the model cannot stream. Timings
// are shifted onto the context's timeline. emit takes each event; its
// error ends the segment.
func (l *Live) Render(ctx context.Context, text string, emit func(sdk.StreamEvent) error) error {
	j := l.segment(text)
	if err := l.spend(ctx, text); err != nil {
		return err
	}
	for _, w := range j.Warnings {
		if err := emit(sdk.StreamEvent{Warning: w}); err != nil {
			return err
		}
	}
	if !l.timestamps && j.Model.Capabilities.Streaming {
		return l.stream(ctx, j, emit)
	}
	req := j.request()
	req.Format, req.SampleRate, req.Bitrate, req.Timestamps = l.format, l.rate, l.bitrate, l.timestamps
	resp, release, err := l.s.renderPooled(ctx, j, req)
	if err != nil {
		return err
	}
	if release != nil {
		defer release()
	}
	if len(resp.Audio) == 0 || resp.MediaType == "" {
		return &sdk.Error{Kind: sdk.KindUpstream, Message: "the provider returned no audio"}
	}
	if lev := l.newLeveler(j); lev != nil {
		leveled, err := lev.write(resp.Audio, resp.MediaType)
		if err != nil {
			lev.close()
			return err
		}
		whole := append([]byte(nil), leveled...)
		resp.Audio = append(whole, lev.finish()...)
		lev.close()
	}
	seconds, err := duration(resp.Audio, resp.MediaType)
	if err != nil {
		return fmt.Errorf("%s audio from %s: %w", resp.MediaType, j.Provider.ID, err)
	}
	l.mu.Lock()
	offset := l.offset
	l.offset += seconds
	l.produced = true
	l.mu.Unlock()
	for _, w := range resp.Warnings {
		if err := emit(sdk.StreamEvent{Warning: w}); err != nil {
			return err
		}
	}
	if len(resp.Timestamps) > 0 {
		words := make([]sdk.WordTimestamp, len(resp.Timestamps))
		for i, w := range resp.Timestamps {
			words[i] = sdk.WordTimestamp{Text: w.Text, Start: w.Start + offset, End: w.End + offset}
		}
		if err := emit(sdk.StreamEvent{Words: words}); err != nil {
			return err
		}
	}
	// The clip goes out in pieces of about 40 ms of PCM (any size for
	// MP3), so that a cancel stops it within one piece.
	piece := 4096
	if mt, err := audio.ParseMediaType(resp.MediaType); err == nil && mt.Format == audio.FormatPCM {
		piece = mt.Rate * 2 / 25
	}
	for b := resp.Audio; len(b) > 0; {
		n := min(piece, len(b))
		if err := emit(sdk.StreamEvent{MediaType: resp.MediaType, Audio: b[:n:n]}); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// stream renders one segment with the provider's Stream (or the planned
// request of a Planner), handing each piece on as it arrives.
func (l *Live) stream(ctx context.Context, j *Job, emit func(sdk.StreamEvent) error) error {
	req := j.request()
	req.Format, req.SampleRate, req.Bitrate = l.format, l.rate, l.bitrate
	src, err := l.s.openStreamRequest(ctx, j, req, false) // read by the segment's goroutine, cancelled by the session
	if err != nil {
		return err
	}
	src = l.level(j, src)
	var bytes int
	defer func() {
		// Only PCM's length says its duration without decoding.
		if mt, err := audio.ParseMediaType(src.MediaType()); err == nil && mt.Format == audio.FormatPCM {
			l.mu.Lock()
			l.offset += float64(bytes/2) / float64(mt.Rate)
			l.mu.Unlock()
		}
	}()
	for {
		b, err := src.Next()
		if len(b) > 0 {
			bytes += len(b)
			l.markProduced()
			if eerr := emit(sdk.StreamEvent{MediaType: src.MediaType(), Audio: b}); eerr != nil {
				src.Close()
				return eerr
			}
		}
		if err != nil {
			cerr := src.Close()
			if errors.Is(err, io.EOF) {
				return cerr
			}
			if cerr != nil {
				return cerr
			}
			return err
		}
	}
}

func (l *Live) markProduced() {
	l.mu.Lock()
	l.produced = true
	l.mu.Unlock()
}

// spend counts a segment's characters in before it reaches the provider,
// reserving from the organization's and the key's budgets what the
// segment adds to the context's cost, in credits and in money (the
// segment's quote: its units at the model's prices, as a speech request
// reserves its whole text's quote): a segment past a budget is refused
// (budget_exceeded) and never spoken, and instances sharing the budget
// never spend past it together.
func (l *Live) spend(ctx context.Context, text string) error {
	prices := l.job.Provider.Prices(l.job.Model.ID)
	units := l.s.counter.Estimate(prices, text)
	l.mu.Lock()
	chars := l.chars + utf8.RuneCountInString(text)
	all := l.units
	all.Add(units)
	need := budget.Amount{Credits: max(0, l.creditsFor(chars)-l.reserved.Credits), Cost: max(0, pricing.Cost(prices, all)-l.reserved.Cost)}
	l.mu.Unlock()
	var ch *budget.Charge
	if need.Credits > 0 || need.Cost > 0 {
		var err error
		if ch, err = l.s.reserve(ctx, l.org, need); err != nil {
			return err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.chars = chars
	l.units.Add(units)
	l.reserved.Credits += need.Credits
	l.reserved.Cost += need.Cost
	if ch != nil {
		l.charges, l.amounts = append(l.charges, ch), append(l.amounts, need)
	}
	return nil
}

// creditsFor is what chars characters cost on the context's model.
func (l *Live) creditsFor(chars int) int64 {
	p := l.job.Provider.Policy
	rate := p.CreditsPer1kChars
	if r, ok := p.ModelCredits[l.job.Model.ID]; ok {
		rate = r
	}
	return int64(math.Ceil(float64(chars) * rate / 1000))
}

// Settle ends the context's budget charges: what it spent (its row's
// credits and cost, Amount) stays spent, the rest of what was reserved
// goes back; a spend above the reservations (audio longer than quoted)
// is added to the last charge. Call it once, when the context has ended.
func (l *Live) Settle(ctx context.Context, spent budget.Amount) {
	l.mu.Lock()
	charges, amounts := l.charges, l.amounts
	l.charges, l.amounts = nil, nil
	l.mu.Unlock()
	left := spent
	for i, ch := range charges {
		keep := budget.Amount{Credits: min(left.Credits, amounts[i].Credits), Cost: min(left.Cost, amounts[i].Cost)}
		if i == len(charges)-1 {
			keep = left // the rest, above the reservations too
		}
		left.Credits -= keep.Credits
		left.Cost -= keep.Cost
		ch.SettleAmount(ctx, keep)
	}
}

// duration is the length in seconds of a clip of mediaType.
func duration(data []byte, mediaType string) (float64, error) {
	mt, err := audio.ParseMediaType(mediaType)
	if err == nil && mt.Format == audio.FormatPCM {
		return float64(len(data)/2) / float64(mt.Rate), nil
	}
	c, err := audio.Decode(data, mediaType)
	if err != nil {
		return 0, err
	}
	return c.Seconds(), nil
}

// level wraps a segment's PCM stream in the stream leveler when the
// context has the organization's loudness target (levelSource: the
// voice's learned loudness, or its first StreamLookahead measured).
func (l *Live) level(j *Job, src Source) Source {
	if l.loudness == nil {
		return src
	}
	key := voiceKey(j)
	return &levelSource{src: src, target: *l.loudness, estimate: l.s.voices.estimate(key),
		learn: func(lufs float64) { l.s.voices.learn(key, lufs) }}
}

// liveLeveler levels PCM that is pushed rather than pulled (an input
// stream's events, a segment rendered whole): levelSource's leveler and
// buffers, fed by write and ended by finish.
type liveLeveler struct {
	ls levelSource // src unused
}

// newLeveler returns a leveler for j's audio when the context has the
// organization's loudness target, else nil.
func (l *Live) newLeveler(j *Job) *liveLeveler {
	if l.loudness == nil {
		return nil
	}
	key := voiceKey(j)
	return &liveLeveler{ls: levelSource{target: *l.loudness, estimate: l.s.voices.estimate(key),
		learn: func(lufs float64) { l.s.voices.learn(key, lufs) }}}
}

// write levels b, 16-bit PCM of mediaType, and returns what the leveler
// lets out (nothing while it holds a new voice's first seconds), in a
// buffer the next call reuses. Hot path.
func (p *liveLeveler) write(b []byte, mediaType string) ([]byte, error) {
	ls := &p.ls
	if ls.lev == nil {
		mt, err := audio.ParseMediaType(mediaType)
		if err != nil || mt.Format != audio.FormatPCM || mt.Rate <= 0 {
			return nil, fmt.Errorf("level realtime audio of %q: not raw PCM", mediaType)
		}
		if ls.lev, err = audio.NewStreamLeveler(mt.Rate, ls.target, ls.estimate, StreamLookahead, 0); err != nil {
			return nil, err
		}
	}
	var err error
	if ls.out, err = ls.lev.Write(ls.samples(b), ls.out[:0]); err != nil {
		return nil, err
	}
	return ls.bytes(ls.out), nil
}

// finish returns what the leveler still holds and learns the voice's
// loudness from what it measured.
func (p *liveLeveler) finish() []byte {
	ls := &p.ls
	if ls.lev == nil {
		return nil
	}
	if ls.learn != nil {
		ls.learn(ls.lev.InputLufs())
	}
	ls.out = ls.lev.Flush(ls.out[:0])
	return ls.bytes(ls.out)
}

// close releases the leveler.
func (p *liveLeveler) close() {
	if p.ls.lev != nil {
		p.ls.lev.Close()
		p.ls.lev = nil
	}
}

// Input is a provider's input stream for one context (OpenInput).
type Input struct {
	in     chan sdk.TextInput
	done   chan struct{}
	err    error
	cancel context.CancelFunc
	closed bool
}

// OpenInput starts the provider's input stream for the context; emit
// takes its events (from another goroutine) as they arrive. The caller
// sends segments with Send, ends the input with Close, and must Wait.
func (l *Live) OpenInput(ctx context.Context, emit func(sdk.StreamEvent) error) *Input {
	j := l.job
	req := j.request()
	// Word timings are asked for whenever the model has them, requested or
	// not: they say how much of the text was heard when the context is
	// cancelled (the realtime layer sends them only when asked).
	req.Text, req.Format, req.SampleRate, req.Bitrate, req.Timestamps = "", l.format, l.rate, l.bitrate, l.timestamps || j.Model.Capabilities.Timestamps
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	in := &Input{in: make(chan sdk.TextInput), done: make(chan struct{}), cancel: cancel}
	start := time.Now()
	lev := l.newLeveler(j)
	go func() {
		defer close(in.done)
		mediaType := ""
		err := j.Provider.Plugin.(sdk.InputStreamer).StreamInput(ctx, req, in.in, func(e sdk.StreamEvent) error {
			if len(e.Audio) > 0 {
				l.markProduced()
				if lev != nil {
					// Hot path: leveled in place of the provider's bytes;
					// emit copies them before the next event.
					b, err := lev.write(e.Audio, e.MediaType)
					if err != nil {
						return err
					}
					mediaType, e.Audio = e.MediaType, b
					if len(b) == 0 && len(e.Words) == 0 && e.Warning == "" {
						return nil // held back: the voice's first seconds
					}
				}
			}
			return emit(e)
		})
		if lev != nil {
			// What the leveler holds goes out after a stream that ended
			// well; after a failure it is not sent, and counts as not
			// heard.
			if err == nil {
				if b := lev.finish(); len(b) > 0 {
					err = emit(sdk.StreamEvent{MediaType: mediaType, Audio: b})
				}
			}
			lev.close()
		}
		in.err = l.s.calls.End(parent, ctx, j.Provider, j.Model.ID, "stream_input", time.Since(start), err)
	}()
	return in
}

// Send hands one moderated segment to the provider; it returns the
// stream's error if the stream has ended.
func (in *Input) Send(ctx context.Context, l *Live, text string, flush bool) error {
	if err := l.spend(ctx, text); err != nil {
		return err
	}
	// The provider gets the segment as spoken: the audio tags it does not
	// perform removed, the pronunciation rules applied. (Its word timings
	// are then of the spoken words; the input stream has no way back.)
	select {
	case in.in <- sdk.TextInput{Text: l.segment(text).inputText() + " ", Flush: flush}:
		return nil
	case <-in.done:
		if in.err != nil {
			return in.err
		}
		return &sdk.Error{Kind: sdk.KindUpstream, Message: "the provider's input stream ended before its input"}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SendPartial hands one piece of the immediate aggregation to the
// provider as it came (an LLM token: spaces are the client's, nothing is
// added, no audio tag or rule applies across pieces). An empty text with
// flush asks the provider to speak what it holds.
func (in *Input) SendPartial(ctx context.Context, l *Live, text string, flush bool) error {
	if err := l.spend(ctx, text); err != nil {
		return err
	}
	select {
	case in.in <- sdk.TextInput{Text: text, Flush: flush}:
		return nil
	case <-in.done:
		if in.err != nil {
			return in.err
		}
		return &sdk.Error{Kind: sdk.KindUpstream, Message: "the provider's input stream ended before its input"}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close ends the input: the provider speaks what is left.
func (in *Input) Close() {
	if !in.closed {
		in.closed = true
		close(in.in)
	}
}

// Cancel stops the stream at once.
func (in *Input) Cancel() { in.cancel() }

// Done is closed when the stream has ended.
func (in *Input) Done() <-chan struct{} { return in.done }

// Wait waits for the stream to end and returns what ended it.
func (in *Input) Wait() error {
	<-in.done
	in.cancel()
	return in.err
}

// Row returns the context's request-log row as far as the service knows
// it: provider, model, voice, characters sent, credits (none if the
// provider failed before any audio: failed says the context ended in a
// provider failure), moderation. The realtime layer adds ids, path,
// status, error and times.
func (l *Live) Row(failed bool) store.LogRow {
	l.mu.Lock()
	defer l.mu.Unlock()
	j := *l.job
	j.Verdict = l.verdict
	j.Verdict.Latency = l.modTime
	j.Text = ""
	row := l.s.logRow(&j)
	row.CharCount = l.chars
	row.CreditsUsed = int(l.creditsFor(l.chars))
	prices := l.job.Provider.Prices(l.job.Model.ID)
	row.CostEstimate = pricing.Cost(prices, l.units)
	row.Cost = pricing.Cost(prices, pricing.Settle(prices, l.units, int64(l.offset*1000), nil))
	if failed && !l.produced {
		unbill(&row)
	}
	return row
}

// AudioSeconds is the length of the audio rendered so far when it is
// known without decoding (PCM, or any clip rendered whole); 0 otherwise.
func (l *Live) AudioSeconds() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.offset
}

package sdktest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/voxgate/voxgate/sdk"
)

// Names of the checks Run performs; each is a subtest of that name and can
// be left out through Config.Skip.
const (
	CheckDescribe     = "Describe"
	CheckVoices       = "Voices"
	CheckSynthesize   = "Synthesize"
	CheckSpeed        = "Speed"
	CheckTimestamps   = "Timestamps"
	CheckStream       = "Stream"
	CheckInvalidVoice = "InvalidVoice"
	CheckClone        = "Clone"
	CheckCancel       = "Cancel"
	CheckConcurrent   = "Concurrent"
	CheckSettings     = "Settings"
)

// DefaultText is the sentence Run synthesizes when Config.Text is empty.
// It has no digits or abbreviations, so engines say one word per word.
const DefaultText = "The quick brown fox jumps over the lazy dog near the river bank."

// DefaultLongText is what Run streams when Config.LongText is empty: long
// enough that a streaming model sends it in more than one chunk.
const DefaultLongText = "Streaming speech should begin long before the whole text is spoken. " +
	"This paragraph is several sentences long so that a provider which renders audio " +
	"incrementally has every reason to send it in more than one piece. " +
	"The listener hears the first words while the rest is still being made, " +
	"and the gateway passes each piece along as soon as it arrives. " +
	"That is the whole point of a streaming model."

// Config tells Run which model to test and with what. Only what the
// provider needs must be set; every field has a sensible default.
type Config struct {
	// Settings, when non-nil, are passed to Configure before the checks,
	// as the gateway does after starting the plugin.
	Settings map[string]string
	// Model is the model to test; empty means the default model.
	Model string
	// Voice is the provider voice to synthesize with; empty means the first
	// voice Voices lists, or none if it lists none.
	Voice string
	// InvalidVoice is a voice id the provider must reject with an *sdk.Error
	// of KindInvalidRequest; empty skips that check.
	InvalidVoice string
	// Text is a short text to synthesize; empty means DefaultText.
	Text string
	// LongText is the text to stream; empty means DefaultLongText. Both
	// texts are cut at a word to the model's MaxTextChars.
	LongText string
	// Credentials are sent with every call.
	Credentials sdk.Credentials
	// Options is providerOptions JSON sent with every synthesis; nil for none.
	Options []byte
	// Formats are the output formats to synthesize; nil means every format
	// of the model the kit can read (the sdk's Format constants). Every
	// native encoding (sdk.Model.Encodings) of these formats is asked for.
	Formats []string
	// CustomFormats are provider-specific format names Describe may list
	// besides the sdk's Format constants. The kit does not decode them.
	CustomFormats []string
	// CloneSamples are the samples for the cloning check; nil means one
	// clip rendered by the provider itself.
	CloneSamples []sdk.Sample
	// SecondsPerChar bounds how long a clip may be: a text of n characters
	// must give less than 1 s + n × SecondsPerChar of audio. 0 means 0.3,
	// several times slower than any natural speech.
	SecondsPerChar float64
	// CallTimeout bounds every call so that a provider that hangs fails
	// the run instead of stalling it. It is a guard, not a speed target;
	// 0 means 2 minutes.
	CallTimeout time.Duration
	// BadSettings are settings with a value the provider must refuse,
	// key by key (e.g. {"base_url": "not a url"}): the Settings check
	// validates Settings with each of them in turn and wants a problem
	// naming that key. Empty checks only an unknown key and the good
	// settings.
	BadSettings map[string]string
	// Skip names checks (the Check constants) not to run.
	Skip []string
}

// Run checks that p keeps the Provider contract, each check a subtest (see
// the Check constants):
//
//   - Describe: ids present, the default model among the models, output
//     formats known, limits not negative; an sdk.AnyModel entry is held
//     to the same rules but is never the model under test.
//   - Voices: each voice has a unique ID.
//   - Synthesize: every format gives audio of the right media type that
//     decodes (WAV header, whole PCM samples, MP3 frames) and lasts a
//     plausible time for the text; requested sample rates are honoured.
//   - Speed: when the model claims native speed, 2× is clearly shorter.
//   - Timestamps: when claimed, about one per word, ordered, inside the clip.
//   - Stream: when claimed, a long text arrives in several chunks, the
//     first carrying the media type and arriving while the stream is still
//     open, and the whole decodes. Otherwise Stream works or says
//     KindUnsupported.
//   - InvalidVoice: Config.InvalidVoice yields KindInvalidRequest.
//   - Clone: when claimed, Clone gives a voice that Synthesize accepts;
//     otherwise Clone yields KindUnsupported.
//   - Cancel: a cancelled context ends Synthesize and Stream with an error,
//     and an error from send ends Stream.
//   - Concurrent: parallel calls all succeed.
//   - Settings: the provider checks its settings (sdk.ValidateSettings:
//     it implements sdk.SettingsValidator or sdk.SettingsDecoder): the
//     good Settings give no problem, an unknown key and each of
//     BadSettings a problem naming the key.
//   - Plan, Explain: when p plans (implements sdk.Planner; for a plugin
//     process, Describe reports Plans), its plans, sent as the gateway
//     sends them, answer audio of the media type Synthesize gives, and
//     its explanations of error answers keep the status, classify it and
//     never show the key.
//
// Run works the same on an in-process Provider (fast, race detector sees the
// plugin's code) and on one from StartPlugin (the real wire). It does not
// measure speed: shared machines make wall-clock limits flaky.
func Run(t *testing.T, p sdk.Provider, cfg Config) {
	t.Helper()
	r := &runner{p: p, cfg: cfg.withDefaults()}
	if r.cfg.Settings != nil {
		ctx, cancel := r.callContext(t.Context())
		err := p.Configure(ctx, r.cfg.Settings)
		cancel()
		if err != nil {
			t.Fatalf("Configure: %v", err)
		}
	}
	ctx, cancel := r.callContext(t.Context())
	desc, err := p.Describe(ctx)
	cancel()
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}
	r.desc = desc
	r.run(t, CheckDescribe, r.checkDescribe)
	if err := r.pickModel(); err != nil {
		t.Fatal(err)
	}
	r.voice = r.cfg.Voice
	ctx, cancel = r.callContext(t.Context())
	r.voices, r.voicesErr = p.Voices(ctx, &sdk.VoicesRequest{Model: r.model.ID, Credentials: r.cfg.Credentials})
	cancel()
	if r.voice == "" && len(r.voices) > 0 {
		r.voice = r.voices[0].ID
	}
	r.text = fitText(r.cfg.Text, r.model.MaxTextChars)
	r.longText = fitText(r.cfg.LongText, r.model.MaxTextChars)
	r.encodingText = fitText(r.text, encodingChars)

	r.run(t, CheckVoices, r.checkVoices)
	r.run(t, CheckSynthesize, r.checkSynthesize)
	r.run(t, CheckSpeed, r.checkSpeed)
	r.run(t, CheckTimestamps, r.checkTimestamps)
	r.run(t, CheckStream, r.checkStream)
	r.run(t, CheckInvalidVoice, r.checkInvalidVoice)
	r.run(t, CheckClone, r.checkClone)
	r.run(t, CheckCancel, r.checkCancel)
	r.run(t, CheckConcurrent, r.checkConcurrent)
	r.run(t, CheckSettings, r.checkSettings)
	r.run(t, CheckPlan, r.checkPlan)
	r.run(t, CheckExplain, r.checkExplain)
}

func (c Config) withDefaults() Config {
	if c.Text == "" {
		c.Text = DefaultText
	}
	if c.LongText == "" {
		c.LongText = DefaultLongText
	}
	if c.SecondsPerChar == 0 {
		c.SecondsPerChar = 0.3
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = 2 * time.Minute
	}
	return c
}

// runner carries what the checks share.
type runner struct {
	p         sdk.Provider
	cfg       Config
	desc      *sdk.Description
	model     sdk.Model
	voice     string
	voices    []sdk.Voice
	voicesErr error
	text      string
	longText  string
	// encodingText is what each native encoding is asked for with (see
	// encodingChars).
	encodingText string
}

// encodingChars bounds the text of the encoding matrix: each of the
// model's native encodings (a cloud model may list sixty MP3 rates and
// bitrates) is asked for with the run's text cut at a word to this many
// characters. What each of these answers is checked for (its format, its
// rate, that every frame decodes, that it is not empty and not too long
// for its text) does not depend on its length, while decoding it does:
// the pure-Go MP3 decoder under the race detector took about 0.4 s for
// the four seconds DefaultText lasts, per encoding. The default answer
// and one per format still say the whole text.
const encodingChars = 24

func (r *runner) run(t *testing.T, name string, check func(*testing.T)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		if slices.Contains(r.cfg.Skip, name) {
			t.Skip("skipped by Config.Skip")
		}
		check(t)
	})
}

func (r *runner) callContext(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, r.cfg.CallTimeout)
}

// pickModel finds the model to test among the listed ones. The
// sdk.AnyModel entry is never picked: it stands for ids the provider does
// not list and is not itself a model the provider can be asked for.
func (r *runner) pickModel() error {
	id := r.cfg.Model
	if id == "" {
		id = r.desc.DefaultModel
	}
	if id == sdk.AnyModel {
		return fmt.Errorf("model %q is sdk.AnyModel, which stands for the ids the provider does not list, not a model to synthesize with: test a listed model", id)
	}
	for _, m := range r.desc.Models {
		if m.ID == id {
			r.model = m.Filled() // as the gateway sees it over the wire
			return nil
		}
	}
	return fmt.Errorf("model %q is not among the provider's models", id)
}

// request returns a synthesis request for text with the run's model,
// voice, credentials and options.
func (r *runner) request(text string) *sdk.SynthesizeRequest {
	return &sdk.SynthesizeRequest{
		Model:       r.model.ID,
		Voice:       r.voice,
		Text:        text,
		Options:     r.cfg.Options,
		Credentials: r.cfg.Credentials,
	}
}

// maxSeconds is the longest plausible clip of text.
func (r *runner) maxSeconds(text string) float64 {
	return 1 + float64(utf8.RuneCountInString(text))*r.cfg.SecondsPerChar
}

// synthesize calls Synthesize under the call timeout and decodes the clip,
// failing t on any problem.
func (r *runner) synthesize(t *testing.T, req *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, Clip) {
	t.Helper()
	ctx, cancel := r.callContext(t.Context())
	defer cancel()
	resp, err := r.p.Synthesize(ctx, req)
	if err != nil {
		t.Fatalf("Synthesize(format %q, rate %d, bitrate %d, voice %q): %v", req.Format, req.SampleRate, req.Bitrate, req.Voice, err)
	}
	if resp == nil {
		t.Fatal("Synthesize returned a nil response and no error")
	}
	clip, err := r.decode(resp.MediaType, resp.Audio, req.Text)
	if err != nil {
		t.Fatalf("Synthesize(format %q, rate %d): %v", req.Format, req.SampleRate, err)
	}
	return resp, clip
}

// decode decodes a clip of text and checks its duration is plausible.
func (r *runner) decode(mediaType string, audio []byte, text string) (Clip, error) {
	clip, err := Decode(mediaType, audio)
	if err != nil {
		return clip, fmt.Errorf("%d bytes of %q do not decode: %w", len(audio), mediaType, err)
	}
	if clip.Frames == 0 {
		return clip, fmt.Errorf("%q clip holds no audio", mediaType)
	}
	if limit := r.maxSeconds(text); clip.Seconds() >= limit {
		return clip, fmt.Errorf("clip lasts %.2f s; %d characters should take less than %.2f s", clip.Seconds(), utf8.RuneCountInString(text), limit)
	}
	return clip, nil
}

func (r *runner) checkDescribe(t *testing.T) {
	if err := ValidateDescription(r.desc, r.cfg.CustomFormats); err != nil {
		t.Error(err)
	}
}

func (r *runner) checkVoices(t *testing.T) {
	if r.voicesErr != nil {
		t.Fatalf("Voices(model %q): %v", r.model.ID, r.voicesErr)
	}
	if len(r.voices) == 0 {
		t.Skip("the provider lists no voices")
	}
	if err := ValidateVoices(r.voices); err != nil {
		t.Error(err)
	}
}

func (r *runner) formats() []string {
	if r.cfg.Formats != nil {
		return r.cfg.Formats
	}
	var fs []string
	for _, f := range r.model.OutputFormats {
		if knownFormat(f) {
			fs = append(fs, f)
		}
	}
	return fs
}

// encodings are the model's native encodings the run asks for: every one
// in a format of formats().
func (r *runner) encodings() []sdk.Encoding {
	fs := r.formats()
	var out []sdk.Encoding
	for _, e := range r.model.NativeEncodings() {
		if slices.Contains(fs, e.Format) {
			out = append(out, e)
		}
	}
	return out
}

// checkSynthesize asks for the model's default, then for every native
// encoding it lists: each must arrive in that format, at that rate. The
// gateway passes such answers through to clients untouched, so a plugin
// that lists an encoding and sends another one breaks its clients.
func (r *runner) checkSynthesize(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		_, clip := r.synthesize(t, r.request(r.text))
		if len(r.model.OutputFormats) > 0 {
			if want := r.model.OutputFormats[0]; knownFormat(want) && clip.Format != want {
				t.Errorf("no format asked: got %s, want the model's first format %s", clip.Format, want)
			}
		}
		if n := r.model.NativeSampleRate; n > 0 && (clip.Format == sdk.FormatPCM || clip.Format == sdk.FormatWAV) && clip.SampleRate != n {
			t.Errorf("no rate asked: got %d Hz, want the native %d Hz", clip.SampleRate, n)
		}
	})
	for _, f := range r.formats() {
		t.Run(f, func(t *testing.T) {
			req := r.request(r.text)
			req.Format = f
			_, clip := r.synthesize(t, req)
			if clip.Format != f {
				t.Errorf("asked for %s, got %s", f, clip.Format)
			}
			if e, ok := r.model.FindEncoding(f, 0, 0); ok && e.SampleRate > 0 && rateChecked(f) && clip.SampleRate != e.SampleRate {
				t.Errorf("asked for %s alone, got %d Hz; the model's first %s encoding is %s", f, clip.SampleRate, f, e)
			}
		})
	}
	for _, e := range r.encodings() {
		t.Run(e.String(), func(t *testing.T) {
			req := r.request(r.encodingText)
			req.Format, req.SampleRate, req.Bitrate = e.Format, e.SampleRate, e.Bitrate
			_, clip := r.synthesize(t, req)
			if clip.Format != e.Format {
				t.Errorf("asked for %s, got %s", e, clip.Format)
			}
			if e.SampleRate > 0 && rateChecked(e.Format) && clip.SampleRate != e.SampleRate {
				t.Errorf("asked for %s, got %d Hz", e, clip.SampleRate)
			}
		})
	}
}

// rateChecked reports whether a clip's decoded rate must be the rate asked
// for in format f: every format but Opus, which always decodes at 48 kHz
// whatever rate its encoder was given.
func rateChecked(f string) bool { return f != sdk.FormatOpus }

func (r *runner) checkSpeed(t *testing.T) {
	if !r.model.Capabilities.Speed {
		t.Skip("the model claims no native speed")
	}
	// The fastest speed the model claims to honour, at most 2.
	speed := 2.0
	if hi := r.model.MaxSpeed; hi > 0 && hi < speed {
		speed = hi
	}
	if speed <= 1.1 {
		t.Skipf("the model's native speed range ends at %g", speed)
	}
	_, normal := r.synthesize(t, r.request(r.text))
	req := r.request(r.text)
	req.Speed = speed
	_, fast := r.synthesize(t, req)
	// Clearly shorter: at least half of the expected shortening.
	if want := normal.Seconds() * (1 + 1/speed) / 2; fast.Seconds() >= want {
		t.Errorf("speed %g gave %.2f s, speed 1 %.2f s; want below %.2f s", speed, fast.Seconds(), normal.Seconds(), want)
	}
}

func (r *runner) checkTimestamps(t *testing.T) {
	if !r.model.Capabilities.Timestamps {
		t.Skip("the model claims no timestamps")
	}
	req := r.request(r.text)
	req.Timestamps = true
	resp, clip := r.synthesize(t, req)
	if err := ValidateTimestamps(resp.Timestamps, r.text, clip.Seconds()); err != nil {
		t.Error(err)
	}
}

// streamed is what one Stream call delivered.
type streamed struct {
	chunks   []sdk.Chunk
	audio    []byte
	err      error
	problems []string // contract breaches seen by send
}

// stream calls Stream, with sendErr (if not nil) as send's answer to the
// first chunk, and records what arrives and in which order.
func (r *runner) stream(ctx context.Context, req *sdk.SynthesizeRequest, sendErr error) streamed {
	var (
		s        streamed
		mu       sync.Mutex
		returned atomic.Bool
		inSend   atomic.Int32
	)
	send := func(c sdk.Chunk) error {
		if inSend.Add(1) > 1 {
			mu.Lock()
			s.problems = append(s.problems, "send called concurrently")
			mu.Unlock()
		}
		defer inSend.Add(-1)
		mu.Lock()
		defer mu.Unlock()
		if returned.Load() {
			s.problems = append(s.problems, "send called after Stream returned")
		}
		if sendErr != nil && len(s.chunks) > 0 {
			s.problems = append(s.problems, "send called again after it returned an error")
		}
		s.chunks = append(s.chunks, c)
		s.audio = append(s.audio, c.Data...)
		return sendErr
	}
	s.err = r.p.Stream(ctx, req, send)
	returned.Store(true)
	mu.Lock()
	defer mu.Unlock()
	return s
}

func (r *runner) checkStream(t *testing.T) {
	if !r.model.Capabilities.Streaming {
		// The gateway never streams such a model, but Stream must not
		// misbehave if called: work, or say KindUnsupported.
		ctx, cancel := r.callContext(t.Context())
		defer cancel()
		s := r.stream(ctx, r.request(r.text), nil)
		if s.err != nil && kindOf(s.err) != sdk.KindUnsupported {
			t.Errorf("the model claims no streaming; Stream failed with %v, want success or KindUnsupported", s.err)
		}
		return
	}
	ctx, cancel := r.callContext(t.Context())
	defer cancel()
	s := r.stream(ctx, r.request(r.longText), nil)
	if s.err != nil {
		t.Fatalf("Stream: %v", s.err)
	}
	for _, p := range s.problems {
		t.Error(p)
	}
	if len(s.chunks) == 0 {
		t.Fatal("Stream sent nothing")
	}
	mediaType := s.chunks[0].MediaType
	if mediaType == "" {
		t.Fatal("the first chunk carries no MediaType")
	}
	if len(s.chunks) < 2 {
		t.Errorf("%d characters arrived in %d chunk; a streaming model should send more than one", utf8.RuneCountInString(r.longText), len(s.chunks))
	}
	for i, c := range s.chunks[1:] {
		if c.MediaType != "" && c.MediaType != mediaType {
			t.Errorf("chunk %d changes the media type from %q to %q", i+1, mediaType, c.MediaType)
		}
	}
	// Streaming means the first audio arrives while more is to come: the
	// first chunk holding audio must not hold all of it. (Send being called
	// before Stream returns is checked in stream.) Without a clock this is
	// what ordering can prove.
	for _, c := range s.chunks {
		if len(c.Data) > 0 {
			if len(c.Data) == len(s.audio) {
				t.Errorf("the first chunk with audio holds all %d bytes of the stream", len(s.audio))
			}
			break
		}
	}
	if _, err := r.decode(mediaType, s.audio, r.longText); err != nil {
		t.Errorf("the streamed audio: %v", err)
	}
}

func (r *runner) checkInvalidVoice(t *testing.T) {
	if r.cfg.InvalidVoice == "" {
		t.Skip("Config.InvalidVoice is empty")
	}
	ctx, cancel := r.callContext(t.Context())
	defer cancel()
	req := r.request(r.text)
	req.Voice = r.cfg.InvalidVoice
	_, err := r.p.Synthesize(ctx, req)
	wantKind(t, "Synthesize with an invalid voice", err, sdk.KindInvalidRequest)
}

func (r *runner) checkClone(t *testing.T) {
	ctx, cancel := r.callContext(t.Context())
	defer cancel()
	req := &sdk.CloneRequest{
		Model:       r.model.ID,
		Name:        "sdktest",
		Description: "voice cloned by the voxgate conformance kit",
		Samples:     r.cfg.CloneSamples,
		Credentials: r.cfg.Credentials,
	}
	if !r.model.Capabilities.Cloning {
		if req.Samples == nil {
			req.Samples = []sdk.Sample{{Filename: "sample.wav", MediaType: "audio/wav", Data: []byte("RIFF")}}
		}
		_, err := r.p.Clone(ctx, req)
		wantKind(t, "Clone on a model without cloning", err, sdk.KindUnsupported)
		return
	}
	if req.Samples == nil {
		resp, _ := r.synthesize(t, r.request(r.text))
		req.Samples = []sdk.Sample{{Filename: "sample", MediaType: resp.MediaType, Data: resp.Audio}}
	}
	resp, err := r.p.Clone(ctx, req)
	if err != nil {
		t.Fatalf("Clone: %v", err)
	}
	if resp == nil || resp.VoiceID == "" {
		t.Fatal("Clone returned no voice id")
	}
	synth := r.request(r.text)
	synth.Voice = resp.VoiceID
	r.synthesize(t, synth)
}

func (r *runner) checkCancel(t *testing.T) {
	t.Run("Synthesize", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		err := r.guard(t, func() error {
			_, err := r.p.Synthesize(ctx, r.request(r.longText))
			return err
		})
		if err == nil {
			t.Error("Synthesize with a cancelled context succeeded; it must give up")
		}
	})
	if !r.model.Capabilities.Streaming {
		return
	}
	t.Run("Stream", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		err := r.guard(t, func() error { return r.stream(ctx, r.request(r.longText), nil).err })
		if err == nil {
			t.Error("Stream with a cancelled context succeeded; it must give up")
		}
	})
	t.Run("SendError", func(t *testing.T) {
		ctx, cancel := r.callContext(t.Context())
		defer cancel()
		gone := errors.New("sdktest: client went away")
		var s streamed
		r.guard(t, func() error {
			s = r.stream(ctx, r.request(r.longText), gone)
			return s.err
		})
		for _, p := range s.problems {
			t.Error(p)
		}
		if s.err == nil {
			t.Error("send failed but Stream returned nil; it must return an error")
		}
	})
}

// guard runs call and fails t if it has not returned within CallTimeout:
// a provider that ignores cancellation would otherwise hang the run.
func (r *runner) guard(t *testing.T, call func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	timer := time.NewTimer(r.cfg.CallTimeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		t.Fatalf("the call did not return within CallTimeout (%v) after its context was cancelled", r.cfg.CallTimeout)
		return nil
	}
}

func (r *runner) checkConcurrent(t *testing.T) {
	const parallel = 4
	var wg sync.WaitGroup
	errs := make([]error, parallel)
	for i := range parallel {
		wg.Go(func() {
			ctx, cancel := r.callContext(t.Context())
			defer cancel()
			resp, err := r.p.Synthesize(ctx, r.request(r.text))
			if err == nil {
				_, err = r.decode(resp.MediaType, resp.Audio, r.text)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("concurrent call %d: %v", i, err)
		}
	}
}

// kindOf returns the kind of err if it is an *sdk.Error, else -1.
func kindOf(err error) sdk.ErrorKind {
	var e *sdk.Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return -1
}

func wantKind(t *testing.T, what string, err error, want sdk.ErrorKind) {
	t.Helper()
	var e *sdk.Error
	switch {
	case err == nil:
		t.Errorf("%s succeeded; want an *sdk.Error of kind %s", what, want)
	case !errors.As(err, &e):
		t.Errorf("%s: %v (%T); want an *sdk.Error of kind %s", what, err, err, want)
	case e.Kind != want:
		t.Errorf("%s: kind %s (%v); want %s", what, e.Kind, err, want)
	}
}

// fitText cuts text at a word boundary to at most limit code points
// (0: no limit).
func fitText(text string, limit int) string {
	if limit <= 0 || utf8.RuneCountInString(text) <= limit {
		return text
	}
	cut := []rune(text)[:limit]
	if i := strings.LastIndexByte(string(cut), ' '); i > 0 {
		return string(cut)[:i]
	}
	return string(cut)
}

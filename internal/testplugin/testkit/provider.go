package testkit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voxgate/voxgate/internal/testplugin/calllog"
	"github.com/voxgate/voxgate/sdk"
)

// Model ids of the test kit. "test" can do everything; "basic" can do
// nothing optional, for the gateway's 501 paths.
const (
	ModelTest  = "test"
	ModelBasic = "basic"
)

// builtinVoice returns the tone frequency of a built-in voice.
func builtinVoice(id string) (freq float64, ok bool) {
	switch id {
	case "alpha":
		return 220, true
	case "beta":
		return 440, true
	}
	return 0, false
}

// cloneFreq is the tone frequency of every cloned voice.
const cloneFreq = 330

// options are the behaviours a request's providerOptions can trigger.
// Unknown keys are ignored (they still show in the call log), so gateway
// tests can pass anything through.
type options struct {
	// Hang blocks the call until its context ends.
	Hang bool `json:"hang"`
	// Crash exits the plugin process (status 3) in the middle of the call.
	Crash bool `json:"crash"`
	// Panic panics inside the call (the SDK turns it into KindInternal).
	Panic bool `json:"panic"`
	// Fail returns this error.
	Fail *failure `json:"fail"`
	// AfterChunks delays hang, crash, panic and fail of a stream until this
	// many chunks were sent (default 0: before any audio).
	AfterChunks int `json:"after_chunks"`
	// SlowStreamMs pauses this long before each chunk after the first.
	SlowStreamMs int `json:"slow_stream_ms"`
	// PadMs appends this much silence to the clip (for large responses).
	PadMs int `json:"pad_ms"`
	// Warnings are returned as SynthesizeResponse.Warnings.
	Warnings []string `json:"warnings"`
	// Silent renders silence instead of tones: same sizes and timestamps,
	// next to no CPU, for benchmarks of the wire rather than of sine waves.
	Silent bool `json:"silent"`
}

// failure is the JSON form of an sdk.Error.
type failure struct {
	Kind         string `json:"kind"`
	Message      string `json:"message"`
	Status       int    `json:"status"`
	Code         string `json:"code"`
	Retryable    bool   `json:"retryable"`
	RetryAfterMs int64  `json:"retry_after_ms"`
}

func (f *failure) err() error {
	kind := sdk.KindInternal
	for k := sdk.KindInternal; k <= sdk.KindUpstream; k++ {
		if k.String() == f.Kind {
			kind = k
		}
	}
	msg := f.Message
	if msg == "" {
		msg = "test kit failure requested by providerOptions"
	}
	return &sdk.Error{
		Kind:           kind,
		Message:        msg,
		UpstreamStatus: f.Status,
		UpstreamCode:   f.Code,
		Retryable:      f.Retryable,
		RetryAfter:     time.Duration(f.RetryAfterMs) * time.Millisecond,
	}
}

// Provider is the test kit's sdk.Provider. Serve it with sdk.Serve (the
// testplugin command does), or use it in process as an sdk.Provider value;
// see the package comment for what the crash option does then.
type Provider struct {
	log calllog.Writer
	seq atomic.Int64

	mu           sync.Mutex
	maxTextChars int
	formats      []string        // the models' OutputFormats, default first
	clones       map[string]bool // voice ids made by Clone
}

// NewProvider returns a Provider with its defaults: a limit of 1000
// characters, PCM then WAV, no clones, no call log.
func NewProvider() *Provider {
	return &Provider{maxTextChars: 1000, formats: []string{sdk.FormatPCM, sdk.FormatWAV}, clones: map[string]bool{}}
}

// Configure reads `call_log` (path of the call log), `max_text_chars` and
// `output_formats` ("wav,pcm": the models' formats, the first being what
// a request that names none gets). A non-empty `fail_configure` makes
// Configure fail with that message.
func (p *Provider) Configure(_ context.Context, settings map[string]string) error {
	var s Settings
	if problems := sdk.DecodeSettings(settings, &s); len(problems) > 0 {
		return sdk.SettingsErr("testkit", problems)
	}
	if s.FailConfigure != "" {
		return sdk.Errorf(sdk.KindInternal, "%s", s.FailConfigure)
	}
	p.log.SetPath(s.CallLog)
	if s.MaxTextChars != nil {
		p.mu.Lock()
		p.maxTextChars = *s.MaxTextChars
		p.mu.Unlock()
	}
	if len(s.OutputFormats) > 0 {
		p.mu.Lock()
		p.formats = s.OutputFormats
		p.mu.Unlock()
	}
	return nil
}

// Settings are the test kit's settings, decoded by sdk.DecodeSettings;
// NewSettings hands the type to the sdk, which checks a provider block
// against it (sdk.SettingsDecoder).
type Settings struct {
	// CallLog is the JSON-lines file every call is appended to.
	CallLog string `setting:"call_log"`
	// FailConfigure makes Configure fail with this message.
	FailConfigure string `setting:"fail_configure"`
	// MaxTextChars is the models' MaxTextChars.
	MaxTextChars *int `setting:"max_text_chars"`
	// OutputFormats are the formats the models list: pcm, wav.
	OutputFormats []string `setting:"output_formats"`
}

// CheckSettings implements sdk.SettingsChecker.
func (s *Settings) CheckSettings() []sdk.SettingProblem {
	var problems []sdk.SettingProblem
	if s.MaxTextChars != nil && *s.MaxTextChars < 0 {
		problems = append(problems, sdk.SettingProblem{Path: "max_text_chars", Message: "must not be negative"})
	}
	for _, f := range s.OutputFormats {
		if f != sdk.FormatPCM && f != sdk.FormatWAV {
			problems = append(problems, sdk.SettingProblem{Path: "output_formats", Message: fmt.Sprintf("%q is not pcm or wav", f)})
		}
	}
	return problems
}

// NewSettings implements sdk.SettingsDecoder.
func (p *Provider) NewSettings() any { return new(Settings) }

// Describe implements sdk.Provider.
func (p *Provider) Describe(context.Context) (*sdk.Description, error) {
	p.mu.Lock()
	limit, formats := p.maxTextChars, p.formats
	p.mu.Unlock()
	model := func(id, name string, c sdk.Capabilities) sdk.Model {
		return sdk.Model{
			ID: id, Name: name, Capabilities: c,
			OutputFormats:    slices.Clone(formats),
			SampleRates:      []int{8000, 16000, 24000, 48000},
			NativeSampleRate: nativeRate,
			MaxTextChars:     limit,
		}
	}
	return &sdk.Description{
		ID:           "testkit",
		Name:         "voxgate test kit",
		DefaultModel: ModelTest,
		Models: []sdk.Model{
			withSpeedRange(model(ModelTest, "Test (everything)", sdk.Capabilities{Streaming: true, Timestamps: true, Cloning: true, Speed: true, Instructions: true}), 0.5, 2),
			model(ModelBasic, "Basic (nothing optional)", sdk.Capabilities{}),
		},
	}, nil
}

// withSpeedRange gives m a native speed range, so the gateway's own
// time-stretch beyond it can be tested.
func withSpeedRange(m sdk.Model, lo, hi float64) sdk.Model {
	m.MinSpeed, m.MaxSpeed = lo, hi
	return m
}

// Voices implements sdk.Provider.
func (p *Provider) Voices(_ context.Context, req *sdk.VoicesRequest) ([]sdk.Voice, error) {
	p.record(calllog.Call{Method: "voices", Model: req.Model}, req.Credentials)
	voices := []sdk.Voice{
		{ID: "alpha", Name: "Alpha", Language: "en", Gender: "female"},
		{ID: "beta", Name: "Beta", Language: "en", Gender: "male"},
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	clones := make([]string, 0, len(p.clones))
	for id := range p.clones {
		clones = append(clones, id)
	}
	slices.Sort(clones)
	for _, id := range clones {
		voices = append(voices, sdk.Voice{ID: id, Name: strings.TrimPrefix(id, "clone-"), Language: "en"})
	}
	return voices, nil
}

// Synthesize implements sdk.Provider.
func (p *Provider) Synthesize(ctx context.Context, req *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	p.recordSynthesis("synthesize", req)
	opts, err := parseOptions(req.Options)
	if err != nil {
		return nil, err
	}
	if err := p.behave(ctx, "synthesize", opts); err != nil {
		return nil, err
	}
	plan, err := p.plan(req, false)
	if err != nil {
		return nil, err
	}
	if opts.Silent {
		plan.freq = 0
	}
	pcm := make([]byte, 0, plan.totalSamples(opts)*2)
	for _, w := range plan.words {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		pcm = renderWord(pcm, w, plan.rate, plan.freq)
	}
	pcm = append(pcm, make([]byte, plan.padSamples(opts)*2)...)
	resp := &sdk.SynthesizeResponse{Audio: pcm, MediaType: plan.mediaType(), Warnings: opts.Warnings}
	if plan.format == sdk.FormatWAV {
		resp.Audio = append(wavHeader(plan.rate, len(pcm)), pcm...)
	}
	if req.Timestamps {
		resp.Timestamps = make([]sdk.WordTimestamp, len(plan.words))
		for i, w := range plan.words {
			resp.Timestamps[i] = sdk.WordTimestamp{
				Text:  w.text,
				Start: float64(w.start) / float64(plan.rate),
				End:   float64(w.end) / float64(plan.rate),
			}
		}
	}
	return resp, nil
}

// Stream implements sdk.Provider: one chunk per word, the first carrying
// the media type (and, for WAV, the header).
func (p *Provider) Stream(ctx context.Context, req *sdk.SynthesizeRequest, send func(sdk.Chunk) error) error {
	p.recordSynthesis("stream", req)
	opts, err := parseOptions(req.Options)
	if err != nil {
		return err
	}
	if opts.AfterChunks == 0 {
		if err := p.behave(ctx, "stream", opts); err != nil {
			return err
		}
	}
	plan, err := p.plan(req, true)
	if err != nil {
		return err
	}
	if opts.Silent {
		plan.freq = 0
	}
	var header []byte
	if plan.format == sdk.FormatWAV {
		header = wavHeader(plan.rate, plan.totalSamples(opts)*2)
	}
	for i, w := range plan.words {
		if i > 0 && opts.SlowStreamMs > 0 {
			select {
			case <-ctx.Done():
				p.record(calllog.Call{Method: "stream", Event: "canceled"}, sdk.Credentials{})
				return ctx.Err()
			case <-time.After(time.Duration(opts.SlowStreamMs) * time.Millisecond):
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		c := sdk.Chunk{Data: renderWord(header, w, plan.rate, plan.freq)}
		header = nil
		if i == 0 {
			c.MediaType = plan.mediaType()
		}
		if err := send(c); err != nil {
			return err
		}
		if opts.AfterChunks == i+1 {
			if err := p.behave(ctx, "stream", opts); err != nil {
				return err
			}
		}
	}
	if pad := plan.padSamples(opts); pad > 0 {
		return send(sdk.Chunk{Data: make([]byte, pad*2)})
	}
	return nil
}

// Clone implements sdk.Provider: the new voice is "clone-" + name.
func (p *Provider) Clone(ctx context.Context, req *sdk.CloneRequest) (*sdk.CloneResponse, error) {
	p.record(calllog.Call{Method: "clone", Model: req.Model, Name: req.Name, Samples: len(req.Samples), Options: validJSON(req.Options)}, req.Credentials)
	opts, err := parseOptions(req.Options)
	if err != nil {
		return nil, err
	}
	if err := p.behave(ctx, "clone", opts); err != nil {
		return nil, err
	}
	if req.Model == ModelBasic {
		return nil, sdk.Errorf(sdk.KindUnsupported, "model %s cannot clone voices", ModelBasic)
	}
	if req.Model != ModelTest {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "unknown model %q", req.Model)
	}
	if strings.TrimSpace(req.Name) == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "a cloned voice needs a name")
	}
	if len(req.Samples) == 0 || len(req.Samples[0].Data) == 0 {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "cloning needs at least one non-empty audio sample")
	}
	id := "clone-" + req.Name
	p.mu.Lock()
	p.clones[id] = true
	p.mu.Unlock()
	return &sdk.CloneResponse{VoiceID: id}, nil
}

// behave runs the failure behaviours opts ask for; nil means carry on.
func (p *Provider) behave(ctx context.Context, method string, opts options) error {
	switch {
	case opts.Crash:
		if opts.AfterChunks > 0 {
			// gRPC writes sent chunks from another goroutine; give them a
			// moment to leave before the process vanishes. Best effort: a
			// crash may lose audio the plugin believed sent, as a real one
			// may.
			time.Sleep(200 * time.Millisecond)
		}
		fmt.Fprintf(os.Stderr, "testplugin: crashing in %s as requested\n", method)
		os.Exit(3)
	case opts.Panic:
		panic("testplugin: panic requested in " + method)
	case opts.Hang:
		<-ctx.Done()
		p.record(calllog.Call{Method: method, Event: "canceled"}, sdk.Credentials{})
		return ctx.Err()
	case opts.Fail != nil:
		return opts.Fail.err()
	}
	return nil
}

// plan is a validated synthesis request, laid out.
type plan struct {
	words  []word
	rate   int
	freq   float64
	format string
}

func (pl plan) mediaType() string {
	if pl.format == sdk.FormatWAV {
		return "audio/wav"
	}
	return "audio/pcm;rate=" + strconv.Itoa(pl.rate)
}

func (pl plan) padSamples(opts options) int { return pl.rate * opts.PadMs / 1000 }

func (pl plan) totalSamples(opts options) int {
	n := pl.padSamples(opts)
	if len(pl.words) > 0 {
		n += pl.words[len(pl.words)-1].next
	}
	return n
}

// plan validates req the way a real provider would and lays it out.
func (p *Provider) plan(req *sdk.SynthesizeRequest, streaming bool) (plan, error) {
	switch req.Model {
	case ModelTest:
	case ModelBasic:
		if streaming {
			return plan{}, sdk.Errorf(sdk.KindUnsupported, "model %s cannot stream", ModelBasic)
		}
		if req.Timestamps {
			return plan{}, sdk.Errorf(sdk.KindUnsupported, "model %s has no timestamps", ModelBasic)
		}
	default:
		return plan{}, sdk.Errorf(sdk.KindInvalidRequest, "unknown model %q", req.Model)
	}
	freq, ok := builtinVoice(req.Voice)
	if !ok {
		p.mu.Lock()
		cloned := p.clones[req.Voice]
		p.mu.Unlock()
		if !cloned {
			return plan{}, &sdk.Error{Kind: sdk.KindInvalidRequest, Message: fmt.Sprintf("unknown voice %q", req.Voice), UpstreamStatus: 400, UpstreamCode: "voice_not_found"}
		}
		freq = cloneFreq
	}
	format := req.Format
	switch format {
	case "":
		p.mu.Lock()
		format = p.formats[0]
		p.mu.Unlock()
	case sdk.FormatPCM, sdk.FormatWAV:
	default:
		return plan{}, sdk.Errorf(sdk.KindInvalidRequest, "unsupported format %q", req.Format)
	}
	rate := req.SampleRate
	switch rate {
	case 0:
		rate = nativeRate
	case 8000, 16000, 24000, 48000:
	default:
		return plan{}, sdk.Errorf(sdk.KindInvalidRequest, "unsupported sample rate %d", req.SampleRate)
	}
	speed := req.Speed
	if req.Model == ModelBasic {
		speed = 1 // basic claims no native speed
	}
	words := layout(req.Text, rate, speed)
	if len(words) == 0 {
		return plan{}, sdk.Errorf(sdk.KindInvalidRequest, "text has no words")
	}
	return plan{words: words, rate: rate, freq: freq, format: format}, nil
}

func parseOptions(raw []byte) (options, error) {
	var o options
	if len(raw) == 0 {
		return o, nil
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return o, sdk.Errorf(sdk.KindInvalidRequest, "providerOptions: %v", err)
	}
	return o, nil
}

func (p *Provider) recordSynthesis(method string, req *sdk.SynthesizeRequest) {
	p.record(calllog.Call{
		Method:     method,
		Model:      req.Model,
		Voice:      req.Voice,
		Text:       req.Text,
		Format:     req.Format,
		SampleRate: req.SampleRate,
		Speed:      req.Speed,
		Timestamps: req.Timestamps,
		Options:    validJSON(req.Options),
	}, req.Credentials)
}

// record appends c to the call log. A log that cannot be written is
// reported on stderr (it reaches the gateway's log) rather than failing the
// call: the log is an observation, not part of the behaviour under test.
func (p *Provider) record(c calllog.Call, cred sdk.Credentials) {
	c.Seq = p.seq.Add(1)
	c.BYOK = cred.BYOK
	c.KeySHA256 = keyHash(cred.APIKey)
	if err := p.log.Append(c); err != nil {
		fmt.Fprintln(os.Stderr, "testplugin:", err)
	}
}

func keyHash(key string) string {
	if key == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// validJSON returns raw if it is JSON (so the log line stays JSON), else nil.
func validJSON(raw []byte) json.RawMessage {
	if len(raw) == 0 || !json.Valid(raw) {
		return nil
	}
	return raw
}

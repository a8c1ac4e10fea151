// Package engine is the eSpeak NG provider: an sdk.Provider that speaks
// through libespeak-ng (cgo), offline, with real word timestamps from the
// synthesizer's word events.
//
// libespeak-ng keeps its state in C globals, and some of that state (pitch
// flutter phase, gain, stale phoneme data) carries from one synthesis into
// the next, so that the same text would sound slightly different each
// time. Every synthesis therefore runs in a child forked from a template
// process that initialized the library and never synthesized
// (template.c): the same request gives the same bytes, and syntheses run
// in parallel without sharing anything. Only the plugin's main package
// imports this one.
package engine

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/voxgate/voxgate/sdk"
)

// Identity of the provider and its one model.
const (
	// ProviderID is the provider id in `provider/model` strings.
	ProviderID = "espeak"
	// ModelID is the provider's only (and so default) model.
	ModelID = "espeak-ng"
	// DefaultVoice is spoken when a request names no voice.
	DefaultVoice = "en"
	// MaxTextChars is the longest text, in Unicode code points, one call
	// accepts.
	MaxTextChars = 5000
)

// defaultMaxRenders bounds the syntheses alive at once in one plugin
// process: each is a child process of a few hundred kilobytes.
const defaultMaxRenders = 256

// Provider is the eSpeak NG sdk.Provider. Its methods may be called
// concurrently.
type Provider struct {
	// UnimplementedProvider answers Clone: eSpeak cannot clone voices.
	sdk.UnimplementedProvider

	engine     *engine
	sampleRate int
	voices     *voiceTable
	// stall is the stream stall timeout (a time.Duration), set by
	// Configure while streams may be running.
	stall atomic.Int64
	// log goes to the plugin's stderr as JSON lines, which the gateway
	// re-logs at their level under the plugin's name.
	log hclog.Logger
}

// Settings a deployment may give in the provider's block of gateway.yaml.
const settingStall = "stream_stall_timeout"

// maxStallTimeout bounds stream_stall_timeout: a client may be given
// minutes, not forever, to take audio.
const maxStallTimeout = time.Hour

// New initializes libespeak-ng, starts the template process and returns
// the provider. It fails when the library cannot find its data (the
// espeak-ng-data package). Close stops the template process; a plugin
// process need not call it, as the template ends with its parent.
func New() (*Provider, error) {
	e, err := newEngine(defaultMaxRenders)
	if err != nil {
		return nil, fmt.Errorf("espeak: %w", err)
	}
	p := &Provider{engine: e, sampleRate: library.sampleRate, voices: newVoiceTable(library.voices),
		log: hclog.New(&hclog.LoggerOptions{Name: ProviderID, Output: os.Stderr, JSONFormat: true, Level: hclog.Info})}
	p.stall.Store(int64(DefaultStallTimeout))
	return p, nil
}

// Close stops the template process. Syntheses already started finish.
func (p *Provider) Close() { p.engine.close() }

// Settings are eSpeak's settings (sdk.DecodeSettings).
type Settings struct {
	// StreamStallTimeout is how long a stream waits for a client that
	// takes no audio before ending it (default 30s, at most an hour).
	StreamStallTimeout time.Duration `setting:"stream_stall_timeout"`
}

// CheckSettings implements sdk.SettingsChecker.
func (s *Settings) CheckSettings() []sdk.SettingProblem {
	if d := s.StreamStallTimeout; d <= 0 || d > maxStallTimeout {
		return []sdk.SettingProblem{{Path: settingStall, Message: fmt.Sprintf("want a duration above 0 and at most %s, like 30s", maxStallTimeout)}}
	}
	return nil
}

// NewSettings implements sdk.SettingsDecoder: `voxgate config check`
// checks a provider block against Settings.
func (p *Provider) NewSettings() any { return &Settings{StreamStallTimeout: DefaultStallTimeout} }

// Configure reads the deployment's settings (Settings). Other keys are
// refused, so that a misspelt one stops the gateway at start instead of
// being ignored.
func (p *Provider) Configure(_ context.Context, settings map[string]string) error {
	s := p.NewSettings().(*Settings)
	if problems := sdk.DecodeSettings(settings, s); len(problems) > 0 {
		return sdk.SettingsErr(ProviderID, problems)
	}
	p.stall.Store(int64(s.StreamStallTimeout))
	return nil
}

// pace is how streams render ahead of their clients now.
func (p *Provider) pace() pace {
	bytesPerSecond := 2 * p.sampleRate
	return pace{
		ahead: int(renderAhead.Seconds() * float64(bytesPerSecond)),
		piece: int(renderPiece.Seconds() * float64(bytesPerSecond)),
		stall: time.Duration(p.stall.Load()),
	}
}

// Describe reports the provider and its one model.
func (p *Provider) Describe(context.Context) (*sdk.Description, error) {
	return &sdk.Description{
		ID:           ProviderID,
		Name:         "eSpeak NG",
		DefaultModel: ModelID,
		Models:       sdk.WithPrices([]sdk.Model{p.model()}, map[string][]sdk.Price{ModelID: localPrice}),
	}, nil
}

// model is the one model. eSpeak NG renders 16-bit mono PCM at the one
// rate its library reports (22,050 Hz for the voices it ships) and
// nothing else, so its native encodings are that PCM and the same
// samples behind a WAV header: no resampling, no other format (the
// gateway encodes any other itself).
func (p *Provider) model() sdk.Model {
	return sdk.Model{
		ID:   ModelID,
		Name: "eSpeak NG",
		Capabilities: sdk.Capabilities{
			Streaming:  true,
			Timestamps: true,
			Speed:      true,
		},
		// WAV first: it is the default, a file any player opens and any
		// client can measure. Raw PCM only when asked for.
		Encodings: []sdk.Encoding{
			{Format: sdk.FormatWAV, SampleRate: p.sampleRate},
			{Format: sdk.FormatPCM, SampleRate: p.sampleRate},
		},
		MaxTextChars: MaxTextChars,
		// eSpeak's rate range, 80 to 450 words a minute around 175.
		MinSpeed: float64(rateMinimum) / float64(rateNormal),
		MaxSpeed: float64(rateMaximum) / float64(rateNormal),
		// eSpeak reads its own phoneme mnemonics in [[...]]; the gateway
		// converts IPA (and CMU, through IPA) to them.
		Phonemes: sdk.PhonemeInput{Kind: sdk.PhonemesESpeak, Alphabets: []string{"ipa"}},
	}
}

// Voices lists every name an eSpeak voice may be asked for by (see
// voiceTable): each voice's language ("en-gb", "en-us", "de", "fr-fr"),
// its file name ("en", "fr") and the further languages it serves ("zh").
// Each id is usable as SynthesizeRequest.Voice, optionally followed by an
// eSpeak variant ("en-gb+f3"), or with providerOptions.variant.
func (p *Provider) Voices(_ context.Context, req *sdk.VoicesRequest) ([]sdk.Voice, error) {
	if err := checkModel(req.Model); err != nil {
		return nil, err
	}
	return append([]sdk.Voice(nil), p.voices.list...), nil
}

// Synthesize renders the whole clip, with word timestamps when asked.
func (p *Provider) Synthesize(ctx context.Context, req *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	c, err := p.translate(req)
	if err != nil {
		return nil, err
	}
	// A WAV clip is rendered behind a placeholder for its header, filled in
	// once the length is known, so the audio is never copied.
	var out bytes.Buffer
	headerSize := 0
	if c.format == sdk.FormatWAV {
		headerSize = wavHeaderSize
		out.Write(make([]byte, headerSize))
	}
	var events []event
	err = p.engine.synthesize(ctx, req.Text, c.options, func(b buffer) error {
		out.Write(b.pcm)
		if req.Timestamps {
			events = append(events, b.events...)
		}
		return nil
	})
	if err != nil {
		return nil, synthesisError(err)
	}

	audio := out.Bytes()
	pcm := audio[headerSize:]
	resp := &sdk.SynthesizeResponse{Audio: audio, MediaType: p.pcmMediaType(), Warnings: c.warnings}
	if c.format == sdk.FormatWAV {
		copy(audio, wavHeader(uint32(len(pcm)), p.sampleRate))
		resp.MediaType = "audio/wav"
	}
	if req.Timestamps {
		resp.Timestamps = wordTimestamps(req.Text, events, pcm, p.sampleRate)
	}
	return resp, nil
}

// Stream sends each buffer of audio as soon as eSpeak produces it (about
// 60 ms of audio per chunk), without collecting the clip. It renders at
// most renderAhead of audio ahead of the client and never waits on the
// client while holding the engine; a client that takes nothing for the
// stall time (stream_stall_timeout) has its stream ended, and the plugin
// logs so.
//
// Format "wav" (or empty) streams the PCM behind a WAVE header whose sizes
// say "unknown" (0xFFFFFFFF), media type "audio/wav": the length is not
// known until synthesis ends, and decoders read such a file to its end.
// Format "pcm" streams the raw PCM, media type "audio/pcm;rate=N".
func (p *Provider) Stream(ctx context.Context, req *sdk.SynthesizeRequest, send func(sdk.Chunk) error) error {
	c, err := p.translate(req)
	if err != nil {
		return err
	}
	mediaType, header := p.pcmMediaType(), []byte(nil)
	if c.format == sdk.FormatWAV {
		mediaType, header = "audio/wav", wavHeader(wavUnknownSize, p.sampleRate)
	}
	sent := false
	sendData := func(data []byte) error {
		chunk := sdk.Chunk{Data: data}
		if !sent {
			chunk.MediaType = mediaType
			sent = true
		}
		if err := send(chunk); err != nil {
			return fmt.Errorf("espeak: send chunk: %w", err)
		}
		return nil
	}
	// Called from the stream's sender goroutine only, and done with when
	// stream returns nil; on an error nothing below reads sent.
	err = p.engine.stream(ctx, req.Text, c.options, p.pace(), func(b buffer) error {
		if header != nil {
			b.pcm = append(header, b.pcm...)
			header = nil
		}
		return sendData(b.pcm)
	})
	if errors.Is(err, errStalled) {
		p.log.Warn("stream ended: its client fell behind", "reason", err.Error())
		return &sdk.Error{Kind: sdk.KindTimeout, Message: "espeak: stream ended: " + err.Error()}
	}
	if err != nil {
		return synthesisError(err)
	}
	if !sent {
		// Text eSpeak renders as no audio at all: the caller still learns
		// the media type (and, for WAV, gets a header).
		return sendData(header)
	}
	return nil
}

// utterance is a validated request in eSpeak terms.
type utterance struct {
	options  options
	format   string
	warnings []string
}

// translate validates req and turns it into eSpeak terms. Everything that can be
// wrong with a request is found here, before any audio exists, so that a
// stream never fails after its first chunk for a reason known up front.
func (p *Provider) translate(req *sdk.SynthesizeRequest) (*utterance, error) {
	if err := checkModel(req.Model); err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "text is empty")
	}
	if n := utf8.RuneCountInString(req.Text); n > MaxTextChars {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "text has %d characters; eSpeak accepts at most %d", n, MaxTextChars)
	}
	format := cmp.Or(req.Format, sdk.FormatWAV)
	m := p.model()
	if _, ok := m.FindEncoding(format, req.SampleRate, req.Bitrate); !ok {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "%s is not available; eSpeak produces wav and pcm at %d Hz, with no bitrate", sdk.Encoding{Format: format, SampleRate: req.SampleRate, Bitrate: req.Bitrate}, p.sampleRate)
	}
	c := &utterance{format: format}
	switch req.Markup {
	case "":
	case sdk.MarkupESpeak:
		c.options.phonemes = true
	default:
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "espeak: text markup %q is not eSpeak's (it reads plain text with [[...]] phonemes)", req.Markup)
	}

	voice, err := p.selectVoice(req)
	if err != nil {
		return nil, err
	}
	c.options.voice = voice

	rate, warning, err := speakingRate(req.Speed)
	if err != nil {
		return nil, err
	}
	c.options.rate = rate
	if warning != "" {
		c.warnings = append(c.warnings, warning)
	}
	return c, nil
}

// providerOptions are the providerOptions eSpeak reads; other keys are
// ignored, as a conversation's shared options may be meant for another
// provider.
type providerOptions struct {
	// Variant is an eSpeak voice variant ("f3", "klatt", "whisper"), the
	// same as "+f3" after the voice name. It lets a saved voice keep a
	// listed voice_id and still use a variant.
	Variant *string `json:"variant"`
}

// selectVoice resolves the request's voice name (DefaultVoice if empty)
// and variant to what the engine selects: the voice file, with "+variant"
// when there is one.
func (p *Provider) selectVoice(req *sdk.SynthesizeRequest) (string, error) {
	name := req.Voice
	if name == "" {
		name = DefaultVoice
	}
	v, variant, ok := p.voices.resolve(name)
	if !ok {
		return "", sdk.Errorf(sdk.KindInvalidRequest, "unknown voice %q; eSpeak's voices are language codes such as en-gb, en-us, de or fr-fr", req.Voice)
	}
	if len(req.Options) > 0 {
		var opts providerOptions
		if err := json.Unmarshal(req.Options, &opts); err != nil {
			return "", sdk.Errorf(sdk.KindInvalidRequest, "providerOptions: variant must be a string (%v)", err)
		}
		if opts.Variant != nil {
			switch {
			case variant != "":
				return "", sdk.Errorf(sdk.KindInvalidRequest, "voice %q already names a variant; drop providerOptions.variant", req.Voice)
			case !validVariant(*opts.Variant):
				return "", sdk.Errorf(sdk.KindInvalidRequest, "providerOptions.variant %q is not an eSpeak variant name (letters, digits, _ and -, at most 32)", *opts.Variant)
			}
			variant = *opts.Variant
		}
	}
	if variant != "" {
		return v.file + "+" + variant, nil
	}
	return v.file, nil
}

// speakingRate maps a speed multiple to eSpeak's rate in words per minute.
// eSpeak accepts 80 to 450 wpm, about 0.46x to 2.57x of its normal 175, so
// speeds beyond that clamp to the extremes; the warning says so.
func speakingRate(speed float64) (rate int, warning string, err error) {
	if speed == 0 {
		return rateNormal, "", nil
	}
	if speed < 0 || math.IsNaN(speed) || math.IsInf(speed, 0) {
		return 0, "", sdk.Errorf(sdk.KindInvalidRequest, "speed %v is not a positive number", speed)
	}
	want := math.Round(float64(rateNormal) * speed)
	rate = int(max(min(want, float64(rateMaximum)), float64(rateMinimum)))
	if float64(rate) != want {
		warning = fmt.Sprintf("speed %s is outside eSpeak's range; spoken at %sx",
			strconv.FormatFloat(speed, 'g', -1, 64),
			strconv.FormatFloat(float64(rate)/float64(rateNormal), 'f', 2, 64))
	}
	return rate, warning, nil
}

// checkModel accepts the provider's one model; empty means the default.
func checkModel(model string) error {
	if model != "" && model != ModelID {
		return sdk.Errorf(sdk.KindInvalidRequest, "unknown model %q; eSpeak has only %q", model, ModelID)
	}
	return nil
}

// pcmMediaType is the media type of the library's raw output.
func (p *Provider) pcmMediaType() string {
	return "audio/pcm;rate=" + strconv.Itoa(p.sampleRate)
}

// synthesisError classifies a failure of synthesize for the gateway.
// Context and send errors pass through unchanged (sdk.AsError maps context
// errors; a send error means the caller is gone).
func synthesisError(err error) error {
	switch {
	case errors.Is(err, errUnknownVoice):
		return sdk.Errorf(sdk.KindInvalidRequest, "%v", err)
	case errors.Is(err, errEngineGone):
		return &sdk.Error{Kind: sdk.KindUnavailable, Message: "espeak: " + err.Error(), Retryable: true}
	}
	return err
}

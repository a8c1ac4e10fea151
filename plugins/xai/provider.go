package main

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

const (
	providerID     = "xai"
	defaultBaseURL = "https://api.x.ai/v1"
	// modelID names xAI's one speech model. The API has no model field:
	// the name is the one xAI's partners list it under (grok-tts).
	modelID = "grok-tts"
	// nativeRate is the documented default sample_rate.
	nativeRate = 24000
	// defaultMP3Kbps is the documented default bit_rate of mp3 (128000).
	defaultMP3Kbps = 128
	// maxText is the documented limit of text.
	maxText       = 15000
	maxAudioBytes = 256 << 20
	ttsPath       = "/tts"
	voicesPath    = "/tts/voices"
	// invalidArgument is the code of xAI's 400 answers.
	invalidArgument = "Client specified an invalid argument"
)

func sampleRates() []int { return []int{8000, 16000, 22050, 24000, 44100, 48000} }

// mp3Kbps are the documented bit_rate values of mp3, in kbit/s.
func mp3Kbps() []int { return []int{32, 64, 96, 128, 192} }

// mp3Carries reports whether an MP3 stream can have kbps at rate and the
// plugin lists it: MPEG-1 (32 to 48 kHz) up to 320, MPEG-2 (16 to
// 24 kHz) up to 160. xAI's reference lists its rates and bit rates
// without saying which pairs it makes; only pairs MP3 itself can carry
// are listed. MP3 at 8 kHz is MPEG-2.5, which xAI offers but the sdk's
// conformance kit cannot decode (go-mp3 reads MPEG-1 and 2 only), so it
// is left out: the gateway converts for such a request.
func mp3Carries(rate, kbps int) bool {
	switch {
	case rate >= 32000:
		return true
	case rate >= 16000:
		return kbps <= 160
	}
	return false
}

// encodings are what POST /tts produces, from the output_format of the
// reference (docs.x.ai, Text to Speech, "Output Formats"; read
// 2026-11-28): codec pcm (16-bit little-endian), wav, mp3, mulaw/ulaw and
// alaw, each at sample_rate 8000, 16000, 22050, 24000 (the default),
// 44100 or 48000, and mp3 at bit_rate 32000 to 192000 (default 128000).
// pcm at 24 kHz comes first, the gateway's default; each format's first
// entry is xAI's default for it. G.711 is listed at 8 kHz only: the
// API takes it at the other rates too, but G.711 is an 8 kHz codec and
// the only rate the gateway asks of it.
func encodings() []sdk.Encoding {
	var out []sdk.Encoding
	rates := append([]int{nativeRate}, slices.DeleteFunc(sampleRates(), func(r int) bool { return r == nativeRate })...)
	for _, f := range []string{sdk.FormatPCM, sdk.FormatWAV} {
		for _, r := range rates {
			out = append(out, sdk.Encoding{Format: f, SampleRate: r})
		}
	}
	out = append(out, sdk.Encoding{Format: sdk.FormatMP3, SampleRate: nativeRate, Bitrate: defaultMP3Kbps})
	for _, r := range rates {
		for _, k := range mp3Kbps() {
			if (r != nativeRate || k != defaultMP3Kbps) && mp3Carries(r, k) {
				out = append(out, sdk.Encoding{Format: sdk.FormatMP3, SampleRate: r, Bitrate: k})
			}
		}
	}
	return append(out, sdk.Encoding{Format: sdk.FormatULaw, SampleRate: 8000}, sdk.Encoding{Format: sdk.FormatALaw, SampleRate: 8000})
}

// codecs are xAI's output_format codec for each listed format.
var codecs = map[string]string{
	sdk.FormatPCM: "pcm", sdk.FormatWAV: "wav", sdk.FormatMP3: "mp3",
	sdk.FormatULaw: "mulaw", sdk.FormatALaw: "alaw",
}

// Provider is the xAI plugin. It keeps only deployment settings, which
// Configure swaps atomically; every call reads one snapshot.
type Provider struct {
	cfg atomic.Pointer[upstream.Endpoint]
}

// api is how xAI authenticates and reports errors. It is never modified.
var api = &upstream.API{
	Provider:       providerID,
	DefaultBaseURL: defaultBaseURL,
	Authorize:      upstream.Bearer,
	ParseError:     parseError,
	Classify: func(e *sdk.Error) {
		// xAI answers a wrong key with 400, its generic invalid-argument
		// code and "Incorrect API key provided": the caller's key, not
		// the request, is what is wrong.
		if e.UpstreamStatus == http.StatusBadRequest && e.UpstreamCode == invalidArgument && strings.Contains(e.Message, "Incorrect API key") {
			e.Kind = sdk.KindUnauthorized
		}
	},
}

// New returns a Provider with the default settings (the public API).
func New() *Provider {
	p := &Provider{}
	e, _ := upstream.NewEndpoint(api, nil)
	p.cfg.Store(e)
	return p
}

var _ sdk.Provider = (*Provider)(nil)

// NewSettings implements sdk.SettingsDecoder: the plugin takes the
// common settings only, so a provider block with any other key (a typo)
// is refused by `voxgate config check` and at start.
func (p *Provider) NewSettings() any { return new(upstream.CommonSettings) }

// Configure implements sdk.Provider: the common settings of
// upstream.ParseSettings. Other keys are refused (NewSettings).
func (p *Provider) Configure(_ context.Context, settings map[string]string) error {
	if problems := sdk.DecodeSettings(settings, p.NewSettings()); len(problems) > 0 {
		return sdk.SettingsErr(api.Provider, problems)
	}
	e, err := upstream.NewEndpoint(api, settings)
	if err != nil {
		return err
	}
	p.cfg.Swap(e).Close()
	return nil
}

// Describe implements sdk.Provider: one model that streams (the body of
// POST /tts arrives as it is produced). The REST API documents no speed,
// word timestamps or voice creation, so the gateway time-stretches speed
// itself and the model claims neither timestamps nor cloning.
func (p *Provider) Describe(context.Context) (*sdk.Description, error) {
	return &sdk.Description{ID: providerID, Name: "xAI", DefaultModel: modelID, Models: sdk.WithUnpublished(sdk.WithPrices([]sdk.Model{describe()}, priceTable), sdk.UnitCharacters, priceDate)}, nil
}

// describe is the one model. The endpoint streams every codec (its body
// arrives as it is produced).
func describe() sdk.Model {
	return sdk.Model{
		ID:           modelID,
		Name:         "Grok TTS",
		Capabilities: sdk.Capabilities{Streaming: true},
		Encodings:    encodings(),
		MaxTextChars: maxText,
		// xAI documents inline speech tags ("[pause]", "[laugh]",
		// "[sigh]", ...) that the model performs rather than reads.
		AudioTags: []string{sdk.AnyAudioTag},
	}
}

// parseError reads xAI's error body, {"code": "...", "error": "..."},
// and the OpenAI-style {"error": {"message", "type", "code"}} its
// OpenAI-compatible endpoints answer.
func parseError(body []byte) (code, message string) {
	var b struct {
		Code  string          `json:"code"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &b) != nil {
		return "", ""
	}
	var msg string
	if json.Unmarshal(b.Error, &msg) == nil {
		return b.Code, msg
	}
	return upstream.ParseOpenAIError(body)
}

// Voices implements sdk.Provider with GET /tts/voices.
func (p *Provider) Voices(ctx context.Context, req *sdk.VoicesRequest) ([]sdk.Voice, error) {
	if req.Model != "" && req.Model != modelID {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "xai: unknown model %q", req.Model)
	}
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.BaseURL+voicesPath, nil)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "xai: %v", err)
	}
	var out struct {
		Voices []struct {
			VoiceID  string `json:"voice_id"`
			Name     string `json:"name"`
			Language string `json:"language"`
			Gender   string `json:"gender"`
		} `json:"voices"`
	}
	if err := cfg.DoJSON(ctx, hreq, req.Credentials.APIKey, true, "voice list", &out); err != nil {
		return nil, err
	}
	voices := make([]sdk.Voice, 0, len(out.Voices))
	for _, v := range out.Voices {
		voices = append(voices, sdk.Voice{ID: v.VoiceID, Name: cmp.Or(v.Name, v.VoiceID), Language: v.Language, Gender: v.Gender})
	}
	return voices, nil
}

// options are the providerOptions the plugin accepts.
type options struct {
	// Language is a BCP-47 code or "auto"; the API requires one, and
	// the plugin sends "auto" when it is absent.
	Language                 *string `json:"language"`
	OptimizeStreamingLatency *int    `json:"optimize_streaming_latency"`
	TextNormalization        *bool   `json:"text_normalization"`
}

// languages are the language values xAI's TTS reference lists (it
// matches them without regard to case).
var languages = strings.Fields("auto en ar-EG ar-SA ar-AE bn zh fr de hi id it ja ko pt-BR pt-PT ru es-MX es-ES tr vi")

// check checks o against xAI's TTS reference (xAI publishes no
// machine-readable document for it): a listed language, and
// optimize_streaming_latency 0 or 1.
func (o *options) check() error {
	c := upstream.NewCheck(providerID)
	if o.Language != nil && *o.Language != "" && !slices.ContainsFunc(languages, func(l string) bool { return strings.EqualFold(l, *o.Language) }) {
		c.Fail("language", "must be one of %s, got %q", strings.Join(languages, ", "), *o.Language)
	}
	upstream.InRange(c, "optimize_streaming_latency", o.OptimizeStreamingLatency, 0, 1)
	return c.Err()
}

// optionNames are the accepted providerOptions. The MP3 bit_rate is not
// one: it is the request's own bitrate (SynthesizeRequest.Bitrate).
var optionNames = []string{"language", "optimize_streaming_latency", "text_normalization"}

type outputFormat struct {
	Codec      string `json:"codec"`
	SampleRate int    `json:"sample_rate,omitempty"`
	BitRate    int    `json:"bit_rate,omitempty"`
}

// ttsBody is the body of POST /tts.
type ttsBody struct {
	Text                     string       `json:"text"`
	VoiceID                  string       `json:"voice_id"`
	Language                 string       `json:"language"`
	OutputFormat             outputFormat `json:"output_format"`
	OptimizeStreamingLatency *int         `json:"optimize_streaming_latency,omitempty"`
	TextNormalization        *bool        `json:"text_normalization,omitempty"`
}

// call is a validated request.
type call struct {
	body      ttsBody
	mediaType string
	align     int // PCM frame size, 1 otherwise
}

// prepare validates req and builds the upstream body. Failures are the
// caller's (KindInvalidRequest) and cost no upstream call.
func prepare(req *sdk.SynthesizeRequest) (*call, error) {
	if req.Model != modelID {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "xai: unknown model %q", req.Model)
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "xai: nothing to say")
	}
	if req.Voice == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "xai: a voice is required (e.g. eve)")
	}
	m := describe()
	e, err := upstream.ChooseEncoding(providerID, &m, req)
	if err != nil {
		return nil, err
	}
	var o options
	if err := upstream.DecodeOptions(providerID, req.Options, &o, optionNames...); err != nil {
		return nil, err
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	c := &call{align: 1, mediaType: sdk.MediaType(e), body: ttsBody{
		Text: req.Text, VoiceID: req.Voice, Language: "auto",
		OptimizeStreamingLatency: o.OptimizeStreamingLatency, TextNormalization: o.TextNormalization,
		// Every field explicit: what is asked is what arrives, whatever
		// xAI's defaults become.
		OutputFormat: outputFormat{Codec: codecs[e.Format], SampleRate: e.SampleRate, BitRate: e.Bitrate * 1000},
	}}
	if o.Language != nil && *o.Language != "" {
		c.body.Language = *o.Language
	}
	if e.Format == sdk.FormatPCM {
		c.align = 2
	}
	return c, nil
}

// post sends the speech request and returns the successful response; any
// failure is an *sdk.Error.
func post(ctx context.Context, cfg *upstream.Endpoint, key string, body ttsBody) (*http.Response, error) {
	hreq, err := upstream.NewJSONRequest(ctx, http.MethodPost, cfg.BaseURL+ttsPath, body)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "xai: %v", err)
	}
	return cfg.Do(ctx, hreq, key, true)
}

var _ sdk.Planner = (*Provider)(nil)

// Plan implements sdk.Planner: the request Synthesize and Stream send
// (one endpoint for both; its body streams as it is produced), for the
// gateway to send itself.
func (p *Provider) Plan(_ context.Context, req *sdk.PlanRequest) (*sdk.Plan, error) {
	c, err := prepare(req.Request)
	if err != nil {
		return nil, err
	}
	cfg := p.cfg.Load()
	plan, err := cfg.Plan(http.MethodPost, cfg.BaseURL+ttsPath, c.body, req.Request.Credentials.APIKey, nil)
	if err != nil {
		return nil, err
	}
	plan.MediaType, plan.FrameSize = c.mediaType, c.align
	return plan, nil
}

// Explain implements sdk.Planner with the mapping Synthesize uses.
func (p *Provider) Explain(_ context.Context, f *sdk.Failure) error {
	return p.cfg.Load().Explain(f)
}

// Synthesize implements sdk.Provider.
func (p *Provider) Synthesize(ctx context.Context, req *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	if req.Timestamps {
		return nil, sdk.Errorf(sdk.KindUnsupported, "xai: the speech API returns no word timestamps")
	}
	c, err := prepare(req)
	if err != nil {
		return nil, err
	}
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	resp, err := post(ctx, cfg, req.Credentials.APIKey, c.body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	audio, err := upstream.ReadBody(resp.Body, resp.ContentLength, maxAudioBytes)
	if err != nil {
		return nil, upstream.TransportError(ctx, providerID, err)
	}
	if len(audio)%c.align != 0 {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "xai: truncated PCM (odd byte count)"}
	}
	return &sdk.SynthesizeResponse{Audio: audio, MediaType: c.mediaType}, nil
}

// Stream implements sdk.Provider: the same endpoint, its body forwarded
// as it arrives. The timeout setting bounds only the wait for the answer
// to start; the stream runs as long as the caller's context allows.
func (p *Provider) Stream(ctx context.Context, req *sdk.SynthesizeRequest, send func(sdk.Chunk) error) error {
	c, err := prepare(req)
	if err != nil {
		return err
	}
	cfg := p.cfg.Load()
	resp, err := post(ctx, cfg, req.Credentials.APIKey, c.body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = upstream.Forward(ctx, resp.Body, send, upstream.ForwardOptions{MediaType: c.mediaType, Align: c.align, Provider: providerID})
	return err
}

// Clone implements sdk.Provider: xAI documents no API that creates a
// voice from audio.
func (p *Provider) Clone(context.Context, *sdk.CloneRequest) (*sdk.CloneResponse, error) {
	return nil, sdk.Errorf(sdk.KindUnsupported, "xai: voice cloning is not supported")
}

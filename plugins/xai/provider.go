package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
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
	// maxText is the documented limit of text.
	maxText       = 15000
	maxAudioBytes = 256 << 20
	ttsPath       = "/tts"
	voicesPath    = "/tts/voices"
	// invalidArgument is the code of xAI's 400 answers.
	invalidArgument = "Client specified an invalid argument"
)

func sampleRates() []int { return []int{8000, 16000, 22050, 24000, 44100, 48000} }

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

// Configure implements sdk.Provider: the common settings of
// upstream.ParseSettings. Other keys are ignored.
func (p *Provider) Configure(_ context.Context, settings map[string]string) error {
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
	return &sdk.Description{ID: providerID, Name: "xAI", DefaultModel: modelID, Models: []sdk.Model{{
		ID:               modelID,
		Name:             "Grok TTS",
		Capabilities:     sdk.Capabilities{Streaming: true},
		OutputFormats:    []string{sdk.FormatPCM, sdk.FormatWAV, sdk.FormatMP3},
		SampleRates:      sampleRates(),
		NativeSampleRate: nativeRate,
		MaxTextChars:     maxText,
		// xAI documents inline speech tags ("[pause]", "[laugh]",
		// "[sigh]", ...) that the model performs rather than reads.
		AudioTags: []string{sdk.AnyAudioTag},
	}}}, nil
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
	// BitRate is the MP3 bit rate in bits per second.
	BitRate *int `json:"bit_rate"`
}

var optionNames = []string{"language", "optimize_streaming_latency", "text_normalization", "bit_rate"}

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
	rate := cmp.Or(req.SampleRate, nativeRate)
	if !slices.Contains(sampleRates(), rate) {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "xai: sample rate %d is not available; choose one of %v", rate, sampleRates())
	}
	var o options
	if err := upstream.DecodeOptions(providerID, req.Options, &o, optionNames...); err != nil {
		return nil, err
	}
	c := &call{align: 1, body: ttsBody{
		Text: req.Text, VoiceID: req.Voice, Language: "auto",
		OptimizeStreamingLatency: o.OptimizeStreamingLatency, TextNormalization: o.TextNormalization,
	}}
	if o.Language != nil && *o.Language != "" {
		c.body.Language = *o.Language
	}
	format := cmp.Or(req.Format, sdk.FormatPCM)
	if o.BitRate != nil && format != sdk.FormatMP3 {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "xai: bit_rate applies to mp3 only")
	}
	switch format {
	case sdk.FormatPCM:
		c.body.OutputFormat = outputFormat{Codec: "pcm", SampleRate: rate}
		c.mediaType, c.align = fmt.Sprintf("audio/pcm;rate=%d", rate), 2
	case sdk.FormatWAV:
		c.body.OutputFormat = outputFormat{Codec: "wav", SampleRate: rate}
		c.mediaType = "audio/wav"
	case sdk.FormatMP3:
		c.body.OutputFormat = outputFormat{Codec: "mp3", SampleRate: rate}
		if o.BitRate != nil {
			c.body.OutputFormat.BitRate = *o.BitRate
		}
		c.mediaType = "audio/mpeg"
	default:
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "xai: format %q is not supported; use pcm, wav or mp3", req.Format)
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

package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

const (
	providerID     = "deepgram"
	defaultBaseURL = "https://api.deepgram.com/v1"
	defaultModel   = "aura-2"
	nativeRate     = 24000
	// maxText is the documented limit of one /v1/speak request.
	maxText = 2000
	// The documented range of the speed parameter (Aura-2).
	minSpeed, maxSpeed = 0.7, 1.5
	// maxAudioBytes bounds a whole clip read into memory (2,000
	// characters of 48 kHz PCM is a few MB).
	maxAudioBytes = 256 << 20
	speakPath     = "/speak"
)

// linearRates are the documented sample rates of linear16, the default
// first.
func linearRates() []int { return []int{24000, 8000, 16000, 32000, 48000} }

// encodings are what /v1/speak produces, from the audio format
// combinations of Deepgram's "Media Output Settings" (encoding,
// container, sample_rate, bit_rate; developers.deepgram.com
// docs/tts-media-output-settings, read 2026-11-28): linear16 raw (pcm)
// or in WAV at 8 to 48 kHz, 24 kHz first (the documented default);
// mp3 at a fixed 22,050 Hz and bit_rate 48000 (the default) or 32000;
// Ogg Opus at 48 kHz; FLAC at 48 kHz (default) or 8 to 32 kHz; AAC at
// 22,050 Hz; and raw mu-law and A-law. Opus and AAC take any bit_rate in
// a range (4000 to 650000 and 4000 to 192000 bit/s): they are listed at
// Deepgram's own bitrate, since a list cannot hold a range. mu-law and
// A-law are listed at 8 kHz, the only rate the gateway asks of G.711
// (Deepgram also makes them at 16 kHz). pcm comes first, the gateway's
// default.
func encodings() []sdk.Encoding {
	var out []sdk.Encoding
	for _, f := range []string{sdk.FormatPCM, sdk.FormatWAV} {
		for _, r := range linearRates() {
			out = append(out, sdk.Encoding{Format: f, SampleRate: r})
		}
	}
	out = append(out,
		sdk.Encoding{Format: sdk.FormatMP3, SampleRate: 22050, Bitrate: 48},
		sdk.Encoding{Format: sdk.FormatMP3, SampleRate: 22050, Bitrate: 32},
		sdk.Encoding{Format: sdk.FormatOpus, SampleRate: 48000},
	)
	for _, r := range []int{48000, 8000, 16000, 22050, 32000} {
		out = append(out, sdk.Encoding{Format: sdk.FormatFLAC, SampleRate: r})
	}
	return append(out,
		sdk.Encoding{Format: sdk.FormatAAC, SampleRate: 22050},
		sdk.Encoding{Format: sdk.FormatULaw, SampleRate: 8000},
		sdk.Encoding{Format: sdk.FormatALaw, SampleRate: 8000},
	)
}

// wire is how each format is asked for: Deepgram's encoding and, where
// the format has one, its container.
var wire = map[string]struct{ encoding, container string }{
	sdk.FormatPCM:  {"linear16", "none"},
	sdk.FormatWAV:  {"linear16", "wav"},
	sdk.FormatMP3:  {"mp3", ""},
	sdk.FormatOpus: {"opus", "ogg"},
	sdk.FormatFLAC: {"flac", ""},
	sdk.FormatAAC:  {"aac", ""},
	sdk.FormatULaw: {"mulaw", "none"},
	sdk.FormatALaw: {"alaw", "none"},
}

// Provider is the Deepgram (Aura) plugin. It keeps only deployment
// settings, which Configure swaps atomically.
type Provider struct {
	cfg atomic.Pointer[config]
	// pool holds the speak sockets of StreamInput (streaminput.go),
	// reused from context to context.
	pool *upstream.MuxPool
}

// config is one snapshot of the deployment settings.
type config struct {
	*upstream.Endpoint
}

// api is how Deepgram authenticates and reports errors. It is never
// modified.
var api = &upstream.API{
	Provider:       providerID,
	DefaultBaseURL: defaultBaseURL,
	// API keys go as "Token"; "Bearer" is for the short-lived tokens of
	// Deepgram's auth API.
	Authorize:  func(h http.Header, key string) { h.Set("Authorization", "Token "+key) },
	ParseError: parseError,
	Classify: func(e *sdk.Error) {
		// Out of credits: no retry or wait helps.
		if e.UpstreamStatus == http.StatusPaymentRequired {
			e.Kind, e.Retryable = sdk.KindUpstream, false
		}
	},
}

// New returns a Provider with the default settings (the public API).
func New() *Provider {
	p := &Provider{pool: newPool()}
	e, _ := upstream.NewEndpoint(api, nil)
	p.cfg.Store(&config{Endpoint: e})
	return p
}

var _ sdk.Provider = (*Provider)(nil)

// NewSettings implements sdk.SettingsDecoder: the plugin takes the
// common settings only, so a provider block with any other key (a typo)
// is refused by `voxgate config check` and at start.
func (p *Provider) NewSettings() any { return new(upstream.CommonSettings) }

// Configure implements sdk.Provider with the common settings of
// upstream.ParseSettings. Other keys are refused (NewSettings).
func (p *Provider) Configure(_ context.Context, settings map[string]string) error {
	if problems := sdk.DecodeSettings(settings, p.NewSettings()); len(problems) > 0 {
		return sdk.SettingsErr(api.Provider, problems)
	}
	e, err := upstream.NewEndpoint(api, settings)
	if err != nil {
		return err
	}
	// Calls in flight keep their snapshot; only idle connections go.
	p.cfg.Swap(&config{Endpoint: e}).Close()
	return nil
}

// In Deepgram the model IS the voice: model=aura-2-thalia-en. voxgate
// keeps its model/voice pair by splitting that name after the generation:
// model "aura-2" with voice "thalia-en" (and "aura" with "asteria-en"),
// as the public client does. nativeSpeed says whether the generation
// takes the speed parameter: the reference gives it to Aura-2 only.
func nativeSpeed(model string) bool { return model == "aura-2" }

func models() []sdk.Model {
	mk := func(id, name string) sdk.Model {
		// /v1/speak streams its body as it renders, in every encoding;
		// the speak WebSocket takes text as it comes (streaminput.go).
		m := sdk.Model{
			ID:           id,
			Name:         name,
			Capabilities: sdk.Capabilities{Streaming: true, Speed: nativeSpeed(id), InputStreaming: true},
			Encodings:    encodings(),
			MaxTextChars: maxText,
		}
		if nativeSpeed(id) {
			m.MinSpeed, m.MaxSpeed = minSpeed, maxSpeed
		}
		return m
	}
	return []sdk.Model{mk("aura-2", "Aura-2"), mk("aura", "Aura")}
}

// modelIDPattern is the grammar of a Deepgram TTS generation: aura-
// and a version (aura-2), the part of Deepgram's voice model names
// (aura-2-thalia-en) before the voice. A generation the plugin does not
// list is passed through when it matches, and refused before any call
// otherwise.
var modelIDPattern = regexp.MustCompile(`^aura-[0-9][a-z0-9.]{0,20}$`)

// passThrough is a generation Deepgram may have that the plugin does not
// list (a newer one), whose voices are sent as {id}-{voice}. It claims
// what both listed generations have: every encoding, streaming, the text
// limit; not speed, which Aura lacks.
func passThrough(id string) sdk.Model {
	return sdk.Model{
		ID:           id,
		Name:         "Any other Deepgram Aura generation (passed through)",
		Capabilities: sdk.Capabilities{Streaming: true},
		Encodings:    encodings(),
		MaxTextChars: maxText,
	}
}

// findModel returns the listed model id, or a pass-through model for an
// id that can be a Deepgram generation; any other id is the caller's
// mistake.
func findModel(id string) (sdk.Model, error) {
	if i := slices.IndexFunc(models(), func(m sdk.Model) bool { return m.ID == id }); i >= 0 {
		return models()[i], nil
	}
	if !modelIDPattern.MatchString(id) {
		return sdk.Model{}, sdk.Errorf(sdk.KindInvalidRequest,
			"deepgram: unknown model %q: a Deepgram model is an Aura generation, aura- and a version such as aura-2 (the voice goes apart)", id)
	}
	return passThrough(id), nil
}

// Describe implements sdk.Provider: the listed generations and an
// sdk.AnyModel entry for those it passes through (passThrough).
func (p *Provider) Describe(context.Context) (*sdk.Description, error) {
	return &sdk.Description{ID: providerID, Name: "Deepgram Aura", DefaultModel: defaultModel, Models: sdk.WithUnpublished(sdk.WithPrices(append(models(), passThrough(sdk.AnyModel)), priceTable), sdk.UnitCharacters, priceDate)}, nil
}

// belongs splits a canonical name of Deepgram's list into the voice of
// model: "aura-2-" names Aura-2 voices; "aura-" (but not "aura-2-") Aura ones.
func belongs(canonical, model string) (voice string, ok bool) {
	voice, ok = strings.CutPrefix(canonical, model+"-")
	if ok && model == "aura" && strings.HasPrefix(voice, "2-") {
		return "", false
	}
	return voice, ok
}

// Voices implements sdk.Provider with GET /models: the tts entries of the
// model's generation, each canonical name split into model and voice.
func (p *Provider) Voices(ctx context.Context, req *sdk.VoicesRequest) ([]sdk.Voice, error) {
	model := cmp.Or(req.Model, defaultModel)
	if _, err := findModel(model); err != nil {
		return nil, err
	}
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.BaseURL+"/models", nil)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "deepgram: %v", err)
	}
	var list struct {
		TTS []struct {
			Name          string   `json:"name"`
			CanonicalName string   `json:"canonical_name"`
			Languages     []string `json:"languages"`
			Metadata      *struct {
				Tags []string `json:"tags"`
			} `json:"metadata"`
		} `json:"tts"`
	}
	if err := cfg.DoJSON(ctx, hreq, req.Credentials.APIKey, true, "model list", &list); err != nil {
		return nil, err
	}
	var voices []sdk.Voice
	for _, m := range list.TTS {
		id, ok := belongs(m.CanonicalName, model)
		if !ok || id == "" {
			continue
		}
		v := sdk.Voice{ID: id, Name: m.Name}
		if v.Name != "" {
			v.Name = strings.ToUpper(v.Name[:1]) + v.Name[1:]
		}
		// The most specific language tag ("en-US" over "en").
		for _, l := range m.Languages {
			if len(l) > len(v.Language) {
				v.Language = l
			}
		}
		if m.Metadata != nil {
			switch {
			case slices.Contains(m.Metadata.Tags, "feminine"):
				v.Gender = "female"
			case slices.Contains(m.Metadata.Tags, "masculine"):
				v.Gender = "male"
			}
		}
		voices = append(voices, v)
	}
	return voices, nil
}

// parseError reads Deepgram's error bodies: {"err_code", "err_msg",
// "request_id"}, the newer {"category", "message", "details",
// "request_id"}, or plain text.
func parseError(body []byte) (code, message string) {
	body = bytes.TrimSpace(body)
	var b struct {
		ErrCode  string `json:"err_code"`
		ErrMsg   string `json:"err_msg"`
		Category string `json:"category"`
		Message  string `json:"message"`
		Details  string `json:"details"`
	}
	if json.Unmarshal(body, &b) == nil {
		if b.ErrCode != "" || b.ErrMsg != "" {
			return b.ErrCode, b.ErrMsg
		}
		msg := b.Message
		if b.Details != "" {
			msg = strings.TrimSpace(msg + " " + b.Details)
		}
		return b.Category, msg
	}
	if len(body) > 0 && body[0] != '<' {
		line, _, _ := strings.Cut(string(body), "\n")
		return "", line
	}
	return "", ""
}

// options are the providerOptions the plugin accepts, named as Deepgram's
// query parameters. The bit rate is not one: it is the request's own
// (SynthesizeRequest.Bitrate).
type options struct {
	// MipOptOut opts the request out of the Model Improvement Program.
	MipOptOut *bool `json:"mip_opt_out"`
	// Tag labels the request in Deepgram's usage reports.
	Tag *string `json:"tag"`
}

// call is a validated request.
type call struct {
	query     url.Values
	mediaType string
	align     int // PCM frame size, 1 otherwise
}

// speakBody is the body of /speak: the text and nothing else.
type speakBody struct {
	Text string `json:"text"`
}

// prepare validates req and builds the query. Failures are the caller's
// (KindInvalidRequest) and cost no upstream call.
func prepare(req *sdk.SynthesizeRequest) (*call, error) {
	model, err := findModel(req.Model)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "deepgram: nothing to say")
	}
	if req.Voice == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "deepgram: a voice is required (e.g. thalia-en for %s)", req.Model)
	}
	if strings.HasPrefix(req.Voice, "aura-") {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "deepgram: voice %q names a model; give the voice alone (e.g. model %s, voice thalia-en)", req.Voice, req.Model)
	}
	e, err := upstream.ChooseEncoding(providerID, &model, req)
	if err != nil {
		return nil, err
	}
	q := url.Values{"model": {req.Model + "-" + req.Voice}}
	c := &call{query: q, align: 1, mediaType: sdk.MediaType(e)}
	w := wire[e.Format]
	q.Set("encoding", w.encoding)
	if w.container != "" {
		q.Set("container", w.container)
	}
	// The rate is a parameter where Deepgram offers more than one (mp3,
	// Opus and AAC have a fixed rate, which it refuses as a parameter);
	// the bit rate where the encoding lists one.
	if e.Format != sdk.FormatMP3 && e.Format != sdk.FormatOpus && e.Format != sdk.FormatAAC {
		q.Set("sample_rate", strconv.Itoa(e.SampleRate))
	}
	if e.Bitrate > 0 {
		q.Set("bit_rate", strconv.Itoa(e.Bitrate*1000))
	}
	if e.Format == sdk.FormatPCM {
		c.align = 2
	}
	if req.Speed != 0 && req.Speed != 1 {
		if !model.Capabilities.Speed {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "deepgram: %s has no speed control; use aura-2", req.Model)
		}
		if req.Speed < minSpeed || req.Speed > maxSpeed {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "deepgram: speed %g is outside %g to %g", req.Speed, minSpeed, maxSpeed)
		}
		q.Set("speed", strconv.FormatFloat(req.Speed, 'f', -1, 64))
	}
	var o options
	if err := upstream.DecodeOptions(providerID, req.Options, &o, "mip_opt_out", "tag"); err != nil {
		return nil, err
	}
	if o.MipOptOut != nil {
		q.Set("mip_opt_out", strconv.FormatBool(*o.MipOptOut))
	}
	if o.Tag != nil {
		q.Set("tag", *o.Tag)
	}
	return c, nil
}

func (cfg *config) speakURL(c *call) string {
	return cfg.BaseURL + speakPath + "?" + c.query.Encode()
}

func (cfg *config) post(ctx context.Context, c *call, text, key string) (*http.Response, error) {
	hreq, err := upstream.NewJSONRequest(ctx, http.MethodPost, cfg.speakURL(c), speakBody{Text: text})
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "deepgram: %v", err)
	}
	// Speaking creates nothing upstream: safe to repeat.
	return cfg.Do(ctx, hreq, key, true)
}

var _ sdk.Planner = (*Provider)(nil)

// Plan implements sdk.Planner: /speak answers the audio itself, streamed
// as it is rendered, so one plan serves clips and streams alike.
func (p *Provider) Plan(_ context.Context, req *sdk.PlanRequest) (*sdk.Plan, error) {
	c, err := prepare(req.Request)
	if err != nil {
		return nil, err
	}
	cfg := p.cfg.Load()
	plan, err := cfg.Plan(http.MethodPost, cfg.speakURL(c), speakBody{Text: req.Request.Text}, req.Request.Credentials.APIKey, nil)
	if err != nil {
		return nil, err
	}
	plan.MediaType, plan.FrameSize = c.mediaType, c.align
	plan.BilledHeaders = map[string]string{headerCharCount: sdk.UnitCharacters}
	return plan, nil
}

// headerCharCount is the header of a /speak answer that counts the
// characters Deepgram processed, which it bills by. Deepgram's pages do
// not list the answer's headers; the API sends it with every answer, a
// stream's before its audio.
const headerCharCount = "dg-char-count"

// billed reads the dg-char-count header, nil without a usable one.
func billed(h http.Header) []sdk.BilledUsage {
	n, err := strconv.ParseInt(h.Get(headerCharCount), 10, 64)
	if err != nil || n <= 0 {
		return nil
	}
	return []sdk.BilledUsage{{Unit: sdk.UnitCharacters, Quantity: n}}
}

// Explain implements sdk.Planner with the mapping Synthesize uses.
func (p *Provider) Explain(_ context.Context, f *sdk.Failure) error {
	return p.cfg.Load().Explain(f)
}

// Synthesize implements sdk.Provider.
func (p *Provider) Synthesize(ctx context.Context, req *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	if req.Timestamps {
		return nil, sdk.Errorf(sdk.KindUnsupported, "deepgram: Aura returns no word timestamps")
	}
	c, err := prepare(req)
	if err != nil {
		return nil, err
	}
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	resp, err := cfg.post(ctx, c, req.Text, req.Credentials.APIKey)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	audio, err := upstream.ReadBody(resp.Body, resp.ContentLength, maxAudioBytes)
	if err != nil {
		return nil, upstream.TransportError(ctx, providerID, err)
	}
	if len(audio)%c.align != 0 {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "deepgram: truncated PCM (odd byte count)"}
	}
	return &sdk.SynthesizeResponse{Audio: audio, MediaType: c.mediaType, Billed: billed(resp.Header)}, nil
}

// Stream implements sdk.Provider: the same request, its body forwarded as
// it arrives. The timeout setting bounds only the wait for the answer to
// start.
func (p *Provider) Stream(ctx context.Context, req *sdk.SynthesizeRequest, send func(sdk.Chunk) error) error {
	c, err := prepare(req)
	if err != nil {
		return err
	}
	cfg := p.cfg.Load()
	resp, err := cfg.post(ctx, c, req.Text, req.Credentials.APIKey)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if b := billed(resp.Header); b != nil { // with the first audio
		next := send
		send = func(ch sdk.Chunk) error {
			if b != nil {
				ch.Billed, b = b, nil
			}
			return next(ch)
		}
	}
	_, err = upstream.Forward(ctx, resp.Body, send, upstream.ForwardOptions{MediaType: c.mediaType, Align: c.align, Provider: providerID})
	return err
}

// Clone implements sdk.Provider: Aura has no voice cloning.
func (p *Provider) Clone(context.Context, *sdk.CloneRequest) (*sdk.CloneResponse, error) {
	return nil, sdk.Errorf(sdk.KindUnsupported, "deepgram: Aura has no voice cloning")
}

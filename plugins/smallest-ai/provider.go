package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

const (
	providerID     = "smallest-ai"
	defaultBaseURL = "https://api.smallest.ai/waves/v1"
	defaultModel   = "lightning_v3.1"
	// nativeRate is the documented default sample_rate (44.1 kHz).
	nativeRate = 44100
	// The documented range of speed.
	minSpeed, maxSpeed = 0.5, 2.0
	maxAudioBytes      = 256 << 20
	// The unified text-to-speech routes: the audio as the body, and as
	// server-sent events. They replaced the model-named routes
	// (/lightning/get_speech, /lightning-large/..., /lightning-v2/...),
	// which Smallest AI retired (they answer 410 MODEL_DEPRECATED).
	ttsPath, livePath = "/tts", "/tts/live"
	// voicesPath lists the catalog (the union of the standard and Pro
	// voices; the API has no other catalog), clonePath creates and lists
	// cloned voices.
	voicesPath, clonePath = "/lightning-v3.1/get_voices", "/voice-cloning"
)

// sampleRates are sample_rate's values.
func sampleRates() []int { return []int{8000, 16000, 24000, 44100} }

// encodings are what POST /tts and /tts/live document (Smallest AI's
// OpenAPI, smallest-inc/smallest-ai-documentation,
// fern/apis/waves/openapi/tts-openapi.yaml at bfc4ef1 of 21 August 2026,
// read 28 November 2026): output_format pcm (default), mp3, wav, ulaw or
// alaw, at sample_rate 8000, 16000, 24000 or 44100 (default). Each
// format's default rate comes first.
//
// Listed: pcm and wav at every rate, mp3 (at Smallest AI's own bitrate:
// no field chooses one) at every rate but 8 kHz, which is MPEG 2.5, an
// unofficial extension many decoders (the sdk's kit among them) do not
// read. Left out: ulaw and alaw, of which the reference does not say
// whether they come raw or in a WAV (it calls every answer "a PCM int16
// WAV file"). /tts/live frames wav per event: Stream asks it for pcm and
// writes the header itself.
func encodings() []sdk.Encoding {
	var out []sdk.Encoding
	for _, f := range []string{sdk.FormatPCM, sdk.FormatWAV, sdk.FormatMP3} {
		out = append(out, sdk.Encoding{Format: f, SampleRate: nativeRate})
		for _, r := range sampleRates() {
			if r != nativeRate && (f != sdk.FormatMP3 || r > 8000) {
				out = append(out, sdk.Encoding{Format: f, SampleRate: r})
			}
		}
	}
	return out
}

// Provider is the Smallest AI plugin. It keeps only deployment settings,
// which Configure swaps atomically; every call reads one snapshot.
type Provider struct {
	cfg atomic.Pointer[upstream.Endpoint]
}

// api is how Smallest AI authenticates and reports errors. It is never
// modified.
var api = &upstream.API{
	Provider:       providerID,
	DefaultBaseURL: defaultBaseURL,
	Authorize:      upstream.Bearer,
	ParseError:     parseError,
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
	// Calls in flight keep their snapshot; only idle connections go.
	p.cfg.Swap(e).Close()
	return nil
}

// model is what the plugin knows about one Lightning model.
type model struct {
	id, name string
	// cloneModel is the model name the voice-cloning endpoint uses for
	// the same pool (it spells them with dashes).
	cloneModel string
}

// knownModels are the models of the reference above (model:
// lightning_v3.1, the default, or lightning_v3.1_pro).
func knownModels() []model {
	return []model{
		{id: "lightning_v3.1", name: "Lightning v3.1", cloneModel: "lightning-v3.1"},
		{id: "lightning_v3.1_pro", name: "Lightning v3.1 Pro", cloneModel: "lightning-v3.1-pro"},
	}
}

func findModel(id string) (model, bool) {
	i := slices.IndexFunc(knownModels(), func(m model) bool { return m.id == id })
	if i < 0 {
		return model{}, false
	}
	return knownModels()[i], true
}

// Describe implements sdk.Provider. Both models stream (server-sent
// events), clone (the voice-cloning endpoint takes either pool) and take
// speed natively. Word timestamps exist only on Smallest AI's WebSocket
// endpoint, which this plugin does not speak. MaxTextChars is left to
// the gateway: the API sets no limit on text (the model cards recommend
// chunks of at most 250 characters for latency, not as a rule).
func (p *Provider) Describe(context.Context) (*sdk.Description, error) {
	d := &sdk.Description{ID: providerID, Name: "Smallest AI", DefaultModel: defaultModel}
	for _, m := range knownModels() {
		d.Models = append(d.Models, sdk.Model{
			ID:           m.id,
			Name:         m.name,
			Capabilities: sdk.Capabilities{Streaming: true, Cloning: true, Speed: true},
			Encodings:    encodings(),
			MinSpeed:     minSpeed,
			MaxSpeed:     maxSpeed,
		})
	}
	d.Models = sdk.WithUnpublished(sdk.WithPrices(d.Models, priceTable), sdk.UnitCharacters, priceDate)
	return d, nil
}

// parseError reads Smallest AI's error bodies, which differ by endpoint:
// {"error": "InvalidRequest", "message": "..."} from text-to-speech,
// {"error": "message", "error_code"?: "..."} from voice cloning, and
// {"status": "error", "error_code": "MODEL_DEPRECATED", "message": "..."}
// from retired routes. The code is error_code, else error when a
// separate message is present (then error is a type name).
func parseError(body []byte) (code, message string) {
	var b struct {
		Error     string `json:"error"`
		ErrorCode string `json:"error_code"`
		Message   string `json:"message"`
	}
	if json.Unmarshal(body, &b) != nil {
		return "", ""
	}
	code = b.ErrorCode
	if b.Message == "" {
		return code, b.Error
	}
	if code == "" {
		code = b.Error
	}
	return code, b.Message
}

// catalogVoice is one entry of GET /lightning-v3.1/get_voices.
type catalogVoice struct {
	VoiceID     string `json:"voiceId"`
	DisplayName string `json:"displayName"`
	Tags        struct {
		Language []string `json:"language"`
		Accent   string   `json:"accent"`
		Gender   string   `json:"gender"`
	} `json:"tags"`
}

// clonedVoice is one entry of GET /voice-cloning.
type clonedVoice struct {
	VoiceID     string `json:"voiceId"`
	DisplayName string `json:"displayName"`
	Language    string `json:"language"`
	Status      string `json:"status"`
}

// Voices implements sdk.Provider: the catalog (GET
// /lightning-v3.1/get_voices, the union of the standard and Pro voices:
// the API does not say which pool a voice belongs to) followed by the
// organization's cloned voices (GET /voice-cloning) that are usable.
func (p *Provider) Voices(ctx context.Context, req *sdk.VoicesRequest) ([]sdk.Voice, error) {
	if req.Model != "" {
		if _, ok := findModel(req.Model); !ok {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "smallest-ai: unknown model %q", req.Model)
		}
	}
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	var catalog struct {
		Voices []catalogVoice `json:"voices"`
	}
	if err := getJSON(ctx, cfg, voicesPath, req.Credentials.APIKey, "voice list", &catalog); err != nil {
		return nil, err
	}
	var clones struct {
		Data []clonedVoice `json:"data"`
	}
	if err := getJSON(ctx, cfg, clonePath, req.Credentials.APIKey, "cloned voice list", &clones); err != nil {
		return nil, err
	}
	voices := make([]sdk.Voice, 0, len(catalog.Voices)+len(clones.Data))
	for _, v := range catalog.Voices {
		lang := ""
		if len(v.Tags.Language) > 0 {
			lang = v.Tags.Language[0]
		}
		voices = append(voices, sdk.Voice{ID: v.VoiceID, Name: cmp.Or(v.DisplayName, v.VoiceID), Language: lang, Gender: v.Tags.Gender})
	}
	for _, v := range clones.Data {
		if v.Status == "failed" {
			continue
		}
		voices = append(voices, sdk.Voice{ID: v.VoiceID, Name: cmp.Or(v.DisplayName, v.VoiceID), Language: v.Language})
	}
	return voices, nil
}

func getJSON(ctx context.Context, cfg *upstream.Endpoint, path, key, what string, out any) error {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.BaseURL+path, nil)
	if err != nil {
		return sdk.Errorf(sdk.KindInternal, "smallest-ai: %v", err)
	}
	return cfg.DoJSON(ctx, hreq, key, true, what, out)
}

// options are the providerOptions the plugin accepts: the documented
// request fields besides those the gateway sets.
type options struct {
	Language                    *string  `json:"language,omitempty"`
	NumberPronunciationLanguage *string  `json:"number_pronunciation_language,omitempty"`
	MathNotation                *bool    `json:"math_notation,omitempty"`
	PronunciationDicts          []string `json:"pronunciation_dicts,omitempty"`
	SessionID                   *string  `json:"session_id,omitempty"`
	RequestID                   *string  `json:"request_id,omitempty"`
}

var optionNames = []string{"language", "number_pronunciation_language", "math_notation", "pronunciation_dicts", "session_id", "request_id"}

// ttsBody is the body of POST /tts and POST /tts/live.
type ttsBody struct {
	Text         string  `json:"text"`
	VoiceID      string  `json:"voice_id"`
	Model        string  `json:"model"`
	SampleRate   int     `json:"sample_rate"`
	Speed        float64 `json:"speed,omitempty"`
	OutputFormat string  `json:"output_format"`
	options
}

// call is a validated request.
type call struct {
	body      ttsBody
	enc       sdk.Encoding // what the caller gets
	mediaType string
}

// prepare validates req and builds the upstream body. Failures are the
// caller's (KindInvalidRequest) and cost no upstream call.
func prepare(req *sdk.SynthesizeRequest) (*call, error) {
	if _, ok := findModel(req.Model); !ok {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "smallest-ai: unknown model %q", req.Model)
	}
	if req.Voice == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "smallest-ai: a voice id is required (e.g. magnus)")
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "smallest-ai: nothing to say")
	}
	m := sdk.Model{Encodings: encodings()}
	format := cmp.Or(req.Format, m.Encodings[0].Format)
	e, ok := m.FindEncoding(format, req.SampleRate, req.Bitrate)
	if !ok {
		names := make([]string, len(m.Encodings))
		for i, e := range m.Encodings {
			names[i] = e.String()
		}
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "smallest-ai: %s does not offer %s; it offers %s",
			req.Model, sdk.Encoding{Format: format, SampleRate: req.SampleRate, Bitrate: req.Bitrate}, strings.Join(names, ", "))
	}
	c := &call{
		enc:       e,
		mediaType: sdk.MediaType(e),
		body:      ttsBody{Text: req.Text, VoiceID: req.Voice, Model: req.Model, SampleRate: e.SampleRate, OutputFormat: e.Format},
	}
	if req.Speed != 0 && req.Speed != 1 {
		if req.Speed < minSpeed || req.Speed > maxSpeed {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "smallest-ai: speed %g is outside %g to %g", req.Speed, minSpeed, maxSpeed)
		}
		c.body.Speed = req.Speed
	}
	if err := upstream.DecodeOptions(providerID, req.Options, &c.body.options, optionNames...); err != nil {
		return nil, err
	}
	if err := c.body.options.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// languages are the language and number_pronunciation_language values of
// the TTS request in Smallest AI's published document
// (internal/fakeupstream/smallestai/apispec).
var languages = []string{"auto", "en", "hi", "mr", "kn", "ta", "bn", "gu", "te", "ml", "pa", "or", "es", "de", "fr", "it", "nl",
	"sv", "pt", "ru", "el", "fi", "no", "pl", "ar", "zh", "id", "ja", "ko", "ms", "tr", "vi"}

// check checks o against the document's enumerations.
func (o *options) check() error {
	c := upstream.NewCheck(providerID)
	c.OneOf("language", o.Language, languages...)
	c.OneOf("number_pronunciation_language", o.NumberPronunciationLanguage, languages...)
	return c.Err()
}

// audioAccept is the Accept header of POST /tts: the reference marks it
// required ("must be audio/wav to receive binary audio", whatever the
// output_format) and warns that without it the answer can be empty.
var audioAccept = map[string]string{"Accept": "audio/wav"}

// post sends a speech request and returns the successful response; any
// failure is an *sdk.Error.
func post(ctx context.Context, cfg *upstream.Endpoint, path, accept string, body ttsBody, key string) (*http.Response, error) {
	hreq, err := upstream.NewJSONRequest(ctx, http.MethodPost, cfg.BaseURL+path, body)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "smallest-ai: %v", err)
	}
	hreq.Header.Set("Accept", accept)
	return cfg.Do(ctx, hreq, key, true)
}

var _ sdk.Planner = (*Provider)(nil)

// Plan implements sdk.Planner for whole clips: the POST /tts request
// Synthesize sends, whose answer is the audio in every format. Streams
// come as server-sent events of base64 audio the plugin decodes, so
// Plan refuses them with KindUnsupported and the gateway calls Stream.
func (p *Provider) Plan(_ context.Context, req *sdk.PlanRequest) (*sdk.Plan, error) {
	c, err := prepare(req.Request)
	if err != nil {
		return nil, err
	}
	if req.Stream {
		return nil, sdk.Errorf(sdk.KindUnsupported, "smallest-ai: streams come as server-sent events the plugin decodes")
	}
	cfg := p.cfg.Load()
	plan, err := cfg.Plan(http.MethodPost, cfg.BaseURL+ttsPath, c.body, req.Request.Credentials.APIKey, audioAccept)
	if err != nil {
		return nil, err
	}
	plan.MediaType = c.mediaType
	if c.enc.Format == sdk.FormatPCM {
		plan.FrameSize = 2 // 16-bit mono
	}
	return plan, nil
}

// Explain implements sdk.Planner with the mapping Synthesize uses.
func (p *Provider) Explain(_ context.Context, f *sdk.Failure) error {
	return p.cfg.Load().Explain(f)
}

// Synthesize implements sdk.Provider with POST /tts.
func (p *Provider) Synthesize(ctx context.Context, req *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	if req.Timestamps {
		return nil, sdk.Errorf(sdk.KindUnsupported, "smallest-ai: word timestamps are only on the WebSocket endpoint, which this plugin does not use")
	}
	c, err := prepare(req)
	if err != nil {
		return nil, err
	}
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	resp, err := post(ctx, cfg, ttsPath, "audio/wav", c.body, req.Credentials.APIKey)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	audio, err := upstream.ReadBody(resp.Body, resp.ContentLength, maxAudioBytes)
	if err != nil {
		return nil, upstream.TransportError(ctx, providerID, err)
	}
	if len(audio) == 0 {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "smallest-ai: the answer holds no audio"}
	}
	if c.enc.Format == sdk.FormatPCM && len(audio)%2 != 0 {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "smallest-ai: truncated PCM (odd byte count)"}
	}
	return &sdk.SynthesizeResponse{Audio: audio, MediaType: c.mediaType}, nil
}

// Stream implements sdk.Provider with POST /tts/live: each audio event's
// base64 audio is decoded and sent as it arrives. A wav stream asks for
// pcm and opens with a WAV header of unknown length (WAV per event would
// put a header in every chunk); mp3 events are whole MP3 frames, sent as
// they are.
func (p *Provider) Stream(ctx context.Context, req *sdk.SynthesizeRequest, send func(sdk.Chunk) error) error {
	c, err := prepare(req)
	if err != nil {
		return err
	}
	if c.enc.Format == sdk.FormatWAV {
		c.body.OutputFormat = sdk.FormatPCM
	}
	cfg := p.cfg.Load()
	resp, err := post(ctx, cfg, livePath, "text/event-stream", c.body, req.Credentials.APIKey)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	mediaType := c.mediaType
	if c.enc.Format == sdk.FormatWAV {
		if err := send(sdk.Chunk{MediaType: mediaType, Data: upstream.WAVHeader(c.enc.SampleRate, upstream.StreamingWAV)}); err != nil {
			return err
		}
		mediaType = ""
	}
	align := 1
	if c.body.OutputFormat == "pcm" {
		align = 2
	}
	var pending []byte // an odd byte held back so PCM chunks stay whole samples
	sent := false
	err = readEvents(ctx, resp.Body, func(audio []byte) error {
		data := append(pending, audio...)
		whole := len(data) - len(data)%align
		if whole == 0 {
			pending = data
			return nil
		}
		chunk := sdk.Chunk{Data: data[:whole]}
		pending = bytes.Clone(data[whole:])
		if !sent {
			chunk.MediaType, sent = mediaType, true
		}
		return send(chunk)
	})
	if err != nil {
		return err
	}
	if len(pending) > 0 {
		return &sdk.Error{Kind: sdk.KindUpstream, Message: "smallest-ai: truncated PCM (odd byte count)"}
	}
	if !sent && mediaType != "" {
		return send(sdk.Chunk{MediaType: mediaType})
	}
	return nil
}

// cloneOptions are the providerOptions Clone accepts.
type cloneOptions struct {
	Language *string `json:"language"`
	Accent   *string `json:"accent"`
	Tags     *string `json:"tags"`
}

// maxCloneBytes is the documented size limit of the cloning sample.
const maxCloneBytes = 5 << 20

// Clone implements sdk.Provider with POST /voice-cloning (multipart:
// displayName, file, and optional description, language, accent, tags,
// model), which takes one audio file of at most 5 MB. The model is the
// request's pool, spelt as the endpoint spells it. It is never retried:
// a lost answer does not mean no voice was made.
func (p *Provider) Clone(ctx context.Context, req *sdk.CloneRequest) (*sdk.CloneResponse, error) {
	m, ok := findModel(cmp.Or(req.Model, defaultModel))
	switch {
	case !ok:
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "smallest-ai: unknown model %q", req.Model)
	case len(req.Samples) == 0:
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "smallest-ai: cloning needs an audio sample")
	case len(req.Samples) > 1:
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "smallest-ai: cloning takes exactly one audio file, got %d", len(req.Samples))
	case len(req.Samples[0].Data) == 0:
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "smallest-ai: the sample is empty")
	}
	var o cloneOptions
	if err := upstream.DecodeOptions(providerID, req.Options, &o, "language", "accent", "tags"); err != nil {
		return nil, err
	}
	filename, mediaType, data := upstream.SampleFile(req.Samples[0], 0)
	if len(data) > maxCloneBytes {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "smallest-ai: the sample is %d bytes; the limit is 5 MB", len(data))
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("displayName", cmp.Or(strings.TrimSpace(req.Name), "voxgate voice"))
	_ = mw.WriteField("model", m.cloneModel)
	if req.Description != "" {
		_ = mw.WriteField("description", req.Description)
	}
	for k, v := range map[string]*string{"language": o.Language, "accent": o.Accent, "tags": o.Tags} {
		if v != nil && *v != "" {
			_ = mw.WriteField(k, *v)
		}
	}
	// WriteSample takes the sample as it is; the converted file is
	// written here so the size check above holds for what is sent.
	_ = upstream.WriteSample(mw, "file", sdk.Sample{Filename: filename, MediaType: mediaType, Data: data}, 0)
	_ = mw.Close()

	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.BaseURL+clonePath, &body)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "smallest-ai: %v", err)
	}
	hreq.Header.Set("Content-Type", mw.FormDataContentType())
	var out struct {
		Data struct {
			VoiceID string `json:"voiceId"`
			Status  string `json:"status"`
		} `json:"data"`
	}
	if err := cfg.DoJSON(ctx, hreq, req.Credentials.APIKey, false, "clone answer", &out); err != nil {
		return nil, err
	}
	switch {
	case out.Data.VoiceID == "":
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "smallest-ai: the clone answer has no voiceId"}
	case out.Data.Status == "failed":
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "smallest-ai: the voice clone failed"}
	}
	return &sdk.CloneResponse{VoiceID: out.Data.VoiceID}, nil
}

package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

const (
	providerID     = "cartesia"
	defaultBaseURL = "https://api.cartesia.ai"
	defaultModel   = "sonic-2"
	// apiVersion is the Cartesia-Version the plugin was written against
	// (the api_version setting overrides it). Cartesia keeps the fields
	// of a version stable, so this pins the wire format.
	apiVersion = "2025-04-16"
	// nativeRate is the rate of the models' first encoding, raw PCM: the
	// plugin's default clip (the API has no default output_format).
	nativeRate = 24000
	// The documented range of generation_config.speed (sonic-3).
	minSpeed, maxSpeed = 0.6, 1.5
	maxAudioBytes      = 256 << 20
	// maxVoicePages bounds GET /voices pagination (100 voices a page).
	maxVoicePages = 20
	// The text-to-speech endpoints: the audio as the body, and as
	// server-sent events.
	bytesPath, ssePath = "/tts/bytes", "/tts/sse"
)

// sampleRates are output_format.sample_rate's values.
func sampleRates() []int { return []int{8000, 16000, 22050, 24000, 44100, 48000} }

// encodings are the output formats of POST /tts/bytes, as the API
// reference's schemas have them (cartesia-ai/cartesia-python,
// src/cartesia/types/{raw,wav,mp3}_output_format_param.py and
// raw_encoding.py at 30f08c7 of 14 August 2026, read 28 November 2026):
// containers raw and wav with encoding pcm_s16le, pcm_f32le, pcm_mulaw or
// pcm_alaw, and mp3 with bit_rate 32000, 64000, 96000, 128000 or 192000,
// each at sample_rate 8000, 16000, 22050, 24000, 44100 or 48000. The
// reference sets no default, so the first entries are the plugin's:
// 16-bit PCM at 24 kHz, mp3 at 44.1 kHz and 128 kbit/s.
//
// Listed: pcm (raw pcm_s16le) and wav (wav pcm_s16le) at every rate; mp3
// at every rate and bitrate MP3 has (MPEG-2 below 32 kHz stops at 160
// kbit/s, so 192 is listed at 44.1 and 48 kHz only) but 8 kHz, which is
// MPEG 2.5, an unofficial extension many decoders (the sdk's kit among
// them) do not read; μ-law and A-law (raw pcm_mulaw and pcm_alaw) at
// 8 kHz, the telephony rate. Left out: 32-bit float PCM, G.711 at other
// rates and G.711 in wav, which no client of the gateway asks for.
func encodings() []sdk.Encoding {
	first := func(format string, rates []int, def int) []sdk.Encoding {
		out := []sdk.Encoding{{Format: format, SampleRate: def}}
		for _, r := range rates {
			if r != def {
				out = append(out, sdk.Encoding{Format: format, SampleRate: r})
			}
		}
		return out
	}
	out := slices.Concat(first(sdk.FormatPCM, sampleRates(), nativeRate), first(sdk.FormatWAV, sampleRates(), nativeRate))
	for _, r := range first(sdk.FormatMP3, sampleRates()[1:], 44100) {
		for _, kbps := range []int{128, 32, 64, 96, 192} {
			if kbps <= 160 || r.SampleRate >= 32000 {
				out = append(out, sdk.Encoding{Format: sdk.FormatMP3, SampleRate: r.SampleRate, Bitrate: kbps})
			}
		}
	}
	return append(out, sdk.Encoding{Format: sdk.FormatULaw, SampleRate: 8000}, sdk.Encoding{Format: sdk.FormatALaw, SampleRate: 8000})
}

// rawEncodings are the raw container's encodings of the sdk formats it
// carries.
var rawEncodings = map[string]string{sdk.FormatPCM: "pcm_s16le", sdk.FormatULaw: "pcm_mulaw", sdk.FormatALaw: "pcm_alaw"}

// Provider is the Cartesia plugin. It keeps only deployment settings,
// which Configure swaps atomically, and its model list, which never
// changes.
type Provider struct {
	cfg atomic.Pointer[config]
	// models is models(), built once: every request looks its model and
	// encoding up in it.
	models []sdk.Model
	// pool holds the TTS WebSockets of StreamInput (websocket.go),
	// shared by contexts.
	pool *upstream.MuxPool
}

// config is one snapshot of the deployment settings.
type config struct {
	*upstream.Endpoint
}

// api is how Cartesia authenticates and reports errors. It is never
// modified.
var api = &upstream.API{
	Provider:       providerID,
	DefaultBaseURL: defaultBaseURL,
	// Bearer is the only scheme Cartesia's published document names
	// (X-API-Key, the older way, still works but is undocumented).
	Authorize:  func(h http.Header, key string) { h.Set("Authorization", "Bearer "+key) },
	ParseError: parseError,
}

// New returns a Provider with the default settings (the public API).
func New() *Provider {
	p := &Provider{models: models(), pool: newPool()}
	e, _ := upstream.NewEndpoint(api, nil)
	e.Header = map[string]string{"Cartesia-Version": apiVersion}
	p.cfg.Store(&config{Endpoint: e})
	return p
}

var _ sdk.Provider = (*Provider)(nil)

// settings are every key the plugin reads (sdk.DecodeSettings): the
// common ones and its own.
type settings struct {
	upstream.CommonSettings
	APIVersion string `setting:"api_version"`
}

// NewSettings implements sdk.SettingsDecoder, so a provider block with a
// key the plugin does not read (a typo) is refused by `voxgate config
// check` and at start.
func (p *Provider) NewSettings() any { return new(settings) }

// Configure implements sdk.Provider: the common settings of
// upstream.ParseSettings plus api_version (the Cartesia-Version header).
// Other keys are refused (NewSettings).
func (p *Provider) Configure(_ context.Context, settings map[string]string) error {
	if problems := sdk.DecodeSettings(settings, p.NewSettings()); len(problems) > 0 {
		return sdk.SettingsErr(api.Provider, problems)
	}
	e, err := upstream.NewEndpoint(api, settings)
	if err != nil {
		return err
	}
	version := strings.TrimSpace(settings["api_version"])
	if version == "" {
		version = apiVersion
	}
	e.Header = map[string]string{"Cartesia-Version": version}
	// Calls in flight keep their snapshot; only idle connections go.
	p.cfg.Swap(&config{Endpoint: e}).Close()
	return nil
}

// nativeSpeed reports whether a model takes generation_config.speed: the
// reference says these controls have no effect before sonic-3, and the
// migration guide that speed and volume are "temporarily disabled on
// sonic-3.5".
func nativeSpeed(model string) bool {
	return model == "sonic-3" || strings.HasPrefix(model, "sonic-3-")
}

// models lists the TTS models of the models pages (docs.cartesia.ai,
// build-with-cartesia/tts-models: latest, older-models and api-changes,
// read 28 November 2026): Sonic 3.5, the newest, and Sonic 3, each a
// base name that routes to its latest stable snapshot, and the older
// Sonic 2 and Sonic Turbo, which Cartesia keeps serving (their first
// snapshots stopped on 1 June 2026). Every model takes every output
// format, streams over SSE and the WebSocket, and gives word timestamps.
// No text limit is documented: the gateway's default applies.
func models() []sdk.Model {
	mk := func(id, name string) sdk.Model {
		m := sdk.Model{
			ID:   id,
			Name: name,
			Capabilities: sdk.Capabilities{
				Streaming: true, Timestamps: true, Cloning: true, Speed: nativeSpeed(id),
				InputStreaming: true,
			},
			Encodings: encodings(),
			// Every Sonic model reads custom pronunciations in the
			// transcript as IPA phonemes between << and >>, separated by
			// '|' (the custom pronunciations guide); the gateway writes
			// them from phoneme rules.
			Phonemes: sdk.PhonemeInput{Kind: sdk.PhonemesCartesia, Alphabets: []string{"ipa"}},
		}
		if nativeSpeed(id) {
			m.MinSpeed, m.MaxSpeed = minSpeed, maxSpeed
			// Sonic 3 performs one bracketed nonverbal tag,
			// "[laughter]"; its other controls are SSML-like tags.
			// The Sonic 3.5 guide names no audio tag.
			m.AudioTags = []string{"laughter"}
		}
		return m
	}
	return []sdk.Model{mk("sonic-2", "Sonic 2"), mk("sonic-turbo", "Sonic Turbo"), mk("sonic-3", "Sonic 3"), mk("sonic-3.5", "Sonic 3.5")}
}

// modelIDPattern is the grammar of a Cartesia TTS model id: sonic and
// lower-case letters, digits, '-' and '.' (sonic-3.5, sonic-turbo, the
// dated snapshots sonic-3-2025-10-27). An id the plugin does not list is
// passed through when it matches, and refused before any call otherwise.
var modelIDPattern = regexp.MustCompile(`^sonic[-a-z0-9.]{0,60}$`)

// passThrough is a model Cartesia may have that the plugin does not list
// (a newer one, or a dated snapshot), sent under the caller's id. It
// claims what every listed model has: every output format, streaming
// over SSE and the WebSocket, word timestamps; not native speed, which
// Sonic 2, Sonic Turbo and Sonic 3.5 lack, nor audio tags.
func passThrough(id string) sdk.Model {
	return sdk.Model{
		ID:           id,
		Name:         "Any other Cartesia Sonic model (passed through)",
		Capabilities: sdk.Capabilities{Streaming: true, Timestamps: true, Cloning: true, InputStreaming: true},
		Encodings:    encodings(),
	}
}

// findModel returns the model of models with id, or a pass-through model
// for an id that can be Cartesia's; any other id is the caller's mistake.
func findModel(models []sdk.Model, id string) (*sdk.Model, error) {
	if i := slices.IndexFunc(models, func(m sdk.Model) bool { return m.ID == id }); i >= 0 {
		return &models[i], nil
	}
	if !modelIDPattern.MatchString(id) {
		return nil, sdk.Errorf(sdk.KindInvalidRequest,
			"cartesia: unknown model %q: a Cartesia model id is sonic followed by lower-case letters, digits, '-' and '.', e.g. sonic-3", id)
	}
	m := passThrough(id)
	return &m, nil
}

// encodingNames lists encodings for an error message.
func encodingNames(es []sdk.Encoding) string {
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.String()
	}
	return strings.Join(names, ", ")
}

// Describe implements sdk.Provider: the listed models and an
// sdk.AnyModel entry for the ids it passes through (passThrough).
func (p *Provider) Describe(context.Context) (*sdk.Description, error) {
	return &sdk.Description{ID: providerID, Name: "Cartesia", DefaultModel: defaultModel, Models: sdk.WithUnpublished(sdk.WithPrices(append(models(), passThrough(sdk.AnyModel)), priceTable), sdk.UnitCharacters, priceDate)}, nil
}

// parseError reads Cartesia's error bodies: the JSON object {error_code,
// title, message} of API versions from 2026-03-01, an older {"error": ...}
// object, or the plain "Title: Message" text older versions send.
func parseError(body []byte) (code, message string) {
	body = bytes.TrimSpace(body)
	var b struct {
		ErrorCode *string `json:"error_code"`
		Title     string  `json:"title"`
		Message   string  `json:"message"`
		Error     string  `json:"error"`
	}
	if json.Unmarshal(body, &b) == nil {
		if b.ErrorCode != nil {
			code = *b.ErrorCode
		}
		switch {
		case b.Message != "":
			return code, b.Message
		case b.Error != "":
			return code, b.Error
		}
		return code, b.Title
	}
	if len(body) > 0 && body[0] != '<' {
		line, _, _ := strings.Cut(string(body), "\n")
		return "", line
	}
	return "", ""
}

// Voices implements sdk.Provider with GET /voices, following pages.
func (p *Provider) Voices(ctx context.Context, req *sdk.VoicesRequest) ([]sdk.Voice, error) {
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	var voices []sdk.Voice
	after := ""
	for range maxVoicePages {
		q := url.Values{"limit": {"100"}}
		if after != "" {
			q.Set("starting_after", after)
		}
		hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.BaseURL+"/voices?"+q.Encode(), nil)
		if err != nil {
			return nil, sdk.Errorf(sdk.KindInternal, "cartesia: %v", err)
		}
		resp, err := cfg.Do(ctx, hreq, req.Credentials.APIKey, true)
		if err != nil {
			return nil, err
		}
		page, more, err := readVoicePage(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, upstream.BodyError(ctx, providerID, "voice list", err)
		}
		for _, v := range page {
			voices = append(voices, sdk.Voice{ID: v.ID, Name: v.Name, Language: v.Language, Gender: gender(v.Gender)})
		}
		if !more || len(page) == 0 {
			return voices, nil
		}
		after = page[len(page)-1].ID
	}
	return voices, nil
}

type voiceEntry struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Language string `json:"language"`
	Gender   string `json:"gender"`
}

// readVoicePage reads a page {"data": [...], "has_more"}, or the bare
// array earlier API versions answer.
func readVoicePage(r io.Reader) ([]voiceEntry, bool, error) {
	raw, err := io.ReadAll(io.LimitReader(r, 16<<20))
	if err != nil {
		return nil, false, err
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		var list []voiceEntry
		return list, false, json.Unmarshal(raw, &list)
	}
	var page struct {
		Data    []voiceEntry `json:"data"`
		HasMore bool         `json:"has_more"`
	}
	err = json.Unmarshal(raw, &page)
	return page.Data, page.HasMore, err
}

// gender maps Cartesia's gender presentation to the gateway's words.
func gender(g string) string {
	switch g {
	case "masculine":
		return "male"
	case "feminine":
		return "female"
	case "gender_neutral":
		return "neutral"
	}
	return g
}

// options are the providerOptions the plugin accepts: the fields of the
// TTS request in Cartesia's published document besides those the request
// sets itself (duration, in older references, is gone from it).
type options struct {
	Language         *string           `json:"language"`
	GenerationConfig *generationConfig `json:"generation_config"`
}

// languages are the document's SupportedLanguage values.
var languages = []string{"en", "fr", "de", "es", "pt", "zh", "ja", "hi", "it", "ko", "nl", "pl", "ru", "sv", "tr", "tl", "bg",
	"ro", "ar", "cs", "el", "fi", "hr", "ms", "sk", "da", "ta", "uk", "hu", "no", "vi", "bn", "th", "he", "ka", "id", "te", "gu",
	"kn", "ml", "mr", "pa"}

// emotions are the document's Emotion values (generation_config.emotion).
var emotions = []string{"neutral", "happy", "excited", "enthusiastic", "elated", "euphoric", "triumphant", "amazed", "surprised",
	"flirtatious", "curious", "content", "peaceful", "serene", "calm", "grateful", "affectionate", "trust", "sympathetic",
	"anticipation", "mysterious", "angry", "mad", "outraged", "frustrated", "agitated", "threatened", "disgusted", "contempt",
	"envious", "sarcastic", "ironic", "sad", "dejected", "melancholic", "disappointed", "hurt", "guilty", "bored", "tired",
	"rejected", "nostalgic", "wistful", "apologetic", "hesitant", "insecure", "confused", "resigned", "anxious", "panicked",
	"alarmed", "scared", "proud", "confident", "distant", "skeptical", "contemplative", "determined"}

// check checks o against Cartesia's published document
// (internal/fakeupstream/cartesia/apispec): the language and emotion
// enumerations, and generation_config's documented ranges ("Valid
// values are between [0.6, 1.5]" for speed, "[0.5, 2.0]" for volume).
func (o *options) check() error {
	c := upstream.NewCheck(providerID)
	c.OneOf("language", o.Language, languages...)
	if g := o.GenerationConfig; g != nil {
		upstream.InRange(c, "generation_config.speed", g.Speed, minSpeed, maxSpeed)
		upstream.InRange(c, "generation_config.volume", g.Volume, 0.5, 2.0)
		c.OneOf("generation_config.emotion", g.Emotion, emotions...)
	}
	return c.Err()
}

type generationConfig struct {
	Speed   *float64 `json:"speed,omitempty"`
	Volume  *float64 `json:"volume,omitempty"`
	Emotion *string  `json:"emotion,omitempty"`
}

type outputFormat struct {
	Container  string `json:"container"`
	Encoding   string `json:"encoding,omitempty"`
	SampleRate int    `json:"sample_rate"`
	BitRate    int    `json:"bit_rate,omitempty"`
}

type voiceSpec struct {
	Mode string `json:"mode"`
	ID   string `json:"id"`
}

// ttsBody is the body of /tts/bytes and /tts/sse.
type ttsBody struct {
	ModelID          string            `json:"model_id"`
	Transcript       string            `json:"transcript"`
	Voice            voiceSpec         `json:"voice"`
	OutputFormat     outputFormat      `json:"output_format"`
	Language         *string           `json:"language,omitempty"`
	GenerationConfig *generationConfig `json:"generation_config,omitempty"`
	AddTimestamps    bool              `json:"add_timestamps,omitempty"`
}

// call is a validated request.
type call struct {
	body      ttsBody
	enc       sdk.Encoding // what the caller gets
	mediaType string
	warnings  []string
}

// raw is the raw container's output format of c's encoding, for /tts/sse
// and the WebSocket, which speak nothing else: wav is asked as its PCM.
// ok is false for mp3.
func (c *call) raw() (outputFormat, bool) {
	f := c.enc.Format
	if f == sdk.FormatWAV {
		f = sdk.FormatPCM
	}
	enc, ok := rawEncodings[f]
	return outputFormat{Container: "raw", Encoding: enc, SampleRate: c.enc.SampleRate}, ok
}

func (p *Provider) prepare(req *sdk.SynthesizeRequest) (*call, error) {
	m, err := findModel(p.models, req.Model)
	if err != nil {
		return nil, err
	}
	if req.Voice == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "cartesia: a voice id is required")
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "cartesia: nothing to say")
	}
	format := cmp.Or(req.Format, m.Encodings[0].Format)
	e, ok := m.FindEncoding(format, req.SampleRate, req.Bitrate)
	if !ok {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "cartesia: %s does not offer %s; it offers %s",
			req.Model, sdk.Encoding{Format: format, SampleRate: req.SampleRate, Bitrate: req.Bitrate}, encodingNames(m.Encodings))
	}
	c := &call{
		enc:       e,
		mediaType: sdk.MediaType(e),
		body:      ttsBody{ModelID: req.Model, Transcript: req.Text, Voice: voiceSpec{Mode: "id", ID: req.Voice}},
	}
	switch e.Format {
	case sdk.FormatWAV:
		c.body.OutputFormat = outputFormat{Container: "wav", Encoding: "pcm_s16le", SampleRate: e.SampleRate}
	case sdk.FormatMP3:
		c.body.OutputFormat = outputFormat{Container: "mp3", SampleRate: e.SampleRate, BitRate: e.Bitrate * 1000}
	default:
		c.body.OutputFormat, _ = c.raw()
	}
	var o options
	if err := upstream.DecodeOptions(providerID, req.Options, &o, "language", "generation_config"); err != nil {
		return nil, err
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	c.body.Language, c.body.GenerationConfig = o.Language, o.GenerationConfig
	if req.Speed != 0 && req.Speed != 1 {
		if !m.Capabilities.Speed {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "cartesia: %s has no speed control; use sonic-3", req.Model)
		}
		speed := math.Min(math.Max(req.Speed, minSpeed), maxSpeed)
		if speed != req.Speed {
			c.warnings = append(c.warnings, fmt.Sprintf("speed %g is outside Cartesia's range %g to %g; used %g", req.Speed, minSpeed, maxSpeed, speed))
		}
		if c.body.GenerationConfig == nil {
			c.body.GenerationConfig = &generationConfig{}
		}
		c.body.GenerationConfig.Speed = &speed
	}
	return c, nil
}

func (cfg *config) post(ctx context.Context, path string, body ttsBody, key string) (*http.Response, error) {
	hreq, err := upstream.NewJSONRequest(ctx, http.MethodPost, cfg.BaseURL+path, body)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "cartesia: %v", err)
	}
	return cfg.Do(ctx, hreq, key, true)
}

var _ sdk.Planner = (*Provider)(nil)

// Plan implements sdk.Planner for whole clips: the /tts/bytes request
// Synthesize sends, whose answer is the audio itself in every format. It
// refuses, with KindUnsupported so that the gateway calls Synthesize or
// Stream instead: streams (raw audio streams as server-sent events of
// base64 audio, which the plugin decodes; mp3 streams stay with them so
// that all streams take one path), word timestamps (the same events), and
// a clip whose speed was clamped (the response carries a warning a plan
// cannot).
func (p *Provider) Plan(_ context.Context, req *sdk.PlanRequest) (*sdk.Plan, error) {
	c, err := p.prepare(req.Request)
	if err != nil {
		return nil, err
	}
	switch {
	case req.Stream:
		return nil, sdk.Errorf(sdk.KindUnsupported, "cartesia: streams are left to the plugin: raw audio comes as server-sent events")
	case req.Request.Timestamps:
		return nil, sdk.Errorf(sdk.KindUnsupported, "cartesia: word timestamps come as server-sent events the plugin reads")
	case len(c.warnings) > 0:
		return nil, sdk.Errorf(sdk.KindUnsupported, "cartesia: the clip comes with warnings a plan cannot carry")
	}
	cfg := p.cfg.Load()
	plan, err := cfg.Plan(http.MethodPost, cfg.BaseURL+bytesPath, c.body, req.Request.Credentials.APIKey, nil)
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

// Synthesize implements sdk.Provider: /tts/bytes for a plain clip, or
// /tts/sse with add_timestamps when word timings are asked for (the bytes
// endpoint carries none). The SSE endpoint speaks the raw container only,
// so timestamps come with pcm, wav (the PCM behind a header the plugin
// adds), ulaw or alaw, not mp3.
func (p *Provider) Synthesize(ctx context.Context, req *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	c, err := p.prepare(req)
	if err != nil {
		return nil, err
	}
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	out := &sdk.SynthesizeResponse{MediaType: c.mediaType, Warnings: c.warnings}
	if !req.Timestamps {
		resp, err := cfg.post(ctx, bytesPath, c.body, req.Credentials.APIKey)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if out.Audio, err = io.ReadAll(io.LimitReader(resp.Body, maxAudioBytes)); err != nil {
			return nil, upstream.TransportError(ctx, providerID, err)
		}
		return out, nil
	}
	raw, ok := c.raw()
	if !ok {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "cartesia: word timestamps come with pcm, wav, ulaw or alaw, not mp3")
	}
	c.body.OutputFormat = raw
	c.body.AddTimestamps = true
	resp, err := cfg.post(ctx, ssePath, c.body, req.Credentials.APIKey)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var pcm bytes.Buffer
	err = readEvents(ctx, resp.Body, func(ev *event) error {
		switch ev.Type {
		case "chunk":
			return decodeChunk(ev.Data, &pcm)
		case "timestamps":
			if wt := ev.WordTimestamps; wt != nil {
				for i := range min(len(wt.Words), len(wt.Start), len(wt.End)) {
					out.Timestamps = append(out.Timestamps, sdk.WordTimestamp{Text: wt.Words[i], Start: wt.Start[i], End: wt.End[i]})
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out.Audio = pcm.Bytes()
	if len(out.Audio)%frameSize(raw) != 0 {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "cartesia: truncated PCM (odd byte count)"}
	}
	if c.enc.Format == sdk.FormatWAV {
		out.Audio = append(upstream.WAVHeader(c.enc.SampleRate, uint32(len(out.Audio))), out.Audio...)
	}
	return out, nil
}

// frameSize is the size of one sample of the raw output format f.
func frameSize(f outputFormat) int {
	if f.Encoding == "pcm_s16le" {
		return 2
	}
	return 1 // G.711
}

// Stream implements sdk.Provider: pcm, wav, ulaw and alaw from /tts/sse
// (raw audio), each chunk event's audio sent as it arrives (a WAV stream
// opens with a header of unknown length); mp3 from /tts/bytes, which
// streams its body.
func (p *Provider) Stream(ctx context.Context, req *sdk.SynthesizeRequest, send func(sdk.Chunk) error) error {
	c, err := p.prepare(req)
	if err != nil {
		return err
	}
	cfg := p.cfg.Load()
	raw, ok := c.raw()
	if !ok {
		resp, err := cfg.post(ctx, bytesPath, c.body, req.Credentials.APIKey)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = upstream.Forward(ctx, resp.Body, send, upstream.ForwardOptions{MediaType: c.mediaType, Provider: providerID})
		return err
	}
	c.body.OutputFormat = raw
	resp, err := cfg.post(ctx, ssePath, c.body, req.Credentials.APIKey)
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
	var pending []byte // an odd byte held back so chunks stay whole samples
	frame := frameSize(raw)
	sent := false
	err = readEvents(ctx, resp.Body, func(ev *event) error {
		if ev.Type != "chunk" {
			return nil
		}
		buf := bytes.NewBuffer(pending)
		if err := decodeChunk(ev.Data, buf); err != nil {
			return err
		}
		data := buf.Bytes()
		whole := len(data) - len(data)%frame
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
		return &sdk.Error{Kind: sdk.KindUpstream, Message: "cartesia: truncated PCM (odd byte count)"}
	}
	if !sent && mediaType != "" {
		return send(sdk.Chunk{MediaType: mediaType})
	}
	return nil
}

// decodeChunk appends the audio of a chunk event to dst.
func decodeChunk(data string, dst *bytes.Buffer) error {
	n := base64.StdEncoding.DecodedLen(len(data))
	dst.Grow(n)
	buf := dst.AvailableBuffer()[:n]
	m, err := base64.StdEncoding.Decode(buf, []byte(data))
	if err != nil {
		return &sdk.Error{Kind: sdk.KindUpstream, Message: "cartesia: a chunk event's data is not base64"}
	}
	dst.Write(buf[:m])
	return nil
}

// cloneOptions are the providerOptions Clone accepts: the fields of
// POST /voices/clone in Cartesia's published document besides the clip,
// name and description (the older mode and enhance are gone from it).
type cloneOptions struct {
	Language    *string `json:"language"`
	BaseVoiceID *string `json:"base_voice_id"`
}

// Clone implements sdk.Provider with POST /voices/clone, which takes one
// clip. It is never retried: a lost answer does not mean no voice was
// made. The voice's language comes from the language option, "en" if
// absent (the endpoint requires one).
func (p *Provider) Clone(ctx context.Context, req *sdk.CloneRequest) (*sdk.CloneResponse, error) {
	switch {
	case len(req.Samples) == 0:
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "cartesia: cloning needs an audio sample")
	case len(req.Samples) > 1:
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "cartesia: cloning takes exactly one clip, got %d", len(req.Samples))
	case len(req.Samples[0].Data) == 0:
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "cartesia: the sample is empty")
	}
	var o cloneOptions
	if err := upstream.DecodeOptions(providerID, req.Options, &o, "language", "base_voice_id"); err != nil {
		return nil, err
	}
	name := strings.TrimSpace(req.Name)
	if name == "" {
		name = "voxgate voice"
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("name", name)
	_ = mw.WriteField("language", cmp.Or(ptrValue(o.Language), "en"))
	if req.Description != "" {
		_ = mw.WriteField("description", req.Description)
	}
	if o.BaseVoiceID != nil {
		_ = mw.WriteField("base_voice_id", *o.BaseVoiceID)
	}
	_ = upstream.WriteSample(mw, "clip", req.Samples[0], 0) // writes to memory
	_ = mw.Close()

	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.BaseURL+"/voices/clone", &body)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "cartesia: %v", err)
	}
	hreq.Header.Set("Content-Type", mw.FormDataContentType())
	var out struct {
		ID string `json:"id"`
	}
	if err := cfg.DoJSON(ctx, hreq, req.Credentials.APIKey, false, "clone answer", &out); err != nil {
		return nil, err
	}
	if out.ID == "" {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "cartesia: the clone answer has no id"}
	}
	return &sdk.CloneResponse{VoiceID: out.ID}, nil
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

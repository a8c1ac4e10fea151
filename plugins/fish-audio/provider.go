package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

const (
	providerID     = "fish-audio"
	defaultBaseURL = "https://api.fish.audio"
	// defaultModel is the model the API itself falls back to when the
	// model header is absent, and the one its docs recommend.
	defaultModel = "s2.1-pro"
	// nativeRate is the documented default rate of every format but opus,
	// and the rate of the models' first encoding (pcm; the API's own
	// default format is mp3).
	nativeRate = 44100
	// The documented range of prosody.speed.
	minSpeed, maxSpeed = 0.5, 2
	// maxAudioBytes bounds a whole clip read into memory.
	maxAudioBytes = 256 << 20
	// maxVoicePages bounds the pages of the account's own models read by
	// Voices (100 a page).
	maxVoicePages = 20
	// defaultLibraryVoices is how many public library voices Voices lists
	// after the account's own models when library_voices is not set: one
	// page, the most the list endpoint gives at once.
	defaultLibraryVoices = 100
)

// Paths of the API.
const (
	ttsPath        = "/v1/tts"
	timestampsPath = "/v1/tts/stream/with-timestamp"
	modelPath      = "/model"
)

// pcmRates are the documented sample rates of wav and pcm; mp3Rates those
// of mp3.
func pcmRates() []int { return []int{8000, 16000, 24000, 32000, 44100} }
func mp3Rates() []int { return []int{32000, 44100} }

// encodings are the audio formats POST /v1/tts documents (docs.fish.audio,
// API reference "Text to Speech", and the official Python SDK,
// fishaudio/fish-audio-python src/fishaudio/types/tts.py at 999c59d of
// 10 March 2026, both read 28 November 2026): wav and pcm (16-bit mono)
// at 8, 16, 24, 32 or 44.1 kHz (default 44.1), mp3 at 32 or 44.1 kHz
// (default 44.1) and mp3_bitrate 64, 128 (default) or 192, and opus at
// 48 kHz and 24, 32 (default), 48 or 64 kbit/s (-1000, "automatic", is the
// provider's choice and left out). opus_bitrate is in bit/s (24000, ...),
// mp3_bitrate in kbit/s: the published OpenAPI document
// (internal/fakeupstream/fishaudio/apispec) enumerates both. Each format's default comes
// first; pcm is the plugin's default clip. The reference does not name
// opus's container; Fish Audio sends Ogg Opus, the file players read.
// The with-timestamp endpoint takes the same body.
func encodings() []sdk.Encoding {
	var out []sdk.Encoding
	for _, f := range []string{sdk.FormatPCM, sdk.FormatWAV} {
		out = append(out, sdk.Encoding{Format: f, SampleRate: nativeRate})
		for _, r := range pcmRates() {
			if r != nativeRate {
				out = append(out, sdk.Encoding{Format: f, SampleRate: r})
			}
		}
	}
	for _, r := range []int{44100, 32000} {
		for _, kbps := range []int{128, 64, 192} {
			out = append(out, sdk.Encoding{Format: sdk.FormatMP3, SampleRate: r, Bitrate: kbps})
		}
	}
	for _, kbps := range []int{32, 24, 48, 64} {
		out = append(out, sdk.Encoding{Format: sdk.FormatOpus, SampleRate: 48000, Bitrate: kbps})
	}
	return out
}

// Provider is the Fish Audio plugin. It keeps only deployment settings,
// which Configure swaps atomically; every call reads one consistent
// snapshot.
type Provider struct {
	cfg atomic.Pointer[config]
	// models is models(), built once and never changed: every request
	// looks its model and encoding up in it.
	models []sdk.Model
}

// config is one snapshot of the deployment settings.
type config struct {
	*upstream.Endpoint
	// libraryVoices is how many public library voices Voices adds.
	libraryVoices int
}

// api is how Fish Audio authenticates and reports errors. It is never
// modified.
var api = &upstream.API{
	Provider:       providerID,
	DefaultBaseURL: defaultBaseURL,
	Authorize:      upstream.Bearer,
	ParseError:     parseError,
	Classify: func(e *sdk.Error) {
		// 402 is a spent balance: not the request's fault, and no retry
		// helps until someone tops the account up.
		if e.UpstreamStatus == http.StatusPaymentRequired {
			e.Kind, e.Retryable = sdk.KindUpstream, false
		}
	},
}

// New returns a Provider with the default settings (the public API).
func New() *Provider {
	p := &Provider{models: models()}
	e, _ := upstream.NewEndpoint(api, nil)
	p.cfg.Store(&config{Endpoint: e, libraryVoices: defaultLibraryVoices})
	return p
}

var _ sdk.Provider = (*Provider)(nil)

// settings are every key the plugin reads (sdk.DecodeSettings): the
// common ones and its own.
type settings struct {
	upstream.CommonSettings
	LibraryVoices *int `setting:"library_voices"`
}

// CheckSettings implements sdk.SettingsChecker: the common settings'
// checks and the plugin's own.
func (s *settings) CheckSettings() []sdk.SettingProblem {
	problems := s.CommonSettings.CheckSettings()
	if s.LibraryVoices != nil && (*s.LibraryVoices < 0 || *s.LibraryVoices > 100) {
		problems = append(problems, sdk.SettingProblem{Path: "library_voices", Message: fmt.Sprintf("want a number from 0 to 100, got %d", *s.LibraryVoices)})
	}
	return problems
}

// NewSettings implements sdk.SettingsDecoder, so a provider block with a
// key the plugin does not read (a typo) is refused by `voxgate config
// check` and at start.
func (p *Provider) NewSettings() any { return new(settings) }

// Configure implements sdk.Provider: the common settings of
// upstream.ParseSettings plus library_voices (0 to 100: how many public
// library voices the voice list adds after the account's own models).
// Other keys are refused (NewSettings).
func (p *Provider) Configure(_ context.Context, settings map[string]string) error {
	if problems := sdk.DecodeSettings(settings, p.NewSettings()); len(problems) > 0 {
		return sdk.SettingsErr(api.Provider, problems)
	}
	e, err := upstream.NewEndpoint(api, settings)
	if err != nil {
		return err
	}
	library := defaultLibraryVoices
	if v := strings.TrimSpace(settings["library_voices"]); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 100 {
			return sdk.Errorf(sdk.KindInvalidRequest, "fish-audio settings: library_voices %q: want a number from 0 to 100", v)
		}
		library = n
	}
	// Calls in flight keep their snapshot; only idle connections go.
	p.cfg.Swap(&config{Endpoint: e, libraryVoices: library}).Close()
	return nil
}

// models lists the TTS models of the text-to-speech guide
// (docs.fish.audio, "Text to Speech", read 28 November 2026): s2.1-pro
// (recommended), s2.1-pro-free (the same model without latency
// guarantees), s2-pro and s1, chosen by the model header. All take the
// same body: every format, prosody.speed, and the with-timestamp
// endpoint.
func models() []sdk.Model {
	mk := func(id, name string) sdk.Model {
		return sdk.Model{
			ID:   id,
			Name: name,
			Capabilities: sdk.Capabilities{
				Streaming: true, Timestamps: true, Cloning: true, Speed: true,
			},
			Encodings: encodings(),
			// No text limit is documented: the gateway's default applies.
			MinSpeed: minSpeed,
			MaxSpeed: maxSpeed,
		}
	}
	return []sdk.Model{
		mk("s2.1-pro", "Fish Audio S2.1-Pro"),
		mk("s2.1-pro-free", "Fish Audio S2.1-Pro Free"),
		mk("s2-pro", "Fish Audio S2-Pro"),
		mk("s1", "Fish Audio S1"),
	}
}

// Describe implements sdk.Provider.
func (p *Provider) Describe(context.Context) (*sdk.Description, error) {
	return &sdk.Description{ID: providerID, Name: "Fish Audio", DefaultModel: defaultModel, Models: sdk.WithUnpublished(sdk.WithPrices(models(), priceTable), sdk.UnitCharacters, priceDate)}, nil
}

// parseError reads Fish Audio's error bodies: {"status", "message",
// "reason"}, the validation array [{"loc", "type", "msg", ...}] of a 422
// (bare, or as {"detail": [...]}), or a plain-text parse error.
func parseError(body []byte) (code, message string) {
	body = bytes.TrimSpace(body)
	var obj struct {
		Message string          `json:"message"`
		Reason  *string         `json:"reason"`
		Detail  json.RawMessage `json:"detail"`
	}
	var list []validationItem
	switch {
	case json.Unmarshal(body, &list) == nil && len(list) > 0:
		return "validation_error", validationMessage(list)
	case json.Unmarshal(body, &obj) == nil:
		if json.Unmarshal(obj.Detail, &list) == nil && len(list) > 0 {
			return "validation_error", validationMessage(list)
		}
		if obj.Reason != nil {
			code = *obj.Reason
		}
		return code, obj.Message
	case len(body) > 0 && body[0] != '<' && body[0] != '{' && body[0] != '[':
		line, _, _ := strings.Cut(string(body), "\n")
		return "", line
	}
	return "", ""
}

// validationItem is one entry of a 422 answer.
type validationItem struct {
	Loc []any  `json:"loc"`
	Msg string `json:"msg"`
}

// validationMessage joins the first few validation entries as
// "field.path: message".
func validationMessage(list []validationItem) string {
	var parts []string
	for _, item := range list[:min(len(list), 3)] {
		loc := make([]string, len(item.Loc))
		for i, l := range item.Loc {
			loc[i] = fmt.Sprint(l)
		}
		if len(loc) == 0 {
			parts = append(parts, item.Msg)
			continue
		}
		parts = append(parts, strings.Join(loc, ".")+": "+item.Msg)
	}
	return strings.Join(parts, "; ")
}

// modelEntry is a voice model as GET /model lists it.
type modelEntry struct {
	ID        string   `json:"_id"`
	Type      string   `json:"type"`
	Title     string   `json:"title"`
	Tags      []string `json:"tags"`
	Languages []string `json:"languages"`
	State     string   `json:"state"`
}

// modelPage is an answer of GET /model.
type modelPage struct {
	Total   int          `json:"total"`
	Items   []modelEntry `json:"items"`
	HasMore *bool        `json:"has_more"`
}

// Voices implements sdk.Provider with GET /model: the account's own voice
// models (self=true, every page), then the first libraryVoices models of
// the public library by score. Fish Audio's voices are models of this
// list; only text-to-speech ones are listed.
func (p *Provider) Voices(ctx context.Context, req *sdk.VoicesRequest) ([]sdk.Voice, error) {
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	var voices []sdk.Voice
	seen := map[string]bool{}
	add := func(items []modelEntry) {
		for _, m := range items {
			if m.ID == "" || seen[m.ID] || (m.Type != "" && m.Type != "tts") {
				continue
			}
			seen[m.ID] = true
			voices = append(voices, sdk.Voice{ID: m.ID, Name: m.Title, Language: first(m.Languages), Gender: gender(m.Tags)})
		}
	}
	for page := 1; page <= maxVoicePages; page++ {
		q := url.Values{"self": {"true"}, "page_size": {"100"}, "page_number": {strconv.Itoa(page)}, "sort_by": {"created_at"}}
		list, err := cfg.listModels(ctx, q, req.Credentials.APIKey)
		if err != nil {
			return nil, err
		}
		add(list.Items)
		more := page*100 < list.Total
		if list.HasMore != nil {
			more = *list.HasMore
		}
		if !more || len(list.Items) == 0 {
			break
		}
	}
	if cfg.libraryVoices > 0 {
		q := url.Values{"page_size": {strconv.Itoa(cfg.libraryVoices)}, "page_number": {"1"}, "sort_by": {"score"}}
		list, err := cfg.listModels(ctx, q, req.Credentials.APIKey)
		if err != nil {
			return nil, err
		}
		add(list.Items)
	}
	return voices, nil
}

func (cfg *config) listModels(ctx context.Context, q url.Values, key string) (*modelPage, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.BaseURL+modelPath+"?"+q.Encode(), nil)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "fish-audio: %v", err)
	}
	var page modelPage
	if err := cfg.DoJSON(ctx, hreq, key, true, "voice model list", &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// gender reads a voice's gender from its tags, where the library keeps it.
func gender(tags []string) string {
	for _, t := range tags {
		switch strings.ToLower(t) {
		case "male", "female":
			return strings.ToLower(t)
		}
	}
	return ""
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// prosody is the documented prosody object.
type prosody struct {
	Speed             *float64 `json:"speed,omitempty"`
	Volume            *float64 `json:"volume,omitempty"`
	NormalizeLoudness *bool    `json:"normalize_loudness,omitempty"`
}

// options are the providerOptions the plugin accepts: the documented
// TTSRequest fields that are not the gateway's own (text, voice, format,
// sample rate, opus_bitrate) and that JSON can carry (references need
// MessagePack). mp3_bitrate stays for callers who set it before requests
// carried a bitrate.
type options struct {
	Temperature               *float64 `json:"temperature,omitempty"`
	TopP                      *float64 `json:"top_p,omitempty"`
	Prosody                   *prosody `json:"prosody,omitempty"`
	ChunkLength               *int     `json:"chunk_length,omitempty"`
	MinChunkLength            *int     `json:"min_chunk_length,omitempty"`
	Normalize                 *bool    `json:"normalize,omitempty"`
	MP3Bitrate                *int     `json:"mp3_bitrate,omitempty"`
	Latency                   *string  `json:"latency,omitempty"`
	MaxNewTokens              *int     `json:"max_new_tokens,omitempty"`
	RepetitionPenalty         *float64 `json:"repetition_penalty,omitempty"`
	ConditionOnPreviousChunks *bool    `json:"condition_on_previous_chunks,omitempty"`
	EarlyStopThreshold        *float64 `json:"early_stop_threshold,omitempty"`
	Features                  []string `json:"features,omitempty"`
}

// acceptedOptions names the options fields, for error messages.
func acceptedOptions() []string {
	return []string{"temperature", "top_p", "prosody", "chunk_length", "min_chunk_length", "normalize", "mp3_bitrate",
		"latency", "max_new_tokens", "repetition_penalty", "condition_on_previous_chunks", "early_stop_threshold", "features"}
}

// ttsBody is the TTSRequest body of /v1/tts and
// /v1/tts/stream/with-timestamp.
type ttsBody struct {
	Text        string `json:"text"`
	ReferenceID string `json:"reference_id"`
	Format      string `json:"format"`
	SampleRate  int    `json:"sample_rate,omitempty"`
	OpusBitrate *int   `json:"opus_bitrate,omitempty"`
	options
}

// call is a validated speech request.
type call struct {
	model     string
	body      ttsBody
	enc       sdk.Encoding // what the caller gets
	mediaType string
}

// frame is the size of one sample frame of c's audio: chunks of a PCM
// stream are cut at whole samples.
func (c *call) frame() int {
	if c.enc.Format == sdk.FormatPCM {
		return 2
	}
	return 1
}

// findModel returns the model of models with id.
func findModel(models []sdk.Model, id string) (*sdk.Model, bool) {
	i := slices.IndexFunc(models, func(m sdk.Model) bool { return m.ID == id })
	if i < 0 {
		return nil, false
	}
	return &models[i], true
}

// encodingNames lists encodings for an error message.
func encodingNames(es []sdk.Encoding) string {
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.String()
	}
	return strings.Join(names, ", ")
}

// prepare validates req and builds the upstream body. Failures are the
// caller's (KindInvalidRequest) and cost no upstream call.
func (p *Provider) prepare(req *sdk.SynthesizeRequest) (*call, error) {
	m, ok := findModel(p.models, req.Model)
	if !ok {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "fish-audio: unknown model %q", req.Model)
	}
	if req.Voice == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "fish-audio: a voice (a voice model id, the reference_id) is required")
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "fish-audio: nothing to say")
	}
	c := &call{model: req.Model}
	c.body = ttsBody{Text: req.Text, ReferenceID: req.Voice}
	if err := upstream.DecodeOptions(providerID, req.Options, &c.body.options, acceptedOptions()...); err != nil {
		return nil, err
	}
	if err := c.body.options.check(); err != nil {
		return nil, err
	}
	format, bitrate := cmp.Or(req.Format, m.Encodings[0].Format), req.Bitrate
	// mp3_bitrate is the older way to ask for a bitrate: it stands for
	// the request's own when that has none.
	if o := c.body.MP3Bitrate; o != nil {
		switch {
		case format != sdk.FormatMP3:
			return nil, sdk.InvalidOption("mp3_bitrate", "fish-audio: mp3_bitrate applies to mp3 only")
		case bitrate != 0 && bitrate != *o:
			return nil, sdk.InvalidOption("mp3_bitrate", "fish-audio: mp3_bitrate %d contradicts the bitrate asked, %d", *o, bitrate)
		}
		bitrate = *o
	}
	e, ok := m.FindEncoding(format, req.SampleRate, bitrate)
	if !ok {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "fish-audio: %s does not offer %s; it offers %s",
			req.Model, sdk.Encoding{Format: format, SampleRate: req.SampleRate, Bitrate: bitrate}, encodingNames(m.Encodings))
	}
	c.enc, c.mediaType = e, sdk.MediaType(e)
	// The rate (and bitrate) are always sent, so that the answer never
	// depends on a server-side default.
	c.body.Format, c.body.SampleRate = e.Format, e.SampleRate
	switch e.Format {
	case sdk.FormatMP3:
		c.body.MP3Bitrate = &e.Bitrate
	case sdk.FormatOpus:
		bps := e.Bitrate * 1000
		c.body.OpusBitrate = &bps
	}
	if req.Speed != 0 && req.Speed != 1 {
		if req.Speed < minSpeed || req.Speed > maxSpeed {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "fish-audio: speed %g is outside %g to %g", req.Speed, float64(minSpeed), float64(maxSpeed))
		}
		speed := req.Speed
		// A copy: the options' prosody is the caller's.
		pr := prosody{}
		if c.body.Prosody != nil {
			pr = *c.body.Prosody
		}
		pr.Speed = &speed
		c.body.Prosody = &pr
	}
	return c, nil
}

// header is what a speech request carries besides auth and Content-Type:
// the model header selects the model.
func (c *call) header() map[string]string { return map[string]string{"model": c.model} }

// post sends body to path and returns the successful response; any
// failure is an *sdk.Error.
func (cfg *config) post(ctx context.Context, path string, c *call, body ttsBody, key string) (*http.Response, error) {
	hreq, err := upstream.NewJSONRequest(ctx, http.MethodPost, cfg.BaseURL+path, body)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "fish-audio: %v", err)
	}
	for k, v := range c.header() {
		hreq.Header.Set(k, v)
	}
	return cfg.Do(ctx, hreq, key, true)
}

var _ sdk.Planner = (*Provider)(nil)

// Plan implements sdk.Planner: /v1/tts answers the audio itself, streamed
// as it renders, in every format alike, so whole clips and streams are
// the request Synthesize and Stream send. Word timestamps come as
// server-sent events the plugin reads, and the gateway never plans them.
func (p *Provider) Plan(_ context.Context, req *sdk.PlanRequest) (*sdk.Plan, error) {
	if req.Request.Timestamps {
		return nil, sdk.Errorf(sdk.KindUnsupported, "fish-audio: word timestamps come as server-sent events the plugin reads")
	}
	c, err := p.prepare(req.Request)
	if err != nil {
		return nil, err
	}
	cfg := p.cfg.Load()
	plan, err := cfg.Plan(http.MethodPost, cfg.BaseURL+ttsPath, c.body, req.Request.Credentials.APIKey, c.header())
	if err != nil {
		return nil, err
	}
	plan.MediaType, plan.FrameSize = c.mediaType, c.frame()
	return plan, nil
}

// Explain implements sdk.Planner with the mapping Synthesize uses.
func (p *Provider) Explain(_ context.Context, f *sdk.Failure) error {
	return p.cfg.Load().Explain(f)
}

// Synthesize implements sdk.Provider: /v1/tts for a plain clip; with
// Timestamps, /v1/tts/stream/with-timestamp, whose events carry the audio
// and the alignment (pcm is asked for a wav clip there, and the header
// written here, so that the clip's sizes are exact).
func (p *Provider) Synthesize(ctx context.Context, req *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	c, err := p.prepare(req)
	if err != nil {
		return nil, err
	}
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	out := &sdk.SynthesizeResponse{MediaType: c.mediaType}
	if !req.Timestamps {
		resp, err := cfg.post(ctx, ttsPath, c, c.body, req.Credentials.APIKey)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if out.Audio, err = upstream.ReadBody(resp.Body, resp.ContentLength, maxAudioBytes); err != nil {
			return nil, upstream.TransportError(ctx, providerID, err)
		}
		if len(out.Audio)%c.frame() != 0 {
			return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "fish-audio: truncated PCM (odd byte count)"}
		}
		return out, nil
	}
	body := c.body
	if c.enc.Format == sdk.FormatWAV {
		body.Format = sdk.FormatPCM
	}
	resp, err := cfg.post(ctx, timestampsPath, c, body, req.Credentials.APIKey)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	audio, segments, err := readTimestampEvents(ctx, resp.Body)
	if err != nil {
		return nil, err
	}
	if body.Format == sdk.FormatPCM {
		if len(audio)%2 != 0 {
			return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "fish-audio: truncated PCM (odd byte count)"}
		}
		if c.enc.Format == sdk.FormatWAV {
			audio = append(upstream.WAVHeader(c.enc.SampleRate, uint32(len(audio))), audio...)
		}
	}
	out.Audio = audio
	out.Timestamps = matchWords(req.Text, segments)
	return out, nil
}

// Stream implements sdk.Provider: /v1/tts, whose body is forwarded as it
// arrives. The timeout setting bounds only the wait for the answer to
// start; the stream runs as long as the caller's context allows.
func (p *Provider) Stream(ctx context.Context, req *sdk.SynthesizeRequest, send func(sdk.Chunk) error) error {
	c, err := p.prepare(req)
	if err != nil {
		return err
	}
	cfg := p.cfg.Load()
	resp, err := cfg.post(ctx, ttsPath, c, c.body, req.Credentials.APIKey)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = upstream.Forward(ctx, resp.Body, send, upstream.ForwardOptions{MediaType: c.mediaType, Align: c.frame(), Provider: providerID})
	return err
}

// check checks o against the ranges Fish Audio's published OpenAPI
// document gives POST /v1/tts (internal/fakeupstream/fishaudio/apispec).
func (o *options) check() error {
	c := upstream.NewCheck(providerID)
	upstream.InRange(c, "temperature", o.Temperature, 0, 1)
	upstream.InRange(c, "top_p", o.TopP, 0, 1)
	upstream.InRange(c, "chunk_length", o.ChunkLength, 100, 300)
	upstream.InRange(c, "min_chunk_length", o.MinChunkLength, 0, 100)
	upstream.InRange(c, "early_stop_threshold", o.EarlyStopThreshold, 0, 1)
	c.OneOf("latency", o.Latency, "low", "normal", "balanced")
	if o.MP3Bitrate != nil && *o.MP3Bitrate != 64 && *o.MP3Bitrate != 128 && *o.MP3Bitrate != 192 {
		c.Fail("mp3_bitrate", "must be one of 64, 128, 192, got %d", *o.MP3Bitrate)
	}
	return c.Err()
}

// cloneOptions are the providerOptions Clone accepts.
type cloneOptions struct {
	Visibility          *string  `json:"visibility"`
	Texts               []string `json:"texts"`
	Tags                []string `json:"tags"`
	EnhanceAudioQuality *bool    `json:"enhance_audio_quality"`
}

// Clone implements sdk.Provider by creating a voice model (POST /model,
// train_mode fast, usable at once) from the samples; its id is the
// reference_id of later requests. The model is private unless the
// visibility option says otherwise: a gateway's voices are not published
// to the public library by accident. It is never retried: a lost answer
// does not mean no model was made.
func (p *Provider) Clone(ctx context.Context, req *sdk.CloneRequest) (*sdk.CloneResponse, error) {
	switch {
	case len(req.Samples) == 0:
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "fish-audio: cloning needs at least one audio sample")
	case len(req.Samples) > 20:
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "fish-audio: a voice model takes at most 20 samples, got %d", len(req.Samples))
	}
	var o cloneOptions
	if err := upstream.DecodeOptions(providerID, req.Options, &o, "visibility", "texts", "tags", "enhance_audio_quality"); err != nil {
		return nil, err
	}
	if len(o.Texts) > len(req.Samples) {
		return nil, sdk.InvalidOption("texts", "fish-audio: %d texts for %d samples", len(o.Texts), len(req.Samples))
	}
	// The visibilities POST /model documents.
	c := upstream.NewCheck(providerID)
	c.OneOf("visibility", o.Visibility, "public", "unlist", "private")
	if err := c.Err(); err != nil {
		return nil, err
	}
	title := strings.TrimSpace(req.Name)
	if title == "" {
		title = "voxgate voice"
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	// Writes to memory cannot fail.
	_ = mw.WriteField("type", "tts")
	_ = mw.WriteField("train_mode", "fast")
	_ = mw.WriteField("title", title)
	_ = mw.WriteField("visibility", cmp.Or(ptrValue(o.Visibility), "private"))
	if req.Description != "" {
		_ = mw.WriteField("description", req.Description)
	}
	for _, t := range o.Texts {
		_ = mw.WriteField("texts", t)
	}
	for _, t := range o.Tags {
		_ = mw.WriteField("tags", t)
	}
	if o.EnhanceAudioQuality != nil {
		_ = mw.WriteField("enhance_audio_quality", strconv.FormatBool(*o.EnhanceAudioQuality))
	}
	for i, s := range req.Samples {
		if len(s.Data) == 0 {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "fish-audio: sample %d is empty", i)
		}
		_ = upstream.WriteSample(mw, "voices", s, i)
	}
	_ = mw.Close()

	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.BaseURL+modelPath, &body)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "fish-audio: %v", err)
	}
	hreq.Header.Set("Content-Type", mw.FormDataContentType())
	var out modelEntry
	if err := cfg.DoJSON(ctx, hreq, req.Credentials.APIKey, false, "voice model", &out); err != nil {
		return nil, err
	}
	switch {
	case out.ID == "":
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "fish-audio: the created voice model has no _id"}
	case out.State == "failed":
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: fmt.Sprintf("fish-audio: voice model %s failed to train", out.ID)}
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

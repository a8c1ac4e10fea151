package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
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
	providerID     = "mistral"
	defaultBaseURL = "https://api.mistral.ai/v1"
	// defaultModel is Voxtral 3, the model Mistral's docs now use.
	defaultModel = "voxtral-mini-tts-3-0"
	// sampleRate is the only rate Voxtral produces; the API has no rate
	// setting.
	sampleRate = 24000
	// maxAudioBytes bounds a whole clip; its base64 is a third larger.
	maxAudioBytes = 256 << 20
	// maxVoicePages bounds GET /audio/voices pagination (100 a page).
	maxVoicePages = 20
)

// Paths under base_url.
const (
	speechPath = "/audio/speech"
	voicesPath = "/audio/voices"
)

// Provider is the Mistral plugin. It keeps only deployment settings, which
// Configure swaps atomically; every call reads one consistent snapshot.
type Provider struct {
	cfg atomic.Pointer[config]
}

// config is one snapshot of the deployment settings.
type config struct {
	*upstream.Endpoint
}

// api is how Mistral authenticates and reports errors: Bearer, as OpenAI,
// and an error envelope of its own that OpenAI's parser reads only in
// part (see parseError). It is never modified.
var api = &upstream.API{
	Provider:       providerID,
	DefaultBaseURL: defaultBaseURL,
	Authorize:      upstream.Bearer,
	ParseError:     parseError,
	Classify: func(e *sdk.Error) {
		// The speech API answers 403 when content moderation rejects the
		// input: the caller's text, not the key.
		if e.UpstreamStatus == http.StatusForbidden {
			e.Kind = sdk.KindInvalidRequest
		}
	},
}

// New returns a Provider with the default settings (the public API).
func New() *Provider {
	p := &Provider{}
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
// upstream.ParseSettings; other keys are ignored.
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

// encodings are what Voxtral produces, one per response_format of POST
// /v1/audio/speech (docs.mistral.ai, "Speech Generation", Response Audio
// Formats; read 2026-11-28), all 24 kHz mono, the API having no rate or
// bitrate parameter: mp3, flac and opus are Mistral's bytes untouched
// (Opus listed at the 48 kHz every Opus stream decodes at). pcm and wav
// are Mistral's pcm, raw float32 samples, which the plugin narrows to
// the sdk's 16 bits (and puts behind a WAV header): sample for sample,
// no resampling, the cheapest way to either, so they count as native.
// (Mistral's own wav is "uncompressed PCM" of a sample format the docs do
// not state, so the plugin does not ask for it.) pcm first, the gateway's
// default.
func encodings() []sdk.Encoding {
	return []sdk.Encoding{
		{Format: sdk.FormatPCM, SampleRate: sampleRate},
		{Format: sdk.FormatWAV, SampleRate: sampleRate},
		{Format: sdk.FormatMP3, SampleRate: sampleRate},
		{Format: sdk.FormatFLAC, SampleRate: sampleRate},
		{Format: sdk.FormatOpus, SampleRate: 48000},
	}
}

// models are the Voxtral TTS models: Voxtral 3 (voxtral-mini-tts-3-0,
// the model Mistral's audio docs use) and the first release
// (voxtral-mini-tts-2603), whose preset voices Voxtral 3 still takes
// (docs.mistral.ai, audio overview and "Migrate from Voxtral 2"; read
// 2026-11-28).
func models() []sdk.Model {
	mk := func(id, name string) sdk.Model {
		return sdk.Model{
			ID:   id,
			Name: name,
			// No speed field (pace is an inline tag) and no timings in
			// the answer. Every format streams (speech.audio.delta
			// events).
			Capabilities: sdk.Capabilities{Streaming: true, Cloning: true},
			Encodings:    encodings(),
			// No text limit is documented (the guide advises under 300
			// words for best results): the gateway's default applies.
		}
	}
	return []sdk.Model{mk("voxtral-mini-tts-3-0", "Voxtral TTS 3"), mk("voxtral-mini-tts-2603", "Voxtral TTS (2603)")}
}

// modelIDPattern is the grammar of a Mistral speech model id: voxtral-
// and lower-case letters, digits, '.' and '-', with tts in it
// (voxtral-mini-tts-2603, voxtral-mini-tts-latest); the length is bounded
// apart. An id the plugin does not list is passed through when it
// matches, and refused before any call otherwise: Mistral's other models
// do not speak.
var modelIDPattern = regexp.MustCompile(`^voxtral-[a-z0-9.-]*tts[a-z0-9.-]*$`)

// maxModelID bounds a passed-through model id, far above any Mistral one.
const maxModelID = 100

// findModel returns the listed model id, or, for an id that can be a
// Mistral speech model, one passed through under that id: every listed
// model has the same abilities (models), so it claims those. Any other
// id is the caller's mistake.
func findModel(id string) (sdk.Model, error) {
	ms := models()
	if i := slices.IndexFunc(ms, func(m sdk.Model) bool { return m.ID == id }); i >= 0 {
		return ms[i], nil
	}
	if len(id) > maxModelID || !modelIDPattern.MatchString(id) {
		return sdk.Model{}, sdk.Errorf(sdk.KindInvalidRequest,
			"mistral: unknown model %q: a Mistral speech model id is voxtral- and lower-case letters, digits, '.' and '-', with tts in it, e.g. %s", id, defaultModel)
	}
	m := ms[0]
	m.ID, m.Name = id, "Any other Voxtral TTS model (passed through)"
	return m, nil
}

// Describe implements sdk.Provider: the listed models and an
// sdk.AnyModel entry for the ids it passes through (findModel).
func (p *Provider) Describe(context.Context) (*sdk.Description, error) {
	pt := models()[0]
	pt.ID, pt.Name = sdk.AnyModel, "Any other Voxtral TTS model (passed through)"
	return &sdk.Description{ID: providerID, Name: "Mistral", DefaultModel: defaultModel, Models: sdk.WithUnpublished(sdk.WithPrices(append(models(), pt), priceTable), sdk.UnitCharacters, priceDate)}, nil
}

// parseError reads Mistral's error bodies: {"object": "error", "message",
// "type", "code", ...} whose message is text, or for a 422 {"detail":
// [{loc, msg}]}; a bare {"detail": ...}; {"message"} alone (a 401); and,
// failing those, the OpenAI shape {"error": {...}}.
func parseError(body []byte) (code, message string) {
	var b struct {
		Message json.RawMessage `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &b) != nil {
		return "", ""
	}
	code = b.Type
	if raw := bytes.TrimSpace(b.Code); len(raw) > 0 && string(raw) != "null" {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			s = string(raw)
		}
		code = cmp.Or(s, code)
	}
	var text string
	switch {
	case json.Unmarshal(b.Message, &text) == nil && text != "":
		return code, text
	case len(b.Message) > 0 && b.Message[0] == '{':
		var inner struct {
			Detail json.RawMessage `json:"detail"`
		}
		_ = json.Unmarshal(b.Message, &inner)
		if msg := detailMessage(inner.Detail); msg != "" {
			return cmp.Or(code, "validation_error"), msg
		}
	case len(b.Detail) > 0:
		if msg := detailMessage(b.Detail); msg != "" {
			return cmp.Or(code, "validation_error"), msg
		}
	}
	return upstream.ParseOpenAIError(body)
}

// detailMessage reads a validation detail: a list of {loc, msg} joined as
// "field.path: msg" (the first few), or plain text.
func detailMessage(raw json.RawMessage) string {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text
	}
	var list []struct {
		Loc []any  `json:"loc"`
		Msg string `json:"msg"`
	}
	if json.Unmarshal(raw, &list) != nil {
		return ""
	}
	var parts []string
	for _, item := range list[:min(len(list), 3)] {
		loc := make([]string, 0, len(item.Loc))
		for _, l := range item.Loc {
			if s := fmt.Sprint(l); s != "body" && s != "query" {
				loc = append(loc, s)
			}
		}
		if len(loc) == 0 {
			parts = append(parts, item.Msg)
			continue
		}
		parts = append(parts, strings.Join(loc, ".")+": "+item.Msg)
	}
	return strings.Join(parts, "; ")
}

// voiceEntry is a voice of GET /audio/voices.
type voiceEntry struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Slug      *string  `json:"slug"`
	Languages []string `json:"languages"`
	Gender    *string  `json:"gender"`
}

// Voices implements sdk.Provider with GET /audio/voices (type all,
// following pages): the preset voices and the workspace's own. A voice's
// id is its slug when it has one (what Mistral's docs use for presets),
// else its id; voice_id takes either.
func (p *Provider) Voices(ctx context.Context, req *sdk.VoicesRequest) ([]sdk.Voice, error) {
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	var voices []sdk.Voice
	for page := range maxVoicePages {
		q := url.Values{"limit": {"100"}, "offset": {strconv.Itoa(page * 100)}, "type": {"all"}}
		hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.BaseURL+voicesPath+"?"+q.Encode(), nil)
		if err != nil {
			return nil, sdk.Errorf(sdk.KindInternal, "mistral: %v", err)
		}
		var list struct {
			Items      []voiceEntry `json:"items"`
			Total      int          `json:"total"`
			TotalPages int          `json:"total_pages"`
		}
		if err := cfg.DoJSON(ctx, hreq, req.Credentials.APIKey, true, "voice list", &list); err != nil {
			return nil, err
		}
		for _, v := range list.Items {
			id := cmp.Or(ptrValue(v.Slug), v.ID)
			if id == "" {
				continue
			}
			voices = append(voices, sdk.Voice{ID: id, Name: v.Name, Language: language(v.Languages), Gender: ptrValue(v.Gender)})
		}
		if len(list.Items) == 0 || page+1 >= list.TotalPages {
			break
		}
	}
	return voices, nil
}

// language is a voice's first language as a BCP 47 tag: Mistral writes
// them "en_us".
func language(langs []string) string {
	if len(langs) == 0 {
		return ""
	}
	return strings.ReplaceAll(langs[0], "_", "-")
}

// options are the providerOptions the plugin accepts.
type options struct {
	// RefAudio is a base64 audio clip to speak like, for one request,
	// instead of a saved voice.
	RefAudio *string `json:"ref_audio"`
	// Metadata is passed on as the request's metadata.
	Metadata map[string]any `json:"metadata"`
}

// speechBody is the body of POST /audio/speech.
type speechBody struct {
	Model          string         `json:"model"`
	Input          string         `json:"input"`
	VoiceID        string         `json:"voice_id,omitempty"`
	RefAudio       string         `json:"ref_audio,omitempty"`
	ResponseFormat string         `json:"response_format"`
	Stream         bool           `json:"stream"`
	Metadata       map[string]any `json:"metadata,omitempty"`
}

// call is a validated speech request.
type call struct {
	body      speechBody
	format    string // the sdk format the caller gets
	mediaType string
}

// prepare validates req and builds the body. pcm and wav are asked for as
// pcm, Voxtral's raw float32 samples, which the plugin turns into 16-bit
// PCM (and a WAV header of exact size): the gateway's PCM is 16-bit, and
// Mistral does not document the sample format of its wav. Failures are
// the caller's (KindInvalidRequest) and cost no upstream call.
func prepare(req *sdk.SynthesizeRequest, stream bool) (*call, error) {
	m, err := findModel(req.Model)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "mistral: nothing to say")
	}
	e, err := upstream.ChooseEncoding(providerID, &m, req)
	if err != nil {
		return nil, err
	}
	var o options
	if err := upstream.DecodeOptions(providerID, req.Options, &o, "ref_audio", "metadata"); err != nil {
		return nil, err
	}
	c := &call{
		format:    e.Format,
		mediaType: sdk.MediaType(e),
		body:      speechBody{Model: req.Model, Input: req.Text, VoiceID: req.Voice, ResponseFormat: "pcm", Stream: stream, Metadata: o.Metadata},
	}
	if e.Format != sdk.FormatPCM && e.Format != sdk.FormatWAV {
		// Mistral's response_format values are the sdk's format names.
		c.body.ResponseFormat = e.Format
	}
	if o.RefAudio != nil && *o.RefAudio != "" {
		// The reference: "base64-encoded audio" (the document types it a
		// plain string); a clip that is not refuses at Mistral.
		if _, err := base64.StdEncoding.DecodeString(*o.RefAudio); err != nil {
			return nil, sdk.InvalidOption("ref_audio", "mistral: providerOptions field ref_audio must be base64-encoded audio")
		}
		// A reference clip replaces the voice, as in Mistral's API.
		c.body.VoiceID, c.body.RefAudio = "", *o.RefAudio
	}
	if c.body.VoiceID == "" && c.body.RefAudio == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "mistral: a voice id (e.g. %s) or a ref_audio option is required", "gb_jane_neutral")
	}
	return c, nil
}

// post sends the speech request; accept says which answer is wanted.
func (cfg *config) post(ctx context.Context, c *call, key, accept string) (*http.Response, error) {
	hreq, err := upstream.NewJSONRequest(ctx, http.MethodPost, cfg.BaseURL+speechPath, c.body)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "mistral: %v", err)
	}
	hreq.Header.Set("Accept", accept)
	return cfg.Do(ctx, hreq, key, true)
}

// Synthesize implements sdk.Provider: POST /audio/speech, whose answer is
// JSON with the clip base64-encoded in audio_data.
func (p *Provider) Synthesize(ctx context.Context, req *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	if req.Timestamps {
		return nil, sdk.Errorf(sdk.KindUnsupported, "mistral: the speech API gives no word timestamps")
	}
	c, err := prepare(req, false)
	if err != nil {
		return nil, err
	}
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	resp, err := cfg.post(ctx, c, req.Credentials.APIKey, "application/json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var ans struct {
		AudioData string `json:"audio_data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 2*maxAudioBytes)).Decode(&ans); err != nil {
		return nil, upstream.BodyError(ctx, providerID, "speech answer", err)
	}
	audio, err := base64.StdEncoding.DecodeString(ans.AudioData)
	if err != nil {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "mistral: audio_data is not base64"}
	}
	if len(audio) == 0 {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "mistral: the answer holds no audio"}
	}
	if c.body.ResponseFormat == "pcm" {
		if len(audio)%4 != 0 {
			return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "mistral: truncated float32 PCM"}
		}
		audio = int16PCM(audio)
		if c.format == sdk.FormatWAV {
			audio = append(upstream.WAVHeader(sampleRate, uint32(len(audio))), audio...)
		}
	}
	return &sdk.SynthesizeResponse{Audio: audio, MediaType: c.mediaType}, nil
}

// int16PCM converts float32 little-endian samples (whole ones: len is a
// multiple of 4) to 16-bit little-endian PCM, clamping to [-1, 1]: a
// decoder may overshoot full scale a little.
//
// Hot path of every pcm and wav clip and stream: one pass, one
// allocation.
func int16PCM(f32 []byte) []byte {
	out := make([]byte, len(f32)/2)
	for i := 0; i+3 < len(f32); i += 4 {
		v := float64(math.Float32frombits(binary.LittleEndian.Uint32(f32[i:])))
		var s int16
		switch {
		case v != v: // NaN: silence rather than noise
		case v >= 1:
			s = math.MaxInt16
		case v <= -1:
			s = math.MinInt16
		default:
			s = int16(math.Round(v * 32768))
		}
		binary.LittleEndian.PutUint16(out[i/2:], uint16(s))
	}
	return out
}

// Stream implements sdk.Provider: POST /audio/speech with stream true,
// whose speech.audio.delta events carry base64 audio, sent as each
// arrives: float32 samples converted to 16-bit (a wav stream opens with a
// header of unknown length), mp3 as it comes. The timeout setting bounds
// only the wait for the answer to start.
func (p *Provider) Stream(ctx context.Context, req *sdk.SynthesizeRequest, send func(sdk.Chunk) error) error {
	c, err := prepare(req, true)
	if err != nil {
		return err
	}
	cfg := p.cfg.Load()
	resp, err := cfg.post(ctx, c, req.Credentials.APIKey, "text/event-stream")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out := &chunker{send: send, mediaType: c.mediaType, float: c.body.ResponseFormat == "pcm"}
	if c.format == sdk.FormatWAV {
		out.header = upstream.WAVHeader(sampleRate, upstream.StreamingWAV)
	}
	if err := readEvents(ctx, resp.Body, out.event); err != nil {
		return err
	}
	return out.finish()
}

// chunker turns the delta events of a stream into chunks: the media type
// on the first, a wav header before the audio, float32 samples whole and
// converted.
type chunker struct {
	send      func(sdk.Chunk) error
	mediaType string
	header    []byte // sent first, for a wav stream
	float     bool   // the audio is float32 PCM to convert
	pending   []byte // bytes of an unfinished float32 sample
	started   bool
}

// event handles the decoded audio of one delta event.
func (c *chunker) event(audio []byte) error {
	if c.float {
		if len(c.pending) > 0 {
			audio = append(c.pending, audio...)
			c.pending = nil
		}
		whole := len(audio) &^ 3
		if whole < len(audio) {
			c.pending = bytes.Clone(audio[whole:])
		}
		if whole == 0 {
			return nil
		}
		audio = int16PCM(audio[:whole])
	}
	if len(audio) == 0 {
		return nil
	}
	return c.emit(audio)
}

// emit sends data, after the media type and header when it is the first.
func (c *chunker) emit(data []byte) error {
	chunk := sdk.Chunk{Data: data}
	if !c.started {
		c.started = true
		chunk.MediaType = c.mediaType
		if c.header != nil {
			if err := c.send(sdk.Chunk{MediaType: c.mediaType, Data: c.header}); err != nil {
				return err
			}
			chunk.MediaType = ""
		}
	}
	return c.send(chunk)
}

// finish ends a stream that went well: part of a sample left is a
// truncated answer; an empty stream still says what it would have been.
func (c *chunker) finish() error {
	if len(c.pending) > 0 {
		return &sdk.Error{Kind: sdk.KindUpstream, Message: "mistral: truncated float32 PCM"}
	}
	if !c.started {
		return c.emit(nil)
	}
	return nil
}

// cloneOptions are the providerOptions Clone accepts: the
// VoiceCreateRequest fields besides the name, description and sample.
type cloneOptions struct {
	Slug            *string  `json:"slug,omitempty"`
	Languages       []string `json:"languages,omitempty"`
	Gender          *string  `json:"gender,omitempty"`
	Age             *int     `json:"age,omitempty"`
	Tags            []string `json:"tags,omitempty"`
	Color           *string  `json:"color,omitempty"`
	RetentionNotice *int     `json:"retention_notice,omitempty"`
}

// createBody is the body of POST /audio/voices.
type createBody struct {
	Name           string  `json:"name"`
	Description    *string `json:"description,omitempty"`
	SampleAudio    string  `json:"sample_audio"`
	SampleFilename string  `json:"sample_filename,omitempty"`
	cloneOptions
}

// Clone implements sdk.Provider by saving a voice in the workspace (POST
// /audio/voices) from one sample, sent base64-encoded with its filename
// (raw PCM is wrapped as WAV first, since the API detects the format from
// the file). The new voice's id is what Synthesize takes afterwards. It is
// never retried: a lost answer does not mean no voice was saved.
func (p *Provider) Clone(ctx context.Context, req *sdk.CloneRequest) (*sdk.CloneResponse, error) {
	switch {
	case len(req.Samples) != 1:
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "mistral: a voice is saved from exactly one sample, got %d", len(req.Samples))
	case len(req.Samples[0].Data) == 0:
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "mistral: the sample is empty")
	}
	var o cloneOptions
	if err := upstream.DecodeOptions(providerID, req.Options, &o, "slug", "languages", "gender", "age", "tags", "color", "retention_notice"); err != nil {
		return nil, err
	}
	filename, _, data := upstream.SampleFile(req.Samples[0], 0)
	body := createBody{
		Name:           cmp.Or(strings.TrimSpace(req.Name), "voxgate voice"),
		SampleAudio:    base64.StdEncoding.EncodeToString(data),
		SampleFilename: filename,
		cloneOptions:   o,
	}
	if req.Description != "" {
		body.Description = &req.Description
	}
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	hreq, err := upstream.NewJSONRequest(ctx, http.MethodPost, cfg.BaseURL+voicesPath, body)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "mistral: %v", err)
	}
	var out voiceEntry
	if err := cfg.DoJSON(ctx, hreq, req.Credentials.APIKey, false, "voice", &out); err != nil {
		return nil, err
	}
	if out.ID == "" {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "mistral: the saved voice has no id"}
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

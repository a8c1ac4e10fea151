package main

import (
	"bytes"
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
	"strconv"
	"strings"
	"sync/atomic"
	"unicode"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

const (
	providerID     = "elevenlabs"
	defaultBaseURL = "https://api.elevenlabs.io"
	defaultModel   = "eleven_multilingual_v2"
	// nativeRate is the PCM rate of the models' first encoding: the
	// plugin's default clip (the API's own default, mp3_44100_128, is
	// the first mp3 encoding).
	nativeRate = 24000
	// The documented range of voice_settings.speed.
	minSpeed, maxSpeed = 0.7, 1.2
	// maxAudioBytes bounds a whole clip read into memory.
	maxAudioBytes = 256 << 20
)

// encodings are the output_format values of the text-to-speech endpoints,
// as sdk.Encodings (whose String is ElevenLabs' own name for each:
// "pcm_24000", "mp3_44100_128", "opus_48000_64"). The list is the enum of
// POST /v1/text-to-speech/{voice_id} and /with-timestamps in the
// official Python SDK (elevenlabs/elevenlabs-python,
// src/elevenlabs/text_to_speech/types/text_to_speech_convert_request_output_format.py
// at 54e5899 of 23 July 2026, read 28 November 2026), which every model
// takes alike. Each format's first entry is its default: pcm_24000 is the
// plugin's default clip, mp3_44100_128 the API's default; opus has none
// documented, so its bitrates come in ascending order.
//
// The opus_* formats are Opus in an Ogg container (audio the reference
// calls opus and clients play as .ogg); the reference does not name the
// container. /stream and the stream-input WebSocket take every value but
// wav_* (the SDK's text_to_speech_stream_request_output_format.py):
// Stream streams wav as pcm_<rate> behind a header of unknown length.
func encodings() []sdk.Encoding {
	out := []sdk.Encoding{{Format: sdk.FormatPCM, SampleRate: nativeRate}}
	for _, r := range pcmRates() {
		if r != nativeRate {
			out = append(out, sdk.Encoding{Format: sdk.FormatPCM, SampleRate: r})
		}
	}
	out = append(out, sdk.Encoding{Format: sdk.FormatWAV, SampleRate: nativeRate})
	for _, r := range pcmRates() {
		if r != nativeRate {
			out = append(out, sdk.Encoding{Format: sdk.FormatWAV, SampleRate: r})
		}
	}
	out = append(out,
		sdk.Encoding{Format: sdk.FormatMP3, SampleRate: 44100, Bitrate: 128},
		sdk.Encoding{Format: sdk.FormatMP3, SampleRate: 44100, Bitrate: 32},
		sdk.Encoding{Format: sdk.FormatMP3, SampleRate: 44100, Bitrate: 64},
		sdk.Encoding{Format: sdk.FormatMP3, SampleRate: 44100, Bitrate: 96},
		sdk.Encoding{Format: sdk.FormatMP3, SampleRate: 44100, Bitrate: 192},
		sdk.Encoding{Format: sdk.FormatMP3, SampleRate: 22050, Bitrate: 32},
		sdk.Encoding{Format: sdk.FormatMP3, SampleRate: 24000, Bitrate: 48},
	)
	for _, kbps := range []int{32, 64, 96, 128, 192} {
		out = append(out, sdk.Encoding{Format: sdk.FormatOpus, SampleRate: 48000, Bitrate: kbps})
	}
	return append(out,
		sdk.Encoding{Format: sdk.FormatULaw, SampleRate: 8000},
		sdk.Encoding{Format: sdk.FormatALaw, SampleRate: 8000},
	)
}

// pcmRates are the rates of the pcm_<rate> and wav_<rate> formats.
func pcmRates() []int { return []int{8000, 16000, 22050, 24000, 32000, 44100, 48000} }

// Provider is the ElevenLabs plugin. It keeps only deployment settings,
// which Configure swaps atomically, and its model list, which never
// changes.
type Provider struct {
	cfg atomic.Pointer[config]
	// models is models(), built once: every request looks its model and
	// encoding up in it.
	models []sdk.Model
	// pool holds the multi-context sockets of StreamInput
	// (streaminput.go).
	pool *upstream.MuxPool
	// lexicons are the PLS lexicons uploaded so far, per key.
	lexicons *lexicons
}

// config is one snapshot of the deployment settings.
type config struct {
	*upstream.Endpoint
}

// api is how ElevenLabs authenticates and reports errors. It is never
// modified.
var api = &upstream.API{
	Provider:       providerID,
	DefaultBaseURL: defaultBaseURL,
	Authorize:      func(h http.Header, key string) { h.Set("xi-api-key", key) },
	ParseError:     parseError,
	Classify: func(e *sdk.Error) {
		// A spent character quota comes as 401 but is not a bad key.
		if e.UpstreamCode == "quota_exceeded" {
			e.Kind, e.Retryable = sdk.KindUpstream, false
		}
	},
}

// New returns a Provider with the default settings (the public API).
func New() *Provider {
	p := &Provider{models: models(), pool: newPool(), lexicons: newLexicons()}
	e, _ := upstream.NewEndpoint(api, nil)
	p.cfg.Store(&config{e})
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
	p.cfg.Swap(&config{e}).Close()
	return nil
}

// models lists the text-to-speech models of the models page
// (elevenlabs.io/docs/overview/models, read 28 November 2026) with its
// per-request character limits (5,000 for Eleven v3, 10,000 for
// Multilingual v2, 40,000 for Flash and Turbo v2.5, 30,000 for the
// English-only Flash and Turbo v2). Every model takes every output format
// (encodings) and voice_settings.speed; the models page documents no
// exception. The stream-input WebSocket does not serve Eleven v3 ("WebSockets
// are not available for the eleven_v3 model", the real-time guide), so v3
// has no input streaming. The older v1 models are deprecated and left
// out; so are the voice changer and voice design models, which do not
// speak text. eleven_v3_conversational speaks only through the agents
// platform and the text-to-dialogue WebSocket, not these endpoints.
//
// Request stitching (previous_request_ids, previous_text, next_text: the
// request-stitching guide) "is not available for the eleven_v3 model";
// every other model has it (Capabilities.Stitching).
func models() []sdk.Model {
	mk := func(id, name string, maxChars int) sdk.Model {
		return sdk.Model{
			ID:           id,
			Name:         name,
			Capabilities: sdk.Capabilities{Streaming: true, Timestamps: true, Cloning: true, Speed: true, InputStreaming: true, Stitching: true},
			Encodings:    encodings(),
			MaxTextChars: maxChars,
			MinSpeed:     minSpeed,
			MaxSpeed:     maxSpeed,
		}
	}
	v3 := mk("eleven_v3", "Eleven v3", 5000)
	v3.Capabilities.InputStreaming, v3.Capabilities.Stitching = false, false
	// ElevenLabs documents audio tags ("[laughs]", "[whispers]",
	// "[sarcastic]", ...) for Eleven v3 only, as an open set of
	// directions: every tag passes through to it.
	v3.AudioTags = []string{sdk.AnyAudioTag}
	// Phoneme rules of pronunciation dictionaries work with Eleven Flash
	// v2 and Eleven Turbo v2 (English v1, which the plugin does not list,
	// too); other models "silently skip" them (the pronunciation
	// dictionaries guide), so the gateway gives those its stand-in text.
	phonemes := sdk.PhonemeInput{Kind: sdk.PhonemesPLS, Alphabets: []string{"ipa", "cmu"}, MaxLexicons: maxLocators}
	flash2, turbo2 := mk("eleven_flash_v2", "Eleven Flash v2", 30000), mk("eleven_turbo_v2", "Eleven Turbo v2", 30000)
	flash2.Phonemes, turbo2.Phonemes = phonemes, phonemes
	return []sdk.Model{
		mk("eleven_multilingual_v2", "Eleven Multilingual v2", 10000),
		mk("eleven_flash_v2_5", "Eleven Flash v2.5", 40000),
		mk("eleven_turbo_v2_5", "Eleven Turbo v2.5", 40000),
		v3,
		flash2,
		turbo2,
	}
}

// modelIDPattern is the grammar of an ElevenLabs model id: every
// text-to-speech model is eleven_ and lower-case letters, digits and
// underscores (eleven_v3, eleven_flash_v2_5; the models page). An id the
// plugin does not list is passed through when it matches, and refused
// before any call otherwise.
var modelIDPattern = regexp.MustCompile(`^eleven_[a-z0-9_]{1,60}$`)

// passThrough is a model ElevenLabs may have that the plugin does not
// list (one released after it), sent under the caller's id. It claims
// what every listed model has: every output format, streaming, word
// timestamps (the with-timestamps endpoints take every model),
// voice_settings.speed, and the 5,000 characters of Eleven v3, the
// smallest limit; neither input streaming nor request stitching, which
// Eleven v3 lacks, nor audio tags, which only Eleven v3 performs.
func passThrough(id string) sdk.Model {
	return sdk.Model{
		ID:           id,
		Name:         "Any other ElevenLabs model (passed through)",
		Capabilities: sdk.Capabilities{Streaming: true, Timestamps: true, Cloning: true, Speed: true},
		Encodings:    encodings(),
		MaxTextChars: 5000,
		MinSpeed:     minSpeed,
		MaxSpeed:     maxSpeed,
	}
}

// findModel returns the model of models with id, or a pass-through model
// for an id that can be ElevenLabs'; any other id is the caller's
// mistake.
func findModel(models []sdk.Model, id string) (*sdk.Model, error) {
	if i := slices.IndexFunc(models, func(m sdk.Model) bool { return m.ID == id }); i >= 0 {
		return &models[i], nil
	}
	if !modelIDPattern.MatchString(id) {
		return nil, sdk.Errorf(sdk.KindInvalidRequest,
			"elevenlabs: unknown model %q: an ElevenLabs model id is eleven_ followed by lower-case letters, digits and '_', e.g. eleven_v3", id)
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
	return &sdk.Description{ID: providerID, Name: "ElevenLabs", DefaultModel: defaultModel, Models: sdk.WithUnpublished(sdk.WithPrices(append(models(), passThrough(sdk.AnyModel)), priceTable), sdk.UnitCharacters, priceDate)}, nil
}

// parseError reads ElevenLabs' error bodies: {"detail": {"status" or
// "code", "message"}}, a validation list {"detail": [{"loc", "msg",
// "type"}]}, or {"detail": "text"}.
func parseError(body []byte) (code, message string) {
	var b struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &b) != nil || len(b.Detail) == 0 {
		return "", ""
	}
	var obj struct {
		Status  string `json:"status"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(b.Detail, &obj) == nil && (obj.Message != "" || obj.Status != "" || obj.Code != "") {
		code = obj.Status
		if code == "" {
			code = obj.Code
		}
		return code, obj.Message
	}
	var list []struct {
		Loc  []any  `json:"loc"`
		Msg  string `json:"msg"`
		Type string `json:"type"`
	}
	if json.Unmarshal(b.Detail, &list) == nil && len(list) > 0 {
		var parts []string
		for _, item := range list[:min(len(list), 3)] {
			loc := make([]string, len(item.Loc))
			for i, l := range item.Loc {
				loc[i] = fmt.Sprint(l)
			}
			parts = append(parts, strings.Join(loc, ".")+": "+item.Msg)
		}
		return "validation_error", strings.Join(parts, "; ")
	}
	var text string
	if json.Unmarshal(b.Detail, &text) == nil {
		return "", text
	}
	return "", ""
}

// voiceResponse is an entry of GET /v1/voices.
type voiceResponse struct {
	VoiceID           string            `json:"voice_id"`
	Name              string            `json:"name"`
	Labels            map[string]string `json:"labels"`
	VerifiedLanguages []struct {
		Language string `json:"language"`
	} `json:"verified_languages"`
}

// Voices implements sdk.Provider with GET /v1/voices: the account's
// premade, cloned and library voices.
func (p *Provider) Voices(ctx context.Context, req *sdk.VoicesRequest) ([]sdk.Voice, error) {
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.BaseURL+"/v1/voices", nil)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "elevenlabs: %v", err)
	}
	var list struct {
		Voices []voiceResponse `json:"voices"`
	}
	if err := cfg.DoJSON(ctx, hreq, req.Credentials.APIKey, true, "voice list", &list); err != nil {
		return nil, err
	}
	voices := make([]sdk.Voice, 0, len(list.Voices))
	for _, v := range list.Voices {
		voices = append(voices, sdk.Voice{ID: v.VoiceID, Name: v.Name, Gender: v.Labels["gender"], Language: voiceLanguage(v)})
	}
	return voices, nil
}

// voiceLanguage picks the best language hint a voice carries: its first
// verified language, a language label, or (older voices) its accent.
func voiceLanguage(v voiceResponse) string {
	if len(v.VerifiedLanguages) > 0 && v.VerifiedLanguages[0].Language != "" {
		return v.VerifiedLanguages[0].Language
	}
	if l := v.Labels["language"]; l != "" {
		return l
	}
	return v.Labels["accent"]
}

// voiceSettings is the documented voice_settings object.
type voiceSettings struct {
	Stability       *float64 `json:"stability,omitempty"`
	SimilarityBoost *float64 `json:"similarity_boost,omitempty"`
	Style           *float64 `json:"style,omitempty"`
	UseSpeakerBoost *bool    `json:"use_speaker_boost,omitempty"`
	Speed           *float64 `json:"speed,omitempty"`
}

// locator is a pronunciation dictionary locator of the request body.
type locator struct {
	PronunciationDictionaryID string  `json:"pronunciation_dictionary_id"`
	VersionID                 *string `json:"version_id,omitempty"`
}

// options are the providerOptions the plugin accepts: documented body
// fields, and two documented query parameters.
type options struct {
	VoiceSettings                   *voiceSettings `json:"voice_settings"`
	LanguageCode                    *string        `json:"language_code"`
	Seed                            *int64         `json:"seed"`
	PreviousText                    *string        `json:"previous_text"`
	NextText                        *string        `json:"next_text"`
	PreviousRequestIDs              []string       `json:"previous_request_ids"`
	NextRequestIDs                  []string       `json:"next_request_ids"`
	ApplyTextNormalization          *string        `json:"apply_text_normalization"`
	PronunciationDictionaryLocators []locator      `json:"pronunciation_dictionary_locators"`
	OptimizeStreamingLatency        *int           `json:"optimize_streaming_latency"`
	// EnableLogging false asks for zero retention: ElevenLabs keeps no
	// history of the request (an enterprise feature; request stitching
	// is then unavailable).
	EnableLogging *bool `json:"enable_logging"`
	// The voice settings may also be given at the top level, as the hosted
	// service's guides do ({"stability": 0.5}); voice_settings wins.
	Stability       *float64 `json:"stability"`
	SimilarityBoost *float64 `json:"similarity_boost"`
	Style           *float64 `json:"style"`
	UseSpeakerBoost *bool    `json:"use_speaker_boost"`
}

// settings is o's voice settings: voice_settings, completed by the
// top-level shorthands.
func (o *options) settings() *voiceSettings {
	if o.Stability == nil && o.SimilarityBoost == nil && o.Style == nil && o.UseSpeakerBoost == nil {
		return o.VoiceSettings
	}
	s := voiceSettings{}
	if o.VoiceSettings != nil {
		s = *o.VoiceSettings
	}
	if s.Stability == nil {
		s.Stability = o.Stability
	}
	if s.SimilarityBoost == nil {
		s.SimilarityBoost = o.SimilarityBoost
	}
	if s.Style == nil {
		s.Style = o.Style
	}
	if s.UseSpeakerBoost == nil {
		s.UseSpeakerBoost = o.UseSpeakerBoost
	}
	return &s
}

// acceptedOptions names the options fields, for error messages.
func acceptedOptions() []string {
	return []string{"voice_settings", "language_code", "seed", "previous_text", "next_text",
		"previous_request_ids", "next_request_ids", "apply_text_normalization", "pronunciation_dictionary_locators",
		"optimize_streaming_latency", "enable_logging", "stability", "similarity_boost", "style", "use_speaker_boost"}
}

// takesLanguageCode reports whether model enforces language_code. The
// reference says the multilingual v2 model does not take it ("not
// supported for multilingual_v2 models"), and the models page gives
// language enforcement to Flash and Turbo v2.5 and to v3; the English-only
// Flash and Turbo v2 have no language to choose.
func takesLanguageCode(model string) bool {
	switch model {
	case "eleven_flash_v2_5", "eleven_turbo_v2_5", "eleven_v3":
		return true
	}
	return false
}

// check checks o against the ranges ElevenLabs documents for
// POST /v1/text-to-speech/{voice_id} (its OpenAPI document,
// internal/fakeupstream/elevenlabs/apispec, and the prose of each field
// there), for model.
func (o *options) check(model string) error {
	c := upstream.NewCheck(providerID)
	if vs := o.VoiceSettings; vs != nil {
		// stability and similarity_boost: the document's minimum and
		// maximum; speed: "0.7 to 1.2" (the API refuses others).
		upstream.InRange(c, "voice_settings.stability", vs.Stability, 0, 1)
		upstream.InRange(c, "voice_settings.similarity_boost", vs.SimilarityBoost, 0, 1)
		upstream.InRange(c, "voice_settings.speed", vs.Speed, minSpeed, maxSpeed)
	}
	upstream.InRange(c, "stability", o.Stability, 0, 1)
	upstream.InRange(c, "similarity_boost", o.SimilarityBoost, 0, 1)
	// "Must be integer between 0 and 4294967295."
	upstream.InRange(c, "seed", o.Seed, 0, 4294967295)
	// "You may have up to 3 locators per request."
	c.MaxItems("pronunciation_dictionary_locators", len(o.PronunciationDictionaryLocators), 3)
	for i, l := range o.PronunciationDictionaryLocators {
		if l.PronunciationDictionaryID == "" {
			c.Fail(fmt.Sprintf("pronunciation_dictionary_locators.%d.pronunciation_dictionary_id", i), "is required")
		}
	}
	// "A maximum of 3 request_ids can be send."
	c.MaxItems("previous_request_ids", len(o.PreviousRequestIDs), 3)
	c.MaxItems("next_request_ids", len(o.NextRequestIDs), 3)
	c.OneOf("apply_text_normalization", o.ApplyTextNormalization, "auto", "on", "off")
	// Levels 0 to 4 (the parameter's description).
	upstream.InRange(c, "optimize_streaming_latency", o.OptimizeStreamingLatency, 0, 4)
	if o.LanguageCode != nil && !takesLanguageCode(model) {
		c.Fail("language_code", "is not taken by %s (only by eleven_flash_v2_5, eleven_turbo_v2_5 and eleven_v3)", model)
	}
	return c.Err()
}

// ttsBody is the text-to-speech request body.
type ttsBody struct {
	Text                            string         `json:"text"`
	ModelID                         string         `json:"model_id"`
	VoiceSettings                   *voiceSettings `json:"voice_settings,omitempty"`
	LanguageCode                    *string        `json:"language_code,omitempty"`
	Seed                            *int64         `json:"seed,omitempty"`
	PreviousText                    *string        `json:"previous_text,omitempty"`
	NextText                        *string        `json:"next_text,omitempty"`
	PreviousRequestIDs              []string       `json:"previous_request_ids,omitempty"`
	NextRequestIDs                  []string       `json:"next_request_ids,omitempty"`
	ApplyTextNormalization          *string        `json:"apply_text_normalization,omitempty"`
	PronunciationDictionaryLocators []locator      `json:"pronunciation_dictionary_locators,omitempty"`
}

// call is a validated TTS request.
type call struct {
	voice string
	body  ttsBody
	query url.Values
	// enc is the encoding the caller gets, as output_format asks it,
	// except a streamed wav, which is asked as pcm at enc's rate.
	enc       sdk.Encoding
	mediaType string // of what the caller gets
	warnings  []string
	// stitched: the request is a piece of a longer text on a stitching
	// model, whose request-id the pieces after it need.
	stitched bool
}

// prepare validates req against the plugin's models and builds the
// upstream request, for a stream when stream is set; failures are the
// caller's (KindInvalidRequest) and cost no upstream call.
func (p *Provider) prepare(req *sdk.SynthesizeRequest, stream bool) (*call, error) {
	m, err := findModel(p.models, req.Model)
	if err != nil {
		return nil, err
	}
	if req.Voice == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "elevenlabs: a voice id is required")
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "elevenlabs: nothing to say")
	}
	format := req.Format
	if format == "" {
		format = m.Encodings[0].Format
	}
	e, ok := m.FindEncoding(format, req.SampleRate, req.Bitrate)
	if !ok {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "elevenlabs: %s does not offer %s; it offers %s",
			req.Model, sdk.Encoding{Format: format, SampleRate: req.SampleRate, Bitrate: req.Bitrate}, encodingNames(m.Encodings))
	}
	c := &call{voice: req.Voice, body: ttsBody{Text: req.Text, ModelID: req.Model}, query: url.Values{}, enc: e, mediaType: sdk.MediaType(e)}
	// The sdk names an encoding the way ElevenLabs names its output
	// formats, so the encoding is the output_format value.
	asked := e
	if stream && e.Format == sdk.FormatWAV {
		asked.Format = sdk.FormatPCM
	}
	c.query.Set("output_format", asked.String())
	var o options
	if err := upstream.DecodeOptions(providerID, req.Options, &o, acceptedOptions()...); err != nil {
		return nil, err
	}
	if err := o.check(req.Model); err != nil {
		return nil, err
	}
	c.body.VoiceSettings = o.settings()
	c.body.LanguageCode, c.body.Seed = o.LanguageCode, o.Seed
	c.body.PreviousText, c.body.NextText = o.PreviousText, o.NextText
	c.body.PreviousRequestIDs, c.body.NextRequestIDs = o.PreviousRequestIDs, o.NextRequestIDs
	c.body.ApplyTextNormalization = o.ApplyTextNormalization
	c.body.PronunciationDictionaryLocators = o.PronunciationDictionaryLocators
	if o.OptimizeStreamingLatency != nil {
		c.query.Set("optimize_streaming_latency", fmt.Sprint(*o.OptimizeStreamingLatency))
	}
	if o.EnableLogging != nil {
		c.query.Set("enable_logging", fmt.Sprint(*o.EnableLogging))
	}
	c.stitch(req.Neighbours, m, o.EnableLogging != nil && !*o.EnableLogging)
	if req.Speed != 0 && req.Speed != 1 {
		// ElevenLabs takes 0.7 to 1.2; asking for more is not an error of
		// the caller's, so the nearest speed is used and the caller told.
		speed := math.Min(math.Max(req.Speed, minSpeed), maxSpeed)
		if speed != req.Speed {
			c.warnings = append(c.warnings, fmt.Sprintf("speed %g is outside ElevenLabs' range %g to %g; used %g", req.Speed, minSpeed, maxSpeed, speed))
		}
		if c.body.VoiceSettings == nil {
			c.body.VoiceSettings = &voiceSettings{}
		}
		c.body.VoiceSettings.Speed = &speed
	}
	return c, nil
}

// stitch maps the neighbours of a piece of a longer text onto
// ElevenLabs' request stitching, for a model that has it (not
// eleven_v3): the request ids of the pieces before it
// (previous_request_ids, which make ElevenLabs ignore previous_text), or
// else the text before it; the text after it as next_text
// (next_request_ids would name pieces not rendered yet). Zero retention
// (enable_logging=false) keeps no history to stitch to, so the ids are
// left out and the texts used. A side the gateway has no neighbour on
// (the first piece's past, the last piece's future) keeps what the
// caller's providerOptions said.
func (c *call) stitch(n *sdk.Neighbours, m *sdk.Model, zeroRetention bool) {
	if n == nil || !m.Capabilities.Stitching {
		return
	}
	switch {
	case len(n.PreviousIDs) > 0 && !zeroRetention:
		c.body.PreviousRequestIDs, c.body.PreviousText = n.PreviousIDs, nil
	case n.PreviousText != "":
		c.body.PreviousRequestIDs, c.body.PreviousText = nil, &n.PreviousText
	}
	if n.NextText != "" {
		c.body.NextRequestIDs, c.body.NextText = nil, &n.NextText
	}
	c.stitched = true
}

// headerRequestID is where ElevenLabs names a render, for the
// previous_request_ids of the ones after it.
const headerRequestID = "request-id"

// headerCharacterCost is where ElevenLabs says what a call was billed, in
// credits: a character of Multilingual v2 or v3 is one, of Flash or
// Turbo half of one (the unit of the plugin's price table).
const headerCharacterCost = "character-cost"

// billed reads the character-cost header, nil without a usable one.
func billed(h http.Header) []sdk.BilledUsage {
	n, err := strconv.ParseInt(h.Get(headerCharacterCost), 10, 64)
	if err != nil || n < 0 {
		return nil
	}
	return []sdk.BilledUsage{{Unit: sdk.UnitCharacters, Quantity: n}}
}

// Suffixes of the text-to-speech URL, by what the answer carries.
const (
	suffixWhole      = ""
	suffixStream     = "/stream"
	suffixTimestamps = "/with-timestamps"
)

// ttsURL is the text-to-speech URL of c: the voice's endpoint with suffix,
// and c's query.
func (cfg *config) ttsURL(c *call, suffix string) string {
	return cfg.BaseURL + "/v1/text-to-speech/" + url.PathEscape(c.voice) + suffix + "?" + c.query.Encode()
}

// ttsRequest is the text-to-speech request of c, unauthenticated (Do adds
// the key).
func (cfg *config) ttsRequest(ctx context.Context, c *call, suffix string) (*http.Request, error) {
	req, err := upstream.NewJSONRequest(ctx, http.MethodPost, cfg.ttsURL(c, suffix), c.body)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "elevenlabs: %v", err)
	}
	return req, nil
}

var _ sdk.Planner = (*Provider)(nil)

// frameSize is the size of one sample frame of e's audio: chunks of a PCM
// stream are cut at whole samples.
func frameSize(e sdk.Encoding) int {
	if e.Format == sdk.FormatPCM {
		return 2 // 16-bit mono
	}
	return 1
}

// Plan implements sdk.Planner with the request Synthesize (the whole-clip
// endpoint) or Stream (/stream) sends. It refuses, with KindUnsupported so
// that the gateway calls Synthesize or Stream instead, what the plugin
// does to the answer or the response besides passing the audio on: a wav
// stream (/stream has no wav_* formats, so the plugin puts raw PCM behind
// a RIFF header), word
// timestamps (a JSON answer), and a whole clip whose speed was clamped (the
// response carries a warning a plan cannot).
func (p *Provider) Plan(_ context.Context, req *sdk.PlanRequest) (*sdk.Plan, error) {
	c, err := p.prepare(req.Request, req.Stream)
	if err != nil {
		return nil, err
	}
	switch {
	case req.Request.Timestamps:
		return nil, sdk.Errorf(sdk.KindUnsupported, "elevenlabs: word timestamps come in a JSON answer the plugin reads")
	case req.Stream && c.enc.Format == sdk.FormatWAV:
		return nil, sdk.Errorf(sdk.KindUnsupported, "elevenlabs: /stream has no wav; the plugin puts its PCM behind a RIFF header")
	case len(c.warnings) > 0 && !req.Stream:
		return nil, sdk.Errorf(sdk.KindUnsupported, "elevenlabs: the clip comes with warnings a plan cannot carry")
	case c.stitched && !req.Stream:
		return nil, sdk.Errorf(sdk.KindUnsupported, "elevenlabs: a stitched piece's request-id header is read by the plugin")
	}
	suffix := suffixWhole
	if req.Stream {
		suffix = suffixStream
	}
	cfg := p.cfg.Load()
	plan, err := cfg.Plan(http.MethodPost, cfg.ttsURL(c, suffix), c.body, req.Request.Credentials.APIKey, nil)
	if err != nil {
		return nil, err
	}
	plan.MediaType, plan.FrameSize = c.mediaType, frameSize(c.enc)
	plan.BilledHeaders = map[string]string{headerCharacterCost: sdk.UnitCharacters}
	return plan, nil
}

// Explain implements sdk.Planner with the mapping Synthesize uses.
func (p *Provider) Explain(_ context.Context, f *sdk.Failure) error {
	return p.cfg.Load().Explain(f)
}

// Synthesize implements sdk.Provider. With Timestamps it calls
// /with-timestamps and turns the character alignment into word timings.
func (p *Provider) Synthesize(ctx context.Context, req *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	c, err := p.prepare(req, false)
	if err != nil {
		return nil, err
	}
	if err := p.attachLexicons(ctx, c, req); err != nil {
		return nil, err
	}
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	suffix := suffixWhole
	if req.Timestamps {
		suffix = suffixTimestamps
	}
	hreq, err := cfg.ttsRequest(ctx, c, suffix)
	if err != nil {
		return nil, err
	}
	resp, err := cfg.Do(ctx, hreq, req.Credentials.APIKey, true)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := &sdk.SynthesizeResponse{MediaType: c.mediaType, Warnings: c.warnings}
	if c.stitched {
		out.ContextID = resp.Header.Get(headerRequestID)
	}
	out.Billed = billed(resp.Header)
	if req.Timestamps {
		var b struct {
			AudioBase64         string     `json:"audio_base64"`
			Alignment           *alignment `json:"alignment"`
			NormalizedAlignment *alignment `json:"normalized_alignment"`
		}
		if err := json.NewDecoder(io.LimitReader(resp.Body, 2*maxAudioBytes)).Decode(&b); err != nil {
			return nil, upstream.BodyError(ctx, providerID, "timestamped audio", err)
		}
		if out.Audio, err = base64.StdEncoding.DecodeString(b.AudioBase64); err != nil {
			return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "elevenlabs: audio_base64 is not base64"}
		}
		// The alignment of the text as sent keeps the caller's words
		// (the normalized one spells out numbers); both time the same audio.
		a := b.Alignment
		if a == nil {
			a = b.NormalizedAlignment
		}
		if a != nil {
			out.Timestamps = a.words()
		}
	} else if out.Audio, err = io.ReadAll(io.LimitReader(resp.Body, maxAudioBytes)); err != nil {
		return nil, upstream.TransportError(ctx, providerID, err)
	}
	if c.enc.Format == sdk.FormatPCM && len(out.Audio)%2 != 0 {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "elevenlabs: truncated PCM (odd byte count)"}
	}
	return out, nil
}

// Stream implements sdk.Provider with /stream, forwarding audio as it
// arrives. /stream has no wav_* formats: a WAV stream is the pcm_<rate>
// stream behind a header whose sizes say "unknown length", as streamed
// WAV does.
func (p *Provider) Stream(ctx context.Context, req *sdk.SynthesizeRequest, send func(sdk.Chunk) error) error {
	c, err := p.prepare(req, true)
	if err != nil {
		return err
	}
	if err := p.attachLexicons(ctx, c, req); err != nil {
		return err
	}
	cfg := p.cfg.Load()
	hreq, err := cfg.ttsRequest(ctx, c, suffixStream)
	if err != nil {
		return err
	}
	resp, err := cfg.Do(ctx, hreq, req.Credentials.APIKey, true)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// The character-cost header comes with the stream's headers: it
	// rides on the first chunk.
	if b := billed(resp.Header); b != nil {
		next := send
		send = func(ch sdk.Chunk) error {
			if b != nil {
				ch.Billed, b = b, nil
			}
			return next(ch)
		}
	}
	fo := upstream.ForwardOptions{MediaType: c.mediaType, Align: frameSize(c.enc), Provider: providerID}
	if c.enc.Format == sdk.FormatWAV {
		if err := send(sdk.Chunk{MediaType: c.mediaType, Data: upstream.WAVHeader(c.enc.SampleRate, upstream.StreamingWAV)}); err != nil {
			return err
		}
		fo.MediaType, fo.Align = "", 2
	}
	_, err = upstream.Forward(ctx, resp.Body, send, fo)
	return err
}

// cloneOptions are the providerOptions Clone accepts.
type cloneOptions struct {
	RemoveBackgroundNoise *bool             `json:"remove_background_noise"`
	Labels                map[string]string `json:"labels"`
}

// Clone implements sdk.Provider with instant voice cloning (POST
// /v1/voices/add). It is never retried: a lost answer does not mean no
// voice was made.
func (p *Provider) Clone(ctx context.Context, req *sdk.CloneRequest) (*sdk.CloneResponse, error) {
	if len(req.Samples) == 0 {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "elevenlabs: cloning needs at least one audio sample")
	}
	var o cloneOptions
	if err := upstream.DecodeOptions(providerID, req.Options, &o, "remove_background_noise", "labels"); err != nil {
		return nil, err
	}
	name := strings.TrimSpace(req.Name)
	if name == "" {
		name = "voxgate voice"
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("name", name)
	if req.Description != "" {
		_ = mw.WriteField("description", req.Description)
	}
	if o.RemoveBackgroundNoise != nil {
		_ = mw.WriteField("remove_background_noise", fmt.Sprint(*o.RemoveBackgroundNoise))
	}
	if o.Labels != nil {
		labels, _ := json.Marshal(o.Labels)
		_ = mw.WriteField("labels", string(labels))
	}
	for i, s := range req.Samples {
		if len(s.Data) == 0 {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "elevenlabs: sample %d is empty", i)
		}
		_ = upstream.WriteSample(mw, "files", s, i) // writes to memory
	}
	_ = mw.Close()
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.BaseURL+"/v1/voices/add", &body)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "elevenlabs: %v", err)
	}
	hreq.Header.Set("Content-Type", mw.FormDataContentType())
	var out struct {
		VoiceID string `json:"voice_id"`
	}
	if err := cfg.DoJSON(ctx, hreq, req.Credentials.APIKey, false, "clone answer", &out); err != nil {
		return nil, err
	}
	if out.VoiceID == "" {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "elevenlabs: the clone answer has no voice_id"}
	}
	return &sdk.CloneResponse{VoiceID: out.VoiceID}, nil
}

// alignment is the character alignment of /with-timestamps.
type alignment struct {
	Characters []string  `json:"characters"`
	Starts     []float64 `json:"character_start_times_seconds"`
	Ends       []float64 `json:"character_end_times_seconds"`
}

// words groups the characters between whitespace into words: a word
// starts when its first character starts and ends when its last one ends.
func (a *alignment) words() []sdk.WordTimestamp {
	n := min(len(a.Characters), len(a.Starts), len(a.Ends))
	var (
		out  []sdk.WordTimestamp
		word strings.Builder
		cur  sdk.WordTimestamp
	)
	flush := func() {
		if word.Len() > 0 {
			cur.Text = word.String()
			out = append(out, cur)
			word.Reset()
		}
	}
	for i := range n {
		ch := a.Characters[i]
		if strings.TrimFunc(ch, unicode.IsSpace) == "" {
			flush()
			continue
		}
		if word.Len() == 0 {
			cur = sdk.WordTimestamp{Start: a.Starts[i]}
		}
		word.WriteString(ch)
		cur.End = max(a.Ends[i], cur.Start)
	}
	flush()
	return out
}

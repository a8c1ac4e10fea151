package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"math"
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
	providerID     = "murf"
	defaultBaseURL = "https://api.murf.ai"
	defaultModel   = "GEN2"
	// maxText is Murf's per-request text limit.
	maxText = 3000
	// The speed range the rate field covers: rate is a percentage of
	// normal speed from -50 to 50.
	minSpeed, maxSpeed = 0.5, 1.5
	// maxAnswer bounds a JSON answer of /v1/speech/generate (base64 audio
	// of 3,000 characters at 48 kHz is a few MB).
	maxAnswer = 64 << 20
	// maxAudioBytes bounds a whole clip read into memory.
	maxAudioBytes = 256 << 20

	generatePath = "/v1/speech/generate"
	streamPath   = "/v1/speech/stream"
	voicesPath   = "/v1/speech/voices"
)

// Provider is the Murf plugin. It keeps only deployment settings, which
// Configure swaps atomically; every call reads one snapshot.
type Provider struct {
	cfg atomic.Pointer[config]
}

// config is one snapshot of the deployment settings.
type config struct {
	*upstream.Endpoint
	// streamURL is the root of the streaming endpoint: base_url unless
	// stream_base_url pins a region (Murf documents regional and global
	// hosts for /v1/speech/stream).
	streamURL string
}

// api is how Murf authenticates and reports errors. It is never modified.
var api = &upstream.API{
	Provider:       providerID,
	DefaultBaseURL: defaultBaseURL,
	Authorize:      func(h http.Header, key string) { h.Set("api-key", key) },
	ParseError:     parseError,
	Classify: func(e *sdk.Error) {
		// 402 is an expired subscription or a spent character quota:
		// neither the request's fault nor something a retry fixes.
		if e.UpstreamStatus == http.StatusPaymentRequired {
			e.Kind, e.Retryable = sdk.KindUpstream, false
		}
	},
}

// New returns a Provider with the default settings (the public API).
func New() *Provider {
	p := &Provider{}
	e, _ := upstream.NewEndpoint(api, nil)
	p.cfg.Store(&config{Endpoint: e, streamURL: e.BaseURL})
	return p
}

var _ sdk.Provider = (*Provider)(nil)

// settings are every key the plugin reads (sdk.DecodeSettings): the
// common ones and its own.
type settings struct {
	upstream.CommonSettings
	StreamBaseURL string `setting:"stream_base_url"`
}

// CheckSettings implements sdk.SettingsChecker: the common settings'
// checks and the plugin's own.
func (s *settings) CheckSettings() []sdk.SettingProblem {
	problems := s.CommonSettings.CheckSettings()
	if p := upstream.CheckURL("stream_base_url", s.StreamBaseURL); p != nil {
		problems = append(problems, *p)
	}
	return problems
}

// NewSettings implements sdk.SettingsDecoder, so a provider block with a
// key the plugin does not read (a typo) is refused by `voxgate config
// check` and at start.
func (p *Provider) NewSettings() any { return new(settings) }

// Configure implements sdk.Provider: the common settings of
// upstream.ParseSettings plus stream_base_url (the host of
// /v1/speech/stream, e.g. https://global.api.murf.ai; default base_url).
// Other keys are refused (NewSettings).
func (p *Provider) Configure(_ context.Context, settings map[string]string) error {
	if problems := sdk.DecodeSettings(settings, p.NewSettings()); len(problems) > 0 {
		return sdk.SettingsErr(api.Provider, problems)
	}
	e, err := upstream.NewEndpoint(api, settings)
	if err != nil {
		return err
	}
	c := &config{Endpoint: e, streamURL: e.BaseURL}
	if v := strings.TrimSpace(settings["stream_base_url"]); v != "" {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return sdk.Errorf(sdk.KindInvalidRequest, "murf settings: stream_base_url %q: want an absolute http(s) URL", v)
		}
		c.streamURL = strings.TrimRight(v, "/")
	}
	// Calls in flight keep their snapshot; only idle connections go.
	p.cfg.Swap(c).Close()
	return nil
}

// model is what the plugin knows about one Murf model.
type model struct {
	id, name string
	// rates are the sample rates offered; native is the endpoint's
	// default.
	rates  []int
	native int
	// gen2: whole clips come from /v1/speech/generate, with word
	// durations; FALCON speaks only through /v1/speech/stream.
	gen2 bool
}

// modelList lists Murf's models, as the official Python SDK names them
// (murf-ai/murf-python-sdk, src/murf/stream_input/types/text_to_speech_model.py
// and src/murf/text_to_speech/client.py at 8cbd638 of 5 March 2026, read
// 28 November 2026): GEN2 on both endpoints, FALCON on /v1/speech/stream.
func modelList() []model {
	return []model{
		// /v1/speech/generate's rates (/v1/speech/stream adds 16 kHz,
		// which GEN2's whole clips cannot have).
		{id: "GEN2", name: "Murf Gen2", rates: []int{8000, 24000, 44100, 48000}, native: 44100, gen2: true},
		{id: "FALCON", name: "Murf Falcon", rates: []int{8000, 16000, 24000, 44100, 48000}, native: 24000},
	}
}

// encodings are m's native encodings: the format values both endpoints
// document (the SDK above: MP3, WAV, FLAC, ALAW, ULAW, PCM, OGG) at the
// rates of the endpoint that serves m's clips, its default rate first.
// MP3 comes at Murf's own bitrate (no field chooses one) and not at
// 8 kHz, which is MPEG 2.5, an unofficial extension many decoders (the
// sdk's kit among them) do not read. Left out: OGG, whose codec the
// reference does not name, and ALAW and ULAW, of which it does not say
// whether they carry a WAV header.
func (m model) encodings() []sdk.Encoding {
	rates := append([]int{m.native}, slices.DeleteFunc(slices.Clone(m.rates), func(r int) bool { return r == m.native })...)
	var out []sdk.Encoding
	for _, f := range []string{sdk.FormatPCM, sdk.FormatWAV, sdk.FormatMP3, sdk.FormatFLAC} {
		for _, r := range rates {
			if f != sdk.FormatMP3 || r > 8000 {
				out = append(out, sdk.Encoding{Format: f, SampleRate: r})
			}
		}
	}
	return out
}

// murfFormats are Murf's names of the sdk formats.
var murfFormats = map[string]string{sdk.FormatPCM: "PCM", sdk.FormatWAV: "WAV", sdk.FormatMP3: "MP3", sdk.FormatFLAC: "FLAC"}

// modelIDPattern is the grammar of a Murf model id: Murf names its
// models in capitals and digits (GEN2, FALCON). An id the plugin does not
// list is passed through when it matches, and refused before any call
// otherwise.
var modelIDPattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]{1,30}$`)

// passThrough is a model Murf may have that the plugin does not list (a
// newer one), sent under the caller's id to /v1/speech/stream, the one
// endpoint that takes a model by name (/v1/speech/generate's
// modelVersion takes GEN2 only), as FALCON is: the rates both listed
// models have, /v1/speech/stream's default first; no word durations,
// which come from /v1/speech/generate only.
func passThrough(id string) model {
	return model{id: id, name: "Any other Murf model (passed through)", rates: []int{8000, 24000, 44100, 48000}, native: 24000}
}

// findModel returns the listed model id, or a pass-through model for an
// id that can be Murf's; any other id is the caller's mistake.
func findModel(id string) (model, error) {
	if i := slices.IndexFunc(modelList(), func(m model) bool { return m.id == id }); i >= 0 {
		return modelList()[i], nil
	}
	if !modelIDPattern.MatchString(id) {
		return model{}, sdk.Errorf(sdk.KindInvalidRequest, "murf: unknown model %q: a Murf model id is capitals, digits and '_', e.g. GEN2", id)
	}
	return passThrough(id), nil
}

// Describe implements sdk.Provider: the listed models and an
// sdk.AnyModel entry for the ids it passes through (passThrough).
func (p *Provider) Describe(context.Context) (*sdk.Description, error) {
	d := &sdk.Description{ID: providerID, Name: "Murf", DefaultModel: defaultModel}
	for _, m := range append(modelList(), passThrough(sdk.AnyModel)) {
		d.Models = append(d.Models, sdk.Model{
			ID:           m.id,
			Name:         m.name,
			Capabilities: sdk.Capabilities{Streaming: true, Timestamps: m.gen2, Speed: true},
			Encodings:    m.encodings(),
			MaxTextChars: maxText,
			MinSpeed:     minSpeed,
			MaxSpeed:     maxSpeed,
		})
	}
	d.Models = sdk.WithUnpublished(sdk.WithPrices(d.Models, priceTable), sdk.UnitCharacters, priceDate)
	return d, nil
}

// parseError reads Murf's error envelope {"error_message", "error_code"}
// (camelCase spellings and a bare "message" too). The code is Murf's
// error_code as text.
func parseError(body []byte) (code, message string) {
	var b struct {
		ErrorMessage      string          `json:"error_message"`
		ErrorCode         json.RawMessage `json:"error_code"`
		ErrorMessageCamel string          `json:"errorMessage"`
		ErrorCodeCamel    json.RawMessage `json:"errorCode"`
		Message           string          `json:"message"`
	}
	if json.Unmarshal(body, &b) != nil {
		return "", ""
	}
	raw := b.ErrorCode
	if len(raw) == 0 {
		raw = b.ErrorCodeCamel
	}
	if raw = bytes.TrimSpace(raw); len(raw) > 0 && string(raw) != "null" {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			s = string(raw)
		}
		code = s
	}
	for _, m := range []string{b.ErrorMessage, b.ErrorMessageCamel, b.Message} {
		if m != "" {
			return code, m
		}
	}
	return code, ""
}

// voiceEntry is an entry of GET /v1/speech/voices.
type voiceEntry struct {
	VoiceID     string `json:"voiceId"`
	DisplayName string `json:"displayName"`
	Gender      string `json:"gender"`
	Locale      string `json:"locale"`
}

// Voices implements sdk.Provider with GET /v1/speech/voices for the model
// (the voices differ between GEN2 and FALCON).
func (p *Provider) Voices(ctx context.Context, req *sdk.VoicesRequest) ([]sdk.Voice, error) {
	id := req.Model
	if id == "" {
		id = defaultModel
	}
	if _, err := findModel(id); err != nil {
		return nil, err
	}
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.BaseURL+voicesPath+"?"+url.Values{"model": {id}}.Encode(), nil)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "murf: %v", err)
	}
	var list []voiceEntry
	if err := cfg.DoJSON(ctx, hreq, req.Credentials.APIKey, true, "voice list", &list); err != nil {
		return nil, err
	}
	voices := make([]sdk.Voice, 0, len(list))
	for _, v := range list {
		name := v.DisplayName
		if name == "" {
			name = v.VoiceID
		}
		voices = append(voices, sdk.Voice{ID: v.VoiceID, Name: name, Language: v.Locale, Gender: gender(v.Gender)})
	}
	return voices, nil
}

// gender maps Murf's Male/Female/NonBinary to the gateway's words.
func gender(g string) string {
	switch strings.ToLower(g) {
	case "male":
		return "male"
	case "female":
		return "female"
	case "nonbinary":
		return "neutral"
	}
	return strings.ToLower(g)
}

// options are the providerOptions the plugin accepts: documented fields
// of the synthesis bodies.
type options struct {
	Pitch                       *int            `json:"pitch"`
	Style                       *string         `json:"style"`
	Variation                   *int            `json:"variation"`
	Locale                      *string         `json:"locale"`
	MultiNativeLocale           *string         `json:"multiNativeLocale"`
	PronunciationDictionary     json.RawMessage `json:"pronunciationDictionary"`
	AudioDuration               *float64        `json:"audioDuration"`
	WordDurationsAsOriginalText *bool           `json:"wordDurationsAsOriginalText"`
}

// pronunciation is an entry of pronunciationDictionary, as the published
// document's PronunciationDetail has it.
type pronunciation struct {
	Type          string `json:"type"`
	Pronunciation string `json:"pronunciation"`
}

// check checks o against Murf's reference (the published document's
// descriptions, internal/fakeupstream/murf/apispec, and the API
// reference's ranges): pitch -50 to 50, variation 0 to 5 and Gen2 only,
// pronunciationDictionary an object of {type: IPA or SAY_AS,
// pronunciation}.
func (o *options) check(gen2 bool) error {
	c := upstream.NewCheck(providerID)
	upstream.InRange(c, "pitch", o.Pitch, -50, 50)
	if o.Variation != nil && !gen2 {
		c.Fail("variation", "is only available for GEN2")
	}
	upstream.InRange(c, "variation", o.Variation, 0, 5)
	if d := bytes.TrimSpace(o.PronunciationDictionary); len(d) > 0 && string(d) != "null" {
		var dict map[string]pronunciation
		if json.Unmarshal(d, &dict) != nil {
			c.Fail("pronunciationDictionary", "must be an object of {type, pronunciation} entries")
		}
		for _, word := range slices.Sorted(maps.Keys(dict)) {
			e := dict[word]
			c.OneOf("pronunciationDictionary."+word+".type", &e.Type, "IPA", "SAY_AS")
			c.NotEmpty("pronunciationDictionary."+word+".pronunciation", &e.Pronunciation)
		}
	}
	return c.Err()
}

// acceptedOptions names the options fields, for error messages.
func acceptedOptions() []string {
	return []string{"pitch", "style", "variation", "locale", "multiNativeLocale", "pronunciationDictionary", "audioDuration", "wordDurationsAsOriginalText"}
}

// voiceFields are the fields both synthesis bodies share.
type voiceFields struct {
	VoiceID                 string          `json:"voiceId"`
	Text                    string          `json:"text"`
	Format                  string          `json:"format"`
	SampleRate              int             `json:"sampleRate"`
	ChannelType             string          `json:"channelType"`
	Rate                    *int            `json:"rate,omitempty"`
	Pitch                   *int            `json:"pitch,omitempty"`
	Style                   *string         `json:"style,omitempty"`
	Variation               *int            `json:"variation,omitempty"`
	Locale                  *string         `json:"locale,omitempty"`
	MultiNativeLocale       *string         `json:"multiNativeLocale,omitempty"`
	PronunciationDictionary json.RawMessage `json:"pronunciationDictionary,omitempty"`
}

// generateBody is the body of POST /v1/speech/generate.
type generateBody struct {
	voiceFields
	EncodeAsBase64              bool     `json:"encodeAsBase64"`
	ModelVersion                string   `json:"modelVersion"`
	AudioDuration               *float64 `json:"audioDuration,omitempty"`
	WordDurationsAsOriginalText *bool    `json:"wordDurationsAsOriginalText,omitempty"`
}

// streamBody is the body of POST /v1/speech/stream.
type streamBody struct {
	voiceFields
	Model string `json:"model"`
}

// call is a validated request: exactly one of generate and stream is set,
// by the endpoint it goes to.
type call struct {
	generate  *generateBody
	stream    *streamBody
	enc       sdk.Encoding // what the caller gets
	mediaType string
}

// align is the frame size of c's audio: PCM streams are cut at whole
// samples.
func (c *call) align() int {
	if c.enc.Format == sdk.FormatPCM {
		return 2
	}
	return 1
}

// prepare validates req and builds the body of the endpoint that serves
// it: /v1/speech/generate for GEN2's whole clips, /v1/speech/stream for
// streams and for FALCON (which speaks only there). Failures are the
// caller's (KindInvalidRequest) and cost no upstream call.
func prepare(req *sdk.SynthesizeRequest, stream bool) (*call, error) {
	m, err := findModel(req.Model)
	if err != nil {
		return nil, err
	}
	if req.Voice == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "murf: a voice id is required (e.g. en-US-natalie)")
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "murf: nothing to say")
	}
	encodings := m.encodings()
	format := cmp.Or(req.Format, encodings[0].Format)
	mm := sdk.Model{Encodings: encodings}
	e, ok := mm.FindEncoding(format, req.SampleRate, req.Bitrate)
	if !ok {
		names := make([]string, len(encodings))
		for i, e := range encodings {
			names[i] = e.String()
		}
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "murf: %s does not offer %s; it offers %s",
			m.id, sdk.Encoding{Format: format, SampleRate: req.SampleRate, Bitrate: req.Bitrate}, strings.Join(names, ", "))
	}
	c := &call{enc: e, mediaType: sdk.MediaType(e)}
	f := voiceFields{VoiceID: req.Voice, Text: req.Text, Format: murfFormats[e.Format], SampleRate: e.SampleRate, ChannelType: "MONO"}
	if req.Speed != 0 && req.Speed != 1 {
		if req.Speed < minSpeed || req.Speed > maxSpeed {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "murf: speed %g is outside %g to %g", req.Speed, minSpeed, maxSpeed)
		}
		r := int(math.Round((req.Speed - 1) * 100))
		f.Rate = &r
	}
	var o options
	if err := upstream.DecodeOptions(providerID, req.Options, &o, acceptedOptions()...); err != nil {
		return nil, err
	}
	if err := o.check(m.gen2); err != nil {
		return nil, err
	}
	f.Pitch, f.Style, f.Variation = o.Pitch, o.Style, o.Variation
	f.Locale, f.MultiNativeLocale = o.Locale, o.MultiNativeLocale
	if string(bytes.TrimSpace(o.PronunciationDictionary)) != "null" {
		f.PronunciationDictionary = o.PronunciationDictionary
	}
	if m.gen2 && !stream {
		c.generate = &generateBody{voiceFields: f, EncodeAsBase64: true, ModelVersion: "GEN2",
			AudioDuration: o.AudioDuration, WordDurationsAsOriginalText: o.WordDurationsAsOriginalText}
		return c, nil
	}
	if o.AudioDuration != nil || o.WordDurationsAsOriginalText != nil {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "murf: audioDuration and wordDurationsAsOriginalText apply to GEN2 whole clips only")
	}
	c.stream = &streamBody{voiceFields: f, Model: m.id}
	return c, nil
}

// post sends body to the endpoint at root+path and returns the successful
// response. Synthesis creates nothing, so it is retried like any
// idempotent call.
func (cfg *config) post(ctx context.Context, root, path string, body any, key string) (*http.Response, error) {
	hreq, err := upstream.NewJSONRequest(ctx, http.MethodPost, root+path, body)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "murf: %v", err)
	}
	return cfg.Do(ctx, hreq, key, true)
}

var _ sdk.Planner = (*Provider)(nil)

// Plan implements sdk.Planner for what goes to /v1/speech/stream, whose
// answer is the audio itself: streams of both models, and FALCON's whole
// clips. It refuses, with KindUnsupported so that the gateway calls
// Synthesize instead, GEN2's whole clips and word timestamps: they come
// from /v1/speech/generate as JSON around base64 audio.
func (p *Provider) Plan(_ context.Context, req *sdk.PlanRequest) (*sdk.Plan, error) {
	c, err := prepare(req.Request, req.Stream)
	if err != nil {
		return nil, err
	}
	if req.Request.Credentials.APIKey == "" {
		// As Synthesize would fail, whichever endpoint serves the call.
		return nil, sdk.Errorf(sdk.KindUnauthorized, "murf: no API key: configure the gateway's managed key or send your own")
	}
	if req.Request.Timestamps || c.stream == nil {
		return nil, sdk.Errorf(sdk.KindUnsupported, "murf: GEN2 whole clips and word timestamps come as JSON the plugin decodes")
	}
	cfg := p.cfg.Load()
	plan, err := cfg.Plan(http.MethodPost, cfg.streamURL+streamPath, c.stream, req.Request.Credentials.APIKey, nil)
	if err != nil {
		return nil, err
	}
	plan.MediaType, plan.FrameSize = c.mediaType, c.align()
	return plan, nil
}

// Explain implements sdk.Planner with the mapping Synthesize uses.
func (p *Provider) Explain(_ context.Context, f *sdk.Failure) error {
	return p.cfg.Load().Explain(f)
}

// generateAnswer is the answer of POST /v1/speech/generate.
type generateAnswer struct {
	AudioFile     string  `json:"audioFile"`
	EncodedAudio  *string `json:"encodedAudio"`
	WordDurations []struct {
		Word    string  `json:"word"`
		StartMs float64 `json:"startMs"`
		EndMs   float64 `json:"endMs"`
	} `json:"wordDurations"`
	Warning string `json:"warning"`
	// ConsumedCharacterCount is the characters Murf charged the call.
	ConsumedCharacterCount int64 `json:"consumedCharacterCount"`
}

// Synthesize implements sdk.Provider: GEN2 from /v1/speech/generate (base64
// audio and word durations), FALCON from /v1/speech/stream read whole.
func (p *Provider) Synthesize(ctx context.Context, req *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	c, err := prepare(req, false)
	if err != nil {
		return nil, err
	}
	if req.Timestamps && c.generate == nil {
		return nil, sdk.Errorf(sdk.KindUnsupported, "murf: %s gives no word timestamps; use GEN2", req.Model)
	}
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	key := req.Credentials.APIKey
	out := &sdk.SynthesizeResponse{MediaType: c.mediaType}
	if c.stream != nil {
		resp, err := cfg.post(ctx, cfg.streamURL, streamPath, c.stream, key)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if out.Audio, err = upstream.ReadBody(resp.Body, resp.ContentLength, maxAudioBytes); err != nil {
			return nil, upstream.TransportError(ctx, providerID, err)
		}
	} else {
		if out.Audio, err = cfg.generate(ctx, c.generate, key, req.Timestamps, out); err != nil {
			return nil, err
		}
	}
	if len(out.Audio) == 0 {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "murf: the answer holds no audio"}
	}
	if len(out.Audio)%c.align() != 0 {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "murf: truncated PCM (odd byte count)"}
	}
	return out, nil
}

// generate calls /v1/speech/generate and returns the audio, from the
// answer's base64 or, when Murf answered only an audioFile URL, from that
// URL; with timestamps it fills out's word timings. A warning in the
// answer goes to out.Warnings.
func (cfg *config) generate(ctx context.Context, body *generateBody, key string, timestamps bool, out *sdk.SynthesizeResponse) ([]byte, error) {
	resp, err := cfg.post(ctx, cfg.BaseURL, generatePath, body, key)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var a generateAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswer)).Decode(&a); err != nil {
		return nil, upstream.BodyError(ctx, providerID, "synthesis answer", err)
	}
	if a.ConsumedCharacterCount > 0 {
		out.Billed = []sdk.BilledUsage{{Unit: sdk.UnitCharacters, Quantity: a.ConsumedCharacterCount}}
	}
	if a.Warning != "" {
		out.Warnings = append(out.Warnings, "murf: "+a.Warning)
	}
	if timestamps {
		for _, w := range a.WordDurations {
			if strings.TrimSpace(w.Word) == "" {
				continue
			}
			out.Timestamps = append(out.Timestamps, sdk.WordTimestamp{Text: w.Word, Start: w.StartMs / 1000, End: max(w.EndMs, w.StartMs) / 1000})
		}
	}
	if a.EncodedAudio != nil && *a.EncodedAudio != "" {
		audio, err := base64.StdEncoding.DecodeString(*a.EncodedAudio)
		if err != nil {
			return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "murf: encodedAudio is not base64"}
		}
		return audio, nil
	}
	if a.AudioFile == "" {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "murf: the answer has neither encodedAudio nor audioFile"}
	}
	return cfg.download(ctx, a.AudioFile)
}

// download fetches an audioFile URL: a presigned link on Murf's storage,
// so it goes without the key (which must not leave for another host).
func (cfg *config) download(ctx context.Context, link string) ([]byte, error) {
	u, err := url.Parse(link)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "murf: audioFile is not an http(s) URL"}
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "murf: %v", err)
	}
	resp, err := upstream.Do(ctx, cfg.Client, hreq, upstream.Policy{Idempotent: true, MaxAttempts: cfg.MaxAttempts, Provider: providerID})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		e := upstream.ErrorFromResponse(resp, providerID, nil)
		e.Message = "murf: downloading audioFile: " + strings.TrimPrefix(e.Message, "murf: ")
		return nil, e
	}
	audio, err := upstream.ReadBody(resp.Body, resp.ContentLength, maxAudioBytes)
	if err != nil {
		return nil, upstream.TransportError(ctx, providerID, err)
	}
	return audio, nil
}

// Stream implements sdk.Provider with /v1/speech/stream, forwarding the
// audio as it arrives.
func (p *Provider) Stream(ctx context.Context, req *sdk.SynthesizeRequest, send func(sdk.Chunk) error) error {
	c, err := prepare(req, true)
	if err != nil {
		return err
	}
	cfg := p.cfg.Load()
	resp, err := cfg.post(ctx, cfg.streamURL, streamPath, c.stream, req.Credentials.APIKey)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = upstream.Forward(ctx, resp.Body, send, upstream.ForwardOptions{MediaType: c.mediaType, Align: c.align(), Provider: providerID})
	return err
}

// Clone implements sdk.Provider: Murf's API has no voice cloning.
func (p *Provider) Clone(context.Context, *sdk.CloneRequest) (*sdk.CloneResponse, error) {
	return nil, sdk.Errorf(sdk.KindUnsupported, "murf: voice cloning is not offered by Murf's API")
}

package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

const (
	providerID     = "fal"
	defaultBaseURL = "https://fal.run"
	defaultModel   = "fal-ai/kokoro/american-english"
	// maxAudioBytes bounds a downloaded clip.
	maxAudioBytes = 256 << 20
)

// Provider is the fal plugin. It keeps only deployment settings (the
// endpoint and the model list), which Configure swaps atomically; every
// call reads one snapshot.
type Provider struct {
	cfg atomic.Pointer[config]
}

// config is one snapshot of the deployment settings.
type config struct {
	*upstream.Endpoint
	models []model
}

// api is how fal authenticates and reports errors. It is never modified.
var api = &upstream.API{
	Provider:       providerID,
	DefaultBaseURL: defaultBaseURL,
	Authorize:      func(h http.Header, key string) { h.Set("Authorization", "Key "+key) },
	ParseError:     parseError,
}

// model is what the plugin knows about one fal endpoint: how its input
// names the text and the voice, and what its answer holds.
type model struct {
	// id is the fal model path, e.g. fal-ai/kokoro/american-english; the
	// request goes to {base_url}/{id}.
	id, name string
	// textField and voiceField name the input fields of the text and the
	// voice; speedField, if set, takes speed natively in
	// [minSpeed, maxSpeed].
	textField, voiceField, speedField string
	minSpeed, maxSpeed                float64
	// voiceIsURL: the voice is the http(s) URL of a reference recording
	// (F5-TTS's ref_audio_url), checked here so that a voice id given by
	// mistake fails with a clear message instead of fal's download error.
	voiceIsURL bool
	// defaults are input fields sent unless providerOptions sets them:
	// F5-TTS requires a model_type that most callers never want to choose.
	defaults map[string]any
	// format is what the answer's audio file is (sdk.FormatWAV or
	// sdk.FormatMP3); rate its sample rate, 0 if unknown. format is empty
	// for a pass-through model: whatever fal answers, WAV or MP3.
	format string
	rate   int
	voices []sdk.Voice
	// openVoices: the model takes voices no list can hold (F5-TTS's
	// URLs, or the unknown voices of a pass-through model), so Voices
	// says KindUnsupported rather than an empty list, which the gateway
	// would take as "no voice is valid" when a voice is saved.
	openVoices bool
}

func kokoroVoices(lang string, ids ...string) []sdk.Voice {
	out := make([]sdk.Voice, 0, len(ids))
	for _, id := range ids {
		g := "female"
		if len(id) > 1 && id[1] == 'm' {
			g = "male"
		}
		_, name, _ := strings.Cut(id, "_")
		out = append(out, sdk.Voice{ID: id, Name: strings.ToUpper(name[:1]) + name[1:], Language: lang, Gender: g})
	}
	return out
}

// builtinModels are the models the plugin describes out of the box, each
// with its documented input: Kokoro's English endpoints (prompt, voice,
// speed), Orpheus (text, voice) and F5-TTS (gen_text and the URL of a
// reference recording), the last two being the other fal models the public
// @speech-sdk/core client names. Others are added with the models setting
// or passed through (passThrough).
func builtinModels() []model {
	kokoro := func(id, name, lang string, voices ...string) model {
		return model{id: id, name: name, textField: "prompt", voiceField: "voice", speedField: "speed",
			minSpeed: 0.1, maxSpeed: 5, format: sdk.FormatWAV, rate: 24000, voices: kokoroVoices(lang, voices...)}
	}
	var orpheus []sdk.Voice
	for _, v := range []struct{ id, gender string }{
		{"tara", "female"}, {"leah", "female"}, {"jess", "female"}, {"leo", "male"},
		{"dan", "male"}, {"mia", "female"}, {"zac", "male"}, {"zoe", "female"},
	} {
		orpheus = append(orpheus, sdk.Voice{ID: v.id, Name: strings.ToUpper(v.id[:1]) + v.id[1:], Language: "en", Gender: v.gender})
	}
	return []model{
		kokoro("fal-ai/kokoro/american-english", "Kokoro (American English)", "en-US",
			"af_heart", "af_alloy", "af_aoede", "af_bella", "af_jessica", "af_kore", "af_nicole", "af_nova", "af_river", "af_sarah", "af_sky",
			"am_adam", "am_echo", "am_eric", "am_fenrir", "am_liam", "am_michael", "am_onyx", "am_puck", "am_santa"),
		kokoro("fal-ai/kokoro/british-english", "Kokoro (British English)", "en-GB",
			"bf_alice", "bf_emma", "bf_isabella", "bf_lily", "bm_daniel", "bm_fable", "bm_george", "bm_lewis"),
		{id: "fal-ai/orpheus-tts", name: "Orpheus TTS", textField: "text", voiceField: "voice",
			format: sdk.FormatWAV, rate: 24000, voices: orpheus},
		// F5-TTS has no voices: it speaks like a reference recording whose
		// URL is the request's voice (a saved voice can hold it).
		{id: "fal-ai/f5-tts", name: "F5-TTS", textField: "gen_text", voiceField: "ref_audio_url", voiceIsURL: true, openVoices: true,
			defaults: map[string]any{"model_type": "F5-TTS"}, format: sdk.FormatWAV, rate: 24000},
	}
}

// passThrough is a model the plugin was not told about, sent as it is
// named to fal: the input is {"text", "voice"}, the shape most fal TTS
// apps share (Orpheus, ElevenLabs, MiniMax, Dia, Chatterbox, ...) and the
// one the public @speech-sdk/core client sends to every fal model. Its
// capabilities are the conservative ones: no native speed, no format or
// sample-rate choice (the answer is WAV or MP3, whichever the app makes),
// no known voices. passThroughModel describes them to the gateway.
func passThrough(id string) model {
	return model{id: id, name: id, textField: "text", voiceField: "voice", openVoices: true}
}

// maxModelIDLen bounds a model id, far above any fal TTS app id (those
// seen are under 50 characters), so that a caller cannot send a huge path.
const maxModelIDLen = 200

// validModelID reports whether id is a fal model id that can go into the
// URL path as it is: at least two segments separated by single slashes
// (fal-ai/orpheus-tts, <owner>/<app>/<path>), each made of ASCII letters,
// digits, '-', '_' and '.' and starting with a letter or digit. Model ids
// come from callers, so anything that could leave the app's path or change
// the URL ("..", "?", "#", "%", spaces, empty segments) is refused rather
// than escaped: no fal app is named that way.
func validModelID(id string) bool {
	if len(id) > maxModelIDLen {
		return false
	}
	segments := strings.Split(id, "/")
	if len(segments) < 2 {
		return false
	}
	for _, seg := range segments {
		if seg == "" || !isAlnum(seg[0]) {
			return false
		}
		for i := range len(seg) {
			if c := seg[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
				return false
			}
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// parseModels reads the models setting: comma-separated fal model ids,
// each optionally followed by "=wav" or "=mp3" (what its audio file is;
// wav if absent). Such a model is described in the catalog and sent the
// input most fal TTS endpoints share, {"text", "voice"}; its voices come
// from the setting "voices.<id>" (comma-separated), if any. Listing a
// built-in model is accepted, so that a deployment written before it was
// built in keeps working: it keeps its documented input and format (a
// different declared format is an error), and voices.<id>, if set,
// replaces its voice list.
func parseModels(settings map[string]string) ([]model, error) {
	models := builtinModels()
	seen := map[string]bool{}
	for _, entry := range strings.Split(settings["models"], ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		id, format, declared := strings.Cut(entry, "=")
		id, format = strings.Trim(strings.TrimSpace(id), "/"), cmp.Or(strings.TrimSpace(format), sdk.FormatWAV)
		if !validModelID(id) {
			return nil, fmt.Errorf("models: %q is not a fal model id such as fal-ai/orpheus-tts", id)
		}
		if format != sdk.FormatWAV && format != sdk.FormatMP3 {
			return nil, fmt.Errorf("models: %q: the audio format is wav or mp3, not %q", id, format)
		}
		if seen[id] {
			return nil, fmt.Errorf("models: %q is listed twice", id)
		}
		seen[id] = true
		var voices []sdk.Voice
		for _, v := range strings.Split(settings["voices."+id], ",") {
			if v = strings.TrimSpace(v); v != "" {
				voices = append(voices, sdk.Voice{ID: v, Name: v})
			}
		}
		if i := slices.IndexFunc(models, func(m model) bool { return m.id == id }); i >= 0 {
			if declared && format != models[i].format {
				return nil, fmt.Errorf("models: %q is built in and answers %s, not %s", id, models[i].format, format)
			}
			if voices != nil {
				models[i].voices, models[i].openVoices = voices, false
			}
			continue
		}
		models = append(models, model{id: id, name: id, textField: "text", voiceField: "voice", format: format, voices: voices})
	}
	return models, nil
}

// lookup returns the model id names: a configured one, or, for an id
// that is safe to put in the URL, a pass-through model. Any other id is
// an invalid request, refused before anything is sent.
func (c *config) lookup(id string) (model, error) {
	id = cmp.Or(id, defaultModel)
	if i := slices.IndexFunc(c.models, func(m model) bool { return m.id == id }); i >= 0 {
		return c.models[i], nil
	}
	if !validModelID(id) {
		return model{}, sdk.Errorf(sdk.KindInvalidRequest,
			"fal: %q is not a fal model id: expected owner/app[/path], e.g. fal-ai/orpheus-tts, each part of letters, digits, '-', '_' or '.'", id)
	}
	return passThrough(id), nil
}

// New returns a Provider with the default settings (the public API and
// the built-in models).
func New() *Provider {
	p := &Provider{}
	e, _ := upstream.NewEndpoint(api, nil)
	p.cfg.Store(&config{Endpoint: e, models: builtinModels()})
	return p
}

var _ sdk.Provider = (*Provider)(nil)

// falSettings are every key the plugin reads: the common settings,
// models and voices.<model id>.
type falSettings struct {
	upstream.CommonSettings
	Models string            `setting:"models"`
	Voices map[string]string `setting:"voices.*"`
}

// ValidateSettings implements sdk.SettingsValidator: unknown keys and
// malformed values of the common settings, and every mistake
// parseModels finds in models.
func (p *Provider) ValidateSettings(_ context.Context, settings map[string]string) []sdk.SettingProblem {
	problems := sdk.DecodeSettings(settings, new(falSettings))
	if _, err := parseModels(settings); err != nil {
		problems = append(problems, sdk.SettingProblem{Path: "models", Message: strings.TrimPrefix(err.Error(), "models: ")})
	}
	return problems
}

// Configure implements sdk.Provider: the common settings of
// upstream.ParseSettings (base_url is the sync API's root,
// https://fal.run), plus models and voices.<id> (see parseModels).
func (p *Provider) Configure(ctx context.Context, settings map[string]string) error {
	if problems := p.ValidateSettings(ctx, settings); len(problems) > 0 {
		return sdk.SettingsErr(api.Provider, problems)
	}
	e, err := upstream.NewEndpoint(api, settings)
	if err != nil {
		return err
	}
	models, err := parseModels(settings)
	if err != nil {
		return sdk.Errorf(sdk.KindInvalidRequest, "fal settings: %v", err)
	}
	p.cfg.Swap(&config{Endpoint: e, models: models}).Close()
	return nil
}

// describe is a listed model as the gateway sees it. Its one native
// encoding is the file the app answers (the app pages' output schemas:
// Kokoro, Orpheus and F5-TTS answer 24 kHz WAV, read 2026-11-28): fal's
// TTS apps take no format, rate or bitrate, so the file is passed on as
// fal makes it. A model added by the models setting has an unknown rate
// (0: the app's own).
func (m model) describe() sdk.Model {
	return sdk.Model{
		ID:           m.id,
		Name:         m.name,
		Capabilities: sdk.Capabilities{Speed: m.speedField != ""},
		Encodings:    []sdk.Encoding{{Format: m.format, SampleRate: m.rate}},
		MinSpeed:     m.minSpeed,
		MaxSpeed:     m.maxSpeed,
	}
}

// passThroughModel is the sdk.AnyModel entry of the description: what
// the gateway is to assume of a fal model id the plugin does not list
// (passThrough). It claims only what holds for any fal TTS app through
// the sync API: no streaming, timestamps, cloning or native speed, no
// known sample rate, and WAV or MP3, whichever the app makes (prepare
// accepts either being asked for, since the gateway asks for one of the
// listed formats when it decodes a clip).
var passThroughModel = sdk.Model{
	ID:            sdk.AnyModel,
	Name:          "Any other fal TTS app (passed through)",
	OutputFormats: []string{sdk.FormatWAV, sdk.FormatMP3},
}

// Describe implements sdk.Provider: the built-in and configured models,
// and passThroughModel for the ids it does not list (the plugin cannot
// know fal's catalog, so it passes them through). None streams (the sync
// API answers when the file is made), gives timestamps or clones; Kokoro
// takes speed natively.
func (p *Provider) Describe(context.Context) (*sdk.Description, error) {
	cfg := p.cfg.Load()
	d := &sdk.Description{ID: providerID, Name: "fal", DefaultModel: defaultModel}
	for _, m := range cfg.models {
		d.Models = append(d.Models, m.describe())
	}
	pt := passThroughModel
	pt.OutputFormats = slices.Clone(pt.OutputFormats) // the caller may keep and change it
	d.Models = append(d.Models, pt)
	d.Models = sdk.WithUnpublished(sdk.WithPrices(d.Models, priceTable), sdk.UnitCharacters, priceDate)
	return d, nil
}

// parseError reads fal's error bodies: {"detail": "message"}, or the
// validation errors of a 422, {"detail": [{"loc": [...], "msg", "type"}]}
// (the first is reported, its type as the code).
func parseError(body []byte) (code, message string) {
	var b struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &b) != nil {
		return "", ""
	}
	var msg string
	if json.Unmarshal(b.Detail, &msg) == nil {
		return "", msg
	}
	var list []struct {
		Loc  []any  `json:"loc"`
		Msg  string `json:"msg"`
		Type string `json:"type"`
	}
	if json.Unmarshal(b.Detail, &list) != nil || len(list) == 0 {
		return "", ""
	}
	loc := make([]string, 0, len(list[0].Loc))
	for _, l := range list[0].Loc {
		loc = append(loc, fmt.Sprint(l))
	}
	if len(loc) > 0 {
		return list[0].Type, strings.Join(loc, ".") + ": " + list[0].Msg
	}
	return list[0].Type, list[0].Msg
}

// Voices implements sdk.Provider: the documented voices of the model
// (fal has no voice list endpoint). F5-TTS and pass-through models have
// no list: their voices are URLs, or unknown to the plugin.
func (p *Provider) Voices(_ context.Context, req *sdk.VoicesRequest) ([]sdk.Voice, error) {
	m, err := p.cfg.Load().lookup(req.Model)
	if err != nil {
		return nil, err
	}
	if m.openVoices {
		if m.voiceIsURL {
			return nil, sdk.Errorf(sdk.KindUnsupported, "fal: %s has no voice list: its voice is the http(s) URL of a reference recording", m.id)
		}
		return nil, sdk.Errorf(sdk.KindUnsupported, "fal: %s is passed through to fal as it is and its voices are not known (list it in the models setting with voices.<id> to describe them)", m.id)
	}
	return slices.Clone(m.voices), nil
}

// call is a validated request.
type call struct {
	model model
	body  map[string]any
}

// prepare validates req and builds the input. providerOptions is any
// JSON object: its fields go into the input as they are (each fal model
// has its own), except the text, voice and speed fields, which come from
// the request.
func prepare(cfg *config, req *sdk.SynthesizeRequest) (*call, error) {
	m, err := cfg.lookup(req.Model)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "fal: nothing to say")
	}
	switch {
	case m.format != "":
		desc := m.describe()
		if _, err := upstream.ChooseEncoding(providerID, &desc, req); err != nil {
			return nil, err
		}
	case req.Format == "" || req.Format == sdk.FormatWAV || req.Format == sdk.FormatMP3:
		// A pass-through model is described as answering WAV or MP3, so
		// the gateway asks for one of them when it decodes the clip. fal
		// apps have no common format field to pass the choice on in: the
		// answer is the app's file as it is, and its media type says
		// which of the two it is (the gateway decodes by media type).
	default:
		return nil, sdk.Errorf(sdk.KindInvalidRequest,
			"fal: %s is passed through as it is, so it answers WAV or MP3, whichever fal makes, not %s: list it in the models setting with =wav or =mp3 to declare which", m.id, req.Format)
	}
	if m.format == "" && (req.SampleRate != 0 || req.Bitrate != 0) {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "fal: %s has no sample rate or bitrate choice", m.id)
	}
	body := map[string]any{}
	if opts := bytes.TrimSpace(req.Options); len(opts) > 0 && !bytes.Equal(opts, []byte("null")) {
		if err := json.Unmarshal(opts, &body); err != nil {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "fal: providerOptions must be a JSON object")
		}
	}
	for _, f := range []string{m.textField, m.voiceField, m.speedField} {
		if _, set := body[f]; set && f != "" {
			return nil, sdk.InvalidOption(f, "fal: providerOptions field %q is set from the request itself", f)
		}
	}
	for k, v := range m.defaults {
		if _, set := body[k]; !set {
			body[k] = v
		}
	}
	body[m.textField] = req.Text
	if req.Voice != "" {
		if m.voiceIsURL {
			if u, err := url.Parse(req.Voice); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, sdk.Errorf(sdk.KindInvalidRequest, "fal: the voice of %s is the http(s) URL of a reference recording, not %q", m.id, req.Voice)
			}
		}
		body[m.voiceField] = req.Voice
	}
	if req.Speed != 0 && req.Speed != 1 {
		if m.speedField == "" {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "fal: %s takes no speed", m.id)
		}
		if req.Speed < m.minSpeed || req.Speed > m.maxSpeed {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "fal: speed %g is outside %g to %g", req.Speed, m.minSpeed, m.maxSpeed)
		}
		body[m.speedField] = req.Speed
	}
	return &call{model: m, body: body}, nil
}

// file is fal's File object.
type file struct {
	URL         string `json:"url"`
	ContentType string `json:"content_type"`
}

// answer is the output of a TTS endpoint: the audio File under "audio"
// (most models) or "audio_url" (a few, such as F5-TTS).
type answer struct {
	Audio    *file `json:"audio"`
	AudioURL *file `json:"audio_url"`
}

// Synthesize implements sdk.Provider: POST {base_url}/{model} with the
// input, then the audio file it names, downloaded with the same pooled
// client but without the key (the file is on a storage host, not fal's
// API).
func (p *Provider) Synthesize(ctx context.Context, req *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	if req.Timestamps {
		return nil, sdk.Errorf(sdk.KindUnsupported, "fal: the models give no word timestamps")
	}
	cfg := p.cfg.Load()
	c, err := prepare(cfg, req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	hreq, err := upstream.NewJSONRequest(ctx, http.MethodPost, cfg.BaseURL+"/"+c.model.id, c.body)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "fal: %v", err)
	}
	var out answer
	if err := cfg.DoJSON(ctx, hreq, req.Credentials.APIKey, true, "answer", &out); err != nil {
		return nil, err
	}
	f := cmp.Or(out.Audio, out.AudioURL)
	if f == nil || f.URL == "" {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "fal: the answer names no audio file"}
	}
	audio, contentType, err := download(ctx, cfg, f.URL)
	if err != nil {
		return nil, err
	}
	mediaType, format := mediaTypeOf(cmp.Or(f.ContentType, contentType))
	switch {
	case format == "":
		// Neither WAV nor MP3: the gateway takes no other container.
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: fmt.Sprintf("fal: %s answered %q, which is neither WAV nor MP3", c.model.id, cmp.Or(f.ContentType, contentType))}
	case c.model.format != "" && format != c.model.format:
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: fmt.Sprintf("fal: %s answered %q, not the %s it is configured as", c.model.id, cmp.Or(f.ContentType, contentType), c.model.format)}
	}
	return &sdk.SynthesizeResponse{Audio: audio, MediaType: mediaType}, nil
}

// download fetches a File's URL: http(s) through the endpoint's client
// (retried like any idempotent call, no credentials), or a base64 data
// URI, which fal returns when asked for sync_mode.
func download(ctx context.Context, cfg *config, raw string) ([]byte, string, error) {
	if rest, ok := strings.CutPrefix(raw, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		mt, isB64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isB64 {
			return nil, "", &sdk.Error{Kind: sdk.KindUpstream, Message: "fal: the audio data URI is not base64"}
		}
		audio, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, "", &sdk.Error{Kind: sdk.KindUpstream, Message: "fal: the audio data URI is not base64"}
		}
		return audio, mt, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, "", &sdk.Error{Kind: sdk.KindUpstream, Message: "fal: the audio file URL is not an http(s) URL"}
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", sdk.Errorf(sdk.KindInternal, "fal: %v", err)
	}
	resp, err := upstream.Do(ctx, cfg.Client, hreq, upstream.Policy{Idempotent: true, MaxAttempts: cfg.MaxAttempts, Provider: providerID})
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		// The file went missing or its link expired: fal's failure, not
		// the caller's request or key.
		e := upstream.ErrorFromResponse(resp, providerID, nil)
		e.Message = "fal: downloading the audio file: " + strings.TrimPrefix(e.Message, "fal: ")
		if e.Kind == sdk.KindInvalidRequest || e.Kind == sdk.KindUnauthorized {
			e.Kind = sdk.KindUpstream
		}
		return nil, "", e
	}
	audio, err := upstream.ReadBody(resp.Body, resp.ContentLength, maxAudioBytes)
	if err != nil {
		return nil, "", upstream.TransportError(ctx, providerID, err)
	}
	return audio, resp.Header.Get("Content-Type"), nil
}

// mediaTypeOf maps a File's content type to the gateway's media type and
// format.
func mediaTypeOf(contentType string) (mediaType, format string) {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch mt {
	case "audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave":
		return "audio/wav", sdk.FormatWAV
	case "audio/mpeg", "audio/mp3":
		return "audio/mpeg", sdk.FormatMP3
	}
	return mt, ""
}

// Clone implements sdk.Provider: fal's TTS endpoints take reference audio
// per request (e.g. F5-TTS's ref_audio_url) but none creates a voice.
func (p *Provider) Clone(context.Context, *sdk.CloneRequest) (*sdk.CloneResponse, error) {
	return nil, sdk.Errorf(sdk.KindUnsupported, "fal: voice cloning is not supported")
}

// Stream implements sdk.Provider: the sync API answers when the file is
// made, so there is nothing to stream.
func (p *Provider) Stream(context.Context, *sdk.SynthesizeRequest, func(sdk.Chunk) error) error {
	return sdk.Errorf(sdk.KindUnsupported, "fal: streaming is not supported")
}

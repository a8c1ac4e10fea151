package main

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

const (
	providerID     = "hume"
	defaultBaseURL = "https://api.hume.ai/v0"
	defaultModel   = "octave-2"
	// nativeRate is the only rate Octave produces (48 kHz mono 16-bit);
	// the API has no rate setting.
	nativeRate = 48000
	// maxText is the longest text of one utterance.
	maxText = 5000
	// The speed range voxgate sends natively: Hume's reference warns that
	// values below 0.75 and above 1.5 may make the output unstable, so
	// the gateway time-stretches beyond it instead.
	minSpeed, maxSpeed = 0.75, 1.5
	maxAudioBytes      = 256 << 20
	// maxVoicePages bounds GET /tts/voices pagination (100 voices a page)
	// per provider.
	maxVoicePages = 20
	// customPrefix marks a voice of the account (provider CUSTOM_VOICE);
	// a voice without it is from Hume's Voice Library (HUME_AI).
	customPrefix = "custom:"
)

// The endpoints: JSON with base64 audio (and timestamps), the audio file,
// and the audio file streamed as it is rendered.
const (
	jsonPath       = "/tts"
	filePath       = "/tts/file"
	streamFilePath = "/tts/stream/file"
	voicesPath     = "/tts/voices"
)

// Provider is the Hume (Octave) plugin. It keeps only deployment
// settings, which Configure swaps atomically.
type Provider struct {
	cfg atomic.Pointer[config]
}

// config is one snapshot of the deployment settings.
type config struct {
	*upstream.Endpoint
}

// api is how Hume authenticates and reports errors. It is never modified.
var api = &upstream.API{
	Provider:       providerID,
	DefaultBaseURL: defaultBaseURL,
	Authorize:      func(h http.Header, key string) { h.Set("X-Hume-Api-Key", key) },
	ParseError:     parseError,
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

// version is the body's "version" for a model: Octave 2 or 1.
func version(model string) string { return strings.TrimPrefix(model, "octave-") }

// timestamps reports whether a model gives word timestamps: the reference
// gives them to Octave 2 requests only.
func timestamps(model string) bool { return model == "octave-2" }

// encodings are what Octave produces: the three format types of the
// request's format object, {type: mp3 | wav | pcm} (Hume's generated SDKs,
// tts FormatMp3, FormatWav, FormatPcm; read 2026-11-28), all 48 kHz mono,
// the API having neither a rate nor a bitrate setting; pcm is 16-bit
// little-endian. pcm first, the gateway's default. Every format streams
// (/tts/stream/file).
func encodings() []sdk.Encoding {
	return []sdk.Encoding{
		{Format: sdk.FormatPCM, SampleRate: nativeRate},
		{Format: sdk.FormatWAV, SampleRate: nativeRate},
		{Format: sdk.FormatMP3, SampleRate: nativeRate},
	}
}

// models are Octave's two versions, asked for by the body's version field
// ("1" or "2"). Hume's developer site no longer lists the Octave TTS
// reference (read 2026-11-28); the versions are those its SDKs and the API
// still take, and no newer one is documented.
func models() []sdk.Model {
	mk := func(id, name string) sdk.Model {
		return sdk.Model{
			ID:           id,
			Name:         name,
			Capabilities: sdk.Capabilities{Streaming: true, Timestamps: timestamps(id), Speed: true},
			Encodings:    encodings(),
			MaxTextChars: maxText,
			MinSpeed:     minSpeed,
			MaxSpeed:     maxSpeed,
		}
	}
	return []sdk.Model{mk("octave-2", "Octave 2"), mk("octave-1", "Octave 1")}
}

// modelIDPattern is the grammar of an Octave model id: octave- and the
// version the body's version field takes (octave-2 asks for "2"). A
// version the plugin does not list is passed through when it matches,
// and refused before any call otherwise.
var modelIDPattern = regexp.MustCompile(`^octave-[1-9][0-9]{0,2}$`)

// passThrough is an Octave version Hume may have that the plugin does
// not list (a newer one), asked for by its number. It claims what both
// listed versions have: every format at 48 kHz, streaming, speed, the
// text limit; not word timestamps, which Octave 1 lacks.
func passThrough(id string) sdk.Model {
	return sdk.Model{
		ID:           id,
		Name:         "Any other Octave version (passed through)",
		Capabilities: sdk.Capabilities{Streaming: true, Speed: true},
		Encodings:    encodings(),
		MaxTextChars: maxText,
		MinSpeed:     minSpeed,
		MaxSpeed:     maxSpeed,
	}
}

// findModel returns the listed model id, or a pass-through model for an
// id that can be an Octave version; any other id is the caller's
// mistake.
func findModel(id string) (sdk.Model, error) {
	if i := slices.IndexFunc(models(), func(m sdk.Model) bool { return m.ID == id }); i >= 0 {
		return models()[i], nil
	}
	if !modelIDPattern.MatchString(id) {
		return sdk.Model{}, sdk.Errorf(sdk.KindInvalidRequest, "hume: unknown model %q: a Hume model id is octave- and a version number, e.g. octave-2", id)
	}
	return passThrough(id), nil
}

// Describe implements sdk.Provider: the listed versions and an
// sdk.AnyModel entry for those it passes through (passThrough).
func (p *Provider) Describe(context.Context) (*sdk.Description, error) {
	return &sdk.Description{ID: providerID, Name: "Hume Octave", DefaultModel: defaultModel, Models: sdk.WithUnpublished(sdk.WithPrices(append(models(), passThrough(sdk.AnyModel)), priceTable), sdk.UnitCharacters, priceDate)}, nil
}

// parseError reads Hume's error bodies: the API gateway's {"fault":
// {"faultstring", "detail": {"errorcode"}}} (bad key, rate limits), the
// service's {"code", "error", "message"}, and the validation error
// {"detail": [{"loc", "msg", "type"}]} (or a plain "detail" string).
func parseError(body []byte) (code, message string) {
	var b struct {
		Fault *struct {
			FaultString string `json:"faultstring"`
			Detail      struct {
				ErrorCode string `json:"errorcode"`
			} `json:"detail"`
		} `json:"fault"`
		Code    string          `json:"code"`
		Error   string          `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &b) != nil {
		return "", ""
	}
	if f := b.Fault; f != nil {
		return f.Detail.ErrorCode, f.FaultString
	}
	if len(b.Detail) > 0 {
		var s string
		if json.Unmarshal(b.Detail, &s) == nil {
			return b.Code, s
		}
		var list []struct {
			Loc  []any  `json:"loc"`
			Msg  string `json:"msg"`
			Type string `json:"type"`
		}
		if json.Unmarshal(b.Detail, &list) == nil && len(list) > 0 {
			loc := make([]string, len(list[0].Loc))
			for i, l := range list[0].Loc {
				loc[i] = fmt.Sprint(l)
			}
			return list[0].Type, strings.Join(loc, ".") + ": " + list[0].Msg
		}
	}
	return cmp.Or(b.Code, b.Error), cmp.Or(b.Message, b.Error)
}

// Voices implements sdk.Provider with GET /tts/voices: the Voice Library
// (provider HUME_AI, ids as they are) and the account's own voices
// (CUSTOM_VOICE, ids prefixed "custom:"), following pages, keeping those
// the model can speak with.
func (p *Provider) Voices(ctx context.Context, req *sdk.VoicesRequest) ([]sdk.Voice, error) {
	model := cmp.Or(req.Model, defaultModel)
	if _, err := findModel(model); err != nil {
		return nil, err
	}
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	var voices []sdk.Voice
	for _, provider := range []string{"HUME_AI", "CUSTOM_VOICE"} {
		for page := range maxVoicePages {
			q := url.Values{"provider": {provider}, "page_number": {strconv.Itoa(page)}, "page_size": {"100"}}
			hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.BaseURL+voicesPath+"?"+q.Encode(), nil)
			if err != nil {
				return nil, sdk.Errorf(sdk.KindInternal, "hume: %v", err)
			}
			var out struct {
				TotalPages int `json:"total_pages"`
				VoicesPage []struct {
					ID                     string   `json:"id"`
					Name                   string   `json:"name"`
					CompatibleOctaveModels []string `json:"compatible_octave_models"`
				} `json:"voices_page"`
			}
			if err := cfg.DoJSON(ctx, hreq, req.Credentials.APIKey, true, "voice list", &out); err != nil {
				return nil, err
			}
			for _, v := range out.VoicesPage {
				if c := v.CompatibleOctaveModels; len(c) > 0 && !slices.Contains(c, version(model)) && !slices.Contains(c, model) {
					continue
				}
				id := v.ID
				if provider == "CUSTOM_VOICE" {
					id = customPrefix + id
				}
				voices = append(voices, sdk.Voice{ID: id, Name: v.Name})
			}
			if page+1 >= out.TotalPages || len(out.VoicesPage) == 0 {
				break
			}
		}
	}
	return voices, nil
}

// options are the providerOptions the plugin accepts, named as in Hume's
// body.
type options struct {
	// Description is the utterance's acting instructions ("calm,
	// whispering").
	Description *string `json:"description"`
	// TrailingSilence is seconds of silence after the utterance (0 to 5).
	TrailingSilence *float64 `json:"trailing_silence"`
	// Context is {generation_id} or {utterances}: earlier speech whose
	// style and prosody to continue. Passed through.
	Context json.RawMessage `json:"context"`
	// InstantMode trades some quality for latency (Hume's default is on).
	InstantMode *bool `json:"instant_mode"`
}

// check checks o against Hume's TTS reference (Hume publishes no
// machine-readable document for it): a description of at most 1,000
// characters, trailing_silence 0 to 5 seconds, and a context that is an
// object, {generation_id} or {utterances}.
func (o *options) check() error {
	c := upstream.NewCheck(providerID)
	if o.Description != nil {
		if n := utf8.RuneCountInString(*o.Description); n > 1000 {
			c.Fail("description", "takes at most 1000 characters, got %d", n)
		}
	}
	upstream.InRange(c, "trailing_silence", o.TrailingSilence, 0, 5)
	if len(o.Context) > 0 && string(o.Context) != "null" {
		var ctx struct {
			GenerationID *string         `json:"generation_id"`
			Utterances   json.RawMessage `json:"utterances"`
		}
		if json.Unmarshal(o.Context, &ctx) != nil || (ctx.GenerationID == nil) == (len(ctx.Utterances) == 0) {
			c.Fail("context", "must be {generation_id} or {utterances}")
		}
	}
	return c.Err()
}

type voiceSpec struct {
	ID       string `json:"id,omitempty"`
	Name     string `json:"name,omitempty"`
	Provider string `json:"provider"`
}

type utterance struct {
	Text            string    `json:"text"`
	Voice           voiceSpec `json:"voice"`
	Description     *string   `json:"description,omitempty"`
	Speed           float64   `json:"speed,omitempty"`
	TrailingSilence *float64  `json:"trailing_silence,omitempty"`
}

type format struct {
	Type string `json:"type"`
}

// ttsBody is OctaveBodyArgs, the body of every synthesis endpoint.
type ttsBody struct {
	Utterances            []utterance     `json:"utterances"`
	Format                format          `json:"format"`
	Version               string          `json:"version"`
	Context               json.RawMessage `json:"context,omitempty"`
	InstantMode           *bool           `json:"instant_mode,omitempty"`
	IncludeTimestampTypes []string        `json:"include_timestamp_types,omitempty"`
	SplitUtterances       *bool           `json:"split_utterances,omitempty"`
}

// uuidLike tells a voice id from a voice name.
var uuidLike = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// voiceOf maps a voxgate voice to Hume's: "custom:" for the account's own
// voices (CUSTOM_VOICE), else the Voice Library (HUME_AI, as the public
// client sends names); a UUID is an id, anything else a name.
func voiceOf(v string) voiceSpec {
	spec := voiceSpec{Provider: "HUME_AI"}
	if rest, ok := strings.CutPrefix(v, customPrefix); ok {
		spec.Provider, v = "CUSTOM_VOICE", rest
	}
	if uuidLike.MatchString(v) {
		spec.ID = v
	} else {
		spec.Name = v
	}
	return spec
}

// call is a validated request.
type call struct {
	body      ttsBody
	mediaType string
	align     int // PCM frame size, 1 otherwise
}

// prepare validates req and builds the body. Failures are the caller's
// (KindInvalidRequest) and cost no upstream call.
func prepare(req *sdk.SynthesizeRequest) (*call, error) {
	m, err := findModel(req.Model)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "hume: nothing to say")
	}
	// Octave 2 needs a voice; voxgate asks for one with every model.
	if strings.TrimSpace(strings.TrimPrefix(req.Voice, customPrefix)) == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "hume: a voice is required (a Voice Library name or id, or custom:<id> for your own)")
	}
	e, err := upstream.ChooseEncoding(providerID, &m, req)
	if err != nil {
		return nil, err
	}
	// Hume's format types are the sdk's format names.
	c := &call{align: 1, mediaType: sdk.MediaType(e)}
	c.body.Format = format{e.Format}
	if e.Format == sdk.FormatPCM {
		c.align = 2
	}
	u := utterance{Text: req.Text, Voice: voiceOf(req.Voice)}
	if req.Speed != 0 && req.Speed != 1 {
		if req.Speed < minSpeed || req.Speed > maxSpeed {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "hume: speed %g is outside %g to %g", req.Speed, minSpeed, maxSpeed)
		}
		u.Speed = req.Speed
	}
	var o options
	if err := upstream.DecodeOptions(providerID, req.Options, &o, "description", "trailing_silence", "context", "instant_mode"); err != nil {
		return nil, err
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	u.Description, u.TrailingSilence = o.Description, o.TrailingSilence
	c.body.Utterances = []utterance{u}
	c.body.Version = version(req.Model)
	c.body.Context, c.body.InstantMode = o.Context, o.InstantMode
	return c, nil
}

func (cfg *config) post(ctx context.Context, path string, body ttsBody, key string) (*http.Response, error) {
	hreq, err := upstream.NewJSONRequest(ctx, http.MethodPost, cfg.BaseURL+path, body)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "hume: %v", err)
	}
	// Synthesis creates nothing upstream: safe to repeat.
	return cfg.Do(ctx, hreq, key, true)
}

var _ sdk.Planner = (*Provider)(nil)

// Plan implements sdk.Planner: /tts/file for a clip and /tts/stream/file
// for a stream answer the audio itself, so both plan. Word timestamps come
// as JSON from /tts, which the gateway never plans.
func (p *Provider) Plan(_ context.Context, req *sdk.PlanRequest) (*sdk.Plan, error) {
	c, err := prepare(req.Request)
	if err != nil {
		return nil, err
	}
	path := filePath
	if req.Stream {
		path = streamFilePath
	}
	cfg := p.cfg.Load()
	plan, err := cfg.Plan(http.MethodPost, cfg.BaseURL+path, c.body, req.Request.Credentials.APIKey, nil)
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

// Synthesize implements sdk.Provider: /tts/file for a plain clip; /tts
// with word timestamps (Octave 2), whose JSON carries the audio in base64
// and the words in its snippets.
func (p *Provider) Synthesize(ctx context.Context, req *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	c, err := prepare(req)
	if err != nil {
		return nil, err
	}
	if req.Timestamps && !timestamps(req.Model) {
		return nil, sdk.Errorf(sdk.KindUnsupported, "hume: word timestamps come with octave-2 only")
	}
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	if req.Timestamps {
		return cfg.withTimestamps(ctx, c, req.Credentials.APIKey)
	}
	resp, err := cfg.post(ctx, filePath, c.body, req.Credentials.APIKey)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	audio, err := upstream.ReadBody(resp.Body, resp.ContentLength, maxAudioBytes)
	if err != nil {
		return nil, upstream.TransportError(ctx, providerID, err)
	}
	if len(audio)%c.align != 0 {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "hume: truncated PCM (odd byte count)"}
	}
	return &sdk.SynthesizeResponse{Audio: audio, MediaType: c.mediaType}, nil
}

// withTimestamps asks /tts for word timestamps. split_utterances false
// keeps the one utterance one snippet, so its timestamps run on the
// timeline of the whole clip.
func (cfg *config) withTimestamps(ctx context.Context, c *call, key string) (*sdk.SynthesizeResponse, error) {
	off := false
	c.body.IncludeTimestampTypes, c.body.SplitUtterances = []string{"word"}, &off
	resp, err := cfg.post(ctx, jsonPath, c.body, key)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Generations []struct {
			Audio    string `json:"audio"`
			Snippets [][]struct {
				Timestamps []struct {
					Text string `json:"text"`
					Time struct {
						Begin float64 `json:"begin"`
						End   float64 `json:"end"`
					} `json:"time"`
					Type string `json:"type"`
				} `json:"timestamps"`
			} `json:"snippets"`
		} `json:"generations"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 2*maxAudioBytes)).Decode(&out); err != nil {
		return nil, upstream.BodyError(ctx, providerID, "speech answer", err)
	}
	if len(out.Generations) == 0 || out.Generations[0].Audio == "" {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "hume: the answer holds no generation"}
	}
	g := out.Generations[0]
	audio, err := base64.StdEncoding.DecodeString(g.Audio)
	if err != nil {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "hume: the generation's audio is not base64"}
	}
	if len(audio)%c.align != 0 {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "hume: truncated PCM (odd byte count)"}
	}
	res := &sdk.SynthesizeResponse{Audio: audio, MediaType: c.mediaType}
	for _, group := range g.Snippets {
		for _, sn := range group {
			for _, ts := range sn.Timestamps {
				if ts.Type != "word" {
					continue
				}
				// Milliseconds in the API.
				res.Timestamps = append(res.Timestamps, sdk.WordTimestamp{Text: ts.Text, Start: ts.Time.Begin / 1000, End: ts.Time.End / 1000})
			}
		}
	}
	slices.SortStableFunc(res.Timestamps, func(a, b sdk.WordTimestamp) int { return cmp.Compare(a.Start, b.Start) })
	return res, nil
}

// Stream implements sdk.Provider with /tts/stream/file, its body forwarded
// as it arrives. The timeout setting bounds only the wait for the answer
// to start.
func (p *Provider) Stream(ctx context.Context, req *sdk.SynthesizeRequest, send func(sdk.Chunk) error) error {
	c, err := prepare(req)
	if err != nil {
		return err
	}
	cfg := p.cfg.Load()
	resp, err := cfg.post(ctx, streamFilePath, c.body, req.Credentials.APIKey)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = upstream.Forward(ctx, resp.Body, send, upstream.ForwardOptions{MediaType: c.mediaType, Align: c.align, Provider: providerID})
	return err
}

// Clone implements sdk.Provider: Hume's API makes voices from a prompt or
// a generation (POST /tts/voices takes a generation_id), not from uploaded
// audio, so there is nothing to clone with.
func (p *Provider) Clone(context.Context, *sdk.CloneRequest) (*sdk.CloneResponse, error) {
	return nil, sdk.Errorf(sdk.KindUnsupported, "hume: the API creates voices from generations, not from uploaded audio")
}

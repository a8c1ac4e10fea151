package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

const (
	providerID     = "minimax"
	defaultBaseURL = "https://api.minimax.io/v1"
	defaultModel   = "speech-2.8-hd"
	// nativeRate is the API's default sample_rate, and the rate of the
	// models' first encoding (pcm; the API's own default format is mp3).
	nativeRate = 32000
	// maxText is the documented limit of text in one synchronous call.
	maxText = 10000
	// The documented range of voice_setting.speed.
	minSpeed, maxSpeed = 0.5, 2
	// maxAudioBytes bounds a whole clip; the hex answer is twice that.
	maxAudioBytes = 256 << 20
)

// Paths under base_url.
const (
	t2aPath    = "/t2a_v2"
	voicesPath = "/get_voice"
	uploadPath = "/files/upload"
	clonePath  = "/voice_clone"
)

// sampleRates are the documented values of audio_setting.sample_rate.
func sampleRates() []int { return []int{8000, 16000, 22050, 24000, 32000, 44100} }

// encodings are the audio_setting values of POST /t2a_v2 (the T2A HTTP
// reference, platform.minimax.io "Speech T2A HTTP", read 28 November
// 2026): format mp3 (default), pcm, flac or wav (wav for whole answers
// only), sample_rate 8000 to 44100 (default 32000), and bitrate 32000,
// 64000, 128000 (default) or 256000 for mp3. Each format's default comes
// first; pcm is the plugin's default clip.
//
// Listed: pcm, wav and flac at every rate; mp3 at every rate and bitrate
// MP3 has (MPEG-2 below 32 kHz stops at 160 kbit/s, so 256 is listed at
// 32 and 44.1 kHz only) but 8 kHz, which is MPEG 2.5, an unofficial
// extension many decoders (the sdk's kit among them) do not read. Stream
// streams wav as pcm behind a header the plugin adds. MiniMax's own tools
// name further formats (opus, pcmu_raw, pcmu_wav); the reference we could
// read does not document their rates or containers, so they are left out.
func encodings() []sdk.Encoding {
	rates := func(format string) []sdk.Encoding {
		out := []sdk.Encoding{{Format: format, SampleRate: nativeRate}}
		for _, r := range sampleRates() {
			if r != nativeRate {
				out = append(out, sdk.Encoding{Format: format, SampleRate: r})
			}
		}
		return out
	}
	out := slices.Concat(rates(sdk.FormatPCM), rates(sdk.FormatWAV))
	for _, r := range rates(sdk.FormatMP3) {
		for _, kbps := range []int{128, 32, 64, 256} {
			if r.SampleRate > 8000 && (kbps <= 160 || r.SampleRate >= 32000) {
				out = append(out, sdk.Encoding{Format: sdk.FormatMP3, SampleRate: r.SampleRate, Bitrate: kbps})
			}
		}
	}
	return append(out, rates(sdk.FormatFLAC)...)
}

// modelIDPattern is the grammar of a MiniMax model id: speech- and lower-case letters, digits, '.' and '-'. An
// id the plugin does not list is passed through when it matches, and
// refused before any call otherwise.
var modelIDPattern = regexp.MustCompile(`^speech-[a-z0-9][a-z0-9.-]{0,60}$`)

// passThrough is a model MiniMax may have that the plugin does not list
// (one released after it), sent under the caller's id. Every listed
// model has the same abilities and limits (models), so it claims those.
func passThrough(id string) sdk.Model {
	m := models()[0]
	m.ID, m.Name = id, "Any other MiniMax model (passed through)"
	return m
}

// findModel returns the model of models with id, or a pass-through model
// for an id that can be MiniMax's; any other id is the caller's mistake.
func findModel(models []sdk.Model, id string) (*sdk.Model, error) {
	if i := slices.IndexFunc(models, func(m sdk.Model) bool { return m.ID == id }); i >= 0 {
		return &models[i], nil
	}
	if !modelIDPattern.MatchString(id) {
		return nil, sdk.Errorf(sdk.KindInvalidRequest,
			"minimax: unknown model %q: a MiniMax model id is speech- and lower-case letters, digits, '.' and '-', e.g. speech-2.8-hd", id)
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

// Provider is the MiniMax plugin. It keeps only deployment settings, which
// Configure swaps atomically; every call reads one consistent snapshot.
type Provider struct {
	cfg atomic.Pointer[config]
	// models is models(), built once and never changed: every request
	// looks its model and encoding up in it.
	models []sdk.Model
}

// config is one snapshot of the deployment settings.
type config struct {
	*upstream.Endpoint
	// groupID, when set, is sent as the GroupId query parameter, which
	// older accounts' keys need.
	groupID string
}

// api is how MiniMax authenticates and reports HTTP-level errors. It is
// never modified.
var api = &upstream.API{
	Provider:       providerID,
	DefaultBaseURL: defaultBaseURL,
	Authorize:      upstream.Bearer,
	ParseError:     parseError,
	Classify:       classify,
}

// New returns a Provider with the default settings (the public API).
func New() *Provider {
	p := &Provider{models: models()}
	e, _ := upstream.NewEndpoint(api, nil)
	p.cfg.Store(&config{Endpoint: e})
	return p
}

var _ sdk.Provider = (*Provider)(nil)

// settings are every key the plugin reads (sdk.DecodeSettings): the
// common ones and its own.
type settings struct {
	upstream.CommonSettings
	GroupID string `setting:"group_id"`
}

// NewSettings implements sdk.SettingsDecoder, so a provider block with a
// key the plugin does not read (a typo) is refused by `voxgate config
// check` and at start.
func (p *Provider) NewSettings() any { return new(settings) }

// Configure implements sdk.Provider: the common settings of
// upstream.ParseSettings plus group_id (sent as the GroupId query
// parameter). Other keys are refused (NewSettings).
func (p *Provider) Configure(_ context.Context, settings map[string]string) error {
	if problems := sdk.DecodeSettings(settings, p.NewSettings()); len(problems) > 0 {
		return sdk.SettingsErr(api.Provider, problems)
	}
	e, err := upstream.NewEndpoint(api, settings)
	if err != nil {
		return err
	}
	// Calls in flight keep their snapshot; only idle connections go.
	p.cfg.Swap(&config{Endpoint: e, groupID: strings.TrimSpace(settings["group_id"])}).Close()
	return nil
}

// url is the URL of path under base_url, with the GroupId when set.
func (cfg *config) url(path string) string {
	u := cfg.BaseURL + path
	if cfg.groupID != "" {
		u += "?" + url.Values{"GroupId": {cfg.groupID}}.Encode()
	}
	return u
}

func models() []sdk.Model {
	mk := func(id, name string) sdk.Model {
		return sdk.Model{
			ID:   id,
			Name: name,
			// The subtitles MiniMax offers over HTTP are sentence-level
			// segments in a separate file, not word timings: no
			// Timestamps.
			Capabilities: sdk.Capabilities{Streaming: true, Cloning: true, Speed: true},
			Encodings:    encodings(),
			MaxTextChars: maxText,
			MinSpeed:     minSpeed,
			MaxSpeed:     maxSpeed,
		}
	}
	return []sdk.Model{
		mk("speech-2.8-hd", "Speech 2.8 HD"),
		mk("speech-2.8-turbo", "Speech 2.8 Turbo"),
		mk("speech-2.6-hd", "Speech 2.6 HD"),
		mk("speech-2.6-turbo", "Speech 2.6 Turbo"),
		mk("speech-2.5-hd-preview", "Speech 2.5 HD Preview"),
		mk("speech-2.5-turbo-preview", "Speech 2.5 Turbo Preview"),
		mk("speech-02-hd", "Speech 02 HD"),
		mk("speech-02-turbo", "Speech 02 Turbo"),
		mk("speech-01-hd", "Speech 01 HD"),
		mk("speech-01-turbo", "Speech 01 Turbo"),
	}
}

// Describe implements sdk.Provider: the listed models and an
// sdk.AnyModel entry for the ids it passes through (passThrough).
func (p *Provider) Describe(context.Context) (*sdk.Description, error) {
	return &sdk.Description{ID: providerID, Name: "MiniMax", DefaultModel: defaultModel, Models: sdk.WithUnpublished(sdk.WithPrices(append(models(), passThrough(sdk.AnyModel)), priceTable), sdk.UnitCharacters, priceDate)}, nil
}

// voiceEntry is a voice of get_voice.
type voiceEntry struct {
	VoiceID   string `json:"voice_id"`
	VoiceName string `json:"voice_name"`
}

// languages maps the language word that starts many system voice ids
// ("English_expressive_narrator") to its code.
var languages = map[string]string{
	"English": "en", "Chinese": "zh", "Cantonese": "yue", "Japanese": "ja", "Korean": "ko", "Spanish": "es",
	"French": "fr", "German": "de", "Portuguese": "pt", "Italian": "it", "Arabic": "ar", "Russian": "ru",
	"Turkish": "tr", "Dutch": "nl", "Ukrainian": "uk", "Vietnamese": "vi", "Indonesian": "id", "Thai": "th",
	"Polish": "pl", "Romanian": "ro", "Greek": "el", "Czech": "cs", "Finnish": "fi", "Hindi": "hi",
}

// Voices implements sdk.Provider with POST /get_voice (voice_type all):
// the system voices, then the account's cloned and designed ones.
func (p *Provider) Voices(ctx context.Context, req *sdk.VoicesRequest) ([]sdk.Voice, error) {
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	var list struct {
		System     []voiceEntry `json:"system_voice"`
		Cloning    []voiceEntry `json:"voice_cloning"`
		Generation []voiceEntry `json:"voice_generation"`
		BaseResp   baseResp     `json:"base_resp"`
	}
	err := cfg.retry(ctx, func() bool { return true }, func() error {
		return cfg.postJSON(ctx, voicesPath, map[string]string{"voice_type": "all"}, req.Credentials.APIKey, "voice list", &list, &list.BaseResp)
	})
	if err != nil {
		return nil, err
	}
	var voices []sdk.Voice
	for _, group := range [][]voiceEntry{list.System, list.Cloning, list.Generation} {
		for _, v := range group {
			if v.VoiceID == "" {
				continue
			}
			prefix, _, _ := strings.Cut(v.VoiceID, "_")
			voices = append(voices, sdk.Voice{ID: v.VoiceID, Name: cmp.Or(v.VoiceName, v.VoiceID), Language: languages[prefix]})
		}
	}
	return voices, nil
}

// postJSON sends body to path once and decodes a successful answer into
// out, whose base_resp is resp: a nonzero status_code is the error. Any
// failure is an *sdk.Error, Retryable where a retry can help.
func (cfg *config) postJSON(ctx context.Context, path string, body any, key, what string, out any, resp *baseResp) error {
	hreq, err := upstream.NewJSONRequest(ctx, http.MethodPost, cfg.url(path), body)
	if err != nil {
		return sdk.Errorf(sdk.KindInternal, "minimax: %v", err)
	}
	return cfg.send(ctx, hreq, key, what, out, resp)
}

// send is postJSON for a request already built: one attempt (the
// caller's retry loop decides about another), the answer decoded into
// out and its base_resp checked.
func (cfg *config) send(ctx context.Context, hreq *http.Request, key, what string, out any, resp *baseResp) error {
	hr, err := cfg.Do(ctx, hreq, key, false)
	if err != nil {
		return err
	}
	defer hr.Body.Close()
	if err := json.NewDecoder(io.LimitReader(hr.Body, 2*maxAudioBytes+1<<20)).Decode(out); err != nil {
		return upstream.BodyError(ctx, providerID, what, err)
	}
	if resp.StatusCode != 0 {
		return respError(*resp, upstream.RetryAfter(hr.Header, time.Now()))
	}
	return nil
}

// voiceOptions are the voice_setting fields providerOptions may set.
type voiceOptions struct {
	Speed             *float64 `json:"speed,omitempty"`
	Vol               *float64 `json:"vol,omitempty"`
	Pitch             *int     `json:"pitch,omitempty"`
	Emotion           *string  `json:"emotion,omitempty"`
	TextNormalization *bool    `json:"text_normalization,omitempty"`
	LatexRead         *bool    `json:"latex_read,omitempty"`
}

// audioOptions are the audio_setting fields providerOptions may set; the
// format, rate and channels are the gateway's own, and bitrate is the
// older way to ask the request's (see prepare).
type audioOptions struct {
	Bitrate  *int  `json:"bitrate,omitempty"`
	ForceCBR *bool `json:"force_cbr,omitempty"`
}

type pronunciation struct {
	Tone []string `json:"tone"`
}

type timberWeight struct {
	VoiceID string `json:"voice_id"`
	Weight  int    `json:"weight"`
}

type voiceModify struct {
	Pitch        *int    `json:"pitch,omitempty"`
	Intensity    *int    `json:"intensity,omitempty"`
	Timbre       *int    `json:"timbre,omitempty"`
	SoundEffects *string `json:"sound_effects,omitempty"`
}

// options are the providerOptions the plugin accepts.
type options struct {
	VoiceSetting      *voiceOptions  `json:"voice_setting"`
	AudioSetting      *audioOptions  `json:"audio_setting"`
	PronunciationDict *pronunciation `json:"pronunciation_dict"`
	TimberWeights     []timberWeight `json:"timber_weights"`
	LanguageBoost     *string        `json:"language_boost"`
	VoiceModify       *voiceModify   `json:"voice_modify"`
	AIGCWatermark     *bool          `json:"aigc_watermark"`
}

// check checks o against MiniMax's T2A reference (MiniMax publishes no
// machine-readable document): voice_setting's speed 0.5 to 2, vol above
// 0 up to 10, pitch -12 to 12 and its emotions; timber_weights of at most
// 4 voices, each weighted 1 to 100; voice_modify's pitch, intensity and
// timbre -100 to 100.
func (o *options) check() error {
	c := upstream.NewCheck(providerID)
	if vs := o.VoiceSetting; vs != nil {
		upstream.InRange(c, "voice_setting.speed", vs.Speed, 0.5, 2)
		if vs.Vol != nil && (*vs.Vol <= 0 || *vs.Vol > 10) {
			c.Fail("voice_setting.vol", "must be above 0 and at most 10, got %g", *vs.Vol)
		}
		upstream.InRange(c, "voice_setting.pitch", vs.Pitch, -12, 12)
		c.OneOf("voice_setting.emotion", vs.Emotion, "happy", "sad", "angry", "fearful", "disgusted", "surprised", "calm", "fluent", "whisper", "neutral")
	}
	c.MaxItems("timber_weights", len(o.TimberWeights), 4)
	for i, tw := range o.TimberWeights {
		c.NotEmpty(fmt.Sprintf("timber_weights.%d.voice_id", i), &tw.VoiceID)
		upstream.InRange(c, fmt.Sprintf("timber_weights.%d.weight", i), &tw.Weight, 1, 100)
	}
	if vm := o.VoiceModify; vm != nil {
		upstream.InRange(c, "voice_modify.pitch", vm.Pitch, -100, 100)
		upstream.InRange(c, "voice_modify.intensity", vm.Intensity, -100, 100)
		upstream.InRange(c, "voice_modify.timbre", vm.Timbre, -100, 100)
	}
	return c.Err()
}

func acceptedOptions() []string {
	return []string{"voice_setting", "audio_setting", "pronunciation_dict", "timber_weights", "language_boost", "voice_modify", "aigc_watermark"}
}

// voiceSetting is the body's voice_setting.
type voiceSetting struct {
	VoiceID string `json:"voice_id"`
	voiceOptions
}

// audioSetting is the body's audio_setting.
type audioSetting struct {
	SampleRate int    `json:"sample_rate"`
	Format     string `json:"format"`
	Channel    int    `json:"channel"`
	audioOptions
}

type streamOptions struct {
	ExcludeAggregatedAudio bool `json:"exclude_aggregated_audio"`
}

// t2aBody is the body of POST /t2a_v2.
type t2aBody struct {
	Model             string         `json:"model"`
	Text              string         `json:"text"`
	Stream            bool           `json:"stream"`
	StreamOptions     *streamOptions `json:"stream_options,omitempty"`
	OutputFormat      string         `json:"output_format,omitempty"`
	VoiceSetting      voiceSetting   `json:"voice_setting"`
	AudioSetting      audioSetting   `json:"audio_setting"`
	PronunciationDict *pronunciation `json:"pronunciation_dict,omitempty"`
	TimberWeights     []timberWeight `json:"timber_weights,omitempty"`
	LanguageBoost     *string        `json:"language_boost,omitempty"`
	VoiceModify       *voiceModify   `json:"voice_modify,omitempty"`
	AIGCWatermark     *bool          `json:"aigc_watermark,omitempty"`
}

// call is a validated speech request.
type call struct {
	body      t2aBody
	enc       sdk.Encoding // what the caller gets
	mediaType string
}

// prepare validates req and builds the body of a whole clip (stream
// false) or a stream. A streamed wav is asked for as pcm and the header
// written by the plugin: MiniMax streams no wav. Failures are the
// caller's (KindInvalidRequest) and cost no upstream call.
func (p *Provider) prepare(req *sdk.SynthesizeRequest, stream bool) (*call, error) {
	m, err := findModel(p.models, req.Model)
	if err != nil {
		return nil, err
	}
	if req.Voice == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "minimax: a voice id is required (e.g. English_expressive_narrator)")
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "minimax: nothing to say")
	}
	var o options
	if err := upstream.DecodeOptions(providerID, req.Options, &o, acceptedOptions()...); err != nil {
		return nil, err
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	format, bitrate := cmp.Or(req.Format, m.Encodings[0].Format), req.Bitrate
	// audio_setting.bitrate (bit/s) is the older way to ask for an mp3
	// bitrate: it stands for the request's own when that has none.
	if o.AudioSetting != nil && o.AudioSetting.Bitrate != nil {
		b := *o.AudioSetting.Bitrate
		switch {
		case format != sdk.FormatMP3:
			return nil, sdk.InvalidOption("audio_setting.bitrate", "minimax: audio_setting.bitrate applies to mp3 only")
		case b%1000 != 0 || (bitrate != 0 && bitrate != b/1000):
			return nil, sdk.InvalidOption("audio_setting.bitrate", "minimax: audio_setting.bitrate %d contradicts the bitrate asked, %d kbit/s", b, bitrate)
		}
		bitrate = b / 1000
	}
	e, ok := m.FindEncoding(format, req.SampleRate, bitrate)
	if !ok {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "minimax: %s does not offer %s; it offers %s",
			req.Model, sdk.Encoding{Format: format, SampleRate: req.SampleRate, Bitrate: bitrate}, encodingNames(m.Encodings))
	}
	c := &call{enc: e, mediaType: sdk.MediaType(e)}
	c.body = t2aBody{
		Model: req.Model, Text: req.Text, Stream: stream,
		VoiceSetting: voiceSetting{VoiceID: req.Voice},
		AudioSetting: audioSetting{SampleRate: e.SampleRate, Format: e.Format, Channel: 1},
	}
	if stream && e.Format == sdk.FormatWAV {
		c.body.AudioSetting.Format = sdk.FormatPCM
	}
	if stream {
		// Without it the last event repeats the whole audio.
		c.body.StreamOptions = &streamOptions{ExcludeAggregatedAudio: true}
	} else {
		c.body.OutputFormat = "hex"
	}
	if o.VoiceSetting != nil {
		c.body.VoiceSetting.voiceOptions = *o.VoiceSetting
	}
	if o.AudioSetting != nil {
		c.body.AudioSetting.audioOptions = *o.AudioSetting
	}
	if e.Bitrate > 0 {
		bps := e.Bitrate * 1000
		c.body.AudioSetting.Bitrate = &bps
	}
	c.body.PronunciationDict, c.body.TimberWeights, c.body.LanguageBoost = o.PronunciationDict, o.TimberWeights, o.LanguageBoost
	c.body.VoiceModify, c.body.AIGCWatermark = o.VoiceModify, o.AIGCWatermark
	if req.Speed != 0 && req.Speed != 1 {
		if req.Speed < minSpeed || req.Speed > maxSpeed {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "minimax: speed %g is outside %g to %g", req.Speed, float64(minSpeed), float64(maxSpeed))
		}
		speed := req.Speed
		c.body.VoiceSetting.Speed = &speed
	}
	return c, nil
}

// t2aAnswer is a whole T2A answer, and each event of a stream.
type t2aAnswer struct {
	Data *struct {
		Audio  string `json:"audio"`
		Status int    `json:"status"`
	} `json:"data"`
	ExtraInfo *extraInfo `json:"extra_info"`
	BaseResp  baseResp   `json:"base_resp"`
}

// extraInfo is the part of a T2A answer's extra_info the plugin reads:
// usage_characters, the characters MiniMax billed the call (a whole
// answer's, and a stream's last event's).
type extraInfo struct {
	UsageCharacters int64 `json:"usage_characters"`
}

// billed is e as the call's billed characters; nil without a count.
func (e *extraInfo) billed() []sdk.BilledUsage {
	if e == nil || e.UsageCharacters <= 0 {
		return nil
	}
	return []sdk.BilledUsage{{Unit: sdk.UnitCharacters, Quantity: e.UsageCharacters}}
}

// Synthesize implements sdk.Provider: POST /t2a_v2 with stream false; the
// answer is JSON whose data.audio is the clip, hex-encoded.
func (p *Provider) Synthesize(ctx context.Context, req *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	if req.Timestamps {
		return nil, sdk.Errorf(sdk.KindUnsupported, "minimax: the speech API gives no word timestamps")
	}
	c, err := p.prepare(req, false)
	if err != nil {
		return nil, err
	}
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	var ans t2aAnswer
	err = cfg.retry(ctx, func() bool { return true }, func() error {
		ans = t2aAnswer{}
		return cfg.postJSON(ctx, t2aPath, c.body, req.Credentials.APIKey, "speech answer", &ans, &ans.BaseResp)
	})
	if err != nil {
		return nil, err
	}
	if ans.Data == nil || ans.Data.Audio == "" {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "minimax: the answer holds no audio"}
	}
	audio, err := hex.DecodeString(ans.Data.Audio)
	if err != nil {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "minimax: data.audio is not hex"}
	}
	if c.body.AudioSetting.Format == sdk.FormatPCM && len(audio)%2 != 0 {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "minimax: truncated PCM (odd byte count)"}
	}
	return &sdk.SynthesizeResponse{Audio: audio, MediaType: c.mediaType, Billed: ans.ExtraInfo.billed()}, nil
}

// Stream implements sdk.Provider: POST /t2a_v2 with stream true, whose
// events carry hex audio, sent as each arrives (a wav stream opens with a
// header of unknown length). A failure before any audio went out is
// retried like a whole clip's; after that the stream cannot start over.
// The timeout setting bounds only the wait for the answer to start.
func (p *Provider) Stream(ctx context.Context, req *sdk.SynthesizeRequest, send func(sdk.Chunk) error) error {
	c, err := p.prepare(req, true)
	if err != nil {
		return err
	}
	cfg := p.cfg.Load()
	out := &chunker{send: send, mediaType: c.mediaType, frame: 1}
	if c.body.AudioSetting.Format == sdk.FormatPCM {
		out.frame = 2
	}
	if c.enc.Format == sdk.FormatWAV {
		out.header = upstream.WAVHeader(c.enc.SampleRate, upstream.StreamingWAV)
	}
	err = cfg.retry(ctx, func() bool { return !out.started }, func() error {
		hreq, err := upstream.NewJSONRequest(ctx, http.MethodPost, cfg.url(t2aPath), c.body)
		if err != nil {
			return sdk.Errorf(sdk.KindInternal, "minimax: %v", err)
		}
		hr, err := cfg.Do(ctx, hreq, req.Credentials.APIKey, false)
		if err != nil {
			return err
		}
		defer hr.Body.Close()
		retryAfter := upstream.RetryAfter(hr.Header, time.Now())
		if mt, _, _ := mime.ParseMediaType(hr.Header.Get("Content-Type")); mt == "application/json" {
			// An error (or, defensively, a whole answer) as one JSON
			// object rather than events.
			var ans t2aAnswer
			if err := json.NewDecoder(io.LimitReader(hr.Body, 2*maxAudioBytes)).Decode(&ans); err != nil {
				return upstream.BodyError(ctx, providerID, "stream answer", err)
			}
			return out.event(&ans, retryAfter)
		}
		return readEvents(ctx, hr.Body, func(ev *t2aAnswer) error { return out.event(ev, retryAfter) })
	})
	if err != nil {
		return err
	}
	return out.finish()
}

// chunker turns the events of a stream into chunks: the media type on the
// first, a wav header before the audio, PCM kept to whole samples, and the
// last event's aggregated audio used only when nothing came before it.
type chunker struct {
	send      func(sdk.Chunk) error
	mediaType string
	header    []byte // sent first, for a wav stream
	frame     int
	pending   []byte            // bytes of an unfinished sample
	started   bool              // something was sent: the stream cannot be retried
	audio     bool              // audio arrived in progress events
	billed    []sdk.BilledUsage // the last event's extra_info, sent at the end
}

// event handles one event of the stream.
func (c *chunker) event(ev *t2aAnswer, retryAfter time.Duration) error {
	if ev.BaseResp.StatusCode != 0 {
		return respError(ev.BaseResp, retryAfter)
	}
	if b := ev.ExtraInfo.billed(); b != nil {
		c.billed = b
	}
	if ev.Data == nil || ev.Data.Audio == "" {
		return nil
	}
	// The final event (status 2) repeats the whole audio unless
	// exclude_aggregated_audio was honoured; it is the audio only when no
	// chunk came before it.
	if ev.Data.Status == 2 && c.audio {
		return nil
	}
	data, err := hex.DecodeString(ev.Data.Audio)
	if err != nil {
		return &sdk.Error{Kind: sdk.KindUpstream, Message: "minimax: an event's audio is not hex"}
	}
	c.audio = true
	if len(c.pending) > 0 {
		data = append(c.pending, data...)
		c.pending = nil
	}
	whole := len(data) - len(data)%c.frame
	if whole < len(data) {
		c.pending = bytes.Clone(data[whole:])
	}
	if whole == 0 {
		return nil
	}
	return c.emit(data[:whole])
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

// finish ends a stream that went well: a half sample left is a truncated
// answer; an empty stream still says what it would have been.
func (c *chunker) finish() error {
	if len(c.pending) > 0 {
		return &sdk.Error{Kind: sdk.KindUpstream, Message: "minimax: truncated PCM (odd byte count)"}
	}
	if !c.started {
		if err := c.emit(nil); err != nil {
			return err
		}
	}
	if c.billed != nil {
		// The count comes with the last event, after its audio went: a
		// chunk of its own, with no audio.
		return c.send(sdk.Chunk{Billed: c.billed})
	}
	return nil
}

// cloneOptions are the providerOptions Clone accepts.
type cloneOptions struct {
	VoiceID                 *string  `json:"voice_id"`
	NeedNoiseReduction      *bool    `json:"need_noise_reduction"`
	NeedVolumeNormalization *bool    `json:"need_volume_normalization"`
	Accuracy                *float64 `json:"accuracy"`
	LanguageBoost           *string  `json:"language_boost"`
}

// cloneBody is the body of POST /voice_clone.
type cloneBody struct {
	FileID                  int64    `json:"file_id"`
	VoiceID                 string   `json:"voice_id"`
	NeedNoiseReduction      *bool    `json:"need_noise_reduction,omitempty"`
	NeedVolumeNormalization *bool    `json:"need_volume_normalization,omitempty"`
	Accuracy                *float64 `json:"accuracy,omitempty"`
	LanguageBoost           *string  `json:"language_boost,omitempty"`
}

// voiceIDRule is MiniMax's rule for a voice_id the caller picks: 8 to 256
// characters, a letter first, letters, digits, '-' and '_', not ending in
// '-' or '_'.
var voiceIDRule = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{6,254}[A-Za-z0-9]$`)

// Clone implements sdk.Provider in MiniMax's two steps: upload the sample
// (POST /files/upload, purpose voice_clone), then clone it under a
// voice_id the caller picks (POST /voice_clone). The id is the voice_id
// option, or one made from the name and a random suffix. MiniMax clones
// from one file, so exactly one sample is taken. Neither call is retried:
// a lost answer does not mean nothing was made.
func (p *Provider) Clone(ctx context.Context, req *sdk.CloneRequest) (*sdk.CloneResponse, error) {
	switch {
	case len(req.Samples) != 1:
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "minimax: cloning takes exactly one sample, got %d", len(req.Samples))
	case len(req.Samples[0].Data) == 0:
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "minimax: the sample is empty")
	}
	var o cloneOptions
	if err := upstream.DecodeOptions(providerID, req.Options, &o, "voice_id", "need_noise_reduction", "need_volume_normalization", "accuracy", "language_boost"); err != nil {
		return nil, err
	}
	voiceID := ptrValue(o.VoiceID)
	if voiceID == "" {
		voiceID = newVoiceID(req.Name)
	}
	if !voiceIDRule.MatchString(voiceID) {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "minimax: voice_id %q must be 8 to 256 letters, digits, '-' or '_', start with a letter and not end with '-' or '_'", voiceID)
	}
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("purpose", "voice_clone") // writes to memory
	_ = upstream.WriteSample(mw, "file", req.Samples[0], 0)
	_ = mw.Close()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.url(uploadPath), &body)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "minimax: %v", err)
	}
	hreq.Header.Set("Content-Type", mw.FormDataContentType())
	var up struct {
		File *struct {
			FileID int64 `json:"file_id"`
		} `json:"file"`
		BaseResp baseResp `json:"base_resp"`
	}
	if err := cfg.send(ctx, hreq, req.Credentials.APIKey, "upload answer", &up, &up.BaseResp); err != nil {
		return nil, err
	}
	if up.File == nil || up.File.FileID == 0 {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "minimax: the upload answer has no file_id"}
	}
	clone := cloneBody{
		FileID: up.File.FileID, VoiceID: voiceID,
		NeedNoiseReduction: o.NeedNoiseReduction, NeedVolumeNormalization: o.NeedVolumeNormalization,
		Accuracy: o.Accuracy, LanguageBoost: o.LanguageBoost,
	}
	var ans struct {
		BaseResp baseResp `json:"base_resp"`
	}
	if err := cfg.postJSON(ctx, clonePath, clone, req.Credentials.APIKey, "clone answer", &ans, &ans.BaseResp); err != nil {
		return nil, err
	}
	return &sdk.CloneResponse{VoiceID: voiceID}, nil
}

// newVoiceID makes a voice_id that keeps MiniMax's rule: "voxgate_", the
// name's letters and digits (at most 40), and 12 random hex digits, so
// that two voices of one name do not collide.
func newVoiceID(name string) string {
	var slug strings.Builder
	for _, r := range name {
		switch {
		case r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'):
			slug.WriteRune(r)
		case slug.Len() > 0 && !strings.HasSuffix(slug.String(), "_"):
			slug.WriteByte('_')
		}
		if slug.Len() >= 40 {
			break
		}
	}
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix) // crypto/rand.Read does not fail
	s := strings.Trim(slug.String(), "_")
	if s == "" {
		return "voxgate_" + hex.EncodeToString(suffix)
	}
	return "voxgate_" + s + "_" + hex.EncodeToString(suffix)
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

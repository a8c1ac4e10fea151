package main

import (
	"bytes"
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
	"strings"
	"sync/atomic"
	"unicode"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

const (
	providerID     = "inworld"
	defaultBaseURL = "https://api.inworld.ai"
	defaultModel   = "inworld-tts-1.5-max"
	// nativeRate is the documented default of audioConfig.sampleRateHertz
	// (the models' codec renders 48 kHz), asked for explicitly so that
	// the media type of a pcm answer is known; the rate of the models'
	// first encoding (pcm; the API's own default format is MP3).
	nativeRate = 48000
	// defaultKbps is the documented default of audioConfig.bitRate.
	defaultKbps = 128
	// maxText is the documented input limit of one synthesis.
	maxText = 2000
	// The documented range of audioConfig.speakingRate.
	minSpeed, maxSpeed = 0.5, 1.5
	// maxAnswer bounds a whole-clip JSON answer: the documented maximum
	// output is 16 MB of audio, a third more as base64, plus timestamps.
	maxAnswer = 32 << 20
	// maxVoicePages bounds the voice list's pagination.
	maxVoicePages = 50

	synthesizePath = "/tts/v1/voice"
	streamPath     = "/tts/v1/voice:stream"
	voicesPath     = "/voices/v1/voices"
	clonePath      = "/voices/v1/voices:clone"
)

// sampleRates are the PCM rates offered to callers, within the
// documented 8 to 48 kHz.
func sampleRates() []int { return []int{8000, 16000, 22050, 24000, 32000, 44100, 48000} }

// encodings are the audio encodings the synthesis endpoints document
// (docs.inworld.ai, TTS "Generating audio", "Supported formats", and the
// API reference's AudioConfig: sampleRateHertz 8000 to 48000, default
// 48000; bitRate for compressed encodings, default 128000; both read 28
// November 2026), each format's default first:
//
//   - PCM (headerless 16-bit) and WAV at every offered rate;
//   - MP3 at 16 to 48 kHz and 32 to 320 kbit/s, as the bitrates MP3 has
//     in that range: MPEG-1 (32, 44.1, 48 kHz) 32 to 320, MPEG-2 (16,
//     22.05, 24 kHz) 32 to 160;
//   - FLAC at every offered rate (lossless: no bitrate);
//   - OGG_OPUS at 48 kHz, Opus's own rate, with Inworld's bitrate: the
//     reference documents no Opus rates or bitrates of its own.
//
// Left out: LINEAR16 (WAV whose every streamed chunk carries its own
// header; WAV is the same clip), and ALAW and MULAW, of which the
// reference does not say whether they carry a WAV header, as Google's
// encodings of the same names do.
// streamEncodings are the encodings Stream sends: all but FLAC and Opus.
func streamEncodings() []sdk.Encoding {
	return slices.DeleteFunc(encodings(), func(e sdk.Encoding) bool {
		return e.Format == sdk.FormatFLAC || e.Format == sdk.FormatOpus
	})
}

func encodings() []sdk.Encoding {
	var out []sdk.Encoding
	for _, f := range []string{sdk.FormatPCM, sdk.FormatWAV} {
		out = append(out, sdk.Encoding{Format: f, SampleRate: nativeRate})
		for _, r := range sampleRates() {
			if r != nativeRate {
				out = append(out, sdk.Encoding{Format: f, SampleRate: r})
			}
		}
	}
	for _, r := range []int{48000, 44100, 32000, 24000, 22050, 16000} {
		for _, kbps := range []int{defaultKbps, 32, 64, 96, 160, 192, 256, 320} {
			if r >= 32000 || kbps <= 160 {
				out = append(out, sdk.Encoding{Format: sdk.FormatMP3, SampleRate: r, Bitrate: kbps})
			}
		}
	}
	out = append(out, sdk.Encoding{Format: sdk.FormatFLAC, SampleRate: nativeRate})
	for _, r := range sampleRates() {
		if r != nativeRate {
			out = append(out, sdk.Encoding{Format: sdk.FormatFLAC, SampleRate: r})
		}
	}
	return append(out, sdk.Encoding{Format: sdk.FormatOpus, SampleRate: 48000})
}

// audioEncodings are Inworld's names of the sdk formats.
var audioEncodings = map[string]string{
	sdk.FormatPCM: "PCM", sdk.FormatWAV: "WAV", sdk.FormatMP3: "MP3", sdk.FormatFLAC: "FLAC", sdk.FormatOpus: "OGG_OPUS",
}

// streamed reports whether the stream endpoint streams format f: PCM, WAV
// (its header on the first chunk only, as documented) and MP3 (frames
// that join) do; the reference does not say how FLAC and OGG_OPUS chunks
// join, so Stream refuses them and the gateway asks for a whole clip or
// converts PCM.
func streamed(f string) bool {
	return f == sdk.FormatPCM || f == sdk.FormatWAV || f == sdk.FormatMP3
}

// modelIDPattern is the grammar of a Inworld model id: inworld-tts- and lower-case letters, digits, '.' and '-'. An
// id the plugin does not list is passed through when it matches, and
// refused before any call otherwise.
var modelIDPattern = regexp.MustCompile(`^inworld-tts-[a-z0-9][a-z0-9.-]{0,60}$`)

// passThrough is a model Inworld may have that the plugin does not list
// (one released after it), sent under the caller's id. Every listed
// model has the same abilities and limits (models), so it claims those.
func passThrough(id string) sdk.Model {
	m := models()[0]
	m.ID, m.Name = id, "Any other Inworld model (passed through)"
	return m
}

// findModel returns the model of models with id, or a pass-through model
// for an id that can be Inworld's; any other id is the caller's mistake.
func findModel(models []sdk.Model, id string) (*sdk.Model, error) {
	if i := slices.IndexFunc(models, func(m sdk.Model) bool { return m.ID == id }); i >= 0 {
		return &models[i], nil
	}
	if !modelIDPattern.MatchString(id) {
		return nil, sdk.Errorf(sdk.KindInvalidRequest,
			"inworld: unknown model %q: a Inworld model id is inworld-tts- and lower-case letters, digits, '.' and '-', e.g. inworld-tts-2", id)
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

// Provider is the Inworld plugin. It keeps only deployment settings,
// which Configure swaps atomically; every call reads one snapshot.
type Provider struct {
	cfg atomic.Pointer[config]
	// models is models(), built once and never changed: every request
	// looks its model and encoding up in it.
	models []sdk.Model
}

// config is one snapshot of the deployment settings.
type config struct {
	*upstream.Endpoint
}

// api is how Inworld authenticates and reports errors. It is never
// modified.
var api = &upstream.API{
	Provider:       providerID,
	DefaultBaseURL: defaultBaseURL,
	// Inworld issues the key already base64-encoded ("Basic" credentials
	// of id:secret); it goes on the wire as it is.
	Authorize:  func(h http.Header, key string) { h.Set("Authorization", "Basic "+key) },
	ParseError: parseError,
}

// New returns a Provider with the default settings (the public API).
func New() *Provider {
	p := &Provider{models: models()}
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

// models lists the documented models (docs.inworld.ai, TTS models and
// API reference, read 28 November 2026): TTS-2, the newest, and the 1.5
// and 1 families. All of them take the same request (audioConfig,
// speakingRate, timestamps), every encoding and every voice, cloned ones
// included.
func models() []sdk.Model {
	mk := func(id, name string) sdk.Model {
		return sdk.Model{
			ID:           id,
			Name:         name,
			Capabilities: sdk.Capabilities{Streaming: true, Timestamps: true, Cloning: true, Speed: true},
			Encodings:    encodings(),
			// The streaming reference does not say how FLAC and Opus
			// chunks join, so streams offer the rest; the gateway
			// converts a FLAC or Opus stream from the PCM one.
			StreamEncodings: streamEncodings(),
			MaxTextChars:    maxText,
			MinSpeed:        minSpeed,
			MaxSpeed:        maxSpeed,
		}
	}
	return []sdk.Model{
		mk("inworld-tts-1.5-max", "Inworld TTS 1.5 Max"),
		mk("inworld-tts-1.5-mini", "Inworld TTS 1.5 Mini"),
		mk("inworld-tts-2", "Inworld TTS-2"),
		mk("inworld-tts-1", "Inworld TTS-1"),
		mk("inworld-tts-1-max", "Inworld TTS-1 Max"),
	}
}

// Describe implements sdk.Provider: the listed models and an
// sdk.AnyModel entry for the ids it passes through (passThrough).
func (p *Provider) Describe(context.Context) (*sdk.Description, error) {
	return &sdk.Description{ID: providerID, Name: "Inworld", DefaultModel: defaultModel, Models: sdk.WithUnpublished(sdk.WithPrices(append(models(), passThrough(sdk.AnyModel)), priceTable), sdk.UnitCharacters, priceDate)}, nil
}

// grpcCodes names the gRPC status codes Inworld's errors carry, by number.
var grpcCodes = [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
	"OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// rpcStatus is Inworld's error envelope, the gRPC status {code, message,
// details}.
type rpcStatus struct {
	Code    json.RawMessage `json:"code"`
	Message string          `json:"message"`
}

// name returns the status code as its gRPC name ("NOT_FOUND"), and its
// number (-1 if none).
func (s *rpcStatus) name() (string, int) {
	raw := bytes.TrimSpace(s.Code)
	var n int
	if json.Unmarshal(raw, &n) == nil {
		if n >= 0 && n < len(grpcCodes) {
			return grpcCodes[n], n
		}
		return fmt.Sprint(n), n
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return str, slices.Index(grpcCodes[:], str)
	}
	return "", -1
}

// parseError reads an error body: the status envelope itself, or the
// {"error": {...}} object a stream carries.
func parseError(body []byte) (code, message string) {
	var b struct {
		rpcStatus
		Error *rpcStatus `json:"error"`
	}
	if json.Unmarshal(body, &b) != nil {
		return "", ""
	}
	st := &b.rpcStatus
	if b.Error != nil {
		st = b.Error
	}
	code, _ = st.name()
	return code, st.Message
}

// httpStatus is the HTTP status Inworld's gateway answers for a gRPC code
// (the standard gRPC-to-HTTP mapping), for errors reported inside a stream.
func httpStatus(code int) int {
	switch code {
	case 3, 9, 11: // INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE
		return http.StatusBadRequest
	case 4: // DEADLINE_EXCEEDED
		return http.StatusGatewayTimeout
	case 5:
		return http.StatusNotFound
	case 6, 10: // ALREADY_EXISTS, ABORTED
		return http.StatusConflict
	case 7:
		return http.StatusForbidden
	case 8:
		return http.StatusTooManyRequests
	case 12:
		return http.StatusNotImplemented
	case 14:
		return http.StatusServiceUnavailable
	case 16:
		return http.StatusUnauthorized
	}
	return http.StatusInternalServerError
}

// voiceEntry is a voice of GET /voices/v1/voices.
type voiceEntry struct {
	VoiceID     string `json:"voiceId"`
	DisplayName string `json:"displayName"`
	LangCode    string `json:"langCode"`
	Gender      string `json:"gender"`
}

// Voices implements sdk.Provider with the Voices API's list (system voices
// and the workspace's clones), page by page. (The older GET
// /tts/v1/voices is deprecated and scheduled for removal.)
func (p *Provider) Voices(ctx context.Context, req *sdk.VoicesRequest) ([]sdk.Voice, error) {
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	var voices []sdk.Voice
	token := ""
	for range maxVoicePages {
		q := url.Values{"pageSize": {"100"}}
		if token != "" {
			q.Set("pageToken", token)
		}
		hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.BaseURL+voicesPath+"?"+q.Encode(), nil)
		if err != nil {
			return nil, sdk.Errorf(sdk.KindInternal, "inworld: %v", err)
		}
		var page struct {
			Voices        []voiceEntry `json:"voices"`
			NextPageToken string       `json:"nextPageToken"`
		}
		if err := cfg.DoJSON(ctx, hreq, req.Credentials.APIKey, true, "voice list", &page); err != nil {
			return nil, err
		}
		for _, v := range page.Voices {
			voices = append(voices, sdk.Voice{ID: v.VoiceID, Name: cmp.Or(v.DisplayName, v.VoiceID), Language: language(v.LangCode), Gender: v.Gender})
		}
		if page.NextPageToken == "" || page.NextPageToken == token || len(page.Voices) == 0 {
			break
		}
		token = page.NextPageToken
	}
	return voices, nil
}

// language turns Inworld's upper-snake language code ("EN_US") into a
// BCP-47 tag ("en-US"); "AUTO" and "" mean none.
func language(code string) string {
	if code == "" || code == "AUTO" {
		return ""
	}
	lang, region, ok := strings.Cut(code, "_")
	if !ok {
		return strings.ToLower(code)
	}
	return strings.ToLower(lang) + "-" + strings.ToUpper(region)
}

// options are the providerOptions the plugin accepts: documented fields
// of the synthesis body, and audioConfig.bitRate (in bit/s), the older
// way to ask for an MP3 bitrate, refused when it contradicts the
// request's.
type options struct {
	Temperature            *float64 `json:"temperature"`
	ApplyTextNormalization *string  `json:"applyTextNormalization"`
	DeliveryMode           *string  `json:"deliveryMode"`
	Language               *string  `json:"language"`
	BitRate                *int     `json:"bitRate"`
}

// check checks o against Inworld's TTS reference (Inworld publishes no
// machine-readable document): temperature 0 to 2, and the enumerations
// of applyTextNormalization and deliveryMode.
func (o *options) check() error {
	c := upstream.NewCheck(providerID)
	upstream.InRange(c, "temperature", o.Temperature, 0, 2)
	c.OneOf("applyTextNormalization", o.ApplyTextNormalization, "APPLY_TEXT_NORMALIZATION_UNSPECIFIED", "ON", "OFF")
	c.OneOf("deliveryMode", o.DeliveryMode, "DELIVERY_MODE_UNSPECIFIED", "STABLE", "BALANCED", "CREATIVE")
	return c.Err()
}

// acceptedOptions names the options fields, for error messages.
func acceptedOptions() []string {
	return []string{"temperature", "applyTextNormalization", "deliveryMode", "language", "bitRate"}
}

type audioConfig struct {
	AudioEncoding   string  `json:"audioEncoding"`
	SampleRateHertz int     `json:"sampleRateHertz"`
	BitRate         *int    `json:"bitRate,omitempty"`
	SpeakingRate    float64 `json:"speakingRate,omitempty"`
}

// speechBody is the body of both synthesis endpoints.
type speechBody struct {
	Text                   string      `json:"text"`
	VoiceID                string      `json:"voiceId"`
	ModelID                string      `json:"modelId"`
	AudioConfig            audioConfig `json:"audioConfig"`
	Temperature            *float64    `json:"temperature,omitempty"`
	TimestampType          string      `json:"timestampType,omitempty"`
	ApplyTextNormalization *string     `json:"applyTextNormalization,omitempty"`
	DeliveryMode           *string     `json:"deliveryMode,omitempty"`
	Language               *string     `json:"language,omitempty"`
}

// call is a validated synthesis request.
type call struct {
	body      speechBody
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

// prepare validates req and builds the body; failures are the caller's
// (KindInvalidRequest) and cost no upstream call.
func (p *Provider) prepare(req *sdk.SynthesizeRequest) (*call, error) {
	m, err := findModel(p.models, req.Model)
	if err != nil {
		return nil, err
	}
	if req.Voice == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "inworld: a voice id is required (e.g. Dennis)")
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "inworld: nothing to say")
	}
	var o options
	if err := upstream.DecodeOptions(providerID, req.Options, &o, acceptedOptions()...); err != nil {
		return nil, err
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	format, bitrate := cmp.Or(req.Format, m.Encodings[0].Format), req.Bitrate
	if o.BitRate != nil {
		switch kbps := *o.BitRate / 1000; {
		case format != sdk.FormatMP3:
			return nil, sdk.InvalidOption("bitRate", "inworld: bitRate applies to mp3 only")
		case *o.BitRate%1000 != 0:
			return nil, sdk.InvalidOption("bitRate", "inworld: bitRate %d is not a whole number of kbit/s", *o.BitRate)
		case bitrate != 0 && bitrate != kbps:
			return nil, sdk.InvalidOption("bitRate", "inworld: bitRate %d contradicts the bitrate asked, %d kbit/s", *o.BitRate, bitrate)
		default:
			bitrate = kbps
		}
	}
	e, ok := m.FindEncoding(format, req.SampleRate, bitrate)
	if !ok {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "inworld: %s does not offer %s; it offers %s",
			req.Model, sdk.Encoding{Format: format, SampleRate: req.SampleRate, Bitrate: bitrate}, encodingNames(m.Encodings))
	}
	c := &call{enc: e, mediaType: sdk.MediaType(e), body: speechBody{Text: req.Text, VoiceID: req.Voice, ModelID: req.Model}}
	c.body.AudioConfig.AudioEncoding, c.body.AudioConfig.SampleRateHertz = audioEncodings[e.Format], e.SampleRate
	if e.Bitrate > 0 {
		bps := e.Bitrate * 1000
		c.body.AudioConfig.BitRate = &bps
	}
	if req.Speed != 0 && req.Speed != 1 {
		if req.Speed < minSpeed || req.Speed > maxSpeed {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "inworld: speed %g is outside %g to %g", req.Speed, minSpeed, maxSpeed)
		}
		c.body.AudioConfig.SpeakingRate = req.Speed
	}
	c.body.Temperature, c.body.ApplyTextNormalization = o.Temperature, o.ApplyTextNormalization
	c.body.DeliveryMode, c.body.Language = o.DeliveryMode, o.Language
	return c, nil
}

// post sends a synthesis request and returns the successful response.
// Synthesis creates nothing, so it is retried like any idempotent call.
func (cfg *config) post(ctx context.Context, path string, body any, key string) (*http.Response, error) {
	hreq, err := upstream.NewJSONRequest(ctx, http.MethodPost, cfg.BaseURL+path, body)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "inworld: %v", err)
	}
	return cfg.Do(ctx, hreq, key, true)
}

// alignment is timestampInfo.wordAlignment.
type alignment struct {
	Words  []string  `json:"words"`
	Starts []float64 `json:"wordStartTimeSeconds"`
	Ends   []float64 `json:"wordEndTimeSeconds"`
}

// synthesisAnswer is the answer of POST /tts/v1/voice, and the result of
// each line of a stream.
type synthesisAnswer struct {
	AudioContent  string `json:"audioContent"`
	TimestampInfo *struct {
		WordAlignment *alignment `json:"wordAlignment"`
	} `json:"timestampInfo"`
	Usage *usage `json:"usage"`
}

// usage is what Inworld says a call used: the characters it processed,
// which it bills by.
type usage struct {
	ProcessedCharactersCount int64 `json:"processedCharactersCount"`
}

// billed is u as the call's billed characters; nil without a count.
func (u *usage) billed() []sdk.BilledUsage {
	if u == nil || u.ProcessedCharactersCount <= 0 {
		return nil
	}
	return []sdk.BilledUsage{{Unit: sdk.UnitCharacters, Quantity: u.ProcessedCharactersCount}}
}

// Synthesize implements sdk.Provider with POST /tts/v1/voice, whose JSON
// answer carries the audio as base64 and, with timestampType WORD, the
// words' timings.
func (p *Provider) Synthesize(ctx context.Context, req *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	c, err := p.prepare(req)
	if err != nil {
		return nil, err
	}
	if req.Timestamps {
		c.body.TimestampType = "WORD"
	}
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	resp, err := cfg.post(ctx, synthesizePath, c.body, req.Credentials.APIKey)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var a synthesisAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswer)).Decode(&a); err != nil {
		return nil, upstream.BodyError(ctx, providerID, "synthesis answer", err)
	}
	audio, err := base64.StdEncoding.DecodeString(a.AudioContent)
	if err != nil {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "inworld: audioContent is not base64"}
	}
	if len(audio) == 0 {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "inworld: the answer holds no audio"}
	}
	if len(audio)%c.align() != 0 {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "inworld: truncated PCM (odd byte count)"}
	}
	out := &sdk.SynthesizeResponse{Audio: audio, MediaType: c.mediaType, Billed: a.Usage.billed()}
	if req.Timestamps && a.TimestampInfo != nil && a.TimestampInfo.WordAlignment != nil {
		out.Timestamps = a.TimestampInfo.WordAlignment.words()
	}
	return out, nil
}

// words turns the word alignment into one timestamp per word of the text.
// Inworld's tokens are words as the text spells them ("Hello,"); newer
// models also give whitespace and punctuation as tokens of their own.
// Whitespace separates words and is dropped; punctuation joins the word
// it touches (the one before it, or after a space the one after it); and
// where whitespace comes as tokens, tokens with none between them are one
// word.
func (a *alignment) words() []sdk.WordTimestamp {
	n := min(len(a.Words), len(a.Starts), len(a.Ends))
	explicitSpaces := slices.ContainsFunc(a.Words[:n], isSpace)
	var (
		out       []sdk.WordTimestamp
		prefix    string // punctuation waiting for the next word
		prefixAt  float64
		afterWord bool // the last token was part of a word, with no space since
	)
	for i := range n {
		tok, start, end := a.Words[i], a.Starts[i], max(a.Ends[i], a.Starts[i])
		switch {
		case isSpace(tok):
			afterWord = false
			continue
		case afterWord && (explicitSpaces || !hasWordChar(tok)):
			last := &out[len(out)-1]
			last.Text += strings.TrimSpace(tok)
			last.End = max(last.End, end)
			continue
		case !hasWordChar(tok):
			if prefix == "" {
				prefixAt = start
			}
			prefix += strings.TrimSpace(tok)
			continue
		}
		w := sdk.WordTimestamp{Text: prefix + strings.TrimSpace(tok), Start: start, End: end}
		if prefix != "" {
			w.Start, prefix = prefixAt, ""
		}
		out = append(out, w)
		afterWord = true
	}
	if prefix != "" {
		out = append(out, sdk.WordTimestamp{Text: prefix, Start: prefixAt, End: prefixAt})
	}
	return out
}

func isSpace(s string) bool { return strings.TrimSpace(s) == "" }

// hasWordChar reports whether s holds a letter or a digit.
func hasWordChar(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

// Stream implements sdk.Provider with POST /tts/v1/voice:stream, which
// answers one JSON object a line as audio is produced; each line's audio
// is sent as it arrives. A wav stream carries Inworld's own header in its
// first chunk. FLAC and Ogg Opus are refused (streamed).
func (p *Provider) Stream(ctx context.Context, req *sdk.SynthesizeRequest, send func(sdk.Chunk) error) error {
	c, err := p.prepare(req)
	if err != nil {
		return err
	}
	if !streamed(c.enc.Format) {
		return sdk.Errorf(sdk.KindInvalidRequest, "inworld: %s is offered for whole clips only; a stream comes as pcm, wav or mp3", c.enc.Format)
	}
	cfg := p.cfg.Load()
	resp, err := cfg.post(ctx, streamPath, c.body, req.Credentials.APIKey)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var pending []byte // bytes of a split PCM frame, held for the next line
	first := true
	used, err := readLines(ctx, resp.Body, req.Credentials.APIKey, func(audio []byte) error {
		data := audio
		if align := c.align(); align > 1 {
			data = append(pending, audio...)
			whole := len(data) - len(data)%align
			pending = bytes.Clone(data[whole:])
			data = data[:whole]
		}
		if len(data) == 0 {
			return nil
		}
		chunk := sdk.Chunk{Data: data}
		if first {
			chunk.MediaType, first = c.mediaType, false
		}
		return send(chunk)
	})
	if err != nil {
		return err
	}
	if len(pending) > 0 {
		return &sdk.Error{Kind: sdk.KindUpstream, Message: "inworld: truncated PCM (odd byte count)"}
	}
	if first {
		// An empty stream still tells the receiver what it would have been.
		return send(sdk.Chunk{MediaType: c.mediaType, Billed: used.billed()})
	}
	if b := used.billed(); b != nil {
		// The count comes with the lines, after the audio went: a chunk
		// of its own, with no audio.
		return send(sdk.Chunk{Billed: b})
	}
	return nil
}

// cloneOptions are the providerOptions Clone accepts.
type cloneOptions struct {
	LangCode              *string  `json:"langCode"`
	Tags                  []string `json:"tags"`
	RemoveBackgroundNoise *bool    `json:"removeBackgroundNoise"`
	// Transcriptions are the samples' transcripts, in order.
	Transcriptions []string `json:"transcriptions"`
}

type voiceSample struct {
	AudioData     string `json:"audioData"`
	Transcription string `json:"transcription,omitempty"`
}

type cloneBody struct {
	DisplayName           string        `json:"displayName"`
	LangCode              string        `json:"langCode"`
	VoiceSamples          []voiceSample `json:"voiceSamples"`
	Description           string        `json:"description,omitempty"`
	Tags                  []string      `json:"tags,omitempty"`
	AudioProcessingConfig *struct {
		RemoveBackgroundNoise bool `json:"removeBackgroundNoise"`
	} `json:"audioProcessingConfig,omitempty"`
}

// Clone implements sdk.Provider with instant voice cloning (POST
// /voices/v1/voices:clone): the samples go base64 in a JSON body, raw PCM
// wrapped as WAV first (the endpoint takes WAV or MP3 files). The voice's
// language is the langCode option, EN_US if absent (the endpoint requires
// one). It is never retried: a lost answer does not mean no voice was
// made.
func (p *Provider) Clone(ctx context.Context, req *sdk.CloneRequest) (*sdk.CloneResponse, error) {
	if len(req.Samples) == 0 {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "inworld: cloning needs at least one audio sample")
	}
	var o cloneOptions
	if err := upstream.DecodeOptions(providerID, req.Options, &o, "langCode", "tags", "removeBackgroundNoise", "transcriptions"); err != nil {
		return nil, err
	}
	if len(o.Transcriptions) > len(req.Samples) {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "inworld: %d transcriptions for %d samples", len(o.Transcriptions), len(req.Samples))
	}
	body := cloneBody{
		DisplayName: cmp.Or(strings.TrimSpace(req.Name), "voxgate voice"),
		LangCode:    cmp.Or(ptrValue(o.LangCode), "EN_US"),
		Description: req.Description,
		Tags:        o.Tags,
	}
	if o.RemoveBackgroundNoise != nil {
		body.AudioProcessingConfig = &struct {
			RemoveBackgroundNoise bool `json:"removeBackgroundNoise"`
		}{*o.RemoveBackgroundNoise}
	}
	for i, s := range req.Samples {
		if len(s.Data) == 0 {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "inworld: sample %d is empty", i)
		}
		_, _, data := upstream.SampleFile(s, i)
		vs := voiceSample{AudioData: base64.StdEncoding.EncodeToString(data)}
		if i < len(o.Transcriptions) {
			vs.Transcription = o.Transcriptions[i]
		}
		body.VoiceSamples = append(body.VoiceSamples, vs)
	}
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	hreq, err := upstream.NewJSONRequest(ctx, http.MethodPost, cfg.BaseURL+clonePath, body)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "inworld: %v", err)
	}
	var out struct {
		Voice struct {
			VoiceID string `json:"voiceId"`
		} `json:"voice"`
	}
	if err := cfg.DoJSON(ctx, hreq, req.Credentials.APIKey, false, "clone answer", &out); err != nil {
		return nil, err
	}
	if out.Voice.VoiceID == "" {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "inworld: the clone answer has no voice id"}
	}
	return &sdk.CloneResponse{VoiceID: out.Voice.VoiceID}, nil
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"golang.org/x/text/language"
	"io"
	"math"
	"mime"
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
	providerID     = "google"
	defaultBaseURL = "https://generativelanguage.googleapis.com/v1beta"
	defaultModel   = "gemini-3.8-flash-tts"
	// nativeRate is the only rate the TTS models produce: 16-bit mono PCM
	// at 24 kHz (inlineData.mimeType "audio/L16;codec=pcm;rate=24000").
	nativeRate = 24000
	// maxText keeps a request well inside the documented token limits:
	// 8,192 input tokens (the 3.1 and 3.8 TTS model pages; the 2.5
	// previews' 32k-token context is larger) and 16,384 output tokens,
	// audio counting 32 tokens a second, so 5,000 characters (about
	// 1,250 text tokens and five minutes, some 10,000 tokens, of speech)
	// leave room to spare.
	maxText = 5000
	// maxAnswer bounds a whole-clip JSON answer: base64 of 24 kHz PCM is
	// 64 KB a second, so five minutes of speech is about 20 MB.
	maxAnswer = 128 << 20
)

// Provider is the Google (Gemini TTS) plugin. It keeps only deployment
// settings, which Configure swaps atomically; every call reads one
// consistent snapshot.
type Provider struct {
	cfg atomic.Pointer[config]
}

// config is one snapshot of the deployment settings.
type config struct {
	*upstream.Endpoint
}

// api is how the Gemini API authenticates and reports errors. It is never
// modified.
var api = &upstream.API{
	Provider:       providerID,
	DefaultBaseURL: defaultBaseURL,
	// The header rather than the ?key= query parameter keeps the key out
	// of URLs, which proxies and error messages print.
	Authorize:  func(h http.Header, key string) { h.Set("X-Goog-Api-Key", key) },
	ParseError: parseError,
	Classify: func(e *sdk.Error) {
		// A wrong key is a 400 INVALID_ARGUMENT whose ErrorInfo reason
		// says what it is.
		if e.UpstreamCode == "API_KEY_INVALID" {
			e.Kind, e.Retryable = sdk.KindUnauthorized, false
		}
	},
}

// newEndpoint builds a snapshot whose client also reads Google's RetryInfo.
func newEndpoint(settings map[string]string) (*upstream.Endpoint, error) {
	e, err := upstream.NewEndpoint(api, settings)
	if err != nil {
		return nil, err
	}
	e.Client.Transport = retryInfo{next: e.Client.Transport}
	return e, nil
}

// New returns a Provider with the default settings (the public API).
func New() *Provider {
	p := &Provider{}
	e, _ := newEndpoint(nil)
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
	e, err := newEndpoint(settings)
	if err != nil {
		return err
	}
	// Calls in flight keep their snapshot; only idle connections go.
	p.cfg.Swap(&config{Endpoint: e}).Close()
	return nil
}

// ttsModel is one Gemini TTS model.
type ttsModel struct {
	id, name string
	// tags: the model performs inline audio tags ("[whispers]",
	// "[laughs]", "[extremely fast]"), an open set steered by their
	// words, which the speech-generation guide introduces with Gemini
	// 3.1 Flash TTS.
	tags bool
}

// ttsModels are the Gemini API's TTS models (ai.google.dev, Gemini
// models and the model pages, read 2026-11-28): Gemini 3.8 Flash TTS and
// Flash-Lite TTS, generally available, the first the default; the 3.1
// preview, now legacy; and the two 2.5 previews, obsolete. The 3.1 and
// 2.5 previews are scheduled to shut down on 2026-12-18; they stay listed
// while the API serves them.
func ttsModels() []ttsModel {
	return []ttsModel{
		{id: defaultModel, name: "Gemini 3.8 Flash TTS", tags: true},
		{id: "gemini-3.8-flash-lite-tts", name: "Gemini 3.8 Flash-Lite TTS", tags: true},
		{id: "gemini-3.1-flash-tts-preview", name: "Gemini 3.1 Flash TTS Preview", tags: true},
		{id: "gemini-2.5-flash-preview-tts", name: "Gemini 2.5 Flash Preview TTS"},
		{id: "gemini-2.5-pro-preview-tts", name: "Gemini 2.5 Pro Preview TTS"},
	}
}

// modelIDPattern is the grammar of a Gemini TTS model id: gemini- and
// lower-case letters, digits, '.' and '-', with tts in it, as every
// Gemini TTS model is named (gemini-2.5-flash-preview-tts,
// gemini-3.8-flash-lite-tts); the length is bounded apart. An id the
// plugin does not list is passed through when it matches, and refused
// before any call otherwise: another Gemini model answers text, not
// speech.
var modelIDPattern = regexp.MustCompile(`^gemini-[a-z0-9.-]*tts[a-z0-9.-]*$`)

// maxModelID bounds a passed-through model id, far above any Gemini one.
const maxModelID = 100

// findModel returns the listed model id, or a pass-through model for an
// id that can be a Gemini TTS model: it claims what every model has
// (24 kHz PCM and WAV, streaming, the text limit) and no audio tags,
// which the 2.5 previews do not perform. Any other id is the caller's
// mistake.
func findModel(id string) (ttsModel, error) {
	if i := slices.IndexFunc(ttsModels(), func(m ttsModel) bool { return m.id == id }); i >= 0 {
		return ttsModels()[i], nil
	}
	if len(id) > maxModelID || !modelIDPattern.MatchString(id) {
		return ttsModel{}, sdk.Errorf(sdk.KindInvalidRequest,
			"google: unknown model %q: a Gemini TTS model id is gemini- and lower-case letters, digits, '.' and '-', with tts in it, e.g. %s", id, defaultModel)
	}
	return ttsModel{id: id, name: "Any other Gemini TTS model (passed through)"}, nil
}

// encodings are what every model answers: 16-bit mono PCM at 24 kHz
// (inlineData.mimeType "audio/L16;codec=pcm;rate=24000"; the Gemini API
// has no output format setting), and WAV, the same samples behind a
// header the plugin writes: no sample changes, so both are native.
func encodings() []sdk.Encoding {
	return []sdk.Encoding{{Format: sdk.FormatPCM, SampleRate: nativeRate}, {Format: sdk.FormatWAV, SampleRate: nativeRate}}
}

// describe is m as the gateway sees it.
func (m ttsModel) describe() sdk.Model {
	d := sdk.Model{
		ID:           m.id,
		Name:         m.name,
		Capabilities: sdk.Capabilities{Streaming: true},
		Encodings:    encodings(),
		MaxTextChars: maxText,
	}
	if m.tags {
		d.AudioTags = []string{sdk.AnyAudioTag}
	}
	return d
}

// Describe implements sdk.Provider, with an sdk.AnyModel entry for the
// ids it passes through (findModel). The models stream (streamGenerateContent);
// they give no word timestamps, take no speed setting (pace is steered in
// the text, "Say slowly: ..."), and the Gemini API has no voice cloning.
func (p *Provider) Describe(context.Context) (*sdk.Description, error) {
	d := &sdk.Description{ID: providerID, Name: "Google Gemini TTS", DefaultModel: defaultModel}
	for _, m := range ttsModels() {
		d.Models = append(d.Models, m.describe())
	}
	pt := ttsModel{id: sdk.AnyModel, name: "Any other Gemini TTS model (passed through)"}
	d.Models = append(d.Models, pt.describe())
	d.Models = sdk.WithUnpublished(sdk.WithPrices(d.Models, priceTable), sdk.UnitCharacters, priceDate)
	return d, nil
}

// Voices implements sdk.Provider: the prebuilt voices, which every model
// takes. The Gemini API documents them but has no endpoint to list them,
// so no call is made.
func (p *Provider) Voices(_ context.Context, req *sdk.VoicesRequest) ([]sdk.Voice, error) {
	if req.Model != "" {
		if _, err := findModel(req.Model); err != nil {
			return nil, err
		}
	}
	return prebuiltVoices(), nil
}

// parseError reads Google's error envelope {"error": {"code", "message",
// "status", "details"}}. The code is the reason of an ErrorInfo detail
// when there is one (API_KEY_INVALID says more than INVALID_ARGUMENT),
// else error.status.
func parseError(body []byte) (code, message string) {
	var b struct {
		Error *googleError `json:"error"`
	}
	if json.Unmarshal(body, &b) != nil || b.Error == nil {
		// A proxy or load balancer in front of Google may answer HTML.
		return "", ""
	}
	return b.Error.code(), b.Error.Message
}

// googleError is the body of Google's error envelope, also found in a
// stream's event.
type googleError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Details []struct {
		Type   string `json:"@type"`
		Reason string `json:"reason"`
	} `json:"details"`
}

func (g *googleError) code() string {
	for _, d := range g.Details {
		if strings.HasSuffix(d.Type, "google.rpc.ErrorInfo") && d.Reason != "" {
			return d.Reason
		}
	}
	return g.Status
}

// options are the providerOptions the plugin accepts, named as in the
// API's speechConfig and generationConfig.
type options struct {
	// LanguageCode is speechConfig.languageCode (BCP-47, e.g. "en-US");
	// the models detect the language when it is absent.
	LanguageCode *string `json:"languageCode"`
	// MultiSpeakerVoiceConfig replaces the single voice: two speakers,
	// named as the text names them ("Joe: ...").
	MultiSpeakerVoiceConfig *multiSpeakerVoiceConfig `json:"multiSpeakerVoiceConfig"`
	Temperature             *float64                 `json:"temperature"`
	Seed                    *int64                   `json:"seed"`
}

// check checks o against the Gemini API reference (generationConfig and
// speechConfig; Google publishes the same in its discovery document):
// temperature 0 to 2, seed an int32, languageCode a BCP-47 tag, and a
// multi-speaker configuration of exactly two distinct named speakers,
// each with a prebuilt voice.
func (o *options) check() error {
	c := upstream.NewCheck(providerID)
	upstream.InRange(c, "temperature", o.Temperature, 0, 2)
	upstream.InRange(c, "seed", o.Seed, math.MinInt32, math.MaxInt32)
	if o.LanguageCode != nil {
		if _, err := language.Parse(*o.LanguageCode); err != nil {
			c.Fail("languageCode", "must be a BCP-47 language tag such as en-US, got %q", *o.LanguageCode)
		}
	}
	if m := o.MultiSpeakerVoiceConfig; m != nil {
		const field = "multiSpeakerVoiceConfig.speakerVoiceConfigs"
		if n := len(m.SpeakerVoiceConfigs); n != 2 {
			c.Fail(field, "takes exactly 2 speakers, got %d", n)
		}
		for i, s := range m.SpeakerVoiceConfigs {
			at := fmt.Sprintf("%s.%d", field, i)
			switch {
			case strings.TrimSpace(s.Speaker) == "":
				c.Fail(at+".speaker", "is required")
			case i > 0 && s.Speaker == m.SpeakerVoiceConfigs[0].Speaker:
				c.Fail(at+".speaker", "must differ from the other speaker's")
			case s.VoiceConfig == nil || s.VoiceConfig.PrebuiltVoiceConfig == nil || s.VoiceConfig.PrebuiltVoiceConfig.VoiceName == "":
				c.Fail(at+".voiceConfig.prebuiltVoiceConfig.voiceName", "is required")
			}
		}
	}
	return c.Err()
}

type multiSpeakerVoiceConfig struct {
	SpeakerVoiceConfigs []speakerVoiceConfig `json:"speakerVoiceConfigs"`
}

type speakerVoiceConfig struct {
	Speaker     string       `json:"speaker"`
	VoiceConfig *voiceConfig `json:"voiceConfig"`
}

type voiceConfig struct {
	PrebuiltVoiceConfig *prebuiltVoiceConfig `json:"prebuiltVoiceConfig"`
}

type prebuiltVoiceConfig struct {
	VoiceName string `json:"voiceName"`
}

type speechConfig struct {
	VoiceConfig             *voiceConfig             `json:"voiceConfig,omitempty"`
	MultiSpeakerVoiceConfig *multiSpeakerVoiceConfig `json:"multiSpeakerVoiceConfig,omitempty"`
	LanguageCode            *string                  `json:"languageCode,omitempty"`
}

type generationConfig struct {
	ResponseModalities []string     `json:"responseModalities"`
	SpeechConfig       speechConfig `json:"speechConfig"`
	Temperature        *float64     `json:"temperature,omitempty"`
	Seed               *int64       `json:"seed,omitempty"`
}

type textPart struct {
	Text string `json:"text"`
}

type content struct {
	Role  string     `json:"role"`
	Parts []textPart `json:"parts"`
}

// generateBody is the GenerateContentRequest of both methods.
type generateBody struct {
	Contents         []content        `json:"contents"`
	GenerationConfig generationConfig `json:"generationConfig"`
}

// call is a validated request.
type call struct {
	model    string
	body     generateBody
	format   string
	warnings []string
}

// prepare validates req and builds the upstream body. Failures are the
// caller's (KindInvalidRequest) and cost no upstream call.
func prepare(req *sdk.SynthesizeRequest) (*call, error) {
	tm, err := findModel(req.Model)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "google: nothing to say")
	}
	m := tm.describe()
	e, err := upstream.ChooseEncoding(providerID, &m, req)
	if err != nil {
		return nil, err
	}
	if req.Speed != 0 && req.Speed != 1 {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "google: the TTS models take no speed setting; ask for a pace in the text instead")
	}
	c := &call{model: req.Model, format: e.Format}
	var o options
	if err := upstream.DecodeOptions(providerID, req.Options, &o, "languageCode", "multiSpeakerVoiceConfig", "temperature", "seed"); err != nil {
		return nil, err
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	sc := speechConfig{LanguageCode: o.LanguageCode}
	if m := o.MultiSpeakerVoiceConfig; m != nil {
		sc.MultiSpeakerVoiceConfig = m
		if req.Voice != "" {
			c.warnings = append(c.warnings, fmt.Sprintf("voice %s was not used: multiSpeakerVoiceConfig names the voices", req.Voice))
		}
	} else {
		if req.Voice == "" {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "google: a voice is required (e.g. Kore)")
		}
		sc.VoiceConfig = &voiceConfig{PrebuiltVoiceConfig: &prebuiltVoiceConfig{VoiceName: req.Voice}}
	}
	c.body = generateBody{
		Contents: []content{{Role: "user", Parts: []textPart{{Text: req.Text}}}},
		GenerationConfig: generationConfig{
			ResponseModalities: []string{"AUDIO"},
			SpeechConfig:       sc,
			Temperature:        o.Temperature,
			Seed:               o.Seed,
		},
	}
	return c, nil
}

// mediaType is the media type of audio at rate in the call's format.
func (c *call) mediaType(rate int) string {
	if c.format == sdk.FormatWAV {
		return "audio/wav"
	}
	return fmt.Sprintf("audio/pcm;rate=%d", rate)
}

// post sends a method of the call's model and returns the successful
// response; any failure is an *sdk.Error.
func (cfg *config) post(ctx context.Context, c *call, method, key string) (*http.Response, error) {
	u := cfg.BaseURL + "/models/" + url.PathEscape(c.model) + ":" + method
	if method == "streamGenerateContent" {
		u += "?alt=sse"
	}
	hreq, err := upstream.NewJSONRequest(ctx, http.MethodPost, u, c.body)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "google: %v", err)
	}
	// Generating is safe to repeat: nothing is created upstream.
	return cfg.Do(ctx, hreq, key, true)
}

// Synthesize implements sdk.Provider with generateContent: one JSON answer
// whose audio parts are base64 PCM.
func (p *Provider) Synthesize(ctx context.Context, req *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	if req.Timestamps {
		return nil, sdk.Errorf(sdk.KindUnsupported, "google: the Gemini TTS models return no word timestamps")
	}
	c, err := prepare(req)
	if err != nil {
		return nil, err
	}
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	resp, err := cfg.post(ctx, c, "generateContent", req.Credentials.APIKey)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var a answer
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswer)).Decode(&a); err != nil {
		return nil, upstream.BodyError(ctx, providerID, "speech answer", err)
	}
	var pcm bytes.Buffer
	rate, err := a.appendAudio(&pcm, 0)
	if err != nil {
		return nil, err
	}
	if pcm.Len() == 0 {
		return nil, a.noAudio()
	}
	if pcm.Len()%2 != 0 {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "google: truncated PCM (odd byte count)"}
	}
	out := &sdk.SynthesizeResponse{Audio: pcm.Bytes(), MediaType: c.mediaType(rate), Warnings: c.warnings, Billed: a.Usage.billed()}
	if c.format == sdk.FormatWAV {
		out.Audio = append(upstream.WAVHeader(rate, uint32(pcm.Len())), out.Audio...)
	}
	return out, nil
}

// Stream implements sdk.Provider with streamGenerateContent?alt=sse: each
// event is a GenerateContentResponse carrying the next piece of audio,
// sent on as it arrives (a WAV stream opens with a header of unknown
// length). The timeout setting bounds only the wait for the answer to
// start.
func (p *Provider) Stream(ctx context.Context, req *sdk.SynthesizeRequest, send func(sdk.Chunk) error) error {
	c, err := prepare(req)
	if err != nil {
		return err
	}
	cfg := p.cfg.Load()
	resp, err := cfg.post(ctx, c, "streamGenerateContent", req.Credentials.APIKey)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var (
		rate    int
		pending []byte // an odd byte held back so chunks stay whole samples
		started bool   // the media type (and a WAV header) went out
		last    answer
		usage   *usageMetadata // the latest event's: the stream's so far
	)
	start := func(r int) error {
		started = true
		if c.format == sdk.FormatWAV {
			return send(sdk.Chunk{MediaType: c.mediaType(r), Data: upstream.WAVHeader(r, upstream.StreamingWAV)})
		}
		return nil
	}
	err = readEvents(ctx, resp.Body, func(a *answer) error {
		buf := bytes.NewBuffer(pending)
		r, err := a.appendAudio(buf, rate)
		if err != nil {
			return err
		}
		last = *a
		if a.Usage != nil {
			usage = a.Usage
		}
		data := buf.Bytes()
		whole := len(data) &^ 1
		if whole == 0 {
			pending = data
			return nil
		}
		chunk := sdk.Chunk{Data: data[:whole]}
		pending = bytes.Clone(data[whole:])
		if !started {
			rate = r
			if err := start(r); err != nil {
				return err
			}
			if c.format == sdk.FormatPCM {
				chunk.MediaType = c.mediaType(r)
			}
		}
		return send(chunk)
	})
	if err != nil {
		return err
	}
	if len(pending) > 0 {
		return &sdk.Error{Kind: sdk.KindUpstream, Message: "google: truncated PCM (odd byte count)"}
	}
	if !started {
		return last.noAudio()
	}
	if b := usage.billed(); b != nil {
		// The usage comes with the last event, after its audio went out:
		// a chunk of its own, with no audio.
		return send(sdk.Chunk{Billed: b})
	}
	return nil
}

// Clone implements sdk.Provider: the Gemini API has no voice cloning.
func (p *Provider) Clone(context.Context, *sdk.CloneRequest) (*sdk.CloneResponse, error) {
	return nil, sdk.Errorf(sdk.KindUnsupported, "google: the Gemini API has no voice cloning; use a prebuilt voice")
}

// answer is the part of a GenerateContentResponse the plugin reads; in a
// stream an event may carry an error instead.
type answer struct {
	Candidates []struct {
		Content *struct {
			Parts []struct {
				Text       string `json:"text"`
				InlineData *struct {
					MimeType string `json:"mimeType"`
					Data     string `json:"data"`
				} `json:"inlineData"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	Usage *usageMetadata `json:"usageMetadata"`
	Error *googleError   `json:"error"`
}

// usageMetadata is what Google says a generateContent call used (the
// GenerateContentResponse's usageMetadata; in a stream, every event's
// counts the stream so far, the last the whole): the tokens of the
// prompt (the text and any style instructions, which Google bills as
// text input) and of the candidates (the audio), each also broken down
// by modality.
type usageMetadata struct {
	PromptTokenCount        int64           `json:"promptTokenCount"`
	CandidatesTokenCount    int64           `json:"candidatesTokenCount"`
	PromptTokensDetails     []modalityCount `json:"promptTokensDetails"`
	CandidatesTokensDetails []modalityCount `json:"candidatesTokensDetails"`
}

// modalityCount is one modality's share of a token count.
type modalityCount struct {
	Modality   string `json:"modality"`
	TokenCount int64  `json:"tokenCount"`
}

// billed is u in the units the models are priced in: the prompt's text
// tokens and the answer's audio tokens, from the breakdown by modality
// where Google gives one, else the totals; nil without usage. These win
// over the gateway's estimate (four characters a token,
// audioTokensPerSecond).
func (u *usageMetadata) billed() []sdk.BilledUsage {
	if u == nil {
		return nil
	}
	text := byModality(u.PromptTokensDetails, "TEXT", u.PromptTokenCount)
	audio := byModality(u.CandidatesTokensDetails, "AUDIO", u.CandidatesTokenCount)
	var out []sdk.BilledUsage
	if text > 0 {
		out = append(out, sdk.BilledUsage{Unit: sdk.UnitTextTokens, Quantity: text})
	}
	if audio > 0 {
		out = append(out, sdk.BilledUsage{Unit: sdk.UnitAudioTokens, Quantity: audio})
	}
	return out
}

// byModality is the count of modality in details, or total when details
// are missing.
func byModality(details []modalityCount, modality string, total int64) int64 {
	if len(details) == 0 {
		return total
	}
	var n int64
	for _, d := range details {
		if d.Modality == modality {
			n += d.TokenCount
		}
	}
	return n
}

// appendAudio decodes the audio parts of the first candidate into dst and
// returns their rate. want, when not 0, is the rate earlier parts had: a
// clip cannot change rate midway.
func (a *answer) appendAudio(dst *bytes.Buffer, want int) (int, error) {
	if a.Error != nil {
		e := a.Error
		status := e.Code
		if status < 400 {
			status = http.StatusInternalServerError
		}
		return 0, upstream.ErrorFromStatus(status, providerID, e.code(), e.Message, 0)
	}
	rate := want
	if len(a.Candidates) == 0 || a.Candidates[0].Content == nil {
		return rate, nil
	}
	for _, part := range a.Candidates[0].Content.Parts {
		in := part.InlineData
		if in == nil || in.Data == "" {
			continue
		}
		r, err := pcmRate(in.MimeType)
		if err != nil {
			return 0, err
		}
		if rate != 0 && r != rate {
			return 0, &sdk.Error{Kind: sdk.KindUpstream, Message: fmt.Sprintf("google: the audio changes rate from %d to %d Hz", rate, r)}
		}
		rate = r
		n := base64.StdEncoding.DecodedLen(len(in.Data))
		dst.Grow(n)
		buf := dst.AvailableBuffer()[:n]
		m, err := base64.StdEncoding.Decode(buf, []byte(in.Data))
		if err != nil {
			return 0, &sdk.Error{Kind: sdk.KindUpstream, Message: "google: an audio part is not base64"}
		}
		dst.Write(buf[:m])
	}
	return rate, nil
}

// pcmRate reads the rate of a 16-bit PCM part's mime type
// ("audio/L16;codec=pcm;rate=24000"); anything else is not what the TTS
// models document.
func pcmRate(mimeType string) (int, error) {
	mt, params, err := mime.ParseMediaType(mimeType)
	if err != nil || (mt != "audio/l16" && mt != "audio/pcm") {
		return 0, &sdk.Error{Kind: sdk.KindUpstream, Message: fmt.Sprintf("google: unexpected audio type %q", mimeType)}
	}
	rate := nativeRate
	if v := params["rate"]; v != "" {
		if rate, err = strconv.Atoi(v); err != nil || rate <= 0 {
			return 0, &sdk.Error{Kind: sdk.KindUpstream, Message: fmt.Sprintf("google: unexpected audio type %q", mimeType)}
		}
	}
	return rate, nil
}

// noAudio explains an answer without audio: a blocked prompt, a stop for
// safety (the caller's text) or another finish reason (Google's failure).
func (a *answer) noAudio() error {
	if f := a.PromptFeedback; f != nil && f.BlockReason != "" {
		return &sdk.Error{Kind: sdk.KindInvalidRequest, UpstreamCode: f.BlockReason, Message: "google: the text was blocked (" + f.BlockReason + ")"}
	}
	reason := ""
	if len(a.Candidates) > 0 {
		reason = a.Candidates[0].FinishReason
	}
	switch reason {
	case "SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION":
		return &sdk.Error{Kind: sdk.KindInvalidRequest, UpstreamCode: reason, Message: "google: the model refused the text (" + reason + ")"}
	}
	return &sdk.Error{Kind: sdk.KindUpstream, UpstreamCode: reason, Message: "google: the answer holds no audio (finish reason " + cmp.Or(reason, "none") + ")"}
}

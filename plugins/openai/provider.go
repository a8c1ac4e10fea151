package main

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

const (
	providerID     = "openai"
	defaultBaseURL = "https://api.openai.com/v1"
	// sampleRate is the only rate OpenAI produces: pcm is documented as
	// 24 kHz 16-bit little-endian mono, and every other response_format
	// carries the same 24 kHz speech (the API has no rate parameter).
	sampleRate = 24000
	// maxInput is the documented input limit.
	maxInput = 4096
	// maxInstructions is the documented limit of instructions (the
	// OpenAPI document's maxLength).
	maxInstructions = 4096
	// maxAudioBytes bounds a whole clip read into memory (4096 characters
	// of 24 kHz PCM is a few MB; this is far above any real answer).
	maxAudioBytes = 256 << 20
)

// Provider is the OpenAI plugin. It keeps only deployment settings, which
// Configure swaps atomically; every call reads one consistent snapshot.
type Provider struct {
	cfg atomic.Pointer[config]
}

// config is one snapshot of the deployment settings.
type config struct {
	*upstream.Endpoint
}

// api is how OpenAI authenticates and reports errors. It is never
// modified.
var api = &upstream.API{
	Provider:       providerID,
	DefaultBaseURL: defaultBaseURL,
	Authorize:      upstream.Bearer,
	ParseError:     upstream.ParseOpenAIError,
	Classify: func(e *sdk.Error) {
		// An exhausted quota is reported as 429 but waiting does not help.
		if e.UpstreamCode == "insufficient_quota" {
			e.Kind, e.Retryable, e.RetryAfter = sdk.KindUpstream, false, 0
		}
	},
}

// New returns a Provider with the default settings (the public API).
func New() *Provider {
	p := &Provider{}
	e, _ := upstream.NewEndpoint(api, nil)
	e.Header = headers("", "")
	p.cfg.Store(&config{Endpoint: e})
	return p
}

var _ sdk.Provider = (*Provider)(nil)

// settings are every key the plugin reads (sdk.DecodeSettings): the
// common ones and its own.
type settings struct {
	upstream.CommonSettings
	Organization string `setting:"organization"`
	Project      string `setting:"project"`
}

// NewSettings implements sdk.SettingsDecoder, so a provider block with a
// key the plugin does not read (a typo) is refused by `voxgate config
// check` and at start.
func (p *Provider) NewSettings() any { return new(settings) }

// Configure implements sdk.Provider. Besides the common settings of
// upstream.ParseSettings it reads organization and project, sent as the
// OpenAI-Organization and OpenAI-Project headers. Other keys are refused (NewSettings).
func (p *Provider) Configure(_ context.Context, settings map[string]string) error {
	if problems := sdk.DecodeSettings(settings, p.NewSettings()); len(problems) > 0 {
		return sdk.SettingsErr(api.Provider, problems)
	}
	e, err := upstream.NewEndpoint(api, settings)
	if err != nil {
		return err
	}
	e.Header = headers(strings.TrimSpace(settings["organization"]), strings.TrimSpace(settings["project"]))
	// Calls in flight keep their snapshot; only idle connections go.
	p.cfg.Swap(&config{Endpoint: e}).Close()
	return nil
}

// model is what the plugin knows about one OpenAI model.
type model struct {
	id, name string
	// speed: the speed field works (tts-1 family). The reference says it
	// does not work with gpt-4o-mini-tts.
	speed bool
	// instructions: the instructions field works (gpt-4o-mini-tts). The
	// reference says it does not work with tts-1 or tts-1-hd.
	instructions bool
	voices       []string
}

func models() []model {
	classic := []string{"alloy", "ash", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer"}
	all := append(append([]string(nil), classic...), "ballad", "verse", "marin", "cedar")
	// The alias gpt-4o-mini-tts points at the newest snapshot
	// (gpt-4o-mini-tts-2025-12-15); the snapshots pin a version. Source:
	// the gpt-4o-mini-tts model page of OpenAI's API docs, "Snapshots"
	// (read 2026-11-28).
	return []model{
		{id: "gpt-4o-mini-tts", name: "GPT-4o mini TTS", instructions: true, voices: all},
		{id: "gpt-4o-mini-tts-2025-12-15", name: "GPT-4o mini TTS (2025-12-15)", instructions: true, voices: all},
		{id: "gpt-4o-mini-tts-2025-03-20", name: "GPT-4o mini TTS (2025-03-20)", instructions: true, voices: all},
		{id: "tts-1", name: "TTS-1", speed: true, voices: classic},
		{id: "tts-1-hd", name: "TTS-1 HD", speed: true, voices: classic},
	}
}

// responseFormats maps each sdk format to OpenAI's response_format, the
// media type OpenAI answers it with aside.
var responseFormats = map[string]string{
	sdk.FormatPCM: "pcm", sdk.FormatMP3: "mp3", sdk.FormatWAV: "wav",
	sdk.FormatOpus: "opus", sdk.FormatAAC: "aac", sdk.FormatFLAC: "flac",
}

// encodings are what every OpenAI speech model produces: each
// response_format of POST /audio/speech (mp3, opus, aac, flac, wav, pcm;
// the API reference's CreateSpeechRequest, openai/openai-openapi, read
// 2026-11-28), all of 24 kHz speech at OpenAI's own bitrate (the API has
// no rate or bitrate parameter), pcm first: the gateway's default, and
// 16-bit little-endian mono as the sdk's pcm is. Opus is listed at
// 48 kHz, the rate every Opus stream decodes at (RFC 7845) and the only
// one the gateway lets a client ask of opus.
func encodings() []sdk.Encoding {
	return []sdk.Encoding{
		{Format: sdk.FormatPCM, SampleRate: sampleRate},
		{Format: sdk.FormatWAV, SampleRate: sampleRate},
		{Format: sdk.FormatMP3, SampleRate: sampleRate},
		{Format: sdk.FormatOpus, SampleRate: 48000},
		{Format: sdk.FormatAAC, SampleRate: sampleRate},
		{Format: sdk.FormatFLAC, SampleRate: sampleRate},
	}
}

// modelIDPattern is the grammar of an OpenAI model id (tts-1,
// gpt-4o-mini-tts-2025-12-15): lower-case letters, digits, '.' and '-',
// starting with a letter or digit, and far shorter than 100 characters.
// An id the plugin does not list is passed through when it matches, and
// refused before any call otherwise.
var modelIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,99}$`)

// passThrough is a model OpenAI may have that the plugin does not list
// (one released after it), sent under the caller's id. It claims what
// every OpenAI speech model takes: every response_format at 24 kHz,
// streaming, 4096 characters and the classic voices; neither speed
// (gpt-4o-mini-tts ignores it) nor instructions (tts-1 refuses them).
func passThrough(id string) model {
	return model{id: id, name: id, voices: []string{"alloy", "ash", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer"}}
}

// findModel returns the listed model id, or a pass-through model for an
// id that can be OpenAI's; any other id is the caller's mistake.
func findModel(id string) (model, error) {
	for _, m := range models() {
		if m.id == id {
			return m, nil
		}
	}
	if !modelIDPattern.MatchString(id) {
		return model{}, sdk.Errorf(sdk.KindInvalidRequest,
			"openai: unknown model %q: an OpenAI model id is lower-case letters, digits, '.' and '-', e.g. gpt-4o-mini-tts", id)
	}
	return passThrough(id), nil
}

// Describe implements sdk.Provider: the listed models and an
// sdk.AnyModel entry for the ids it passes through (passThrough).
func (p *Provider) Describe(context.Context) (*sdk.Description, error) {
	d := &sdk.Description{ID: providerID, Name: "OpenAI", DefaultModel: "gpt-4o-mini-tts"}
	for _, m := range models() {
		d.Models = append(d.Models, m.describe())
	}
	pt := passThrough(sdk.AnyModel)
	pt.name = "Any other OpenAI speech model (passed through)"
	d.Models = append(d.Models, pt.describe())
	d.Models = sdk.WithUnpublished(sdk.WithPrices(d.Models, priceTable), sdk.UnitCharacters, priceDate)
	return d, nil
}

// describe is m as the gateway sees it. Every format streams: the
// endpoint sends the body as it is produced, whatever response_format.
func (m model) describe() sdk.Model {
	d := sdk.Model{
		ID:           m.id,
		Name:         m.name,
		Capabilities: sdk.Capabilities{Streaming: true, Speed: m.speed, Instructions: m.instructions},
		Encodings:    encodings(),
		MaxTextChars: maxInput,
	}
	if m.speed {
		d.MinSpeed, d.MaxSpeed = 0.25, 4 // the documented range
	}
	return d
}

// Voices implements sdk.Provider: the built-in voices of the model, which
// OpenAI documents but does not list through the API.
func (p *Provider) Voices(_ context.Context, req *sdk.VoicesRequest) ([]sdk.Voice, error) {
	id := req.Model
	if id == "" {
		id = "gpt-4o-mini-tts"
	}
	m, err := findModel(id)
	if err != nil {
		return nil, err
	}
	voices := make([]sdk.Voice, 0, len(m.voices))
	for _, v := range m.voices {
		voices = append(voices, sdk.Voice{ID: v, Name: strings.ToUpper(v[:1]) + v[1:]})
	}
	return voices, nil
}

// options are the providerOptions the plugin accepts.
type options struct {
	// Instructions steer gpt-4o-mini-tts's delivery ("Speak calmly.").
	Instructions *string `json:"instructions"`
}

// speechBody is the request body of POST /audio/speech.
type speechBody struct {
	Model          string  `json:"model"`
	Input          string  `json:"input"`
	Voice          any     `json:"voice"`
	Instructions   string  `json:"instructions,omitempty"`
	ResponseFormat string  `json:"response_format"`
	Speed          float64 `json:"speed,omitempty"`
}

// call is a validated speech request.
type call struct {
	body      speechBody
	mediaType string
	align     int // PCM frame size for streaming, 1 otherwise
}

// prepare validates req and builds the upstream body. Failures are the
// caller's (KindInvalidRequest) and cost no upstream call.
func prepare(req *sdk.SynthesizeRequest) (*call, error) {
	m, err := findModel(req.Model)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "openai: nothing to say")
	}
	if req.Voice == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "openai: a voice is required (e.g. %s)", m.voices[0])
	}
	desc := m.describe()
	e, err := upstream.ChooseEncoding(providerID, &desc, req)
	if err != nil {
		return nil, err
	}
	c := &call{align: 1, mediaType: sdk.MediaType(e), body: speechBody{Model: m.id, Input: req.Text, Voice: req.Voice, ResponseFormat: responseFormats[e.Format]}}
	if e.Format == sdk.FormatPCM {
		c.align = 2
	}
	// Custom voices are objects; built-in voices are names.
	if strings.HasPrefix(req.Voice, "voice_") {
		c.body.Voice = map[string]string{"id": req.Voice}
	}
	if req.Speed != 0 && req.Speed != 1 {
		if !m.speed {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "openai: %s does not honour speed; use tts-1 or tts-1-hd", m.id)
		}
		if req.Speed < 0.25 || req.Speed > 4 {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "openai: speed %g is outside 0.25 to 4.0", req.Speed)
		}
		c.body.Speed = req.Speed
	}
	var o options
	if err := upstream.DecodeOptions(providerID, req.Options, &o, "instructions"); err != nil {
		return nil, err
	}
	if o.Instructions != nil && *o.Instructions != "" {
		if !m.instructions {
			return nil, sdk.InvalidOption("instructions", "openai: %s does not follow instructions; use gpt-4o-mini-tts", m.id)
		}
		// The document's maxLength, in characters.
		if n := utf8.RuneCountInString(*o.Instructions); n > maxInstructions {
			return nil, sdk.InvalidOption("instructions", "openai: providerOptions field instructions takes at most %d characters, got %d", maxInstructions, n)
		}
		c.body.Instructions = *o.Instructions
	}
	return c, nil
}

// headers are what every request of the plugin (all speech requests)
// carries besides authentication and Content-Type.
func headers(organization, project string) map[string]string {
	h := map[string]string{"Accept": "application/octet-stream"}
	if organization != "" {
		h["OpenAI-Organization"] = organization
	}
	if project != "" {
		h["OpenAI-Project"] = project
	}
	return h
}

// post sends the speech request and returns the successful response; any
// failure is an *sdk.Error.
func (cfg *config) post(ctx context.Context, key string, body speechBody) (*http.Response, error) {
	req, err := upstream.NewJSONRequest(ctx, http.MethodPost, cfg.BaseURL+"/audio/speech", body)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "openai: %v", err)
	}
	// The endpoint redacts the key from error messages: OpenAI echoes a
	// masked key in its 401 message.
	return cfg.Do(ctx, req, key, true)
}

var _ sdk.Planner = (*Provider)(nil)

// Plan implements sdk.Planner: the request Synthesize and Stream send
// (one endpoint for both; the body streams as it is produced), for the
// gateway to send itself.
func (p *Provider) Plan(_ context.Context, req *sdk.PlanRequest) (*sdk.Plan, error) {
	c, err := prepare(req.Request)
	if err != nil {
		return nil, err
	}
	cfg := p.cfg.Load()
	plan, err := cfg.Plan(http.MethodPost, cfg.BaseURL+"/audio/speech", c.body, req.Request.Credentials.APIKey, nil)
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

// Synthesize implements sdk.Provider.
func (p *Provider) Synthesize(ctx context.Context, req *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	if req.Timestamps {
		return nil, sdk.Errorf(sdk.KindUnsupported, "openai: the speech API returns no word timestamps")
	}
	c, err := prepare(req)
	if err != nil {
		return nil, err
	}
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	resp, err := cfg.post(ctx, req.Credentials.APIKey, c.body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	audio, err := upstream.ReadBody(resp.Body, resp.ContentLength, maxAudioBytes)
	if err != nil {
		return nil, upstream.TransportError(ctx, providerID, err)
	}
	if len(audio)%c.align != 0 {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "openai: truncated PCM (odd byte count)"}
	}
	return &sdk.SynthesizeResponse{Audio: audio, MediaType: c.mediaType}, nil
}

// Stream implements sdk.Provider: the same endpoint, its body forwarded as
// it arrives. The timeout setting bounds only the wait for the answer to
// start (upstream.ClientOptions.ResponseHeaderTimeout); the stream itself
// runs as long as the caller's context allows.
func (p *Provider) Stream(ctx context.Context, req *sdk.SynthesizeRequest, send func(sdk.Chunk) error) error {
	c, err := prepare(req)
	if err != nil {
		return err
	}
	cfg := p.cfg.Load()
	resp, err := cfg.post(ctx, req.Credentials.APIKey, c.body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = upstream.Forward(ctx, resp.Body, send, upstream.ForwardOptions{MediaType: c.mediaType, Align: c.align, Provider: providerID})
	return err
}

// Clone implements sdk.Provider: OpenAI's speech API has no voice cloning.
func (p *Provider) Clone(context.Context, *sdk.CloneRequest) (*sdk.CloneResponse, error) {
	return nil, sdk.Errorf(sdk.KindUnsupported, "openai: voice cloning is not supported")
}

// transcribeModels are OpenAI's speech-to-text models that return word
// timestamps: the API reference allows timestamp_granularities only with
// whisper-1 (the gpt-4o transcribe models answer JSON without words).
var transcribeModels = []string{"whisper-1"}

// maxUpload is the documented file limit of the transcription endpoint.
const maxUpload = 25 << 20

var _ sdk.Transcriber = (*Provider)(nil)

// transcription is the verbose_json answer of POST /audio/transcriptions.
type transcription struct {
	Text     string  `json:"text"`
	Language string  `json:"language"`
	Duration float64 `json:"duration"`
	Words    []struct {
		Word  string  `json:"word"`
		Start float64 `json:"start"`
		End   float64 `json:"end"`
	} `json:"words"`
}

// Transcribe implements sdk.Transcriber with POST /audio/transcriptions:
// multipart file and model, response_format verbose_json and
// timestamp_granularities[] word (the only combination that returns word
// times), and language and prompt when given.
func (p *Provider) Transcribe(ctx context.Context, req *sdk.TranscribeRequest) (*sdk.Transcript, error) {
	model := req.Model
	if model == "" {
		model = transcribeModels[0]
	}
	if !slices.Contains(transcribeModels, model) {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "openai: %q gives no word timestamps; use %s", model, strings.Join(transcribeModels, ", "))
	}
	if len(req.Audio) == 0 {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "openai: no audio to transcribe")
	}
	if len(req.Audio) > maxUpload {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "openai: %d bytes of audio; the transcription endpoint takes at most 25 MB", len(req.Audio))
	}
	ext := "wav"
	switch {
	case strings.HasPrefix(req.MediaType, "audio/mpeg"):
		ext = "mp3"
	case req.MediaType != "" && !strings.HasPrefix(req.MediaType, "audio/wav") && !strings.HasPrefix(req.MediaType, "audio/x-wav"):
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "openai: cannot transcribe %s; send WAV or MP3", req.MediaType)
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, _ := mw.CreateFormFile("file", "speech."+ext) // writes to memory
	_, _ = part.Write(req.Audio)
	_ = mw.WriteField("model", model)
	_ = mw.WriteField("response_format", "verbose_json")
	_ = mw.WriteField("timestamp_granularities[]", "word")
	if req.Language != "" {
		_ = mw.WriteField("language", req.Language)
	}
	if req.Prompt != "" {
		_ = mw.WriteField("prompt", req.Prompt)
	}
	_ = mw.Close()
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.BaseURL+"/audio/transcriptions", bytes.NewReader(body.Bytes()))
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "openai: %v", err)
	}
	hreq.Header.Set("Content-Type", mw.FormDataContentType())
	var out transcription
	// A transcription changes nothing upstream: retrying it is safe.
	if err := cfg.DoJSON(ctx, hreq, req.Credentials.APIKey, true, "transcription", &out); err != nil {
		return nil, err
	}
	t := &sdk.Transcript{Text: out.Text, Language: out.Language, Words: make([]sdk.WordTimestamp, 0, len(out.Words))}
	for _, w := range out.Words {
		t.Words = append(t.Words, sdk.WordTimestamp{Text: w.Word, Start: w.Start, End: w.End})
	}
	return t, nil
}

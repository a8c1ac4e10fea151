package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

const (
	// defaultID is the Description ID unless the id setting says
	// otherwise. The gateway names a provider by its key in gateway.yaml
	// (catalog.New), never by this ID, so several deployments of
	// this plugin under different keys do not collide whatever it is.
	defaultID = "openai-compatible"
	// speechPath is OpenAI's speech endpoint under base_url.
	speechPath    = "/audio/speech"
	maxAudioBytes = 256 << 20
	// noKey stands for "no credentials" in calls to upstream.Endpoint,
	// which refuses an empty key (a cloud API always needs one): a local
	// server usually needs none, and then no Authorization header is
	// sent. It cannot be a real key (it holds NUL bytes) and never
	// leaves the plugin.
	noKey = "\x00voxgate:no-key\x00"
)

// Provider is the OpenAI-compatible plugin. It keeps only deployment
// settings, which Configure swaps atomically; every call reads one
// snapshot.
type Provider struct {
	cfg atomic.Pointer[config]
}

// config is one snapshot of the deployment settings.
type config struct {
	*upstream.Endpoint
	*deployment
}

// api is how OpenAI-compatible servers authenticate and report errors.
// It is never modified.
var api = &upstream.API{
	Provider: defaultID,
	Authorize: func(h http.Header, key string) {
		if key != noKey {
			upstream.Bearer(h, key)
		}
	},
	ParseError: parseError,
}

// New returns an unconfigured Provider: it describes itself and fails
// every call until Configure gives it a base_url and models.
func New() *Provider { return &Provider{} }

var _ sdk.Provider = (*Provider)(nil)

// compatibleSettings are every key the plugin reads: the common settings
// and the deployment's declaration (parseDeployment checks its values).
type compatibleSettings struct {
	upstream.CommonSettings
	ID           string            `setting:"id"`
	Name         string            `setting:"name"`
	Models       string            `setting:"models"`
	DefaultModel string            `setting:"default_model"`
	Voices       string            `setting:"voices"`
	ModelVoices  map[string]string `setting:"voices.*"`
	Formats      string            `setting:"formats"`
	SampleRate   string            `setting:"sample_rate"`
	Streaming    string            `setting:"streaming"`
	KeyRequired  string            `setting:"key_required"`
	MaxTextChars string            `setting:"max_text_chars"`
	Speed        string            `setting:"speed"`
}

// ValidateSettings implements sdk.SettingsValidator: base_url present,
// no unknown key, and every mistake parseDeployment finds, each naming
// its key.
func (p *Provider) ValidateSettings(_ context.Context, settings map[string]string) []sdk.SettingProblem {
	problems := sdk.DecodeSettings(settings, new(compatibleSettings))
	if strings.TrimSpace(settings["base_url"]) == "" {
		problems = append(problems, sdk.SettingProblem{Path: "base_url", Message: "required: the server's API root, e.g. http://localhost:8880/v1"})
	}
	if _, err := parseDeployment(settings); err != nil {
		for _, e := range unjoin(err) {
			// parseDeployment's messages start with the key.
			key, _, _ := strings.Cut(e.Error(), " ")
			problems = append(problems, sdk.SettingProblem{Path: strings.TrimSuffix(key, ":"), Message: e.Error()})
		}
	}
	return problems
}

// unjoin splits an errors.Join error into its parts.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// Configure implements sdk.Provider: base_url (required) and the common
// settings of upstream.ParseSettings, plus the deployment's declaration
// (parseDeployment).
func (p *Provider) Configure(ctx context.Context, settings map[string]string) error {
	if problems := p.ValidateSettings(ctx, settings); len(problems) > 0 {
		return sdk.SettingsErr(api.Provider, problems)
	}
	if strings.TrimSpace(settings["base_url"]) == "" {
		return sdk.Errorf(sdk.KindInvalidRequest, "openai-compatible settings: base_url is required (e.g. http://localhost:8880/v1)")
	}
	d, err := parseDeployment(settings)
	if err != nil {
		return sdk.Errorf(sdk.KindInvalidRequest, "openai-compatible settings: %v", err)
	}
	// Errors name the provider as the deployment does, so that two
	// servers behind one gateway are told apart in messages.
	a := *api
	a.Provider = d.id
	if d.name != "OpenAI-compatible" {
		a.Provider = d.name
	}
	e, err := upstream.NewEndpoint(&a, settings)
	if err != nil {
		return err
	}
	e.Header = map[string]string{"Accept": "application/octet-stream"}
	if old := p.cfg.Swap(&config{Endpoint: e, deployment: d}); old != nil {
		old.Close()
	}
	return nil
}

// load returns the configuration, or an error before Configure.
func (p *Provider) load() (*config, error) {
	cfg := p.cfg.Load()
	if cfg == nil {
		return nil, sdk.Errorf(sdk.KindUnavailable, "openai-compatible: not configured (set base_url and models)")
	}
	return cfg, nil
}

// Describe implements sdk.Provider with what the settings declare.
func (p *Provider) Describe(context.Context) (*sdk.Description, error) {
	cfg, err := p.load()
	if err != nil {
		return nil, err
	}
	d := cfg.describe()
	d.Models = sdk.WithUnpublished(sdk.WithPrices(d.Models, priceTable), sdk.UnitCharacters, priceDate)
	return d, nil
}

// parseError reads OpenAI's error body and, since servers that copy the
// API differ in their errors, FastAPI's {"detail": "..."} or
// {"detail": {"message", "type"}} (Kokoro-FastAPI, openedai-speech) and a
// bare {"error": "...", "message"?: "..."}.
func parseError(body []byte) (code, message string) {
	if code, message = upstream.ParseOpenAIError(body); message != "" {
		return code, message
	}
	var b struct {
		Detail  json.RawMessage `json:"detail"`
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &b) != nil {
		return "", ""
	}
	var s string
	if json.Unmarshal(b.Detail, &s) == nil {
		return "", s
	}
	var obj struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Error   string `json:"error"`
	}
	if json.Unmarshal(b.Detail, &obj) == nil && (obj.Message != "" || obj.Error != "") {
		return cmp.Or(obj.Type, obj.Error), cmp.Or(obj.Message, obj.Error)
	}
	if json.Unmarshal(b.Error, &s) == nil {
		if b.Message != "" {
			return s, b.Message
		}
		return "", s
	}
	return "", b.Message
}

// Voices implements sdk.Provider: the voices the settings declare for
// the model (OpenAI's API has no voice list endpoint).
func (p *Provider) Voices(_ context.Context, req *sdk.VoicesRequest) ([]sdk.Voice, error) {
	cfg, err := p.load()
	if err != nil {
		return nil, err
	}
	model := cmp.Or(req.Model, cfg.defaultModel)
	if _, err := cfg.lookup(cfg.API.Provider, model); err != nil {
		return nil, err
	}
	ids := cfg.voicesOf(model)
	voices := make([]sdk.Voice, 0, len(ids))
	for _, v := range ids {
		voices = append(voices, sdk.Voice{ID: v, Name: v})
	}
	return voices, nil
}

// reserved are the body fields the plugin sets from the request;
// providerOptions may not set them.
var reserved = []string{"model", "input", "voice", "response_format", "speed", "stream_format"}

// call is a validated speech request.
type call struct {
	body      map[string]any
	mediaType string
	align     int // PCM frame size, 1 otherwise
}

// prepare validates req against the declaration and builds the body of
// POST /audio/speech. providerOptions is any JSON object: its fields go
// into the body as they are (instructions, or a server's own extensions
// such as Kokoro-FastAPI's lang_code), except the ones set here.
func (cfg *config) prepare(req *sdk.SynthesizeRequest) (*call, error) {
	name := cfg.API.Provider
	m, err := cfg.lookup(name, req.Model)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "%s: nothing to say", name)
	}
	if req.Voice == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "%s: a voice is required", name)
	}
	e, err := upstream.ChooseEncoding(name, &m, req)
	if err != nil {
		return nil, err
	}
	body := map[string]any{}
	if opts := bytes.TrimSpace(req.Options); len(opts) > 0 && !bytes.Equal(opts, []byte("null")) {
		if err := json.Unmarshal(opts, &body); err != nil {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "%s: providerOptions must be a JSON object", name)
		}
	}
	for _, f := range reserved {
		if _, set := body[f]; set {
			return nil, sdk.InvalidOption(f, "%s: providerOptions field %q is set from the request itself", name, f)
		}
	}
	c := &call{body: body, align: 1, mediaType: sdk.MediaType(e)}
	// The sdk's format names are OpenAI's response_format values.
	body["model"], body["input"], body["voice"], body["response_format"] = req.Model, req.Text, req.Voice, e.Format
	if e.Format == sdk.FormatPCM {
		c.align = 2
	}
	if req.Speed != 0 && req.Speed != 1 {
		if cfg.maxSpeed == 0 {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "%s: the server is not declared to honour speed", name)
		}
		if req.Speed < cfg.minSpeed || req.Speed > cfg.maxSpeed {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "%s: speed %g is outside %g to %g", name, req.Speed, cfg.minSpeed, cfg.maxSpeed)
		}
		body["speed"] = req.Speed
	}
	return c, nil
}

// key is the credential to call with: the call's key, or, when there is
// none, noKey (no Authorization header is sent) unless the deployment
// requires a key; then "", which upstream.Endpoint refuses as
// unauthorized before any request.
func (cfg *config) key(c sdk.Credentials) string {
	if c.APIKey == "" && !cfg.keyRequired {
		return noKey
	}
	return c.APIKey
}

// post sends the speech request and returns the successful response; any
// failure is an *sdk.Error.
func (cfg *config) post(ctx context.Context, creds sdk.Credentials, body map[string]any) (*http.Response, error) {
	hreq, err := upstream.NewJSONRequest(ctx, http.MethodPost, cfg.BaseURL+speechPath, body)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "%s: %v", cfg.API.Provider, err)
	}
	return cfg.Do(ctx, hreq, cfg.key(creds), true)
}

var _ sdk.Planner = (*Provider)(nil)

// Plan implements sdk.Planner: the request Synthesize and Stream send
// (one endpoint for both; the body streams as the server produces it),
// for the gateway to send itself.
func (p *Provider) Plan(_ context.Context, req *sdk.PlanRequest) (*sdk.Plan, error) {
	cfg, err := p.load()
	if err != nil {
		return nil, err
	}
	c, err := cfg.prepare(req.Request)
	if err != nil {
		return nil, err
	}
	plan, err := cfg.Plan(http.MethodPost, cfg.BaseURL+speechPath, c.body, cfg.key(req.Request.Credentials), nil)
	if err != nil {
		return nil, err
	}
	plan.MediaType, plan.FrameSize = c.mediaType, c.align
	return plan, nil
}

// Explain implements sdk.Planner with the mapping Synthesize uses.
func (p *Provider) Explain(_ context.Context, f *sdk.Failure) error {
	cfg, err := p.load()
	if err != nil {
		return err
	}
	return cfg.Explain(f)
}

// Synthesize implements sdk.Provider.
func (p *Provider) Synthesize(ctx context.Context, req *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	cfg, err := p.load()
	if err != nil {
		return nil, err
	}
	if req.Timestamps {
		return nil, sdk.Errorf(sdk.KindUnsupported, "%s: OpenAI's speech API returns no word timestamps", cfg.API.Provider)
	}
	c, err := cfg.prepare(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	resp, err := cfg.post(ctx, req.Credentials, c.body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	audio, err := upstream.ReadBody(resp.Body, resp.ContentLength, maxAudioBytes)
	if err != nil {
		return nil, upstream.TransportError(ctx, cfg.API.Provider, err)
	}
	if len(audio)%c.align != 0 {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: cfg.API.Provider + ": truncated PCM (odd byte count)"}
	}
	return &sdk.SynthesizeResponse{Audio: audio, MediaType: c.mediaType}, nil
}

// Stream implements sdk.Provider: the same endpoint, its body forwarded
// as it arrives. A server declared with streaming false is never asked
// (the gateway believes Describe), but a call still works: the body then
// arrives when it is done.
func (p *Provider) Stream(ctx context.Context, req *sdk.SynthesizeRequest, send func(sdk.Chunk) error) error {
	cfg, err := p.load()
	if err != nil {
		return err
	}
	c, err := cfg.prepare(req)
	if err != nil {
		return err
	}
	resp, err := cfg.post(ctx, req.Credentials, c.body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = upstream.Forward(ctx, resp.Body, send, upstream.ForwardOptions{MediaType: c.mediaType, Align: c.align, Provider: cfg.API.Provider})
	return err
}

// Clone implements sdk.Provider: OpenAI's speech API has no voice
// creation, and the servers that copy it do not share one.
func (p *Provider) Clone(context.Context, *sdk.CloneRequest) (*sdk.CloneResponse, error) {
	return nil, sdk.Errorf(sdk.KindUnsupported, "openai-compatible: voice cloning is not supported")
}

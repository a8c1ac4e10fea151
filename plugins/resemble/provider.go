package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

const (
	providerID = "resemble"
	// defaultBaseURL is Resemble's API host: voices, recordings.
	defaultBaseURL = "https://app.resemble.ai/api/v2"
	// defaultSynthesisURL is Resemble's synthesis host: /synthesize and
	// /stream.
	defaultSynthesisURL = "https://f.cluster.resemble.ai"
	defaultModel        = "chatterbox"
	// nativeRate is what the plugin asks for when the request names no
	// rate: Resemble documents no default, and 22.05 kHz is the middle of
	// its list.
	nativeRate = 22050
	// The documented text limits of /synthesize and /stream.
	maxText, maxStreamText = 3000, 2000
	// minRecordings is how many recordings a rapid voice needs before it
	// can be built, as documented.
	minRecordings = 3
	// maxAnswer bounds a /synthesize answer: base64 WAV of 3,000
	// characters at 48 kHz is tens of MB at most.
	maxAnswer = 128 << 20
	// Voice list paging.
	voicePageSize, maxVoicePages = 100, 50

	synthesizePath = "/synthesize"
	streamPath     = "/stream"
	voicesPath     = "/voices"
)

// sampleRates are the documented sample_rate values.
func sampleRates() []int { return []int{8000, 16000, 22050, 32000, 44100, 48000} }

// encodings are what /synthesize documents (Resemble's API reference,
// "Synthesize" and "Stream", read 28 November 2026): output_format wav or
// mp3 at every sample_rate, WAV in precision MULAW, PCM_16, PCM_24 or
// PCM_32 (the default). The plugin's default rate comes first.
//
// Listed: wav as PCM_16 (the gateway's 16-bit WAV) and pcm, which is that
// WAV's samples without its header (Resemble has no headerless output;
// cutting the header off changes no sample), at every rate; mp3 at
// Resemble's own bitrate (no field chooses one) at every rate but 8 kHz,
// which is MPEG 2.5, an unofficial extension many decoders (the sdk's kit
// among them) do not read. Left out: 24- and 32-bit WAV and μ-law WAV.
// /stream speaks WAV only: Stream refuses mp3.
func encodings() []sdk.Encoding {
	var out []sdk.Encoding
	for _, f := range []string{sdk.FormatPCM, sdk.FormatWAV, sdk.FormatMP3} {
		out = append(out, sdk.Encoding{Format: f, SampleRate: nativeRate})
		for _, r := range sampleRates() {
			if r != nativeRate && (f != sdk.FormatMP3 || r > 8000) {
				out = append(out, sdk.Encoding{Format: f, SampleRate: r})
			}
		}
	}
	return out
}

// Provider is the Resemble plugin. It keeps only deployment settings,
// which Configure swaps atomically; every call reads one snapshot.
type Provider struct {
	cfg atomic.Pointer[config]
}

// config is one snapshot of the deployment settings. Resemble serves
// synthesis and its API from two hosts: Endpoint.BaseURL is the API's
// (base_url), synthesisURL the synthesis host's (synthesis_url).
type config struct {
	*upstream.Endpoint
	synthesisURL string
}

// api is how Resemble authenticates and reports errors. It is never
// modified.
var api = &upstream.API{
	Provider:       providerID,
	DefaultBaseURL: defaultBaseURL,
	Authorize:      upstream.Bearer,
	ParseError:     parseError,
}

// New returns a Provider with the default settings (the public API).
func New() *Provider {
	p := &Provider{}
	e, _ := upstream.NewEndpoint(api, nil)
	p.cfg.Store(&config{Endpoint: e, synthesisURL: defaultSynthesisURL})
	return p
}

var _ sdk.Provider = (*Provider)(nil)

// resembleSettings are every key the plugin reads (sdk.DecodeSettings): the
// common ones and its own.
type resembleSettings struct {
	upstream.CommonSettings
	SynthesisURL string `setting:"synthesis_url"`
}

// CheckSettings implements sdk.SettingsChecker: the common settings'
// checks and the plugin's own.
func (s *resembleSettings) CheckSettings() []sdk.SettingProblem {
	problems := s.CommonSettings.CheckSettings()
	if p := upstream.CheckURL("synthesis_url", s.SynthesisURL); p != nil {
		problems = append(problems, *p)
	}
	return problems
}

// NewSettings implements sdk.SettingsDecoder, so a provider block with a
// key the plugin does not read (a typo) is refused by `voxgate config
// check` and at start.
func (p *Provider) NewSettings() any { return new(resembleSettings) }

// Configure implements sdk.Provider: the common settings of
// upstream.ParseSettings, whose base_url is the API host, plus
// synthesis_url, the synthesis host. Other keys are refused (NewSettings).
func (p *Provider) Configure(_ context.Context, settings map[string]string) error {
	if problems := sdk.DecodeSettings(settings, p.NewSettings()); len(problems) > 0 {
		return sdk.SettingsErr(api.Provider, problems)
	}
	e, err := upstream.NewEndpoint(api, settings)
	if err != nil {
		return err
	}
	c := &config{Endpoint: e, synthesisURL: defaultSynthesisURL}
	if v := strings.TrimSpace(settings["synthesis_url"]); v != "" {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return sdk.Errorf(sdk.KindInvalidRequest, "resemble settings: synthesis_url %q: want an absolute http(s) URL", v)
		}
		c.synthesisURL = strings.TrimRight(v, "/")
	}
	// Calls in flight keep their snapshot; only idle connections go.
	p.cfg.Swap(c).Close()
	return nil
}

// models lists the models offered. "chatterbox" sends no model field:
// Resemble then picks Chatterbox or Chatterbox Multilingual from the
// voice. "chatterbox-turbo" asks for the Turbo model by name. (Resemble's
// reference, read 28 November 2026, names these and the multilingual
// model the voice selects; it documents no text limit per model beyond
// the endpoints' and no audio tags for the hosted models.)
func models() []sdk.Model {
	mk := func(id, name string) sdk.Model {
		return sdk.Model{
			ID:   id,
			Name: name,
			// No speed: neither endpoint takes a speaking rate.
			Capabilities: sdk.Capabilities{Streaming: true, Timestamps: true, Cloning: true},
			Encodings:    encodings(),
			// The streaming endpoint sends WAV only (pcm is its samples);
			// the gateway converts an MP3 stream from the PCM one.
			StreamEncodings: slices.DeleteFunc(encodings(), func(e sdk.Encoding) bool { return e.Format == sdk.FormatMP3 }),
			MaxTextChars:    maxText,
		}
	}
	return []sdk.Model{mk("chatterbox", "Chatterbox"), mk("chatterbox-turbo", "Chatterbox Turbo")}
}

// modelIDPattern is the grammar the plugin holds a Resemble model id to:
// Resemble documents none, and its models are lower-case words joined by
// '-' (chatterbox-turbo), so lower-case letters, digits, '.' and '-',
// starting with a letter. An id the plugin does not list is passed
// through (as the body's model) when it matches, and refused before any
// call otherwise.
var modelIDPattern = regexp.MustCompile(`^[a-z][a-z0-9.-]{0,60}$`)

// findModel returns the listed model id, or, for an id that can be
// Resemble's, one passed through under that id: both listed models have
// the same abilities (models), so it claims those. Any other id is the
// caller's mistake.
func findModel(id string) (sdk.Model, error) {
	ms := models()
	if i := slices.IndexFunc(ms, func(m sdk.Model) bool { return m.ID == id }); i >= 0 {
		return ms[i], nil
	}
	if !modelIDPattern.MatchString(id) {
		return sdk.Model{}, sdk.Errorf(sdk.KindInvalidRequest,
			"resemble: unknown model %q: a Resemble model id is lower-case letters, digits, '.' and '-', e.g. chatterbox-turbo", id)
	}
	m := ms[0]
	m.ID, m.Name = id, "Any other Resemble model (passed through)"
	return m, nil
}

// Describe implements sdk.Provider: the listed models and an
// sdk.AnyModel entry for the ids it passes through (findModel).
func (p *Provider) Describe(context.Context) (*sdk.Description, error) {
	pt := models()[0]
	pt.ID, pt.Name = sdk.AnyModel, "Any other Resemble model (passed through)"
	return &sdk.Description{ID: providerID, Name: "Resemble AI", DefaultModel: defaultModel, Models: sdk.WithUnpublished(sdk.WithPrices(append(models(), pt), priceTable), sdk.UnitCharacters, priceDate)}, nil
}

// parseError reads Resemble's error body {"success": false, "message",
// "error", "errors": {field: [messages]}}. Resemble has no error codes; a
// one-word "error" beside a message is taken as one.
func parseError(body []byte) (code, message string) {
	var b struct {
		Message string              `json:"message"`
		Error   string              `json:"error"`
		Errors  map[string][]string `json:"errors"`
	}
	if json.Unmarshal(body, &b) != nil {
		return "", ""
	}
	message = b.Message
	switch {
	case message == "":
		message = b.Error
	case b.Error != "" && !strings.ContainsFunc(b.Error, unicode.IsSpace):
		code = b.Error
	}
	fields := make([]string, 0, len(b.Errors))
	for f := range b.Errors {
		fields = append(fields, f)
	}
	slices.Sort(fields)
	for _, f := range fields {
		message = strings.TrimSpace(message + "; " + f + ": " + strings.Join(b.Errors[f], ", "))
	}
	return code, strings.TrimPrefix(message, "; ")
}

// voiceEntry is an item of GET /voices.
type voiceEntry struct {
	UUID            string `json:"uuid"`
	Name            string `json:"name"`
	DefaultLanguage string `json:"default_language"`
}

// Voices implements sdk.Provider with GET /voices on the API host, page
// by page.
func (p *Provider) Voices(ctx context.Context, req *sdk.VoicesRequest) ([]sdk.Voice, error) {
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	var voices []sdk.Voice
	for page := 1; page <= maxVoicePages; page++ {
		q := url.Values{"page": {strconv.Itoa(page)}, "page_size": {strconv.Itoa(voicePageSize)}}
		hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.BaseURL+voicesPath+"?"+q.Encode(), nil)
		if err != nil {
			return nil, sdk.Errorf(sdk.KindInternal, "resemble: %v", err)
		}
		var list struct {
			NumPages int          `json:"num_pages"`
			Items    []voiceEntry `json:"items"`
		}
		if err := cfg.DoJSON(ctx, hreq, req.Credentials.APIKey, true, "voice list", &list); err != nil {
			return nil, err
		}
		for _, v := range list.Items {
			voices = append(voices, sdk.Voice{ID: v.UUID, Name: cmp.Or(v.Name, v.UUID), Language: v.DefaultLanguage})
		}
		if page >= list.NumPages || len(list.Items) == 0 {
			break
		}
	}
	return voices, nil
}

// options are the providerOptions the plugin accepts: documented fields
// of the synthesis bodies.
type options struct {
	ProjectUUID               *string `json:"project_uuid"`
	Title                     *string `json:"title"`
	UseHD                     *bool   `json:"use_hd"`
	ApplyCustomPronunciations *bool   `json:"apply_custom_pronunciations"`
}

// synthBody is the body of /synthesize, and of /stream without title and
// output_format.
type synthBody struct {
	VoiceUUID                 string  `json:"voice_uuid"`
	Data                      string  `json:"data"`
	Model                     string  `json:"model,omitempty"`
	ProjectUUID               *string `json:"project_uuid,omitempty"`
	Title                     *string `json:"title,omitempty"`
	Precision                 string  `json:"precision,omitempty"`
	OutputFormat              string  `json:"output_format,omitempty"`
	SampleRate                string  `json:"sample_rate"`
	UseHD                     *bool   `json:"use_hd,omitempty"`
	ApplyCustomPronunciations *bool   `json:"apply_custom_pronunciations,omitempty"`
}

// call is a validated request.
type call struct {
	body      synthBody
	enc       sdk.Encoding // what the caller gets
	mediaType string
}

// pcm reports whether the caller wants headerless samples, which the
// plugin cuts out of Resemble's WAV.
func (c *call) pcm() bool { return c.enc.Format == sdk.FormatPCM }

// errMP3Stream refuses an mp3 stream: /stream speaks WAV only.
func errMP3Stream(kind sdk.ErrorKind) error {
	return sdk.Errorf(kind, "resemble: streams come as WAV only; ask for pcm or wav")
}

// prepare validates req and builds the body for /synthesize, or with
// stream for /stream. Failures are the caller's (KindInvalidRequest) and
// cost no upstream call.
func prepare(req *sdk.SynthesizeRequest, stream bool) (*call, error) {
	m, err := findModel(req.Model)
	if err != nil {
		return nil, err
	}
	if req.Voice == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "resemble: a voice uuid is required")
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "resemble: nothing to say")
	}
	if n := utf8.RuneCountInString(req.Text); stream && n > maxStreamText {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "resemble: a stream takes at most %d characters; got %d", maxStreamText, n)
	}
	if req.Speed != 0 && req.Speed != 1 {
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "resemble: speed is not a Resemble parameter")
	}
	format := cmp.Or(req.Format, m.Encodings[0].Format)
	e, ok := m.FindEncoding(format, req.SampleRate, req.Bitrate)
	if !ok {
		names := make([]string, len(m.Encodings))
		for i, e := range m.Encodings {
			names[i] = e.String()
		}
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "resemble: %s does not offer %s; it offers %s",
			req.Model, sdk.Encoding{Format: format, SampleRate: req.SampleRate, Bitrate: req.Bitrate}, strings.Join(names, ", "))
	}
	c := &call{enc: e, mediaType: sdk.MediaType(e), body: synthBody{VoiceUUID: req.Voice, Data: req.Text, SampleRate: strconv.Itoa(e.SampleRate)}}
	if req.Model != defaultModel {
		c.body.Model = req.Model
	}
	if e.Format == sdk.FormatMP3 {
		c.body.OutputFormat = "mp3" // for /synthesize only: see errMP3Stream
	} else {
		// 16-bit WAV (Resemble's default is 32-bit); for pcm, its
		// samples are passed on without the header.
		c.body.Precision = "PCM_16"
	}
	if !stream && c.body.OutputFormat == "" {
		c.body.OutputFormat = "wav"
	}
	var o options
	if err := upstream.DecodeOptions(providerID, req.Options, &o, "project_uuid", "title", "use_hd", "apply_custom_pronunciations"); err != nil {
		return nil, err
	}
	if stream && o.Title != nil {
		return nil, sdk.InvalidOption("title", "resemble: title applies to whole clips only")
	}
	c.body.ProjectUUID, c.body.Title = o.ProjectUUID, o.Title
	c.body.UseHD, c.body.ApplyCustomPronunciations = o.UseHD, o.ApplyCustomPronunciations
	return c, nil
}

// post sends a synthesis request to the synthesis host and returns the
// successful response. Synthesis creates nothing worth guarding (a clip
// in a project at most), so it is retried like any idempotent call.
func (cfg *config) post(ctx context.Context, path string, body synthBody, key string) (*http.Response, error) {
	hreq, err := upstream.NewJSONRequest(ctx, http.MethodPost, cfg.synthesisURL+path, body)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "resemble: %v", err)
	}
	return cfg.Do(ctx, hreq, key, true)
}

var _ sdk.Planner = (*Provider)(nil)

// Plan implements sdk.Planner for wav streams: /stream answers a WAV
// whose bytes go to the caller as they are. It refuses, with
// KindUnsupported so that the gateway calls the plugin instead, whole
// clips and timestamps (/synthesize answers JSON around base64 audio),
// pcm streams (the plugin cuts the WAV header off) and mp3 streams (which
// Resemble does not offer: Stream refuses them as the caller's mistake).
func (p *Provider) Plan(_ context.Context, req *sdk.PlanRequest) (*sdk.Plan, error) {
	c, err := prepare(req.Request, req.Stream)
	if err != nil {
		return nil, err
	}
	if req.Request.Credentials.APIKey == "" {
		// As the plugin would fail, whichever path serves the call.
		return nil, sdk.Errorf(sdk.KindUnauthorized, "resemble: no API key: configure the gateway's managed key or send your own")
	}
	switch {
	case !req.Stream || req.Request.Timestamps:
		return nil, sdk.Errorf(sdk.KindUnsupported, "resemble: whole clips come as JSON the plugin decodes")
	case c.enc.Format == sdk.FormatMP3:
		return nil, errMP3Stream(sdk.KindUnsupported)
	case c.pcm():
		return nil, sdk.Errorf(sdk.KindUnsupported, "resemble: pcm streams are WAV the plugin strips of its header")
	}
	cfg := p.cfg.Load()
	plan, err := cfg.Plan(http.MethodPost, cfg.synthesisURL+streamPath, c.body, req.Request.Credentials.APIKey, nil)
	if err != nil {
		return nil, err
	}
	// The WAV's samples are 16-bit and its header 44 bytes: a whole
	// stream is an even number of bytes.
	plan.MediaType, plan.FrameSize = c.mediaType, 2
	return plan, nil
}

// Explain implements sdk.Planner with the mapping the plugin uses.
func (p *Provider) Explain(_ context.Context, f *sdk.Failure) error {
	return p.cfg.Load().Explain(f)
}

// timestamps are audio_timestamps: one [start, end] per grapheme.
type timestamps struct {
	GraphChars []string    `json:"graph_chars"`
	GraphTimes [][]float64 `json:"graph_times"`
}

// words groups the graphemes between whitespace into words: a word starts
// when its first grapheme starts and ends when its last one ends;
// punctuation stays with the word it touches ("Hello,").
func (t *timestamps) words() []sdk.WordTimestamp {
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
	for i, ch := range t.GraphChars {
		if strings.TrimFunc(ch, unicode.IsSpace) == "" {
			flush()
			continue
		}
		if i >= len(t.GraphTimes) || len(t.GraphTimes[i]) < 2 {
			continue
		}
		start, end := t.GraphTimes[i][0], t.GraphTimes[i][1]
		if word.Len() == 0 {
			cur = sdk.WordTimestamp{Start: start}
		}
		word.WriteString(ch)
		cur.End = max(end, cur.Start)
	}
	flush()
	return out
}

// Synthesize implements sdk.Provider with /synthesize, whose JSON answer
// carries the audio as base64 and the graphemes' timings.
func (p *Provider) Synthesize(ctx context.Context, req *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	c, err := prepare(req, false)
	if err != nil {
		return nil, err
	}
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	resp, err := cfg.post(ctx, synthesizePath, c.body, req.Credentials.APIKey)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var a struct {
		Success         *bool       `json:"success"`
		Message         string      `json:"message"`
		AudioContent    string      `json:"audio_content"`
		AudioTimestamps *timestamps `json:"audio_timestamps"`
		Issues          []string    `json:"issues"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswer)).Decode(&a); err != nil {
		return nil, upstream.BodyError(ctx, providerID, "synthesis answer", err)
	}
	if a.Success != nil && !*a.Success {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "resemble: synthesis failed: " + upstream.Redact(a.Message, req.Credentials.APIKey)}
	}
	audio, err := base64.StdEncoding.DecodeString(a.AudioContent)
	if err != nil {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "resemble: audio_content is not base64"}
	}
	if len(audio) == 0 {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "resemble: the answer holds no audio"}
	}
	if c.pcm() {
		if audio, err = pcmOfWAV(audio, c.enc.SampleRate); err != nil {
			return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "resemble: " + err.Error()}
		}
		if len(audio)%2 != 0 {
			return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "resemble: truncated PCM (odd byte count)"}
		}
	}
	out := &sdk.SynthesizeResponse{Audio: audio, MediaType: c.mediaType}
	for _, issue := range a.Issues {
		out.Warnings = append(out.Warnings, "resemble: "+issue)
	}
	if req.Timestamps && a.AudioTimestamps != nil {
		out.Timestamps = a.AudioTimestamps.words()
	}
	return out, nil
}

// Stream implements sdk.Provider with /stream, whose WAV is forwarded as
// it arrives: whole for wav, without its header for pcm.
func (p *Provider) Stream(ctx context.Context, req *sdk.SynthesizeRequest, send func(sdk.Chunk) error) error {
	c, err := prepare(req, true)
	if err != nil {
		return err
	}
	if c.enc.Format == sdk.FormatMP3 {
		return errMP3Stream(sdk.KindInvalidRequest)
	}
	cfg := p.cfg.Load()
	resp, err := cfg.post(ctx, streamPath, c.body, req.Credentials.APIKey)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body io.Reader = resp.Body
	if c.pcm() {
		br := bufio.NewReaderSize(resp.Body, 32<<10)
		if err := skipWAVHeader(br, c.enc.SampleRate); err != nil {
			if ctx.Err() != nil {
				return upstream.TransportError(ctx, providerID, err)
			}
			return &sdk.Error{Kind: sdk.KindUpstream, Message: "resemble: " + err.Error()}
		}
		body = br
	}
	_, err = upstream.Forward(ctx, body, send, upstream.ForwardOptions{MediaType: c.mediaType, Align: 2, Provider: providerID})
	return err
}

// cloneOptions are the providerOptions Clone accepts.
type cloneOptions struct {
	// Transcripts are what each sample says, in order: Resemble trains
	// from recordings with their text.
	Transcripts []string `json:"transcripts"`
	Emotion     *string  `json:"emotion"`
	Language    *string  `json:"language"`
}

// Clone implements sdk.Provider with Resemble's rapid voice clone from
// recordings: POST /voices (voice_type rapid), one POST
// /voices/{uuid}/recordings per sample (raw PCM wrapped as WAV), then POST
// /voices/{uuid}/build. A rapid voice needs at least 3 recordings of 1 to
// 12 seconds, each with its transcript (the transcripts option). Nothing
// is retried: a lost answer does not mean nothing was made. When a step
// after the voice's creation fails, the half-made voice is deleted.
// Resemble trains the voice in about a minute; synthesis with it fails
// until then.
func (p *Provider) Clone(ctx context.Context, req *sdk.CloneRequest) (*sdk.CloneResponse, error) {
	var o cloneOptions
	if err := upstream.DecodeOptions(providerID, req.Options, &o, "transcripts", "emotion", "language"); err != nil {
		return nil, err
	}
	switch {
	case len(req.Samples) < minRecordings:
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "resemble: a rapid voice is built from at least %d recordings of 1 to 12 seconds; got %d", minRecordings, len(req.Samples))
	case len(o.Transcripts) != len(req.Samples):
		return nil, sdk.Errorf(sdk.KindInvalidRequest, "resemble: give the transcripts option, one text per sample (%d samples, %d transcripts)", len(req.Samples), len(o.Transcripts))
	}
	for i, s := range req.Samples {
		if len(s.Data) == 0 {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "resemble: sample %d is empty", i)
		}
		if strings.TrimSpace(o.Transcripts[i]) == "" {
			return nil, sdk.Errorf(sdk.KindInvalidRequest, "resemble: transcript %d is empty", i)
		}
	}
	name := cmp.Or(strings.TrimSpace(req.Name), "voxgate voice")
	cfg := p.cfg.Load()
	ctx, cancel := cfg.WithTimeout(ctx)
	defer cancel()
	key := req.Credentials.APIKey

	var created struct {
		Success *bool  `json:"success"`
		Message string `json:"message"`
		Item    struct {
			UUID string `json:"uuid"`
		} `json:"item"`
	}
	create := map[string]string{"name": name, "voice_type": "rapid", "language": cmp.Or(ptrValue(o.Language), "en-US")}
	hreq, err := upstream.NewJSONRequest(ctx, http.MethodPost, cfg.BaseURL+voicesPath, create)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "resemble: %v", err)
	}
	if err := cfg.DoJSON(ctx, hreq, key, false, "voice creation answer", &created); err != nil {
		return nil, err
	}
	uuid := created.Item.UUID
	if (created.Success != nil && !*created.Success) || uuid == "" {
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "resemble: the voice was not created: " + upstream.Redact(created.Message, key)}
	}
	if err := cfg.train(ctx, uuid, name, req.Samples, o, key); err != nil {
		cfg.deleteVoice(ctx, uuid, key)
		return nil, err
	}
	return &sdk.CloneResponse{VoiceID: uuid}, nil
}

// train uploads the samples as recordings of voice uuid and builds it.
func (cfg *config) train(ctx context.Context, uuid, name string, samples []sdk.Sample, o cloneOptions, key string) error {
	voiceURL := cfg.BaseURL + voicesPath + "/" + url.PathEscape(uuid)
	for i, s := range samples {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		_ = mw.WriteField("name", fmt.Sprintf("%s %d", name, i+1))
		_ = mw.WriteField("text", o.Transcripts[i])
		_ = mw.WriteField("emotion", cmp.Or(ptrValue(o.Emotion), "neutral"))
		_ = mw.WriteField("is_active", "true")
		_ = upstream.WriteSample(mw, "file", s, i) // writes to memory
		_ = mw.Close()
		hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, voiceURL+"/recordings", &body)
		if err != nil {
			return sdk.Errorf(sdk.KindInternal, "resemble: %v", err)
		}
		hreq.Header.Set("Content-Type", mw.FormDataContentType())
		if err := cfg.expectSuccess(ctx, hreq, key, "recording answer"); err != nil {
			return err
		}
	}
	hreq, err := upstream.NewJSONRequest(ctx, http.MethodPost, voiceURL+"/build", map[string]any{})
	if err != nil {
		return sdk.Errorf(sdk.KindInternal, "resemble: %v", err)
	}
	return cfg.expectSuccess(ctx, hreq, key, "build answer")
}

// expectSuccess sends a non-idempotent API call whose answer is
// {"success", "message"} and fails unless it succeeded.
func (cfg *config) expectSuccess(ctx context.Context, hreq *http.Request, key, what string) error {
	var a struct {
		Success *bool  `json:"success"`
		Message string `json:"message"`
	}
	if err := cfg.DoJSON(ctx, hreq, key, false, what, &a); err != nil {
		return err
	}
	if a.Success != nil && !*a.Success {
		return &sdk.Error{Kind: sdk.KindUpstream, Message: "resemble: " + upstream.Redact(a.Message, key)}
	}
	return nil
}

// deleteVoice removes a half-made voice, best effort: the clone failed
// already, and a voice left behind only clutters the account. It runs
// even when the call's context has ended.
func (cfg *config) deleteVoice(ctx context.Context, uuid, key string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodDelete, cfg.BaseURL+voicesPath+"/"+url.PathEscape(uuid), nil)
	if err != nil {
		return
	}
	if resp, err := cfg.Do(ctx, hreq, key, true); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

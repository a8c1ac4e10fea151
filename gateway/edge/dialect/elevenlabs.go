package dialect

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/sdk"
)

// ElevenLabsHome is the provider a bare ElevenLabs model id
// ("eleven_multilingual_v2") means when no alias says otherwise.
const ElevenLabsHome = "elevenlabs"

// ElevenLabsDefaultModel is the model ElevenLabs' API uses when a request
// gives no model_id. The dialect reads an absent model_id as this id, as
// ElevenLabs does, so that an alias of it (gateway.yaml maps it onto
// eSpeak) also moves the calls that name no model.
const ElevenLabsDefaultModel = "eleven_multilingual_v2"

// ElevenLabsSpeech is the body of ElevenLabs' text-to-speech endpoints.
// It decodes leniently, as ElevenLabs' API does: its SDKs add fields in
// new versions, and a field voxgate has no use for must not fail a
// request that would succeed there.
type ElevenLabsSpeech struct {
	Text          *string                  `json:"text"`
	ModelID       string                   `json:"model_id"`
	VoiceSettings *ElevenLabsVoiceSettings `json:"voice_settings"`
	// The fields below only mean something to ElevenLabs: they reach the
	// provider when the request goes there, and are dropped (with a
	// warning) when an alias sends it elsewhere.
	LanguageCode                    *string         `json:"language_code,omitempty"`
	Seed                            *int64          `json:"seed,omitempty"`
	PreviousText                    *string         `json:"previous_text,omitempty"`
	NextText                        *string         `json:"next_text,omitempty"`
	PreviousRequestIDs              []string        `json:"previous_request_ids,omitempty"`
	NextRequestIDs                  []string        `json:"next_request_ids,omitempty"`
	ApplyTextNormalization          *string         `json:"apply_text_normalization,omitempty"`
	PronunciationDictionaryLocators json.RawMessage `json:"pronunciation_dictionary_locators,omitempty"`
	// EnableLogging and OptimizeStreamingLatency come from the query
	// (SetQuery): enable_logging=false is the caller asking ElevenLabs
	// for zero retention, which must not be lost on the way.
	EnableLogging            *bool `json:"-"`
	OptimizeStreamingLatency *int  `json:"-"`
}

// SetQuery takes the query parameters of ElevenLabs' text-to-speech
// endpoints that travel to ElevenLabs as they are: enable_logging (a
// boolean) and optimize_streaming_latency (an integer); empty values are
// absent. A value of the wrong type is a validation error naming the
// parameter; its range is the plugin's to check.
func (r *ElevenLabsSpeech) SetQuery(enableLogging, optimizeStreamingLatency string) error {
	if enableLogging != "" {
		b, err := strconv.ParseBool(enableLogging)
		if err != nil {
			return problem.Validation(problem.Field("must be true or false", "enable_logging"))
		}
		r.EnableLogging = &b
	}
	if optimizeStreamingLatency != "" {
		n, err := strconv.Atoi(optimizeStreamingLatency)
		if err != nil {
			return problem.Validation(problem.Field("must be an integer", "optimize_streaming_latency"))
		}
		r.OptimizeStreamingLatency = &n
	}
	return nil
}

// ElevenLabsVoiceSettings is ElevenLabs' voice_settings object.
type ElevenLabsVoiceSettings struct {
	Stability       *float64 `json:"stability,omitempty"`
	SimilarityBoost *float64 `json:"similarity_boost,omitempty"`
	Style           *float64 `json:"style,omitempty"`
	UseSpeakerBoost *bool    `json:"use_speaker_boost,omitempty"`
	// Speed is voxgate's own speed: it works on every model (natively or
	// by time-stretching the clip), so it is never dropped.
	Speed *float64 `json:"speed,omitempty"`
}

// DefaultOutputFormat is ElevenLabs' default output_format.
const DefaultOutputFormat = "mp3_44100_128"

// OutputFormat is a parsed output_format value such as mp3_44100_128,
// pcm_22050 or ulaw_8000: codec, sample rate and, for compressed codecs,
// bitrate in kbps.
type OutputFormat struct {
	Format     string
	SampleRate int
	Bitrate    int
}

// elevenCodecs maps output_format's codec names onto voxgate's formats.
// Whether the gateway can produce one is the audio package's to say.
var elevenCodecs = map[string]string{
	"mp3": audio.FormatMP3, "pcm": audio.FormatPCM, "wav": audio.FormatWAV,
	"ulaw": "ulaw", "alaw": "alaw", "opus": "opus", "flac": "flac", "aac": "aac",
}

// ParseOutputFormat parses an output_format value; "" is the default.
func ParseOutputFormat(s string) (OutputFormat, error) {
	if s == "" {
		s = DefaultOutputFormat
	}
	parts := strings.Split(s, "_")
	f, ok := elevenCodecs[parts[0]]
	bad := problem.Validation(problem.Field(fmt.Sprintf("%q is not an output format; use codec_samplerate[_bitrate], e.g. mp3_44100_128, pcm_22050, ulaw_8000", s), "output_format"))
	if !ok || len(parts) < 2 || len(parts) > 3 {
		return OutputFormat{}, bad
	}
	out := OutputFormat{Format: f}
	var err error
	if out.SampleRate, err = strconv.Atoi(parts[1]); err != nil || out.SampleRate <= 0 {
		return OutputFormat{}, bad
	}
	if len(parts) == 3 {
		if out.Bitrate, err = strconv.Atoi(parts[2]); err != nil || out.Bitrate <= 0 {
			return OutputFormat{}, bad
		}
	}
	return out, nil
}

// Speech maps the body, the path's voice_id and the output_format query
// value onto a speech request for org.
func (r *ElevenLabsSpeech) Speech(org, voiceID, outputFormat string, ep speech.Delivery, al *Aliases, isProvider func(string) bool) (*speech.Request, error) {
	of, err := ParseOutputFormat(outputFormat)
	if err != nil {
		return nil, err
	}
	if r.Text == nil {
		return nil, problem.Validation(problem.Field("is required", "text"))
	}
	model := r.ModelID
	if model == "" {
		model = ElevenLabsDefaultModel
	}
	t := al.Resolve(org, model, voiceID, ElevenLabsHome, isProvider)
	req := &speech.Request{VoiceID: t.VoiceID, Model: t.Model, Voice: t.Voice, Text: r.Text, OptionsFor: ElevenLabsHome}
	if vs := r.VoiceSettings; vs != nil && vs.Speed != nil && *vs.Speed != 1 {
		req.Speed = vs.Speed
	}
	opts, err := r.providerOptions()
	if err != nil {
		return nil, err
	}
	req.ProviderOptions = opts
	if ep == speech.DeliverStream {
		// The rate and bitrate hold where the gateway encodes the stream;
		// a format the model streams itself comes as the model makes it.
		req.StreamFormat = &speech.StreamFormat{Format: of.Format, SampleRate: of.SampleRate, Bitrate: of.Bitrate}
		return req, nil
	}
	out := &audio.OutputParams{Format: of.Format, SampleRate: &of.SampleRate}
	if of.Bitrate > 0 {
		out.Bitrate = &of.Bitrate
	}
	req.Output = out
	return req, nil
}

// providerOptions are the ElevenLabs-only fields as the ElevenLabs
// plugin's providerOptions (voice_settings without speed, which travels
// as the request's speed).
func (r *ElevenLabsSpeech) providerOptions() (json.RawMessage, error) {
	o := struct {
		VoiceSettings                   *ElevenLabsVoiceSettings `json:"voice_settings,omitempty"`
		LanguageCode                    *string                  `json:"language_code,omitempty"`
		Seed                            *int64                   `json:"seed,omitempty"`
		PreviousText                    *string                  `json:"previous_text,omitempty"`
		NextText                        *string                  `json:"next_text,omitempty"`
		PreviousRequestIDs              []string                 `json:"previous_request_ids,omitempty"`
		NextRequestIDs                  []string                 `json:"next_request_ids,omitempty"`
		ApplyTextNormalization          *string                  `json:"apply_text_normalization,omitempty"`
		PronunciationDictionaryLocators json.RawMessage          `json:"pronunciation_dictionary_locators,omitempty"`
		EnableLogging                   *bool                    `json:"enable_logging,omitempty"`
		OptimizeStreamingLatency        *int                     `json:"optimize_streaming_latency,omitempty"`
	}{LanguageCode: r.LanguageCode, Seed: r.Seed, PreviousText: r.PreviousText, NextText: r.NextText,
		PreviousRequestIDs: r.PreviousRequestIDs, NextRequestIDs: r.NextRequestIDs,
		ApplyTextNormalization: r.ApplyTextNormalization, PronunciationDictionaryLocators: r.PronunciationDictionaryLocators,
		EnableLogging: r.EnableLogging, OptimizeStreamingLatency: r.OptimizeStreamingLatency}
	if vs := r.VoiceSettings; vs != nil && (vs.Stability != nil || vs.SimilarityBoost != nil || vs.Style != nil || vs.UseSpeakerBoost != nil) {
		c := *vs
		c.Speed = nil
		o.VoiceSettings = &c
	}
	b, err := json.Marshal(o)
	if err != nil || string(b) == "{}" {
		return nil, err
	}
	return b, nil
}

// ElevenLabsError is ElevenLabs' error body: {"detail": {"status",
// "message"}}. Status is voxgate's problem code; the HTTP status is
// voxgate's too.
type ElevenLabsError struct {
	Detail ElevenLabsErrorDetail `json:"detail"`
}

// ElevenLabsErrorDetail is the error's detail object.
type ElevenLabsErrorDetail struct {
	Status  string  `json:"status"`
	Message string  `json:"message"`
	Param   string  `json:"param,omitempty"`
	Reason  *Reason `json:"reason,omitempty"`
}

// elevenParams names the ElevenLabs field behind a voxgate field path.
var elevenParams = map[string]string{
	"text": "text", "voiceId": "voice_id", "voice": "voice_id", "model": "model_id", "speed": "voice_settings.speed",
	"output": "output_format", "output_format": "output_format", "providerOptions": "voice_settings",
}

// NewElevenLabsError renders a problem in ElevenLabs' shape.
func NewElevenLabsError(pe *problem.Error) ElevenLabsError {
	msg := pe.Detail
	if msg == "" {
		msg = pe.Title()
	}
	d := ElevenLabsErrorDetail{Status: string(pe.Code), Message: msg}
	if len(pe.Validation) > 0 && len(pe.Validation[0].Path) > 0 {
		path := pe.Validation[0].Path
		p := path[0]
		if q, ok := elevenParams[p]; ok {
			p = q
		}
		if path[0] == "providerOptions" && len(path) > 1 {
			// A field the dialect passed on as it came (seed,
			// voice_settings.stability, enable_logging): the plugin
			// refused it under the name ElevenLabs gives it.
			p = strings.Join(path[1:], ".")
		}
		d.Param = p
		if len(pe.Validation) == 1 && !strings.Contains(msg, p) {
			d.Message = p + ": " + msg
		}
	}
	return ElevenLabsError{Detail: d}
}

// Alignment is ElevenLabs' character alignment: each character of the
// text with the times it starts and ends, in seconds.
type Alignment struct {
	Characters []string  `json:"characters"`
	Starts     []float64 `json:"character_start_times_seconds"`
	Ends       []float64 `json:"character_end_times_seconds"`
}

// WithTimestamps is the answer of /with-timestamps.
type WithTimestamps struct {
	AudioBase64         string     `json:"audio_base64"`
	Alignment           *Alignment `json:"alignment"`
	NormalizedAlignment *Alignment `json:"normalized_alignment"`
}

// CharacterAlignment spreads word timings over the characters of text:
// a word's characters share its span evenly, and the characters between
// two words (spaces, punctuation) fill the gap between them. Providers
// report words (sdk.WordTimestamp), ElevenLabs' clients expect
// characters; a word that cannot be found in the text in order is
// skipped and its characters are timed with the gap around it.
func CharacterAlignment(text string, words []sdk.WordTimestamp) *Alignment {
	n := utf8.RuneCountInString(text)
	a := &Alignment{Characters: make([]string, 0, n), Starts: make([]float64, n), Ends: make([]float64, n)}
	for _, r := range text {
		a.Characters = append(a.Characters, string(r))
	}
	// Runs of characters: words at known rune offsets, gaps between.
	type span struct {
		from, to   int // rune offsets, to exclusive
		start, end float64
	}
	var spans []span
	byteAt, runeAt := 0, 0
	for _, w := range words {
		if w.Text == "" {
			continue
		}
		i := strings.Index(text[byteAt:], w.Text)
		if i < 0 {
			continue
		}
		from := runeAt + utf8.RuneCountInString(text[byteAt:byteAt+i])
		to := from + utf8.RuneCountInString(w.Text)
		spans = append(spans, span{from, to, w.Start, w.End})
		byteAt += i + len(w.Text)
		runeAt = to
	}
	prevEnd, cur := 0.0, 0
	fill := func(from, to int, start, end float64) {
		if to <= from {
			return
		}
		step := (end - start) / float64(to-from)
		for k := from; k < to; k++ {
			a.Starts[k] = round3(start + step*float64(k-from))
			a.Ends[k] = round3(start + step*float64(k-from+1))
		}
	}
	for _, s := range spans {
		fill(cur, s.from, prevEnd, max(prevEnd, s.start))
		fill(s.from, s.to, s.start, max(s.start, s.end))
		prevEnd, cur = max(s.start, s.end), s.to
	}
	fill(cur, n, prevEnd, prevEnd)
	return a
}

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

// ElevenLabsModel is an entry of GET /elevenlabs/v1/models
// (ModelResponseModel). ElevenLabs' document requires every field, and
// its SDKs' parsers check them: fields the gateway has no value for
// carry ElevenLabs' neutral one (no fine-tuning, cost factor 1, no
// alpha access, no languages listed).
type ElevenLabsModel struct {
	ModelID                            string               `json:"model_id"`
	Name                               string               `json:"name"`
	CanBeFinetuned                     bool                 `json:"can_be_finetuned"`
	CanDoTextToSpeech                  bool                 `json:"can_do_text_to_speech"`
	CanDoVoiceConversion               bool                 `json:"can_do_voice_conversion"`
	CanUseStyle                        bool                 `json:"can_use_style"`
	CanUseSpeakerBoost                 bool                 `json:"can_use_speaker_boost"`
	ServesProVoices                    bool                 `json:"serves_pro_voices"`
	TokenCostFactor                    float64              `json:"token_cost_factor"`
	Description                        string               `json:"description"`
	RequiresAlphaAccess                bool                 `json:"requires_alpha_access"`
	MaxCharactersRequestFreeUser       int                  `json:"max_characters_request_free_user"`
	MaxCharactersRequestSubscribedUser int                  `json:"max_characters_request_subscribed_user"`
	MaximumTextLengthPerRequest        int                  `json:"maximum_text_length_per_request"`
	Languages                          []ElevenLabsLanguage `json:"languages"`
	ModelRates                         ElevenLabsModelRates `json:"model_rates"`
	ConcurrencyGroup                   string               `json:"concurrency_group"`
}

// NewElevenLabsModel returns a text-to-speech model entry with the
// fields ElevenLabs requires. limit is the longest text one request
// takes; style says whether voice_settings.style and use_speaker_boost
// mean something to it (ElevenLabs' own models).
func NewElevenLabsModel(id, name, description string, limit int, style bool) ElevenLabsModel {
	return ElevenLabsModel{
		ModelID: id, Name: name, Description: description, CanDoTextToSpeech: true,
		CanUseStyle: style, CanUseSpeakerBoost: style, TokenCostFactor: 1,
		MaxCharactersRequestFreeUser: limit, MaxCharactersRequestSubscribedUser: limit, MaximumTextLengthPerRequest: limit,
		Languages: []ElevenLabsLanguage{}, ModelRates: ElevenLabsModelRates{CharacterCostMultiplier: 1, CostDiscountMultiplier: 1},
		ConcurrencyGroup: "standard",
	}
}

// ElevenLabsLanguage is a language of a model.
type ElevenLabsLanguage struct {
	LanguageID string `json:"language_id"`
	Name       string `json:"name"`
}

// ElevenLabsModelRates are a model's cost multipliers.
type ElevenLabsModelRates struct {
	CharacterCostMultiplier float64 `json:"character_cost_multiplier"`
	CostDiscountMultiplier  float64 `json:"cost_discount_multiplier"`
}

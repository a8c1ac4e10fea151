// Package sdk is what a voxgate provider plugin imports.
//
// A plugin implements Provider (text-to-speech) or Moderator (content
// moderation) and hands it to Serve or ServeModerator from its main function.
// The gateway starts the plugin as a separate process through
// hashicorp/go-plugin and talks to it over gRPC; the same package holds the
// host-side adapters, so the gateway sees a plugin as a plain Provider value.
//
// A plugin holds no per-organization state: credentials travel with every
// call (Credentials), and deployment settings arrive once through Configure.
//
// The package deliberately depends only on go-plugin, gRPC and protobuf, so
// that `go get` of the SDK stays light for plugin authors.
package sdk

import (
	"context"
)

// Audio formats a plugin can be asked for. A plugin reports which of them a
// model supports in Model.OutputFormats.
const (
	// FormatPCM is raw 16-bit little-endian mono PCM; the media type carries
	// the rate, e.g. "audio/pcm;rate=22050".
	FormatPCM = "pcm"
	// FormatWAV is a RIFF/WAVE file of 16-bit PCM.
	FormatWAV = "wav"
	// FormatMP3 is MPEG-1/2 Layer III.
	FormatMP3 = "mp3"
)

// Provider is the contract of a text-to-speech provider plugin.
//
// Every method may be called concurrently from many gateway requests. An
// implementation that cannot run concurrently (a C engine that is not
// thread-safe) serializes internally; the gateway scales it by running
// several plugin processes.
//
// Methods that a provider does not support return an *Error of kind
// KindUnsupported; embedding UnimplementedProvider does that.
type Provider interface {
	// Configure receives the provider's settings from gateway.yaml (every
	// key of the provider's block except those the gateway itself consumes,
	// rendered as strings) once after the plugin starts and again after each
	// restart. Secrets among them are already expanded.
	Configure(ctx context.Context, settings map[string]string) error

	// Describe reports the provider's identity, models and capabilities.
	// The gateway calls it at start-up and caches the result.
	Describe(ctx context.Context) (*Description, error)

	// Voices lists the provider's own voices (not the gateway's saved
	// voices). Model may be empty, meaning the default model.
	Voices(ctx context.Context, req *VoicesRequest) ([]Voice, error)

	// Synthesize renders a whole clip.
	Synthesize(ctx context.Context, req *SynthesizeRequest) (*SynthesizeResponse, error)

	// Stream renders a clip and hands audio to send as soon as it exists.
	// The first call to send must carry Chunk.MediaType; later chunks may
	// leave it empty. Stream returns after the last chunk has been sent. An
	// error returned by send (the client went away) must end the stream.
	Stream(ctx context.Context, req *SynthesizeRequest, send func(Chunk) error) error

	// Clone creates a provider-side voice from audio samples and returns its
	// id, usable as SynthesizeRequest.Voice afterwards.
	Clone(ctx context.Context, req *CloneRequest) (*CloneResponse, error)
}

// Moderator is the contract of a content moderation plugin.
type Moderator interface {
	// Configure: as Provider.Configure.
	Configure(ctx context.Context, settings map[string]string) error
	// Moderate decides whether text may be synthesized.
	Moderate(ctx context.Context, req *ModerationRequest) (*ModerationResult, error)
}

// Credentials are the provider credentials of one call: the gateway's
// managed key or the calling organization's own key (BYOK). Plugins must
// never log them.
type Credentials struct {
	// APIKey is the provider API key; empty for providers that need none.
	APIKey string
	// BYOK is true when APIKey belongs to the organization rather than the
	// gateway operator. Informational; plugins treat both alike.
	BYOK bool
}

// Description is a provider's self-description.
type Description struct {
	// ID is the provider id used in `provider/model` strings, e.g. "espeak".
	ID string
	// Name is a human-readable name, e.g. "eSpeak NG".
	Name string
	// DefaultModel is the model id used when a request names only the
	// provider. It must be one of Models, and not AnyModel.
	DefaultModel string
	// Models lists the provider's models. One of them may have the ID
	// AnyModel: it stands for the model ids the provider accepts without
	// listing them.
	Models []Model
	// Plans reports that the provider implements Planner. Serve sets it;
	// plugin authors leave it alone.
	Plans bool
	// Transcribes reports that the provider implements Transcriber.
	// Serve sets it; plugin authors leave it alone.
	Transcribes bool
}

// Model describes one model of a provider.
type Model struct {
	ID   string
	Name string
	// Capabilities says what the model can do natively.
	Capabilities Capabilities
	// Encodings lists every encoding the model produces natively, as the
	// provider's API documents them: each format at each sample rate (and
	// bitrate, where the caller chooses it) it can be asked for. The first
	// entry of a format is what the model sends when asked for that format
	// alone; the first entry overall is its default. The gateway asks for
	// exactly what a client asked when it is listed here and passes the
	// bytes through untouched, so listing every encoding the API offers
	// saves the gateway decoding and re-encoding, and the client the loss.
	// A plugin that lists Encodings may leave OutputFormats, SampleRates
	// and NativeSampleRate empty: Serve derives them.
	Encodings []Encoding
	// StreamEncodings lists the encodings Stream produces natively when
	// they are fewer than Encodings (a provider whose streaming endpoint
	// offers less than its clip endpoint); empty means every one of
	// Encodings streams. The gateway converts a stream asked in any
	// other encoding from the model's PCM stream.
	StreamEncodings []Encoding
	// OutputFormats lists the formats (the Format constants, or a
	// provider-specific name) the model can return, preferred first.
	// Derived from Encodings when empty; plugins written before
	// Encodings existed set it instead (see Model.NativeEncodings).
	OutputFormats []string
	// SampleRates lists the PCM sample rates the model can produce; empty
	// means the model chooses (NativeSampleRate). Derived from Encodings
	// when empty.
	SampleRates []int
	// NativeSampleRate is the rate the model produces when not asked for
	// another one; 0 if unknown. Derived from Encodings when 0.
	NativeSampleRate int
	// MaxTextChars is the longest text (in Unicode code points) accepted in
	// one call; 0 means the gateway default (5,000).
	MaxTextChars int
	// MinSpeed and MaxSpeed bound the speed the model honours natively
	// (Capabilities.Speed); 0 means no bound on that side. The gateway
	// sends a speed outside the range as 0 (normal) and time-stretches
	// the whole clip itself, rather than letting the provider clamp it.
	MinSpeed, MaxSpeed float64
	// AudioTags lists the bracketed audio tags ("[laughs]") the model
	// performs rather than reads out, in lower case without the
	// brackets; "*" means every tag. The gateway removes every other
	// tag from the text before calling the plugin, with a warning per
	// tag, and never reports a tag as a spoken word.
	AudioTags []string
	// Phonemes says how the model takes a word's pronunciation, so that
	// the gateway compiles an organization's phoneme rules into that
	// form (SSML phoneme tags, PLS lexicons, inline phonemes); the zero
	// value is a model that takes none, for which the gateway speaks a
	// rule's stand-in text and warns.
	Phonemes PhonemeInput
	// Prices are the model's list prices, one per billing unit it is
	// billed by (most bill one: characters; OpenAI's gpt-4o-mini-tts
	// bills text tokens in and audio tokens out). The gateway counts the
	// units, prices requests before they run (quotes, budgets in
	// currency) and logs their cost; operators override them in
	// gateway.yaml with negotiated rates. A provider that publishes no
	// price says so: one Price with Source PriceUnpublished and Amount 0.
	Prices []Price
}

// PhonemeInput is how a model takes pronunciations (Model.Phonemes).
type PhonemeInput struct {
	// Kind is one of the Phonemes constants, or "" for none.
	Kind string
	// Alphabets the model reads ("ipa", "cmu"); empty means IPA only.
	// The gateway converts CMU to IPA for a model that reads only IPA.
	Alphabets []string
	// MaxLexicons is, for PhonemesPLS, the most lexicons one request may
	// name; the gateway merges the rules of any beyond into the last.
	MaxLexicons int
}

// Phoneme input kinds (PhonemeInput.Kind).
const (
	// PhonemesSSML: the model takes SSML; the gateway sends the text as an
	// SSML document (SynthesizeRequest.Markup MarkupSSML) with
	// <phoneme alphabet="ipa" ph="..."> around ruled words.
	PhonemesSSML = "ssml"
	// PhonemesPLS: the model applies W3C PLS lexicons the plugin uploads
	// to the provider (SynthesizeRequest.Lexicons).
	PhonemesPLS = "pls"
	// PhonemesCartesia: the model reads IPA phonemes inline, as Cartesia
	// documents: <<p|h|o|n|e|m|e|s>>.
	PhonemesCartesia = "cartesia"
	// PhonemesESpeak: the model reads eSpeak phoneme mnemonics in [[...]]
	// (SynthesizeRequest.Markup MarkupESpeak).
	PhonemesESpeak = "espeak"
)

// Markups of SynthesizeRequest.Text.
const (
	// MarkupSSML: Text is an SSML document (<speak>...</speak>), every
	// character of the caller's text escaped.
	MarkupSSML = "ssml"
	// MarkupESpeak: Text is plain text with eSpeak phoneme input in
	// [[...]]; any other "[[" of the caller's text has been broken up.
	MarkupESpeak = "espeak"
)

// Lexicon is a W3C PLS document of phoneme rules for a PhonemesPLS model.
// ID names it across versions (a dictionary) and Version changes with its
// content, so a plugin uploads a version once per provider key and reuses
// what the provider returned for it.
type Lexicon struct {
	ID, Version string
	Document    []byte
}

// Price is a list price for one billing unit: Amount in Currency (ISO
// 4217, "USD") per Per units (0: one), as Source (a URL or a document's
// name) listed it on Date (YYYY-MM-DD).
type Price struct {
	// Unit is one of the Unit constants.
	Unit     string
	Amount   float64
	Per      int64
	Currency string
	Source   string
	Date     string
	// Tokenizer names the tokenizer a UnitTextTokens price is counted
	// with ("o200k_base"); empty means the gateway's estimate of four
	// characters a token.
	Tokenizer string
	// TokensPerSecond is how many audio tokens one second of audio is,
	// as the provider documents it (UnitAudioTokens only).
	TokensPerSecond float64
	// PerCharacter is how many billed characters one character sent is,
	// where a provider weighs characters by model (ElevenLabs: 0.5 for
	// Flash and Turbo); 0 means 1 (UnitCharacters only).
	PerCharacter float64
}

// The billing units a Price may name. Characters are Unicode code points
// of the text the plugin is sent, spaces included; UTF-8 bytes its
// encoded length; text tokens the provider's tokenizer's count; audio
// tokens and seconds are of the answer's audio; requests one per call.
const (
	UnitCharacters   = "characters"
	UnitUTF8Bytes    = "utf8_bytes"
	UnitTextTokens   = "text_tokens"
	UnitAudioTokens  = "audio_tokens"
	UnitAudioSeconds = "audio_seconds"
	UnitRequests     = "requests"
)

// PriceUnpublished is the Source of a price the provider does not
// publish (its Amount is 0): the table says so rather than invent one.
const PriceUnpublished = "unpublished"

// BilledUsage is what the provider's answer says a call was billed
// (ElevenLabs' character-cost header), in one unit.
type BilledUsage struct {
	Unit     string
	Quantity int64
}

// AnyAudioTag in Model.AudioTags means the model performs every tag.
const AnyAudioTag = "*"

// AnyModel as the ID of a Model in Description.Models stands for every
// model id the provider accepts beyond those it lists: a provider whose
// upstream hosts more models than any list can hold (fal, where every
// hosted app has its own id) passes the caller's id through. The entry's
// Capabilities, OutputFormats, SampleRates, NativeSampleRate,
// MaxTextChars, speed range and AudioTags are what the gateway assumes
// for such a model, so they should be the conservative ones that hold
// for all of them.
//
// The gateway never lists the entry (its catalog and model lists show
// only the listed models) and resolves an unlisted id of the provider to
// a copy of it whose ID is the id as the caller wrote it. That id comes
// from callers and the gateway only bounds its length and characters:
// the plugin must validate it itself, refusing one it cannot use with
// KindInvalidRequest, before it goes into a URL or a path. DefaultModel
// must be a listed model, never AnyModel; a provider without the entry
// accepts only its listed models.
const AnyModel = "*"

// Transcriber is an optional extension of Provider for providers that
// also turn speech into text with the time of each word (OpenAI's
// whisper-1, for example). The gateway can use it to time the words of
// clips from models that return no timestamps (alignment.method: stt in
// gateway.yaml).
//
// Serve detects a Provider that implements Transcriber and reports it to
// the gateway (Description.Transcribes); plugin authors only implement
// the method.
type Transcriber interface {
	// Transcribe returns what req.Audio says, with word times.
	Transcribe(ctx context.Context, req *TranscribeRequest) (*Transcript, error)
}

// TranscribeRequest asks for the words spoken in a clip.
type TranscribeRequest struct {
	// Model is the provider's speech-to-text model, e.g. "whisper-1".
	Model string
	// Audio is the clip and MediaType its media type (the gateway sends
	// 16 kHz mono WAV, "audio/wav").
	Audio     []byte
	MediaType string
	// Language is the clip's language as an ISO 639-1 code ("en"), or
	// empty to let the provider detect it.
	Language string
	// Prompt is text the clip is expected to say; providers that accept
	// a prompt use it to spell names and terms the same way.
	Prompt string
	// Credentials to call the provider with.
	Credentials Credentials
}

// Transcript is what a clip says.
type Transcript struct {
	// Text is the whole transcript.
	Text string
	// Language is the language the provider heard, if it says.
	Language string
	// Words are the transcript's words, in order, in seconds from the
	// clip's start.
	Words []WordTimestamp
}

// Capabilities are the native abilities of a model.
type Capabilities struct {
	// Streaming: Stream yields audio before synthesis is complete.
	Streaming bool
	// Timestamps: Synthesize returns word timestamps when asked.
	Timestamps bool
	// Cloning: Clone is supported.
	Cloning bool
	// Speed: SynthesizeRequest.Speed is honoured natively.
	Speed bool
	// InputStreaming: the model takes text while it speaks, through
	// InputStreamer.StreamInput. Serve clears it when the provider does not
	// implement InputStreamer.
	InputStreaming bool
	// Instructions: the model follows delivery instructions ("speak
	// calmly") given as the providerOptions field "instructions". The
	// gateway's OpenAI dialect passes its `instructions` only to such
	// models and drops it, with a warning, for the others.
	Instructions bool
	// Stitching: the model conditions a piece of a longer text on the
	// provider's ids of the pieces rendered before it
	// (Neighbours.PreviousIDs, from SynthesizeResponse.ContextID). An id
	// exists only once its piece has been rendered, so the gateway
	// renders the pieces of such a model one after another rather than
	// concurrently. A model that uses only the neighbouring texts leaves
	// it false: those are known before any piece is rendered.
	Stitching bool
}

// VoicesRequest asks for a provider's own voices.
type VoicesRequest struct {
	Model       string
	Credentials Credentials
}

// Voice is one of the provider's own voices.
type Voice struct {
	// ID is usable as SynthesizeRequest.Voice.
	ID       string
	Name     string
	Language string
	Gender   string
}

// SynthesizeRequest asks for speech.
type SynthesizeRequest struct {
	// Model is a model id of Description.Models (never empty: the gateway
	// resolves the default model) or, when the provider describes
	// AnyModel, any other id a caller named, which the plugin validates.
	Model string
	// Voice is the provider-side voice id.
	Voice string
	// Text is the text to speak, already validated against MaxTextChars.
	Text string
	// Speed is the speaking rate as a multiple of normal (0.25 to 4.0);
	// 0 means normal. Only sent when Capabilities.Speed is true.
	Speed float64
	// Format is the requested output format (a Format constant or one of
	// the model's own names); empty means the model's first OutputFormats
	// entry. The gateway asks only for formats the model lists.
	Format string
	// SampleRate is the requested sample rate, in any format; 0 means the
	// model's first listed rate for Format (Model.FindEncoding).
	SampleRate int
	// Bitrate is the requested bitrate in kbit/s of a compressed format
	// whose bitrate the provider lets the caller choose; 0 means the
	// model's first listed one for Format and SampleRate (the provider's
	// default).
	Bitrate int
	// Timestamps asks for word timestamps in the response.
	Timestamps bool
	// Options is the request's providerOptions object as JSON, passed
	// through untouched; nil when absent.
	Options []byte
	// Credentials to call the provider with.
	Credentials Credentials
	// Neighbours is set when Text is one piece of a longer text the
	// gateway cut to the model's limit: the plugin maps it onto its
	// provider's own continuity fields, if it has any, so that the
	// joins sound continuous. nil for a whole text.
	Neighbours *Neighbours
	// Markup says how Text is written: "" plain text, MarkupSSML or
	// MarkupESpeak. The gateway sends markup only to a model whose
	// Phonemes asks for it.
	Markup string
	// Lexicons are PLS lexicons to apply, for a PhonemesPLS model, at
	// most its MaxLexicons.
	Lexicons []Lexicon
}

// Neighbours is the context of one piece of a longer text: the text just
// before and just after it, and the provider's ids of the pieces
// rendered before it. It is the provider-neutral form of what providers
// call request stitching (ElevenLabs' previous_request_ids,
// previous_text and next_text); a plugin whose provider has no such
// fields ignores it.
type Neighbours struct {
	// PreviousText and NextText are the neighbouring pieces' texts
	// ("" at either end of the text).
	PreviousText, NextText string
	// PreviousIDs are the ContextID of pieces rendered before this one,
	// nearest last (at most MaxPreviousIDs), for models with
	// Capabilities.Stitching; empty where none could be had (the
	// provider gave none, or the earlier piece was streamed).
	PreviousIDs []string
}

// MaxPreviousIDs is the most Neighbours.PreviousIDs holds: ElevenLabs,
// the provider that defined the notion, takes at most three.
const MaxPreviousIDs = 3

// SynthesizeResponse is a whole rendered clip.
type SynthesizeResponse struct {
	// Audio holds the clip's bytes.
	Audio []byte
	// MediaType is the clip's media type: "audio/wav", "audio/mpeg", or
	// "audio/pcm;rate=N" for raw 16-bit little-endian mono PCM.
	MediaType string
	// Timestamps are word timings, in order, in seconds from the clip's
	// start; nil unless requested and supported.
	Timestamps []WordTimestamp
	// Warnings are human-readable notes for the caller.
	Warnings []string
	// ContextID is the provider's id of this render (ElevenLabs'
	// request-id header), which the gateway passes to the later pieces
	// of the same text in Neighbours.PreviousIDs; "" when none.
	ContextID string
	// Billed is what the provider's answer says the call was billed, in
	// the units of the model's Prices, when it says (a response header
	// or a usage field); nil when it does not. It wins over the
	// gateway's own count, whose error the gateway records.
	Billed []BilledUsage
}

// WordTimestamp is the timing of one spoken word.
type WordTimestamp struct {
	Text  string
	Start float64 // seconds from the start of the clip
	End   float64 // seconds from the start of the clip
}

// Chunk is a piece of streamed audio.
type Chunk struct {
	// MediaType is set on the first chunk of a stream.
	MediaType string
	// Data is the audio bytes. The receiver may keep the slice; senders
	// must not reuse it after send returns.
	Data []byte
	// Billed is what the provider's answer says the stream was billed,
	// in the units of the model's Prices, on the chunk sent once the
	// plugin learned it: with the first audio for a response header
	// (ElevenLabs' character-cost), on the last chunk for a final
	// message (Gemini's usageMetadata), on a chunk of its own without
	// Data if the audio already went; nil on the others. The gateway
	// adds up every chunk's figures, and they win over its own count as
	// SynthesizeResponse.Billed does for a clip.
	Billed []BilledUsage
}

// CloneRequest asks a provider to create a voice from audio samples.
type CloneRequest struct {
	Model       string
	Name        string
	Description string
	Samples     []Sample
	Options     []byte
	Credentials Credentials
}

// Sample is one audio sample for cloning.
type Sample struct {
	Filename  string
	MediaType string
	Data      []byte
}

// CloneResponse carries the new provider-side voice id.
type CloneResponse struct {
	VoiceID string
}

// ModerationRequest asks whether text may be synthesized.
type ModerationRequest struct {
	Text        string
	Credentials Credentials
	// Rules, when not empty, are custom rules in plain English for the
	// moderator to evaluate the text against instead of its own checks
	// (a model reads them); a block names the rule in Result.Rule.
	// Moderators that evaluate no custom rules refuse a request with
	// rules (KindUnsupported).
	Rules []ModerationRule
}

// ModerationRule is a custom moderation rule: a name to report and a
// prompt such as "Block any text that promotes a specific stock".
type ModerationRule struct {
	Name   string
	Prompt string
}

// Decisions a Moderator returns.
const (
	DecisionAllow = "allow"
	DecisionBlock = "block"
)

// ModerationResult is a moderation verdict.
type ModerationResult struct {
	// Decision is DecisionAllow or DecisionBlock.
	Decision string
	// Category names why text was blocked (e.g. "violence"); empty on allow.
	Category string
	// Confidence is the score behind the decision, 0 to 1.
	Confidence float64
	// Detail is a short human-readable reason; never the full text.
	Detail string
	// Rule names the custom rule (ModerationRequest.Rules) that blocked
	// the text; empty otherwise.
	Rule string
}

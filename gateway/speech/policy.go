package speech

import (
	"time"

	"github.com/voxgate/voxgate/gateway/audio"
)

// The typed runtime views of the configuration the speech service uses,
// built once at start by the gateway's assembly (gateway/options.go). The
// service never reads the configuration: what it may decide is exactly
// what these hold.

// Limits bound what one request may ask for.
type Limits struct {
	// MaxTextChars is the longest text of one request, whatever the
	// model: longer texts are split into pieces up to this ceiling.
	MaxTextChars int
	// PieceConcurrency is how many pieces of one text render at once.
	PieceConcurrency int
	// MaxTurns and MaxConversationChars bound a conversation.
	MaxTurns             int
	MaxConversationChars int
	// ConversationConcurrency is how many turns render at once.
	ConversationConcurrency int
	// Output bounds the answer of whole-clip processing.
	Output audio.Limits
	// WholeClipConcurrency is how many requests with whole-clip processing
	// of one organization run at once; WholeClipWait how long one more
	// waits for a turn before it is refused.
	WholeClipConcurrency int
	WholeClipWait        time.Duration
	// StreamsPerOrg is how many streams one organization holds open at
	// once; one more is refused at once (a stream's length is its
	// client's, so waiting for a turn would be unbounded).
	StreamsPerOrg int
}

// Where word timestamps come from: a provider's source
// (ProviderPolicy.Timestamps) and the deployment's method for models
// without their own (Alignment.Method).
const (
	// TimingAuto: the model's own when it has them, else the deployment's
	// method (a provider's source only).
	TimingAuto = "auto"
	// TimingNative: the model's own only (a provider's source only).
	TimingNative = "native"
	// TimingAligned: the offline aligner against a reference rendering.
	TimingAligned = "aligned"
	// TimingSTT: a speech-to-text transcription of the audio.
	TimingSTT = "stt"
	// TimingOff: none (the deployment's method only).
	TimingOff = "off"
)

// Alignment is how the service times the words of models without
// timestamps of their own.
type Alignment struct {
	// Method is TimingAligned, TimingSTT or TimingOff.
	Method string
	// Reference is the provider that renders references ("" = none:
	// offline alignment is unavailable).
	Reference string
	// STTProvider and STTModel transcribe for method stt.
	STTProvider, STTModel string
	// Concurrency bounds the alignments running at once.
	Concurrency int
}

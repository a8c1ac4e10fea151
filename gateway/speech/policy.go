package speech

import (
	"time"

	"github.com/voxgate/voxgate/config"
	"github.com/voxgate/voxgate/gateway/audio"
)

// The typed runtime views of the configuration the speech service uses,
// built once at start. The service never reads *config.Config: what it
// may decide is exactly what these hold.

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

// LimitsFrom builds Limits from the config.
func LimitsFrom(cfg *config.Config) Limits {
	return Limits{
		MaxTextChars:            cfg.Limits.MaxTextChars,
		PieceConcurrency:        cfg.Limits.PieceConcurrency,
		MaxTurns:                cfg.Limits.MaxTurns,
		MaxConversationChars:    cfg.Limits.MaxConversationChars,
		ConversationConcurrency: cfg.Limits.ConversationConcurrency,
		Output: audio.Limits{
			MaxDuration: time.Duration(cfg.Limits.MaxOutputSeconds) * time.Second,
			MaxBytes:    cfg.Limits.MaxOutputBytes,
		},
		WholeClipConcurrency: cfg.Limits.WholeClipConcurrency,
		WholeClipWait:        time.Duration(cfg.Limits.WholeClipWait),
		StreamsPerOrg:        cfg.Limits.StreamsPerOrg,
	}
}

// Alignment is how the service times the words of models without
// timestamps of their own.
type Alignment struct {
	// Method is config.TimestampsAligned, STT or Off.
	Method string
	// Reference is the provider that renders references ("" = none:
	// offline alignment is unavailable).
	Reference string
	// STTProvider and STTModel transcribe for method stt.
	STTProvider, STTModel string
	// Concurrency bounds the alignments running at once.
	Concurrency int
}

// AlignmentFrom builds Alignment from the config.
func AlignmentFrom(cfg *config.Config) Alignment {
	a := cfg.Alignment
	return Alignment{Method: a.Method, Reference: a.Reference, STTProvider: a.STT.Provider, STTModel: a.STT.Model, Concurrency: a.Concurrency}
}

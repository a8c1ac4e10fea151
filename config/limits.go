package config

import "time"

// Limits holds request limits.
type Limits struct {
	// MaxTextChars is the longest text one speech request may have
	// (422 past it). Texts longer than a model accepts are split into
	// pieces up to this ceiling.
	MaxTextChars int `yaml:"max_text_chars"`
	// PieceConcurrency is how many pieces of one long text render at
	// once.
	PieceConcurrency int `yaml:"piece_concurrency"`
	// MaxMediaBytes caps uploads to /v1/media.
	MaxMediaBytes int `yaml:"max_media_bytes"`
	// Conversation limits.
	MaxTurns                int `yaml:"max_turns"`
	MaxConversationChars    int `yaml:"max_conversation_chars"`
	ConversationConcurrency int `yaml:"conversation_concurrency"`
	// Whole-clip processing (volumeDbfs, output, speed the provider cannot
	// do, conversations). MaxOutputSeconds and MaxOutputBytes bound one
	// answer (422 output_too_large past them); WholeClipConcurrency is how
	// many such requests of one organization run at once, and
	// WholeClipWait how long one more waits for a turn before it is
	// refused with 429 rate_limited.
	MaxOutputSeconds     int      `yaml:"max_output_seconds"`
	MaxOutputBytes       int      `yaml:"max_output_bytes"`
	WholeClipConcurrency int      `yaml:"whole_clip_concurrency"`
	WholeClipWait        Duration `yaml:"whole_clip_wait"`
	// StreamsPerOrg is how many streams (the /stream endpoints) one
	// organization holds open at once per instance; one more is refused
	// with 429 rate_limited. A stream holds a provider call (for eSpeak,
	// a render slot of the plugin's) for as long as its client reads, so
	// one organization's many slow listeners must not take them all.
	StreamsPerOrg int `yaml:"streams_per_org"`
	// BodyMemoryPerOrg is the share of server.max_body_memory one
	// organization's request bodies may hold at once (per instance); a
	// body past it is refused with 429 rate_limited, so that one
	// organization's slow uploads cannot leave none for the others.
	// Default: a quarter of server.max_body_memory, at least the largest
	// body a route takes.
	BodyMemoryPerOrg int `yaml:"body_memory_per_org"`
	// MaxJobChars is the longest text of a long-form job (POST
	// /v1/audio/jobs; default 2,000,000). A job's text is cut into
	// chunks, so it is never held whole while it renders.
	MaxJobChars int `yaml:"max_job_chars"`
}

// defaults fills in the limits not given; the bodies' share per
// organization depends on the server's, so s has its defaults already.
func (l *Limits) defaults(s *Server) {
	if l.MaxTextChars == 0 {
		l.MaxTextChars = 100000
	}
	if l.PieceConcurrency == 0 {
		l.PieceConcurrency = 3
	}
	if l.MaxMediaBytes == 0 {
		l.MaxMediaBytes = 10 << 20
	}
	if l.MaxTurns == 0 {
		l.MaxTurns = 50
	}
	if l.MaxConversationChars == 0 {
		l.MaxConversationChars = 20000
	}
	if l.ConversationConcurrency == 0 {
		l.ConversationConcurrency = 4
	}
	if l.MaxOutputSeconds == 0 {
		l.MaxOutputSeconds = 1200 // 5,000 characters at speed 0.25
	}
	if l.MaxOutputBytes == 0 {
		l.MaxOutputBytes = 128 << 20
	}
	if l.WholeClipConcurrency == 0 {
		l.WholeClipConcurrency = 2
	}
	if l.WholeClipWait == 0 {
		l.WholeClipWait = Duration(10 * time.Second)
	}
	if l.StreamsPerOrg == 0 {
		l.StreamsPerOrg = 64
	}
	if l.MaxJobChars == 0 {
		l.MaxJobChars = 2_000_000
	}
	if l.BodyMemoryPerOrg == 0 {
		l.BodyMemoryPerOrg = max(s.MaxBodyMemory/4, largestBody(s, l))
	}
}

// validateLimits checks the limits section.
func (c *Config) validateLimits(bad report) {
	l := &c.Limits
	if largest := largestBody(&c.Server, l); l.BodyMemoryPerOrg < largest || l.BodyMemoryPerOrg > c.Server.MaxBodyMemory {
		bad("limits.body_memory_per_org", "must be from the largest body a route takes (%d bytes) to server.max_body_memory (%d), got %d", largest, c.Server.MaxBodyMemory, l.BodyMemoryPerOrg)
	}
	if l.MaxTextChars < 1 || l.MaxTurns < 1 || l.MaxConversationChars < 1 || l.ConversationConcurrency < 1 || l.MaxMediaBytes < 1 ||
		l.MaxOutputSeconds < 1 || l.MaxOutputBytes < 1 || l.WholeClipConcurrency < 1 || l.WholeClipWait < 0 || l.PieceConcurrency < 1 || l.StreamsPerOrg < 1 {
		bad("limits", "every limit must be positive")
	}
	if l.MaxTextChars > 1_000_000 {
		bad("limits.max_text_chars", "must be at most 1000000 (a text that long is hours of audio held in memory), got %d", l.MaxTextChars)
	}
}

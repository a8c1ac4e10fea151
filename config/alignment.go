package config

import "runtime"

// Alignment configures word timestamps for models that return none.
type Alignment struct {
	// Method is how words are timed for models without timestamps of
	// their own (and providers whose timestamps setting is "auto"):
	// "aligned" (the default: the offline aligner), "stt" (a
	// speech-to-text provider, STT) or "off" (503 timestamps_unavailable).
	Method string `yaml:"method"`
	// Reference is the provider whose plugin renders the reference
	// speech the aligner matches against; it must report word
	// timestamps. Default: "espeak" when that provider is configured.
	Reference string `yaml:"reference"`
	// STT names the speech-to-text provider and model of method stt.
	STT AlignmentSTT `yaml:"stt"`
	// Concurrency bounds the alignments running at once (each takes a
	// core for a fraction of a second per minute of audio). Default: the
	// number of CPUs.
	Concurrency int `yaml:"concurrency"`
}

// AlignmentSTT names a provider that transcribes (sdk.Transcriber) and its
// model.
type AlignmentSTT struct {
	Provider string `yaml:"provider"`
	// Model defaults to whisper-1.
	Model string `yaml:"model"`
}

// Alignment methods and provider timestamp sources.
const (
	TimestampsAuto    = "auto"
	TimestampsNative  = "native"
	TimestampsAligned = "aligned"
	TimestampsSTT     = "stt"
	TimestampsOff     = "off"
)

// defaults fills in the alignment settings not given; the reference is
// eSpeak when that provider is configured.
func (a *Alignment) defaults(providers map[string]*Provider) {
	if a.Method == "" {
		a.Method = TimestampsAligned
	}
	if a.Reference == "" && providers["espeak"] != nil {
		a.Reference = "espeak"
	}
	if a.STT.Model == "" {
		a.STT.Model = "whisper-1"
	}
	if a.Concurrency == 0 {
		a.Concurrency = runtime.NumCPU()
	}
}

// validateAlignment checks the alignment section.
func (c *Config) validateAlignment(bad report) {
	switch c.Alignment.Method {
	case TimestampsAligned, TimestampsSTT, TimestampsOff:
	default:
		bad("alignment.method", "must be aligned, stt or off, got %q", c.Alignment.Method)
	}
	if r := c.Alignment.Reference; r != "" && c.Providers[r] == nil {
		bad("alignment.reference", "unknown provider %q (not under providers:)", r)
	}
	if p := c.Alignment.STT.Provider; p != "" && c.Providers[p] == nil {
		bad("alignment.stt.provider", "unknown provider %q (not under providers:)", p)
	}
	if c.Alignment.Method == TimestampsSTT && c.Alignment.STT.Provider == "" {
		bad("alignment.stt.provider", "is required with method stt (e.g. openai)")
	}
	if c.Alignment.Concurrency < 1 {
		bad("alignment.concurrency", "must be positive, got %d", c.Alignment.Concurrency)
	}
}

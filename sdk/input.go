package sdk

import "context"

// InputStreamer is an optional extension of Provider for providers that
// take text while they speak: a live connection into which text is written
// as an LLM produces it, audio coming back as soon as there is enough to
// say (ElevenLabs' stream-input WebSocket, Cartesia's WebSocket contexts).
//
// The gateway's realtime WebSocket (docs/realtime.md) calls StreamInput once
// per context, as soon as the context starts, so that the provider's
// connection is open before the first sentence is ready. Models that do not
// claim Capabilities.InputStreaming, and providers that do not implement
// this interface, get the gateway's own sentence buffering instead: one
// Stream call per sentence.
//
// Serve detects a Provider that implements InputStreamer; a model claims
// the capability in Describe as for any other.
type InputStreamer interface {
	// StreamInput renders the text that arrives on in, in order, and
	// returns after the last audio of the last text has been sent.
	//
	// req is validated as for Stream; its Text is empty. Each TextInput is
	// a whole segment the gateway has cut and moderated (a sentence, or a
	// clause of a long one), so the provider may generate it at once;
	// Flush says the client asked for everything so far to be spoken now.
	// in is closed when no more text will come: speak what is left, wait
	// for the provider's last audio, and return nil.
	//
	// send takes the audio as it arrives (the first event with audio
	// carries MediaType), word timings and warnings, and may be called
	// only from one goroutine at a time; an error from send (the listener
	// went away) must end the call. Word timings are in seconds from the
	// start of the whole input stream's audio, not of one segment's.
	//
	// ctx ends when the client cancels the context or goes away: stop at
	// once (tell the provider to cancel, close its connection) and return.
	StreamInput(ctx context.Context, req *SynthesizeRequest, in <-chan TextInput, send func(StreamEvent) error) error
}

// TextInput is one piece of text of an input stream.
type TextInput struct {
	// Text is the segment to speak; it ends where a sentence or clause
	// ends, trailing space included.
	Text string
	// Flush asks for everything received so far to be spoken now.
	Flush bool
}

// StreamEvent is what an input stream produces: audio, word timings or a
// warning (any of them may be empty).
type StreamEvent struct {
	// MediaType is set on the first event that carries audio, as in
	// SynthesizeResponse.MediaType.
	MediaType string
	// Audio is the next piece of audio. The receiver may keep the slice;
	// senders must not reuse it after send returns. PCM pieces hold whole
	// samples.
	Audio []byte
	// Words are word timings in seconds from the start of the stream's
	// audio, in order; each is sent no later than the audio it times.
	Words []WordTimestamp
	// Warning is a human-readable note for the caller.
	Warning string
}

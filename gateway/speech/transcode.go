package speech

import (
	"errors"
	"fmt"
	"io"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/sdk"
)

// convertedStream returns the encoding the gateway converts j's stream to,
// or nil when the provider's bytes pass through as they come (the hot
// path: no wrapper, no copy). pieces says the stream is a long text's,
// whose pieces come as the model's PCM whatever format was asked (see
// pieceSource): a format the model would have streamed itself is then
// converted too, so the client still gets what it asked for.
func convertedStream(j *Job, pieces bool) *audio.Output {
	if p := j.Params.Output; p != nil {
		o := p.Output()
		return &o
	}
	f := j.Stream.Format
	if !pieces || f == "" || streamFormat(j.Model) != sdk.FormatPCM || f == sdk.FormatPCM || !audio.StreamEncodes(f) {
		return nil
	}
	// The rate and bitrate asked for, when the gateway can make them
	// (the model's own encoding would not have been checked against
	// them); else the gateway's defaults for the format.
	out := &audio.OutputParams{Format: f}
	if sf := j.streamFormatAsked(); sf != nil {
		if sf.SampleRate != 0 {
			out.SampleRate = &sf.SampleRate
		}
		if sf.Bitrate != 0 {
			out.Bitrate = &sf.Bitrate
		}
		if len((audio.Params{Output: out}).Validate()) > 0 {
			out.SampleRate, out.Bitrate = nil, nil
		}
	}
	o := out.Output()
	return &o
}

// transcode returns src converted as j's stream asks (convertedStream), or
// src itself when it passes through. A long text's stream converted only
// because its pieces come as PCM records the conversion on j (ReasonJoin).
func transcode(j *Job, src Source, pieces bool) Source {
	out := convertedStream(j, pieces)
	if out == nil {
		return src
	}
	if j.conv == nil {
		from := sdk.Encoding{Format: sdk.FormatPCM, SampleRate: j.Model.NativeSampleRate}
		to := *out
		if r, err := out.Resolve(max(from.SampleRate, 1)); err == nil && from.SampleRate > 0 {
			to = r
		}
		j.conv = &Conversion{From: from, To: sdk.Encoding{Format: to.Format, SampleRate: to.SampleRate, Bitrate: to.Bitrate}, Reason: ReasonJoin}
	}
	return &transcodeSource{src: src, out: *out}
}

// transcodeSource converts a stream of raw PCM to another encoding as it
// arrives, chunk by chunk (audio.StreamEncoder): the stream is never held
// whole, and its first bytes leave as soon as the encoder has a frame.
//
// A stream that the provider breaks off ends with the provider's error
// and without the encoder's last bytes, so it still ends incomplete for
// the client (no terminating chunk, no SSE done event); only a stream
// that ended complete is flushed.
type transcodeSource struct {
	src Source
	out audio.Output
	enc *audio.StreamEncoder // made from the first chunk's media type
	// eof says src has ended (Flush is next), done that the stream has.
	eof, done bool
	// err is what ended the stream early; encErr is set when it was the
	// conversion's own failure rather than the provider's.
	err, encErr error
}

// MediaType is the converted stream's, known once Next has returned.
func (t *transcodeSource) MediaType() string {
	if t.enc == nil {
		return ""
	}
	return t.enc.MediaType()
}

// Next returns the next converted bytes: it reads the provider's stream
// until the encoder has something to send (an MP3 frame needs about
// 26 ms of audio; an Opus page 100 ms), then the encoder's last bytes
// with io.EOF.
func (t *transcodeSource) Next() ([]byte, error) {
	for {
		switch {
		case t.err != nil:
			return nil, t.err
		case t.done:
			return nil, io.EOF
		case t.eof:
			t.done = true
			b, err := t.enc.Flush()
			if err != nil {
				return nil, t.fail(fmt.Errorf("convert the stream to %s: %w", t.out.Format, err))
			}
			return b, io.EOF
		}
		b, err := t.src.Next()
		if err != nil && !errors.Is(err, io.EOF) {
			t.err = err // the provider's failure, as it is: never flushed
			return nil, err
		}
		if t.enc == nil {
			if oerr := t.open(); oerr != nil {
				return nil, t.fail(oerr)
			}
		}
		out, werr := t.enc.Write(b)
		if werr != nil {
			return nil, t.fail(fmt.Errorf("convert the stream to %s: %w", t.out.Format, werr))
		}
		t.eof = err != nil
		if len(out) > 0 {
			return out, nil
		}
	}
}

// open makes the encoder for the provider's stream, which must be raw
// 16-bit little-endian mono PCM (what the gateway asked for).
func (t *transcodeSource) open() error {
	mt, err := audio.ParseMediaType(t.src.MediaType())
	if err != nil || mt.Format != audio.FormatPCM || mt.Channels != 1 || mt.BigEndian {
		return &sdk.Error{Kind: sdk.KindUpstream, Message: fmt.Sprintf("the provider streamed %q when asked for raw 16-bit mono PCM (to convert to %s)", t.src.MediaType(), t.out.Format)}
	}
	if t.enc, err = audio.NewStreamEncoder(mt.Rate, t.out); err != nil {
		return fmt.Errorf("convert a %d Hz stream to %s: %w", mt.Rate, t.out.Format, err)
	}
	return nil
}

func (t *transcodeSource) fail(err error) error {
	t.err, t.encErr = err, err
	return err
}

// Close stops the provider's stream if it still runs and frees the
// encoder. It returns what ended the stream: the provider's error (as
// the provider's Source made it explicit), the conversion's, or nil.
func (t *transcodeSource) Close() error {
	err := t.src.Close()
	if t.enc != nil {
		t.enc.Close()
	}
	if t.encErr != nil {
		return t.encErr
	}
	return err
}

// streamFormatAsked is the stream format j's request asked for, if any.
func (j *Job) streamFormatAsked() *StreamFormat {
	if j.req == nil {
		return nil
	}
	return j.req.StreamFormat
}

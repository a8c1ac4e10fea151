package audio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/voxgate/voxgate/gateway/audio/internal/lame"
	"github.com/voxgate/voxgate/gateway/audio/internal/opus"
	"github.com/voxgate/voxgate/gateway/audio/internal/soxr"
)

// streamFormats are the formats StreamEncoder produces. FLAC is not among
// them: a FLAC stream's header (STREAMINFO) wants the total length and
// checksum, and no client of a streaming API asks for it.
var streamFormats = []string{FormatPCM, FormatWAV, FormatMP3, FormatOpus, FormatULaw, FormatALaw}

// StreamFormats returns the formats StreamEncoder converts raw PCM to as
// it arrives, in the order the API lists them.
func StreamFormats() []string { return slices.Clone(streamFormats) }

// StreamEncodes reports whether StreamEncoder produces format.
func StreamEncodes(format string) bool { return slices.Contains(streamFormats, format) }

// opusPageDuration is how much audio a streamed Ogg Opus page holds: short
// enough that a page leaves soon after its audio arrives (a voice agent
// waits for it), long enough that the Ogg overhead (27 bytes and a
// segment table per page) stays around 5% at 32 kbps.
const opusPageDuration = 100 * time.Millisecond

// StreamEncoder converts raw 16-bit little-endian mono PCM that arrives in
// pieces (a provider's stream) into another encoding as it arrives, so a
// stream can be sent in a format the provider does not produce without
// holding the whole clip: its rate changed through libsoxr's streaming
// resampler, then written as PCM, WAV (a header saying "length unknown",
// then the samples), G.711 μ-law or A-law, MP3 (LAME, frames as they are
// complete; no Xing/LAME tag, see lame.NewStreamEncoder) or Ogg Opus
// (libopusenc, a page per 100 ms).
//
// Write and Flush return the bytes that are ready; concatenated, they are
// the whole encoded stream. The returned slice is the encoder's own
// buffer, valid until the next call: once the buffers have grown to the
// size of the chunks that pass, encoding a chunk allocates nothing.
//
// A StreamEncoder is not safe for concurrent use. Close frees its C
// memory (the resampler's and the encoder's) and must be called, whether
// or not the stream ended.
type StreamEncoder struct {
	out       Output // resolved
	inRate    int
	mediaType string

	rs  *soxr.Stream  // nil when the rate stays
	mp3 *lame.Encoder // FormatMP3
	ogg *opus.Encoder // FormatOpus

	// odd holds the first byte of a sample split between two writes.
	odd    byte
	hasOdd bool
	// in holds decoded input the resampler has not taken yet (it takes
	// none while a chunk is too short to yield an output sample); res
	// the resampled samples of one call.
	in, res []float32
	buf     []byte // the bytes returned
	head    bool   // the WAV header is still to be sent
	flushed bool
}

// NewStreamEncoder returns an encoder of PCM at inRate Hz to out, resolved
// against inRate as Encode does (Output.Resolve: MP3 at the MP3 rate
// nearest to inRate unless out names one, Opus at 48 kHz, G.711 at 8
// kHz). A format that cannot be streamed (FLAC), or an invalid
// combination, is an error wrapping ErrInvalidParams.
func NewStreamEncoder(inRate int, out Output) (*StreamEncoder, error) {
	return NewStreamEncoderComments(inRate, out, nil)
}

// NewStreamEncoderComments is NewStreamEncoder with comments ("KEY",
// "value" pairs) written in an Ogg Opus stream's comment header, where
// chapter marks go (CHAPTER001=00:00:00.000, CHAPTER001NAME=...); other
// formats have no such header and ignore them.
func NewStreamEncoderComments(inRate int, out Output, comments [][2]string) (*StreamEncoder, error) {
	if inRate <= 0 || inRate > maxRate {
		return nil, fmt.Errorf("%w: input sample rate %d", ErrInvalidParams, inRate)
	}
	if !StreamEncodes(out.Format) {
		return nil, fmt.Errorf("%w: %q cannot be encoded as a stream", ErrInvalidParams, out.Format)
	}
	o, err := out.Resolve(inRate)
	if err != nil {
		return nil, err
	}
	e := &StreamEncoder{out: o, inRate: inRate, head: o.Format == FormatWAV}
	switch o.Format {
	case FormatPCM, FormatULaw, FormatALaw:
		e.mediaType = MediaType{Format: o.Format, Rate: o.SampleRate}.String()
	default:
		e.mediaType = MediaType{Format: o.Format}.String()
	}
	if o.SampleRate != inRate {
		if e.rs, err = soxr.NewStream(inRate, o.SampleRate); err != nil {
			return nil, fmt.Errorf("audio: resample %d -> %d Hz: %w", inRate, o.SampleRate, err)
		}
	}
	switch o.Format {
	case FormatMP3:
		e.mp3, err = lame.NewStreamEncoder(o.SampleRate, o.Bitrate, mp3Quality)
	case FormatOpus:
		e.ogg, err = opus.NewStreamEncoderComments(o.Bitrate, opusPageDuration, comments)
	}
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("audio: %w", err)
	}
	return e, nil
}

// MediaType is the media type of the encoded stream: "audio/pcm;rate=N",
// "audio/wav", "audio/mpeg", "audio/ogg;codecs=opus", "audio/PCMU;rate=8000"
// or "audio/PCMA;rate=8000".
func (e *StreamEncoder) MediaType() string { return e.mediaType }

// Output is the encoding produced, with its rate and bitrate resolved.
func (e *StreamEncoder) Output() Output { return e.out }

// Write encodes the next PCM bytes of the stream (any length: a sample
// may be split between two writes) and returns what is ready to send,
// possibly nothing yet (MP3 and Opus wait for a whole frame or page).
func (e *StreamEncoder) Write(pcm []byte) ([]byte, error) {
	if e.flushed {
		return nil, errors.New("audio: write to a flushed stream encoder")
	}
	e.buf = e.buf[:0]
	e.header()
	if e.rs == nil && (e.out.Format == FormatPCM || e.out.Format == FormatWAV) {
		// The samples themselves, whole ones only (WAV at the input rate).
		e.buf = e.appendWhole(e.buf, pcm)
		return e.buf, nil
	}
	e.decode(pcm)
	samples := e.in
	if e.rs != nil {
		var err error
		if samples, err = e.resample(); err != nil {
			return nil, err
		}
	}
	err := e.encode(samples)
	if e.rs == nil {
		e.in = e.in[:0]
	}
	if err != nil {
		return nil, err
	}
	return e.buf, nil
}

// Flush ends the stream: it drains the resampler and the encoder and
// returns the last bytes (the MP3 encoder's last frames, the Opus
// stream's last page with its exact end). Write may not be called after
// it. A half sample left over is dropped.
func (e *StreamEncoder) Flush() ([]byte, error) {
	if e.flushed {
		return nil, nil
	}
	e.flushed = true
	e.buf = e.buf[:0]
	e.header()
	if e.rs != nil {
		samples, err := e.drain()
		if err != nil {
			return nil, err
		}
		if err := e.encode(samples); err != nil {
			return nil, err
		}
	}
	var err error
	switch {
	case e.mp3 != nil:
		e.buf, err = e.mp3.Finish(e.buf)
	case e.ogg != nil:
		e.buf, err = e.ogg.Finish(e.buf)
	}
	if err != nil {
		return nil, fmt.Errorf("audio: %w", err)
	}
	return e.buf, nil
}

// Close frees the resampler and the encoder. It may be called more than
// once.
func (e *StreamEncoder) Close() {
	if e.rs != nil {
		e.rs.Close()
		e.rs = nil
	}
	if e.mp3 != nil {
		e.mp3.Close()
		e.mp3 = nil
	}
	if e.ogg != nil {
		e.ogg.Close()
		e.ogg = nil
	}
}

// header puts the WAV header in front of the first bytes sent. Its
// lengths say "unknown" (0xFFFFFFFF), which players read as "to the end
// of the stream", as a provider's streamed WAV does.
func (e *StreamEncoder) header() {
	if !e.head {
		return
	}
	e.head = false
	e.buf = slices.Grow(e.buf, wavHeaderLen)[:wavHeaderLen]
	putWAVHeader(e.buf, e.out.SampleRate, 0)
	binary.LittleEndian.PutUint32(e.buf[4:8], math.MaxUint32)
	binary.LittleEndian.PutUint32(e.buf[40:44], math.MaxUint32)
}

// appendWhole appends the whole samples of the held byte and pcm to dst,
// and holds a byte left over.
func (e *StreamEncoder) appendWhole(dst, pcm []byte) []byte {
	if len(pcm) == 0 {
		return dst
	}
	if e.hasOdd {
		dst = append(dst, e.odd, pcm[0])
		pcm, e.hasOdd = pcm[1:], false
	}
	if len(pcm)%2 == 1 {
		e.odd, e.hasOdd = pcm[len(pcm)-1], true
		pcm = pcm[:len(pcm)-1]
	}
	return append(dst, pcm...)
}

// decode appends pcm's samples (with a held byte) to e.in.
func (e *StreamEncoder) decode(pcm []byte) {
	if len(pcm) == 0 {
		return
	}
	if e.hasOdd {
		e.in = append(e.in, float32(int16(uint16(e.odd)|uint16(pcm[0])<<8))/32768)
		pcm, e.hasOdd = pcm[1:], false
	}
	if len(pcm)%2 == 1 {
		e.odd, e.hasOdd = pcm[len(pcm)-1], true
		pcm = pcm[:len(pcm)-1]
	}
	n := len(e.in)
	e.in = slices.Grow(e.in, len(pcm)/2)[:n+len(pcm)/2]
	s16le(e.in[n:], pcm, 1, 2, false)
}

// resample feeds e.in to the resampler and returns what it gave, in
// e.res. Input it does not take yet (a few samples, too few for an output
// sample) stays at the front of e.in for the next call.
func (e *StreamEncoder) resample() ([]float32, error) {
	e.res = e.res[:0]
	in := e.in
	for len(in) > 0 {
		e.res = slices.Grow(e.res, e.outLen(len(in)))
		c, p, err := e.rs.Process(in, e.res[len(e.res):cap(e.res)])
		if err != nil {
			return nil, fmt.Errorf("audio: %w", err)
		}
		e.res = e.res[:len(e.res)+p]
		in = in[c:]
		if c == 0 && p == 0 {
			break // too little input to take: keep it for the next call
		}
	}
	e.in = e.in[:copy(e.in, in)]
	return e.res, nil
}

// drain feeds what input is left and returns the resampler's tail.
func (e *StreamEncoder) drain() ([]float32, error) {
	if _, err := e.resample(); err != nil {
		return nil, err
	}
	for {
		e.res = slices.Grow(e.res, e.outLen(chunk))
		_, p, err := e.rs.Process(nil, e.res[len(e.res):cap(e.res)])
		if err != nil {
			return nil, fmt.Errorf("audio: %w", err)
		}
		if p == 0 {
			return e.res, nil
		}
		e.res = e.res[:len(e.res)+p]
	}
}

// outLen is room for the output of n input samples, and some.
func (e *StreamEncoder) outLen(n int) int {
	return n*e.out.SampleRate/e.inRate + 64
}

// encode appends samples, at the output rate, encoded to e.buf.
func (e *StreamEncoder) encode(samples []float32) error {
	if len(samples) == 0 {
		return nil
	}
	var err error
	switch e.out.Format {
	case FormatPCM, FormatWAV:
		n := len(e.buf)
		e.buf = slices.Grow(e.buf, 2*len(samples))[:n+2*len(samples)]
		putS16LE(e.buf[n:], samples)
	case FormatULaw, FormatALaw:
		compand := linearToULaw
		if e.out.Format == FormatALaw {
			compand = linearToALaw
		}
		n := len(e.buf)
		e.buf = slices.Grow(e.buf, len(samples))[:n+len(samples)]
		for i, x := range samples {
			e.buf[n+i] = compand(s16(x))
		}
	case FormatMP3:
		e.buf, err = e.mp3.Encode(e.buf, samples)
	case FormatOpus:
		e.buf, err = e.ogg.Encode(e.buf, samples)
	}
	if err != nil {
		return fmt.Errorf("audio: %w", err)
	}
	return nil
}

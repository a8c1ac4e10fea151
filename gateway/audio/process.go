package audio

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"
	"unsafe"

	"github.com/voxgate/voxgate/gateway/audio/internal/flac"
	"github.com/voxgate/voxgate/gateway/audio/internal/opus"
	"github.com/voxgate/voxgate/gateway/audio/internal/soxr"
)

// Limits bound what whole-clip processing may produce for one answer. The
// zero value sets no bound.
type Limits struct {
	// MaxDuration is the longest output clip.
	MaxDuration time.Duration
	// MaxBytes is the largest encoded output.
	MaxBytes int
}

// Process applies the whole-clip parameters p to a provider's clip and
// returns the new bytes and media type. It is the speech handler's one
// call: validate, decode, change tempo (Stretch), resample to the output
// rate, normalize, encode.
//
// Without any parameter (NeedsProcessing false) it returns data and
// mediaType unchanged. Without volumeDbfs and an output naming the
// source's own format, an MP3 source at the requested rate (and no bitrate
// asked for) is also returned as is, since re-encoding MP3 only loses
// quality; WAV and PCM are re-encoded, which is lossless for 16-bit mono
// and yields a canonical header. With volumeDbfs but no output the clip
// keeps its format and rate.
//
// Memory: the work runs as a chain of stages that pass a few thousand
// samples at a time (decode a window of the source where it lies, stretch,
// resample through libsoxr's streaming interface, encode into the output
// buffer, allocated once at its final size for WAV and PCM), so a clip is
// never held decoded in full, and the output is the only full-length
// buffer. The exceptions are volumeDbfs and loudness: leveling measures the whole clip,
// so the resampled clip is held as float samples while it is leveled (and
// the source is then no longer read).
//
// The output's length is known before any of that work (the source's
// length, divided by the speed, at the output rate): one longer than
// lim.MaxDuration, or an encoding larger than lim.MaxBytes (exact for WAV,
// PCM and G.711, the bitrate's estimate for MP3 and Opus), fails at once
// with an error wrapping ErrOutputTooLarge; the MP3, Opus and FLAC
// encoders (whose size depends on the audio) also stop as soon as their
// output passes MaxBytes.
//
// Resampling happens before leveling so that the limiter's ceiling holds on
// the samples that are encoded. Invalid parameters give a *ValidationError
// (errors.Is ErrInvalidParams); undecodable audio an error wrapping
// ErrUnsupportedMediaType or ErrCorrupt.
func Process(data []byte, mediaType string, p Params, lim Limits) ([]byte, string, error) {
	if !NeedsProcessing(p) {
		return data, mediaType, nil
	}
	if errs := p.Validate(); len(errs) > 0 {
		return nil, "", &ValidationError{Fields: errs}
	}
	src, err := ParseMediaType(mediaType)
	if err != nil {
		return nil, "", err
	}
	out := Output{Format: src.Format}
	if p.Output != nil {
		out = p.Output.Output()
	}
	stretch := p.Stretch != 0 && p.Stretch != 1
	if p.VolumeDbfs == nil && p.Loudness == nil && !stretch && mp3PassThrough(data, src, out) {
		return data, MediaType{Format: FormatMP3}.String(), nil
	}
	s, err := openSource(data, src)
	if err != nil {
		return nil, "", err
	}
	o, err := out.Resolve(s.rate())
	if err != nil {
		return nil, "", err
	}
	var r reader = &seqReader{src: s}
	n := s.frames()
	if stretch {
		if !(p.Stretch >= MinSpeed && p.Stretch <= MaxSpeed) {
			return nil, "", fmt.Errorf("%w: speed %g is outside %g to %g", ErrInvalidParams, p.Stretch, MinSpeed, MaxSpeed)
		}
		n = stretchedLen(n, p.Stretch)
		r = newStretchReader(s, n)
	}
	if o.SampleRate != s.rate() {
		n = soxr.OutputLen(n, s.rate(), o.SampleRate)
	}
	if err := lim.Check(n, o); err != nil {
		return nil, "", err
	}
	if o.SampleRate != s.rate() {
		rr, err := newResampleReader(r, s.rate(), o.SampleRate)
		if err != nil {
			return nil, "", err
		}
		defer rr.close()
		r = rr
	}
	if p.Loudness != nil {
		c := &Clip{Rate: o.SampleRate, Samples: make([]float32, n)}
		if _, err := readFull(r, c.Samples); err != nil {
			return nil, "", err
		}
		b, mt, rep, err := EncodeLoudness(c, p.Loudness.Target(), o, lim)
		if err == nil && p.Measured != nil {
			p.Measured(rep)
		}
		return b, mt, err
	}
	if p.VolumeDbfs != nil {
		buf := make([]float32, inPlaceSlack+n)
		c := &Clip{Rate: o.SampleRate, Samples: buf[inPlaceSlack:]}
		if _, err := readFull(r, c.Samples); err != nil {
			return nil, "", err
		}
		Normalize(c, *p.VolumeDbfs)
		if o.Format == FormatWAV || o.Format == FormatPCM {
			return encodeS16InPlace(buf, o)
		}
		r = &seqReader{src: clipSource{c}}
	}
	return encodeStream(r, n, o, lim)
}

// inPlaceSlack is the room, in float samples, that encodeS16InPlace needs
// in front of the clip: 48 bytes, more than a WAV header.
const inPlaceSlack = 12

// encodeS16InPlace encodes the leveled clip buf[inPlaceSlack:] as WAV or
// 16-bit PCM in buf's own memory, so that a leveled clip never needs its
// float samples and its encoding in memory at once.
//
// Why it is safe: sample i is read from byte 48+4i of buf and written to
// bytes h+2i and h+2i+1 (h is 44 for WAV, else 0). Those lie below
// 48+4i, so every write lands on samples already read, never on one still
// to be read; putS16LE reads sample i before it writes it. The header is
// written last, over the slack and the first samples' old bytes. The
// result keeps buf's whole array alive: for as long as the answer is
// sent, it holds twice its size, as the float clip did.
func encodeS16InPlace(buf []float32, o Output) ([]byte, string, error) {
	n := len(buf) - inPlaceSlack
	head := 0
	if o.Format == FormatWAV {
		if 2*n > math.MaxUint32-wavHeaderLen {
			return nil, "", fmt.Errorf("%w: clip of %d samples is too long for WAV", ErrInvalidParams, n)
		}
		head = wavHeaderLen
	}
	// The capacity is the array's: its float tail, read already, is the
	// room a provenance mark is inserted in (MarkRoom) without a copy.
	b := unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), 4*len(buf))[:head+2*n]
	putS16LE(b[head:], buf[inPlaceSlack:])
	if o.Format == FormatWAV {
		putWAVHeader(b, o.SampleRate, n)
		return b, MediaType{Format: FormatWAV}.String(), nil
	}
	return b, MediaType{Format: FormatPCM, Rate: o.SampleRate}.String(), nil
}

// Check refuses an output of n samples encoded as o (resolved by
// Output.Resolve) with an error wrapping ErrOutputTooLarge when it is
// longer or larger than lim allows.
func (lim Limits) Check(n int, o Output) error {
	d := time.Duration(float64(n) / float64(o.SampleRate) * float64(time.Second))
	if lim.MaxDuration > 0 && d > lim.MaxDuration {
		return fmt.Errorf("%w: the clip would be %s long; at most %s of audio is returned per request",
			ErrOutputTooLarge, d.Round(time.Second), lim.MaxDuration)
	}
	if size := encodedSize(n, o); lim.MaxBytes > 0 && size > lim.MaxBytes {
		return fmt.Errorf("%w: the clip would be %s as %s at %d Hz; at most %s are returned per request (a lower sampleRate or a compressed format makes it smaller)",
			ErrOutputTooLarge, megabytes(size), o.Format, o.SampleRate, megabytes(lim.MaxBytes))
	}
	return nil
}

// encodedSize is the size of n samples encoded as o: exact for WAV, PCM
// and G.711, the bitrate's figure for MP3 and Opus, 0 (not known ahead)
// for FLAC, whose encoder enforces the limit as it goes.
func encodedSize(n int, o Output) int {
	switch o.Format {
	case FormatWAV:
		return wavHeaderLen + 2*n
	case FormatPCM:
		return 2 * n
	case FormatULaw, FormatALaw:
		return n
	case FormatMP3, FormatOpus:
		return int(float64(n) / float64(o.SampleRate) * float64(o.Bitrate) * 125)
	}
	return 0
}

func megabytes(n int) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// mp3PassThrough reports whether an MP3 source already is the requested
// MP3 output: no bitrate asked for and the requested rate (if any) is the
// stream's.
func mp3PassThrough(data []byte, src MediaType, out Output) bool {
	if src.Format != FormatMP3 || out.Format != FormatMP3 || out.Bitrate != 0 {
		return false
	}
	if out.SampleRate == 0 {
		return true
	}
	info, err := probeMP3(data)
	return err == nil && info.first.rate == out.SampleRate
}

// resampleReader is a chain stage that converts the rate of its input
// through libsoxr's streaming interface.
type resampleReader struct {
	in  reader
	st  *soxr.Stream
	buf []float32 // input read and not yet consumed: buf[pos:]
	pos int
	eof bool
}

// chunk is the number of samples the chain stages pass at a time: 32 KB
// of float samples, large enough that per-call costs vanish and small
// enough to stay in the CPU's cache.
const chunk = 8192

func newResampleReader(in reader, from, to int) (*resampleReader, error) {
	st, err := soxr.NewStream(from, to)
	if err != nil {
		return nil, fmt.Errorf("audio: resample %d -> %d Hz: %w", from, to, err)
	}
	return &resampleReader{in: in, st: st, buf: make([]float32, 0, chunk)}, nil
}

func (r *resampleReader) close() { r.st.Close() }

func (r *resampleReader) read(dst []float32) (int, error) {
	n := 0
	for n < len(dst) {
		if r.pos == len(r.buf) && !r.eof {
			k, err := r.in.read(r.buf[:cap(r.buf)])
			r.buf, r.pos = r.buf[:k], 0
			switch {
			case errors.Is(err, io.EOF):
				r.eof = true
			case err != nil:
				return n, err
			}
			continue
		}
		if r.pos < len(r.buf) {
			c, p, err := r.st.Process(r.buf[r.pos:], dst[n:])
			if err != nil {
				return n, fmt.Errorf("audio: %w", err)
			}
			if c == 0 && p == 0 {
				return n, errors.New("audio: the resampler stopped taking input")
			}
			r.pos += c
			n += p
			continue
		}
		_, p, err := r.st.Process(nil, dst[n:])
		if err != nil {
			return n, fmt.Errorf("audio: %w", err)
		}
		if p == 0 {
			return n, io.EOF
		}
		n += p
	}
	return n, nil
}

// encodeStream encodes the n samples r yields as o (resolved), writing
// each chunk straight into the output buffer. Hot path.
func encodeStream(r reader, n int, o Output, lim Limits) ([]byte, string, error) {
	buf := make([]float32, min(chunk, max(n, 1)))
	switch o.Format {
	case FormatWAV, FormatPCM:
		head := 0
		if o.Format == FormatWAV {
			if 2*n > math.MaxUint32-wavHeaderLen {
				return nil, "", fmt.Errorf("%w: clip of %d samples is too long for WAV", ErrInvalidParams, n)
			}
			head = wavHeaderLen
		}
		b := make([]byte, head+2*n, head+2*n+MarkRoom)
		pos := 0
		for pos < n {
			k, err := r.read(buf[:min(len(buf), n-pos)])
			putS16LE(b[head+2*pos:], buf[:k])
			pos += k
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, "", err
			}
			if k == 0 {
				break // the chain ended early; cannot happen, but never loop
			}
		}
		b = b[:head+2*pos]
		if o.Format == FormatWAV {
			putWAVHeader(b, o.SampleRate, pos)
			return b, MediaType{Format: FormatWAV}.String(), nil
		}
		return b, MediaType{Format: FormatPCM, Rate: o.SampleRate}.String(), nil
	case FormatMP3:
		b, err := encodeMP3(r, buf, n, o, lim)
		return b, MediaType{Format: FormatMP3}.String(), err
	case FormatULaw, FormatALaw:
		compand := linearToULaw
		if o.Format == FormatALaw {
			compand = linearToALaw
		}
		b := make([]byte, n)
		pos := 0
		for pos < n {
			k, err := r.read(buf[:min(len(buf), n-pos)])
			for i, x := range buf[:k] {
				b[pos+i] = compand(s16(x))
			}
			pos += k
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, "", err
			}
			if k == 0 {
				break
			}
		}
		return b[:pos], MediaType{Format: o.Format, Rate: o.SampleRate}.String(), nil
	case FormatFLAC:
		b, err := encodeFLAC(r, buf, n, o, lim)
		return b, MediaType{Format: FormatFLAC}.String(), err
	case FormatOpus:
		b, err := encodeOpus(r, buf, n, o, lim)
		return b, MediaType{Format: FormatOpus}.String(), err
	}
	return nil, "", fmt.Errorf("%w: output format %q", ErrInvalidParams, o.Format)
}

// encodeFLAC encodes the n samples r yields as 16-bit mono FLAC with
// libFLAC, a chunk at a time into one buffer. FLAC's size depends on the
// audio, so MaxBytes is enforced as the stream grows.
func encodeFLAC(r reader, buf []float32, n int, o Output, lim Limits) ([]byte, error) {
	// Speech compresses to about half of 16-bit PCM; start there.
	e, data, err := flac.NewEncoder(make([]byte, 0, n+4096), n, o.SampleRate)
	if err != nil {
		return nil, fmt.Errorf("audio: %w", err)
	}
	defer e.Close()
	q := make([]int16, len(buf))
	for done := false; !done; {
		k, err := r.read(buf)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		done = err != nil || k == 0
		for i, x := range buf[:k] {
			q[i] = s16(x)
		}
		if data, err = e.Encode(data, q[:k]); err != nil {
			return nil, fmt.Errorf("audio: %w", err)
		}
		if lim.MaxBytes > 0 && len(data) > lim.MaxBytes {
			return nil, fmt.Errorf("%w: the FLAC stream passed %s; at most that is returned per request", ErrOutputTooLarge, megabytes(lim.MaxBytes))
		}
	}
	if data, err = e.Finish(data); err != nil {
		return nil, fmt.Errorf("audio: %w", err)
	}
	return data, nil
}

// encodeOpus encodes the n samples r yields (at 48 kHz) as Ogg Opus with
// libopusenc, a chunk at a time into one buffer sized by the bitrate.
func encodeOpus(r reader, buf []float32, n int, o Output, lim Limits) ([]byte, error) {
	if o.SampleRate != opus.Rate {
		return nil, fmt.Errorf("%w: opus at %d Hz", ErrInvalidParams, o.SampleRate)
	}
	e, err := opus.NewEncoder(o.Bitrate)
	if err != nil {
		return nil, fmt.Errorf("audio: %w", err)
	}
	defer e.Close()
	data := make([]byte, 0, encodedSize(n, o)+8192)
	for done := false; !done; {
		k, err := r.read(buf)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		done = err != nil || k == 0
		if data, err = e.Encode(data, buf[:k]); err != nil {
			return nil, fmt.Errorf("audio: %w", err)
		}
		if lim.MaxBytes > 0 && len(data) > lim.MaxBytes {
			return nil, fmt.Errorf("%w: the Opus stream passed %s; at most that is returned per request", ErrOutputTooLarge, megabytes(lim.MaxBytes))
		}
	}
	if data, err = e.Finish(data); err != nil {
		return nil, fmt.Errorf("audio: %w", err)
	}
	return data, nil
}

package audio

import (
	"fmt"
	"io"
)

// source is audio that whole-clip processing reads in pieces: a
// provider's PCM or WAV bytes, decoded a window at a time where they lie,
// or a clip already decoded. Reading a window never copies more than the
// window, so a long clip is never held decoded in full.
type source interface {
	// rate is the sample rate in Hz.
	rate() int
	// frames is the length in samples (mono frames).
	frames() int
	// at fills dst with samples [from, from+len(dst)); those outside
	// [0, frames) read as silence.
	at(dst []float32, from int)
}

// clipSource reads a decoded clip.
type clipSource struct{ c *Clip }

func (s clipSource) rate() int   { return s.c.Rate }
func (s clipSource) frames() int { return len(s.c.Samples) }
func (s clipSource) at(dst []float32, from int) {
	fill(dst, from, len(s.c.Samples), func(dst []float32, from int) { copy(dst, s.c.Samples[from:]) })
}

// pcmSource reads integer or float PCM frames in place: the data chunk of
// a WAV file or a raw audio/pcm or audio/L16 body. Hot path: every
// processed PCM or WAV clip is decoded through it, a window at a time.
type pcmSource struct {
	f         wavFormat
	bigEndian bool
	data      []byte // whole frames only
}

func (s *pcmSource) rate() int   { return s.f.rate }
func (s *pcmSource) frames() int { return len(s.data) / s.f.blockAlign }
func (s *pcmSource) at(dst []float32, from int) {
	fill(dst, from, s.frames(), func(dst []float32, from int) {
		pcm := s.data[from*s.f.blockAlign : (from+len(dst))*s.f.blockAlign]
		switch {
		case s.f.tag == wavePCM && s.f.bits == 16:
			s16le(dst, pcm, s.f.channels, s.f.blockAlign, s.bigEndian)
		case s.f.tag == wavePCM:
			intFrames(dst, pcm, s.f)
		default:
			floatFrames(dst, pcm, s.f)
		}
	})
}

// fill writes silence to the parts of dst outside [0, n) and calls read
// for the part inside, with dst cut to it.
func fill(dst []float32, from, n int, read func(dst []float32, from int)) {
	lo, hi := max(from, 0), min(from+len(dst), n)
	if lo >= hi {
		clear(dst)
		return
	}
	clear(dst[:lo-from])
	clear(dst[hi-from:])
	read(dst[lo-from:hi-from], lo)
}

// openSource returns data, of media type m, as a source. PCM and WAV are
// read in place; MP3 is decoded whole (it is the rare source: the gateway
// asks providers for PCM or WAV when it will process the clip, and MP3
// decodes to ten times its size at most, bounded by the provider's
// message limit).
func openSource(data []byte, m MediaType) (source, error) {
	switch m.Format {
	case FormatWAV:
		f, pcm, err := parseWAV(data)
		if err != nil {
			return nil, err
		}
		return &pcmSource{f: f, data: pcm}, nil
	case FormatPCM:
		f := wavFormat{tag: wavePCM, channels: m.Channels, rate: m.Rate, bits: 16, blockAlign: 2 * m.Channels}
		return &pcmSource{f: f, bigEndian: m.BigEndian, data: data[:len(data)-len(data)%f.blockAlign]}, nil
	case FormatMP3:
		c, err := decodeMP3(data)
		if err != nil {
			return nil, err
		}
		return clipSource{c}, nil
	case FormatULaw, FormatALaw:
		return clipSource{decodeG711(data, m)}, nil
	}
	return nil, fmt.Errorf("%w: format %q", ErrUnsupportedMediaType, m.Format)
}

// reader is one stage of a processing chain: read fills dst with the next
// samples and returns how many it wrote, fewer than len(dst) only at the
// end, where it returns io.EOF (with the last samples, or alone).
type reader interface {
	read(dst []float32) (int, error)
}

// seqReader reads a source from start to end.
type seqReader struct {
	src source
	pos int
}

func (r *seqReader) read(dst []float32) (int, error) {
	n := min(len(dst), r.src.frames()-r.pos)
	if n <= 0 {
		return 0, io.EOF
	}
	r.src.at(dst[:n], r.pos)
	r.pos += n
	if n < len(dst) {
		return n, io.EOF
	}
	return n, nil
}

// readFull reads r to its end into dst, which must have room for all of
// it; it returns the samples read.
func readFull(r reader, dst []float32) (int, error) {
	n := 0
	for n < len(dst) {
		k, err := r.read(dst[n:])
		n += k
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

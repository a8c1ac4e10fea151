package audio

import (
	"encoding/binary"
	"fmt"
	"math"
)

// WAVE format tags of the fmt chunk.
const (
	wavePCM        = 0x0001
	waveFloat      = 0x0003
	waveExtensible = 0xFFFE
)

// wavHeaderLen is the size of the canonical header Encode writes: RIFF
// descriptor (12), fmt chunk (8+16), data chunk header (8).
const wavHeaderLen = 44

// MarkRoom is the spare capacity the WAV encoders leave after a clip, so
// that the gateway can insert its provenance chunks (a few hundred bytes)
// in the clip's own buffer rather than copy a clip that may be 100 MB.
const MarkRoom = 4 << 10

// wavFormat is what the fmt chunk says about the samples.
type wavFormat struct {
	tag        int // wavePCM or waveFloat (an extensible file's sub-format)
	channels   int
	rate       int
	bits       int // container bits per sample
	blockAlign int // bytes per frame (all channels)
}

// parseWAV walks the RIFF chunks and returns the format and the data
// chunk's bytes. It is lenient where providers are sloppy: a data chunk
// whose size is 0 or 0xFFFFFFFF (written before the length was known) or
// that runs past the end of the buffer is taken to extend to the end, and
// an incomplete trailing frame is dropped.
func parseWAV(data []byte) (wavFormat, []byte, error) {
	var f wavFormat
	if len(data) < 12 || string(data[0:4]) != "RIFF" || string(data[8:12]) != "WAVE" {
		return f, nil, fmt.Errorf("%w: not a RIFF/WAVE file", ErrCorrupt)
	}
	var (
		haveFmt bool
		pcm     []byte
		havePCM bool
	)
	for p := 12; p+8 <= len(data) && !havePCM; {
		id := string(data[p : p+4])
		size := int(binary.LittleEndian.Uint32(data[p+4 : p+8]))
		body := p + 8
		end := body + size
		if end > len(data) || end < body {
			if id != "data" {
				return f, nil, fmt.Errorf("%w: chunk %q runs past the end of the file", ErrCorrupt, id)
			}
			end = len(data)
		}
		switch id {
		case "fmt ":
			var err error
			if f, err = parseFmt(data[body:end]); err != nil {
				return f, nil, err
			}
			haveFmt = true
		case "data":
			if size == 0 && end == body {
				end = len(data) // a streamed header never patched
			}
			pcm = data[body:end]
			havePCM = true
		}
		p = end + size&1 // chunks are padded to an even size
	}
	if !haveFmt {
		return f, nil, fmt.Errorf("%w: no fmt chunk before the data", ErrCorrupt)
	}
	if !havePCM {
		return f, nil, fmt.Errorf("%w: no data chunk", ErrCorrupt)
	}
	pcm = pcm[:len(pcm)-len(pcm)%f.blockAlign]
	return f, pcm, nil
}

// parseFmt reads a fmt chunk, accepting integer PCM of 8, 16, 24 or 32 bits
// and IEEE float of 32 or 64 bits, plain or WAVE_FORMAT_EXTENSIBLE.
func parseFmt(b []byte) (wavFormat, error) {
	var f wavFormat
	if len(b) < 16 {
		return f, fmt.Errorf("%w: fmt chunk of %d bytes", ErrCorrupt, len(b))
	}
	f.tag = int(binary.LittleEndian.Uint16(b[0:2]))
	f.channels = int(binary.LittleEndian.Uint16(b[2:4]))
	f.rate = int(binary.LittleEndian.Uint32(b[4:8]))
	f.blockAlign = int(binary.LittleEndian.Uint16(b[12:14]))
	f.bits = int(binary.LittleEndian.Uint16(b[14:16]))
	if f.tag == waveExtensible {
		// cbSize(2) validBits(2) channelMask(4), then the sub-format GUID
		// whose first two bytes are the plain format tag.
		if len(b) < 40 {
			return f, fmt.Errorf("%w: extensible fmt chunk of %d bytes", ErrCorrupt, len(b))
		}
		f.tag = int(binary.LittleEndian.Uint16(b[24:26]))
	}
	if f.channels < 1 || f.rate < 1 || f.rate > maxRate {
		return f, fmt.Errorf("%w: %d channels at %d Hz", ErrCorrupt, f.channels, f.rate)
	}
	switch {
	case f.tag == wavePCM && (f.bits == 8 || f.bits == 16 || f.bits == 24 || f.bits == 32):
	case f.tag == waveFloat && (f.bits == 32 || f.bits == 64):
	default:
		return f, fmt.Errorf("%w: WAV format 0x%04x with %d bits per sample", ErrUnsupportedMediaType, f.tag, f.bits)
	}
	if min := f.channels * f.bits / 8; f.blockAlign < min {
		f.blockAlign = min // some writers leave it 0; frames are at least this
	}
	return f, nil
}

// decodeWAV decodes a RIFF/WAVE file to a mono clip, averaging channels.
func decodeWAV(data []byte) (*Clip, error) {
	f, pcm, err := parseWAV(data)
	if err != nil {
		return nil, err
	}
	frames := len(pcm) / f.blockAlign
	out := make([]float32, frames)
	switch {
	case f.tag == wavePCM && f.bits == 16:
		s16le(out, pcm, f.channels, f.blockAlign, false)
	case f.tag == wavePCM:
		intFrames(out, pcm, f)
	default:
		floatFrames(out, pcm, f)
	}
	return &Clip{Rate: f.rate, Samples: out}, nil
}

// s16le decodes 16-bit PCM frames of the given size (little- or big-endian)
// into out, averaging the channels. Hot path: the common provider format,
// one pass, no allocation.
func s16le(out []float32, pcm []byte, channels, frameSize int, bigEndian bool) {
	const scale = 1.0 / 32768
	if channels == 1 && frameSize == 2 {
		if bigEndian {
			for i := range out {
				out[i] = float32(int16(binary.BigEndian.Uint16(pcm[2*i:]))) * scale
			}
			return
		}
		for i := range out {
			out[i] = float32(int16(binary.LittleEndian.Uint16(pcm[2*i:]))) * scale
		}
		return
	}
	mix := scale / float32(channels)
	for i := range out {
		frame := pcm[i*frameSize:]
		var sum int32
		for c := range channels {
			if bigEndian {
				sum += int32(int16(binary.BigEndian.Uint16(frame[2*c:])))
			} else {
				sum += int32(int16(binary.LittleEndian.Uint16(frame[2*c:])))
			}
		}
		out[i] = float32(sum) * mix
	}
}

// intFrames decodes 8-, 24- and 32-bit integer PCM frames (8-bit WAV is
// unsigned, the others signed little-endian), averaging the channels.
func intFrames(out []float32, pcm []byte, f wavFormat) {
	bytes := f.bits / 8
	scale := 1 / (math.Exp2(float64(f.bits-1)) * float64(f.channels))
	for i := range out {
		frame := pcm[i*f.blockAlign:]
		var sum int64
		for c := range f.channels {
			s := frame[c*bytes:]
			switch bytes {
			case 1:
				sum += int64(s[0]) - 128
			case 3:
				sum += int64(int32(uint32(s[0])<<8|uint32(s[1])<<16|uint32(s[2])<<24) >> 8)
			case 4:
				sum += int64(int32(binary.LittleEndian.Uint32(s)))
			}
		}
		out[i] = float32(float64(sum) * scale)
	}
}

// floatFrames decodes 32- and 64-bit IEEE float frames, averaging the
// channels. NaN and infinite samples (never valid audio) become 0 so they
// cannot poison the level measurement.
func floatFrames(out []float32, pcm []byte, f wavFormat) {
	bytes := f.bits / 8
	inv := 1 / float64(f.channels)
	for i := range out {
		frame := pcm[i*f.blockAlign:]
		var sum float64
		for c := range f.channels {
			var v float64
			if bytes == 4 {
				v = float64(math.Float32frombits(binary.LittleEndian.Uint32(frame[4*c:])))
			} else {
				v = math.Float64frombits(binary.LittleEndian.Uint64(frame[8*c:]))
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				v = 0
			}
			sum += v
		}
		out[i] = float32(sum * inv)
	}
}

// putWAVHeader writes the canonical 44-byte header of n samples of
// 16-bit PCM mono at rate Hz to b[:44].
func putWAVHeader(b []byte, rate, n int) {
	dataLen := 2 * n
	copy(b[0:4], "RIFF")
	binary.LittleEndian.PutUint32(b[4:8], uint32(wavHeaderLen-8+dataLen))
	copy(b[8:12], "WAVE")
	copy(b[12:16], "fmt ")
	binary.LittleEndian.PutUint32(b[16:20], 16)
	binary.LittleEndian.PutUint16(b[20:22], wavePCM)
	binary.LittleEndian.PutUint16(b[22:24], 1)              // channels
	binary.LittleEndian.PutUint32(b[24:28], uint32(rate))   // sample rate
	binary.LittleEndian.PutUint32(b[28:32], uint32(2*rate)) // byte rate
	binary.LittleEndian.PutUint16(b[32:34], 2)              // block align
	binary.LittleEndian.PutUint16(b[34:36], 16)             // bits per sample
	copy(b[36:40], "data")
	binary.LittleEndian.PutUint32(b[40:44], uint32(dataLen))
}

// putS16LE quantises samples to 16-bit little-endian PCM in dst, rounding
// to nearest and saturating at full scale. Hot path: every WAV and PCM
// output goes through it.
//
// No dither on purpose: speech leveled to -60..0 dBFS sits far above 16-bit
// quantisation noise (-98 dBFS), and dither would turn digital silence into
// noise, which the gateway promises not to do.
func putS16LE(dst []byte, samples []float32) {
	if len(samples) == 0 {
		return
	}
	_ = dst[2*len(samples)-1] // one bounds check for the loop
	for i, x := range samples {
		binary.LittleEndian.PutUint16(dst[2*i:], uint16(s16(x)))
	}
}

// s16 quantises a sample to 16 bits, rounding to nearest and saturating
// at full scale: the one quantiser of every 16-bit output (WAV, PCM, FLAC,
// and G.711 before companding).
func s16(x float32) int16 {
	v := x * 32768
	if v >= 0 {
		v += 0.5
	} else {
		v -= 0.5
	}
	switch {
	case v >= 32767:
		return 32767
	case v <= -32768:
		return -32768
	}
	return int16(v) // truncation toward zero after ±0.5 = round half away
}

// WrapPCM returns a clip of raw 16-bit little-endian mono PCM (mediaType
// audio/pcm;rate=N) as a WAV file: the same samples behind the canonical
// header, in a new buffer, and the WAV media type. It is how a clip a
// provider gives only as headerless PCM becomes one that players and
// clients can read, without decoding it. Other PCM layouts (big-endian,
// several channels) are ErrUnsupportedMediaType: they need Encode.
func WrapPCM(pcm []byte, mediaType string) ([]byte, string, error) {
	mt, err := ParseMediaType(mediaType)
	if err != nil {
		return nil, "", err
	}
	if mt.Format != FormatPCM || mt.BigEndian || mt.Channels > 1 || mt.Rate <= 0 {
		return nil, "", fmt.Errorf("%w: %s is not mono little-endian PCM with a rate", ErrUnsupportedMediaType, mediaType)
	}
	n := len(pcm) / 2 // a trailing odd byte is no sample
	b := make([]byte, wavHeaderLen+2*n, wavHeaderLen+2*n+MarkRoom)
	putWAVHeader(b, mt.Rate, n)
	copy(b[wavHeaderLen:], pcm[:2*n])
	return b, MediaType{Format: FormatWAV}.String(), nil
}

package audio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/voxgate/voxgate/gateway/audio/internal/lame"
	"github.com/voxgate/voxgate/gateway/audio/internal/mpg123"
)

// DefaultMP3Bitrate is the MP3 bitrate in kbps when the request names none.
// Rates of 8 to 12 kHz (MPEG-2.5) top out at 64 kbps, which is then used.
const DefaultMP3Bitrate = 96

// mp3Quality is LAME's algorithm quality (0 best and slowest .. 9 worst).
// 5 is LAME's "good quality, fast" setting: for speech at 96 kbps it is
// indistinguishable from the default 3 and about twice as fast, which
// matters on a gateway encoding every request on two cores.
const mp3Quality = 5

// mpegDecoderDelay is the delay in samples of the standard MPEG audio
// synthesis filterbank (528 + 1), which the LAME tag's encoder delay does
// not include; every gapless decoder adds it.
const mpegDecoderDelay = 529

// MP3 sample rates (Hz) by MPEG version, and the Layer III bitrates (kbps)
// LAME encodes at each. MPEG-2.5 is a Fraunhofer extension whose bitrates
// LAME caps at 64 kbps.
var (
	mp3Rates = []int{8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000}

	mpeg1Bitrates  = []int{32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320}
	mpeg2Bitrates  = []int{8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160}
	mpeg25Bitrates = []int{8, 16, 24, 32, 40, 48, 56, 64}
)

// MP3SampleRates returns the sample rates MP3 output supports, ascending.
func MP3SampleRates() []int { return slices.Clone(mp3Rates) }

// MP3Bitrates returns the bitrates (kbps) MP3 output supports at the given
// sample rate, ascending; nil if the rate is not an MP3 rate.
func MP3Bitrates(rate int) []int {
	return slices.Clone(mp3BitratesAt(rate))
}

func mp3BitratesAt(rate int) []int {
	switch rate {
	case 32000, 44100, 48000:
		return mpeg1Bitrates
	case 16000, 22050, 24000:
		return mpeg2Bitrates
	case 8000, 11025, 12000:
		return mpeg25Bitrates
	}
	return nil
}

// mp3Header is the part of an MPEG audio frame header this package reads.
type mp3Header struct {
	version int // 1, 2, or 25 for MPEG-2.5
	rate    int // Hz
	kbps    int
	mono    bool
	crc     bool
	size    int // frame length in bytes
	samples int // samples per frame: 1152 (MPEG-1) or 576
}

var (
	bitrateIndexMPEG1 = [16]int{0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 0}
	bitrateIndexMPEG2 = [16]int{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160, 0}
	rateIndex         = [3]int{44100, 48000, 32000}
)

// parseMP3Header reads a Layer III frame header at b[0:4].
func parseMP3Header(b []byte) (mp3Header, bool) {
	if len(b) < 4 || b[0] != 0xFF || b[1]&0xE0 != 0xE0 {
		return mp3Header{}, false
	}
	var h mp3Header
	switch (b[1] >> 3) & 3 {
	case 3:
		h.version = 1
	case 2:
		h.version = 2
	case 0:
		h.version = 25
	default:
		return h, false
	}
	if (b[1]>>1)&3 != 1 { // Layer III
		return h, false
	}
	h.crc = b[1]&1 == 0
	bi, ri := b[2]>>4, (b[2]>>2)&3
	if ri == 3 {
		return h, false
	}
	h.rate = rateIndex[ri]
	if h.version == 1 {
		h.kbps = bitrateIndexMPEG1[bi]
		h.samples = 1152
	} else {
		h.kbps = bitrateIndexMPEG2[bi]
		h.samples = 576
		h.rate /= 2
		if h.version == 25 {
			h.rate /= 2
		}
	}
	if h.kbps == 0 { // free format or invalid
		return h, false
	}
	h.mono = b[3]>>6 == 3
	h.size = h.samples/8*h.kbps*1000/h.rate + int(b[2]>>1&1)
	return h, true
}

// mp3Stream describes the first frame of an MP3 stream and its gapless
// information.
type mp3Stream struct {
	first mp3Header
	// tag is set when the first frame is a Xing/Info tag frame, which
	// carries no audio but decodes to a frame of silence.
	tag bool
	// delay and padding are the encoder delay and padding from a LAME (or
	// FFmpeg "Lavc"/"Lavf") tag, -1 when absent.
	delay, padding int
}

// skipID3v2 returns the offset just past a leading ID3v2 tag, if any.
func skipID3v2(data []byte) int {
	if len(data) < 10 || string(data[0:3]) != "ID3" {
		return 0
	}
	size := int(data[6]&0x7F)<<21 | int(data[7]&0x7F)<<14 | int(data[8]&0x7F)<<7 | int(data[9]&0x7F)
	n := 10 + size
	if data[5]&0x10 != 0 { // footer present
		n += 10
	}
	return min(n, len(data))
}

// probeMP3 finds the first frame (after an ID3v2 tag, within the first
// 64 KiB, confirmed by the frame that follows it) and reads a Xing/Info
// and LAME tag from it.
func probeMP3(data []byte) (mp3Stream, error) {
	s := mp3Stream{delay: -1, padding: -1}
	start := skipID3v2(data)
	limit := min(len(data), start+64<<10)
	for p := start; p+4 <= limit; p++ {
		h, ok := parseMP3Header(data[p:])
		if !ok {
			continue
		}
		if next := p + h.size; next+4 <= len(data) {
			if _, ok := parseMP3Header(data[next:]); !ok {
				continue // a false sync inside other data
			}
		}
		s.first = h
		readXing(&s, data[p:min(p+h.size, len(data))])
		return s, nil
	}
	return s, fmt.Errorf("%w: no MP3 frame found", ErrCorrupt)
}

// readXing looks for a Xing/Info tag in the frame and the LAME extension
// after it, whose bytes 21-23 hold the encoder delay and padding as two
// 12-bit numbers.
func readXing(s *mp3Stream, frame []byte) {
	p := 4 + sideInfoLen(s.first)
	if s.first.crc {
		p += 2
	}
	if p+8 > len(frame) {
		return
	}
	if id := string(frame[p : p+4]); id != "Xing" && id != "Info" {
		return
	}
	s.tag = true
	flags := binary.BigEndian.Uint32(frame[p+4:])
	p += 8
	for _, f := range []struct {
		bit uint32
		n   int
	}{{1, 4}, {2, 4}, {4, 100}, {8, 4}} { // frames, bytes, TOC, quality
		if flags&f.bit != 0 {
			p += f.n
		}
	}
	if p+24 > len(frame) {
		return
	}
	switch string(frame[p : p+4]) {
	case "LAME", "Lavf", "Lavc":
	default:
		return
	}
	d := frame[p+21 : p+24]
	s.delay = int(d[0])<<4 | int(d[1])>>4
	s.padding = int(d[1]&0x0F)<<8 | int(d[2])
}

// decodeMP3 decodes an MP3 stream to a mono clip with libmpg123 (see
// internal/mpg123 for why not a pure-Go decoder), the channels averaged,
// and trimmed to the encoded audio when a LAME/Info tag gives the encoder
// delay and padding (libmpg123's gapless decoding), so that a clip encoded
// by Encode decodes to its original length. Every MPEG version's rates
// decode, MPEG-2.5's 8 to 12 kHz included.
func decodeMP3(data []byte) (*Clip, error) {
	info, err := probeMP3(data)
	if err != nil {
		return nil, err
	}
	// The output's length, from the first frame's (a CBR stream's frames
	// are all alike; a VBR one's first, its tag, is the smallest).
	hint := 0
	if f := info.first; f.size > 0 {
		hint = (len(data)/f.size + 1) * f.samples
	}
	samples, rate, err := mpg123.DecodeMono(data, min(hint, len(data)*12))
	if err != nil {
		return nil, fmt.Errorf("%w: mp3: %v", ErrCorrupt, err)
	}
	return &Clip{Rate: rate, Samples: samples}, nil
}

// encodeMP3 encodes the n samples r yields as CBR MP3 with LAME, a chunk
// at a time into one buffer sized by the bitrate. The rate and bitrate of
// o must be a valid MP3 combination (Resolve sees to it). Past
// lim.MaxBytes it stops with ErrOutputTooLarge.
func encodeMP3(r reader, buf []float32, n int, o Output, lim Limits) ([]byte, error) {
	if !slices.Contains(mp3BitratesAt(o.SampleRate), o.Bitrate) {
		return nil, fmt.Errorf("%w: MP3 cannot encode %d kbps at %d Hz", ErrInvalidParams, o.Bitrate, o.SampleRate)
	}
	e, err := lame.NewEncoder(n, o.SampleRate, o.Bitrate, mp3Quality)
	if err != nil {
		return nil, fmt.Errorf("audio: %w", err)
	}
	defer e.Close()
	data := make([]byte, 0, e.SizeHint())
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
			return nil, fmt.Errorf("%w: the MP3 passed %s; at most that is returned per request", ErrOutputTooLarge, megabytes(lim.MaxBytes))
		}
	}
	if data, err = e.Finish(data); err != nil {
		return nil, fmt.Errorf("audio: %w", err)
	}
	if s, err := probeMP3(data); err == nil && !s.tag {
		data = withInfoFrame(data, s.first, e.Delay(), e.Padding())
	}
	return data, nil
}

// infoTagLen is the length of the Info frame content withInfoFrame writes
// after the header and side information: "Info", flags, frame and byte
// counts (no seek table, pointless for CBR), and the 36-byte LAME extension.
const infoTagLen = 4 + 4 + 4 + 4 + 36

// withInfoFrame puts an Info tag frame carrying the encoder delay and
// padding in front of a LAME stream that has none. LAME leaves the tag out
// at low bitrates (e.g. 32 kbps at 24 kHz) because its own tag, with a
// 100-byte seek table, does not fit in such a frame; without it, decoders
// cannot trim the ~1100 samples of delay and padding, which at low rates
// is more than 50 ms. Ours omits the seek table, so it fits in the stream's
// own frame size at all but the lowest bitrates, where the tag frame takes
// the smallest bitrate that holds it (bitrate may change per frame in MPEG
// audio). Decoders read it as FFmpeg and LAME do; the tag's own CRC is left
// zero, so strict readers that check it simply ignore the tag.
func withInfoFrame(stream []byte, first mp3Header, delay, padding int) []byte {
	side := sideInfoLen(first)
	table := bitrateIndexMPEG1[:]
	if first.version != 1 {
		table = bitrateIndexMPEG2[:]
	}
	idx, size := 0, 0
	for i, kbps := range table {
		size = first.samples / 8 * kbps * 1000 / first.rate
		if kbps >= first.kbps && size >= 4+side+infoTagLen {
			idx = i
			break
		}
	}
	if idx == 0 {
		return stream // cannot happen for Layer III rates; play it safe
	}
	frames := 0
	for p := 0; p+4 <= len(stream); frames++ {
		h, ok := parseMP3Header(stream[p:])
		if !ok {
			break
		}
		p += h.size
	}
	f := make([]byte, size, size+len(stream))
	// Header: the stream's version, layer, rate and mode; no CRC, no
	// padding, the chosen bitrate.
	f[0], f[1] = 0xFF, stream[1]|1
	f[2] = byte(idx)<<4 | stream[2]&0x0C
	f[3] = stream[3]
	p := 4 + side // side information stays zero: an empty granule
	copy(f[p:], "Info")
	binary.BigEndian.PutUint32(f[p+4:], 0x3) // frame and byte counts present
	binary.BigEndian.PutUint32(f[p+8:], uint32(frames))
	binary.BigEndian.PutUint32(f[p+12:], uint32(size+len(stream)))
	ext := f[p+16:]
	copy(ext, "LAME3.100")
	ext[9] = 0x01 // tag revision 0, CBR
	ext[20] = byte(min(first.kbps, 255))
	ext[21] = byte(delay >> 4)
	ext[22] = byte(delay&0x0F)<<4 | byte(padding>>8&0x0F)
	ext[23] = byte(padding)
	binary.BigEndian.PutUint32(ext[28:], uint32(size+len(stream)))
	return append(f, stream...)
}

// sideInfoLen is the length of a Layer III frame's side information.
func sideInfoLen(h mp3Header) int {
	switch {
	case h.version == 1 && h.mono:
		return 17
	case h.version == 1:
		return 32
	case h.mono:
		return 9
	}
	return 17
}

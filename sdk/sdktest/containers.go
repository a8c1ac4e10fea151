package sdktest

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/voxgate/voxgate/sdk"
)

// The kit reads the containers of compressed formats a provider may send
// natively (Ogg Opus, FLAC, AAC in ADTS) far enough to check that they are
// what their media type says, how long they last and at what rate. It
// does not decode the audio: that would take a codec library in every
// plugin author's test build, and a provider's own encoder is trusted to
// encode; what the kit catches is the wrong container, a truncated file
// or a made-up header. Hand-written for the same reason as decodeWAV.

// decodeOggOpus walks the Ogg pages (RFC 3533) of an Opus stream (RFC
// 7845): the first packet must be OpusHead, and the duration is the last
// page's granule position less the pre-skip, at 48 kHz, the rate Opus
// always decodes at.
func decodeOggOpus(data []byte) (Clip, error) {
	var (
		pages    int
		granule  int64
		preSkip  int
		channels int
	)
	for rest := data; len(rest) > 0; pages++ {
		if len(rest) < 27 || string(rest[0:4]) != "OggS" {
			return Clip{}, fmt.Errorf("ogg: page %d has no capture pattern", pages)
		}
		nseg := int(rest[26])
		if len(rest) < 27+nseg {
			return Clip{}, fmt.Errorf("ogg: page %d is truncated", pages)
		}
		size := 0
		for _, l := range rest[27 : 27+nseg] {
			size += int(l)
		}
		body := rest[27+nseg:]
		if len(body) < size {
			return Clip{}, fmt.Errorf("ogg: page %d claims %d bytes, %d left", pages, size, len(body))
		}
		if pages == 0 {
			if size < 19 || string(body[0:8]) != "OpusHead" {
				return Clip{}, errors.New("ogg: the first packet is not OpusHead")
			}
			channels = int(body[9])
			preSkip = int(binary.LittleEndian.Uint16(body[10:12]))
		}
		if g := int64(binary.LittleEndian.Uint64(rest[6:14])); g != -1 {
			granule = g
		}
		rest = body[size:]
	}
	if pages < 3 {
		return Clip{}, fmt.Errorf("ogg: %d pages; an Opus stream has OpusHead, OpusTags and audio", pages)
	}
	frames := int(granule) - preSkip
	if frames <= 0 || channels <= 0 {
		return Clip{}, fmt.Errorf("ogg: no audio (granule %d, pre-skip %d, channels %d)", granule, preSkip, channels)
	}
	return newClip(sdk.FormatOpus, 48000, channels, frames), nil
}

// decodeFLAC reads the STREAMINFO block that starts every FLAC file (RFC
// 9639): rate, channels and the total number of samples.
func decodeFLAC(data []byte) (Clip, error) {
	if len(data) < 8+34 || string(data[0:4]) != "fLaC" || data[4]&0x7f != 0 {
		return Clip{}, errors.New("flac: no fLaC marker and STREAMINFO block")
	}
	info := data[8 : 8+34]
	rate := int(info[10])<<12 | int(info[11])<<4 | int(info[12])>>4
	channels := int(info[12]>>1&0x7) + 1
	total := int64(info[13]&0x0f)<<32 | int64(binary.BigEndian.Uint32(info[14:18]))
	if rate <= 0 {
		return Clip{}, errors.New("flac: STREAMINFO has no sample rate")
	}
	if total == 0 {
		// A streamed FLAC may not know its length; it must still carry
		// frames after the metadata.
		if len(data) <= 8+34 {
			return Clip{}, errors.New("flac: no frames")
		}
		return Clip{}, errors.New("flac: STREAMINFO does not give the number of samples")
	}
	return newClip(sdk.FormatFLAC, rate, channels, int(total)), nil
}

// adtsRates are the sampling frequencies of ADTS's 4-bit index.
var adtsRates = [...]int{96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350}

// decodeADTS walks the ADTS frames of an AAC stream (ISO/IEC 13818-7):
// each has a sync word, a rate index and its length, and carries 1,024
// samples per raw block.
func decodeADTS(data []byte) (Clip, error) {
	var rate, channels, frames int
	for rest, n := data, 0; len(rest) > 0; n++ {
		if len(rest) < 7 || rest[0] != 0xff || rest[1]&0xf6 != 0xf0 {
			// An ID3 tag may lead the stream.
			if n == 0 && len(rest) >= 10 && string(rest[0:3]) == "ID3" {
				size := int(rest[6])<<21 | int(rest[7])<<14 | int(rest[8])<<7 | int(rest[9])
				if 10+size > len(rest) {
					return Clip{}, errors.New("aac: truncated ID3 tag")
				}
				rest, n = rest[10+size:], -1
				continue
			}
			return Clip{}, fmt.Errorf("aac: frame %d has no ADTS sync word", n)
		}
		idx := int(rest[2] >> 2 & 0xf)
		if idx >= len(adtsRates) {
			return Clip{}, fmt.Errorf("aac: frame %d: sampling index %d", n, idx)
		}
		rate = adtsRates[idx]
		channels = int(rest[2]&1)<<2 | int(rest[3]>>6)
		length := int(rest[3]&3)<<11 | int(rest[4])<<3 | int(rest[5]>>5)
		if length < 7 || length > len(rest) {
			return Clip{}, fmt.Errorf("aac: frame %d claims %d bytes, %d left", n, length, len(rest))
		}
		frames += 1024 * (int(rest[6]&3) + 1)
		rest = rest[length:]
	}
	if frames == 0 {
		return Clip{}, errors.New("aac: no frames")
	}
	return newClip(sdk.FormatAAC, rate, max(channels, 1), frames), nil
}

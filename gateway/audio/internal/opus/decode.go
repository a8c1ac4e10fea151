package opus

/*
#cgo pkg-config: opus
#include <opus/opus.h>
*/
import "C"

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"
)

// maxFrame is the most samples one Opus packet decodes to at 48 kHz
// (120 ms).
const maxFrame = 5760

// Decode decodes a mono Ogg Opus stream, such as Encoder writes, to 48 kHz
// float samples, with the header's pre-skip dropped. It reads the Ogg
// pages itself (a few lines: the stream is one logical bitstream) and
// hands each packet to libopus's decoder, so no Ogg or opusfile library
// is needed. The gateway uses it to measure what a listener hears of its
// own Opus answers (the loudness field); it is not a general Ogg reader.
func Decode(data []byte) ([]float32, error) {
	var (
		packets [][]byte
		partial []byte
	)
	for len(data) > 0 {
		if len(data) < 27 || !bytes.Equal(data[:4], []byte("OggS")) {
			return nil, errors.New("opus: not an Ogg page")
		}
		nseg := int(data[26])
		if len(data) < 27+nseg {
			return nil, errors.New("opus: truncated Ogg page")
		}
		lacing := data[27 : 27+nseg]
		body := data[27+nseg:]
		for _, l := range lacing {
			if len(body) < int(l) {
				return nil, errors.New("opus: truncated Ogg page")
			}
			partial = append(partial, body[:l]...)
			body = body[l:]
			if l < 255 {
				packets = append(packets, partial)
				partial = nil
			}
		}
		data = body
	}
	if len(packets) < 2 || !bytes.HasPrefix(packets[0], []byte("OpusHead")) || len(packets[0]) < 19 {
		return nil, errors.New("opus: no OpusHead")
	}
	preSkip := int(binary.LittleEndian.Uint16(packets[0][10:]))
	var cerr C.int
	dec := C.opus_decoder_create(Rate, 1, &cerr)
	if dec == nil || cerr != C.OPUS_OK {
		return nil, fmt.Errorf("opus: decoder: error %d", int(cerr))
	}
	defer C.opus_decoder_destroy(dec)
	out := make([]float32, 0, len(packets)*960)
	frame := make([]float32, maxFrame)
	for _, p := range packets[2:] { // after OpusHead and OpusTags
		if len(p) == 0 {
			continue
		}
		// p and frame are read and written during the call only.
		n := C.opus_decode_float(dec, (*C.uchar)(unsafe.Pointer(&p[0])), C.opus_int32(len(p)),
			(*C.float)(unsafe.Pointer(&frame[0])), maxFrame, 0)
		if n < 0 {
			return nil, fmt.Errorf("opus: decode: error %d", int(n))
		}
		out = append(out, frame[:n]...)
	}
	if preSkip < len(out) {
		out = out[preSkip:]
	}
	return out, nil
}

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
	"io"
	"unsafe"
)

// DecodeStream decodes a mono Ogg Opus stream, such as Encoder writes,
// read from r a page at a time, handing fn the 48 kHz samples of each
// page (pre-skip dropped; the slice is reused after fn returns). It is
// Decode for a file too long to hold: the gateway measures a long-form
// job's encoded file with it (one page's samples in memory at a time).
func DecodeStream(r io.Reader, fn func([]float32) error) error {
	var (
		hdr     [27 + 255]byte
		body    []byte
		partial []byte
		out     []float32
		frame   = make([]float32, maxFrame)
		packets int
		skip    int
		dec     *C.OpusDecoder
	)
	defer func() {
		if dec != nil {
			C.opus_decoder_destroy(dec)
		}
	}()
	packet := func(p []byte) error {
		packets++
		switch packets {
		case 1:
			if !bytes.HasPrefix(p, []byte("OpusHead")) || len(p) < 19 {
				return errors.New("opus: no OpusHead")
			}
			skip = int(binary.LittleEndian.Uint16(p[10:]))
			var cerr C.int
			dec = C.opus_decoder_create(Rate, 1, &cerr)
			if dec == nil || cerr != C.OPUS_OK {
				dec = nil
				return fmt.Errorf("opus: decoder: error %d", int(cerr))
			}
			return nil
		case 2:
			return nil // OpusTags
		}
		if len(p) == 0 {
			return nil
		}
		// p and frame are read and written during the call only.
		n := C.opus_decode_float(dec, (*C.uchar)(unsafe.Pointer(&p[0])), C.opus_int32(len(p)),
			(*C.float)(unsafe.Pointer(&frame[0])), maxFrame, 0)
		if n < 0 {
			return fmt.Errorf("opus: decode: error %d", int(n))
		}
		s := frame[:n]
		if skip > 0 {
			k := min(skip, len(s))
			s, skip = s[k:], skip-k
		}
		out = append(out, s...)
		return nil
	}
	for {
		if _, err := io.ReadFull(r, hdr[:27]); err != nil {
			if errors.Is(err, io.EOF) && packets > 0 {
				break
			}
			return fmt.Errorf("opus: read an Ogg page: %w", err)
		}
		if !bytes.Equal(hdr[:4], []byte("OggS")) {
			return errors.New("opus: not an Ogg page")
		}
		nseg := int(hdr[26])
		lacing := hdr[27 : 27+nseg]
		if _, err := io.ReadFull(r, lacing); err != nil {
			return fmt.Errorf("opus: truncated Ogg page: %w", err)
		}
		size := 0
		for _, l := range lacing {
			size += int(l)
		}
		if cap(body) < size {
			body = make([]byte, size)
		}
		body = body[:size]
		if _, err := io.ReadFull(r, body); err != nil {
			return fmt.Errorf("opus: truncated Ogg page: %w", err)
		}
		out = out[:0]
		for _, l := range lacing {
			partial = append(partial, body[:l]...)
			body = body[l:]
			if l < 255 {
				if err := packet(partial); err != nil {
					return err
				}
				partial = partial[:0]
			}
		}
		if len(out) > 0 {
			if err := fn(out); err != nil {
				return err
			}
		}
	}
	if packets < 2 {
		return errors.New("opus: no OpusHead")
	}
	return nil
}

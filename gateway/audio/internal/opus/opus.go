// Package opus is a minimal cgo binding to libopusenc, Xiph's reference
// writer of Ogg Opus files (RFC 7845) on top of libopus, for encoding mono
// float32 audio at 48 kHz a chunk at a time.
//
// Why libopusenc and not libopus with our own Ogg muxing: the Ogg Opus
// file format (ID and comment headers, granule positions that carry the
// pre-skip and the exact end trim, page flushing) is what libopusenc is
// for, and it is maintained with libopus by the same project. Its pull
// interface (ope_encoder_get_page) hands out finished pages, so no C
// callback into Go is needed: the caller copies each page into its own
// output buffer.
//
// Build needs libopusenc-dev and libopus-dev; run time needs libopusenc0 and
// libopus0.
package opus

/*
#cgo pkg-config: libopusenc
#include <stdlib.h>
#include <opus/opusenc.h>

// voxgate_ope_open makes a pull encoder of mono audio at 48 kHz, tuned for
// speech at kbps, with the comments c (destroyed here: the encoder keeps
// its own copy), or returns NULL with *err set.
static OggOpusEnc *voxgate_ope_open(OggOpusComments *c, int kbps, int *err) {
	if (c == NULL) {
		*err = OPE_ALLOC_FAIL;
		return NULL;
	}
	OggOpusEnc *enc = ope_encoder_create_pull(c, 48000, 1, 0, err);
	ope_comments_destroy(c);
	if (enc == NULL) {
		return NULL;
	}
	int e = ope_encoder_ctl(enc, OPUS_SET_BITRATE(kbps * 1000));
	if (e == OPE_OK) {
		e = ope_encoder_ctl(enc, OPUS_SET_SIGNAL(OPUS_SIGNAL_VOICE));
	}
	if (e != OPE_OK) {
		ope_encoder_destroy(enc);
		*err = e;
		return NULL;
	}
	return enc;
}

// voxgate_ope_live makes enc encode each 20 ms frame as soon as it has
// its samples (no decision delay, which libopusenc sets to 2 s by
// default) and end an Ogg page once it holds muxing samples at 48 kHz
// (default 1 s), so that a live stream's pages leave as they are made.
static int voxgate_ope_live(OggOpusEnc *enc, int muxing) {
	int e = ope_encoder_ctl(enc, OPE_SET_DECISION_DELAY(0));
	if (e == OPE_OK) {
		e = ope_encoder_ctl(enc, OPE_SET_MUXING_DELAY(muxing));
	}
	return e;
}

// voxgate_ope_page returns the next finished page (flushing a partial one
// when flush is set) in *page and its length, or 0 when there is none.
static int voxgate_ope_page(OggOpusEnc *enc, unsigned char **page, int flush) {
	opus_int32 len = 0;
	if (!ope_encoder_get_page(enc, page, &len, flush)) {
		return 0;
	}
	return len;
}
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"
)

// Rate is the sample rate Encoder takes and every Opus decoder produces.
const Rate = 48000

// Encoder writes one Ogg Opus stream. Not safe for concurrent use; Close
// frees its C memory.
type Encoder struct {
	enc *C.OggOpusEnc
	// page receives the next page's address. It lives here rather than
	// on pages' stack because a pointer passed to C makes a local
	// escape: a heap allocation per call, on a streamed chunk's hot path.
	page *C.uchar
}

// NewEncoder returns an encoder of mono 48 kHz audio at kbps (6 to 510).
func NewEncoder(kbps int) (*Encoder, error) { return NewEncoderComments(kbps, nil) }

// NewEncoderComments is NewEncoder with user comments in the stream's
// comment header ("KEY", "value" pairs: chapter marks, a title).
func NewEncoderComments(kbps int, comments [][2]string) (*Encoder, error) {
	if kbps < 6 || kbps > 510 {
		return nil, fmt.Errorf("opus: bitrate %d kbps is outside 6 to 510", kbps)
	}
	c := C.ope_comments_create()
	for _, kv := range comments {
		if c == nil {
			break
		}
		// C strings for the call only: libopusenc copies them.
		k, v := C.CString(kv[0]), C.CString(kv[1])
		code := C.ope_comments_add(c, k, v)
		C.free(unsafe.Pointer(k))
		C.free(unsafe.Pointer(v))
		if code != C.OPE_OK {
			C.ope_comments_destroy(c)
			return nil, fmt.Errorf("opus: comment %s: %s", kv[0], C.GoString(C.ope_strerror(code)))
		}
	}
	var code C.int
	enc := C.voxgate_ope_open(c, C.int(kbps), &code)
	if enc == nil {
		return nil, fmt.Errorf("opus: %s", C.GoString(C.ope_strerror(code)))
	}
	return &Encoder{enc: enc}, nil
}

// NewStreamEncoder returns an encoder of a live stream of mono 48 kHz
// audio at kbps (6 to 510): every 20 ms frame is encoded as soon as its
// samples are written, and an Ogg page is finished (and returned by
// Encode) once it holds pageDuration of audio, so a page leaves at most
// about pageDuration after its audio came in. Shorter pages cost more
// Ogg overhead (27 bytes and a segment table a page).
func NewStreamEncoder(kbps int, pageDuration time.Duration) (*Encoder, error) {
	return NewStreamEncoderComments(kbps, pageDuration, nil)
}

// NewStreamEncoderComments is NewStreamEncoder with user comments (see
// NewEncoderComments).
func NewStreamEncoderComments(kbps int, pageDuration time.Duration, comments [][2]string) (*Encoder, error) {
	e, err := NewEncoderComments(kbps, comments)
	if err != nil {
		return nil, err
	}
	samples := int(pageDuration.Seconds() * Rate)
	if code := C.voxgate_ope_live(e.enc, C.int(max(samples, 0))); code != C.OPE_OK {
		e.Close()
		return nil, fmt.Errorf("opus: %s", C.GoString(C.ope_strerror(code)))
	}
	return e, nil
}

// Encode encodes samples (full scale ±1.0) and appends the pages that are
// finished to out.
func (e *Encoder) Encode(out []byte, samples []float32) ([]byte, error) {
	if len(samples) > 0 {
		// Go memory passed to C for the duration of the call only; the
		// encoder copies what it keeps.
		if code := C.ope_encoder_write_float(e.enc, (*C.float)(unsafe.Pointer(&samples[0])), C.int(len(samples))); code != C.OPE_OK {
			return out, fmt.Errorf("opus: %s", C.GoString(C.ope_strerror(code)))
		}
	}
	return e.pages(out, 0), nil
}

// Finish ends the stream (the last page carries the exact end) and
// appends what is left to out.
func (e *Encoder) Finish(out []byte) ([]byte, error) {
	if code := C.ope_encoder_drain(e.enc); code != C.OPE_OK {
		return out, fmt.Errorf("opus: %s", C.GoString(C.ope_strerror(code)))
	}
	return e.pages(out, 1), nil
}

// pages appends every page the encoder has ready, copied out of its C
// memory, which the next call reuses.
func (e *Encoder) pages(out []byte, flush C.int) []byte {
	for {
		e.page = nil
		n := int(C.voxgate_ope_page(e.enc, &e.page, flush))
		if n <= 0 {
			return out
		}
		out = append(out, unsafe.Slice((*byte)(unsafe.Pointer(e.page)), n)...)
	}
}

// Close frees the encoder.
func (e *Encoder) Close() {
	if e.enc != nil {
		C.ope_encoder_destroy(e.enc)
		e.enc = nil
	}
}

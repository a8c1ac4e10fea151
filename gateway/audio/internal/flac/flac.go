// Package flac is a minimal cgo binding to libFLAC, the reference FLAC
// encoder, for encoding mono 16-bit audio a chunk at a time straight into
// the caller's buffer.
//
// Why libFLAC and not a Go package: libFLAC is the format's reference
// implementation, maintained by Xiph and packaged by every distribution;
// the Go encoders (github.com/mewkiz/flac) write verbatim or fixed-predictor
// frames only, so their files are barely smaller than WAV.
//
// How the bytes get out without a C callback into Go: the encoder's write,
// seek and tell callbacks are C functions that write into a sink, and the
// sink points at the caller's Go buffer only for the duration of each call
// into libFLAC (cgo allows C to hold a Go pointer until the call returns).
// The caller leaves room for the worst case of each call, so the sink never
// runs out; seeking lets libFLAC rewrite the STREAMINFO block (MD5, frame
// sizes) at the end, as it does for files.
//
// Build needs libflac-dev; run time needs libflac12.
package flac

/*
#cgo pkg-config: flac
#include <stdlib.h>
#include <string.h>
#include <FLAC/stream_encoder.h>

typedef struct {
	unsigned char *buf; // the caller's buffer, during a call only
	size_t len, cap, pos;
	int overflow;
} voxgate_sink;

static FLAC__StreamEncoderWriteStatus voxgate_flac_write(const FLAC__StreamEncoder *e,
		const FLAC__byte buffer[], size_t bytes, uint32_t samples, uint32_t frame, void *data) {
	voxgate_sink *s = data;
	if (s->buf == NULL || s->pos + bytes > s->cap) {
		s->overflow = 1;
		return FLAC__STREAM_ENCODER_WRITE_STATUS_FATAL_ERROR;
	}
	memcpy(s->buf + s->pos, buffer, bytes);
	s->pos += bytes;
	if (s->pos > s->len) {
		s->len = s->pos;
	}
	return FLAC__STREAM_ENCODER_WRITE_STATUS_OK;
}

static FLAC__StreamEncoderSeekStatus voxgate_flac_seek(const FLAC__StreamEncoder *e, FLAC__uint64 off, void *data) {
	voxgate_sink *s = data;
	if (off > s->len) {
		return FLAC__STREAM_ENCODER_SEEK_STATUS_ERROR;
	}
	s->pos = off;
	return FLAC__STREAM_ENCODER_SEEK_STATUS_OK;
}

static FLAC__StreamEncoderTellStatus voxgate_flac_tell(const FLAC__StreamEncoder *e, FLAC__uint64 *off, void *data) {
	voxgate_sink *s = data;
	*off = s->pos;
	return FLAC__STREAM_ENCODER_TELL_STATUS_OK;
}

// voxgate_flac_open makes an encoder of n mono 16-bit samples at rate Hz
// writing to sink (which must outlive it), or returns NULL.
static FLAC__StreamEncoder *voxgate_flac_open(voxgate_sink *sink, unsigned rate, FLAC__uint64 n,
		unsigned char *buf, size_t cap, int *status) {
	FLAC__StreamEncoder *e = FLAC__stream_encoder_new();
	if (e == NULL) {
		*status = -1;
		return NULL;
	}
	FLAC__stream_encoder_set_channels(e, 1);
	FLAC__stream_encoder_set_bits_per_sample(e, 16);
	FLAC__stream_encoder_set_sample_rate(e, rate);
	FLAC__stream_encoder_set_compression_level(e, 5);
	FLAC__stream_encoder_set_total_samples_estimate(e, n);
	sink->buf = buf; sink->cap = cap;
	*status = FLAC__stream_encoder_init_stream(e, voxgate_flac_write, voxgate_flac_seek, voxgate_flac_tell, NULL, sink);
	sink->buf = NULL;
	if (*status != FLAC__STREAM_ENCODER_INIT_STATUS_OK) {
		FLAC__stream_encoder_delete(e);
		return NULL;
	}
	return e;
}

static int voxgate_flac_process(FLAC__StreamEncoder *e, voxgate_sink *sink, const FLAC__int32 *pcm, unsigned n,
		unsigned char *buf, size_t cap) {
	sink->buf = buf; sink->cap = cap;
	int ok = FLAC__stream_encoder_process_interleaved(e, pcm, n);
	sink->buf = NULL;
	return ok;
}

static int voxgate_flac_finish(FLAC__StreamEncoder *e, voxgate_sink *sink, unsigned char *buf, size_t cap) {
	sink->buf = buf; sink->cap = cap;
	int ok = FLAC__stream_encoder_finish(e);
	sink->buf = NULL;
	return ok;
}

static const char *voxgate_flac_state(FLAC__StreamEncoder *e) {
	return FLAC__stream_encoder_get_resolved_state_string(e);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// Encoder writes one FLAC stream. Not safe for concurrent use; Close frees
// its C memory.
type Encoder struct {
	e    *C.FLAC__StreamEncoder
	sink *C.voxgate_sink // C memory: libFLAC keeps a pointer to it
	pcm  []int32
}

// frameSlack is the room, beyond two bytes a sample, a call may need: the
// block libFLAC holds back from the previous call, frame headers and the
// stream's header.
const frameSlack = 2*4608 + 8192

// NewEncoder returns an encoder of n mono 16-bit samples at rate Hz and
// starts the stream in out (the "fLaC" marker and STREAMINFO).
func NewEncoder(out []byte, n, rate int) (*Encoder, []byte, error) {
	if rate <= 0 || rate > 655350 {
		return nil, out, fmt.Errorf("flac: invalid sample rate %d", rate)
	}
	sink := (*C.voxgate_sink)(C.calloc(1, C.size_t(unsafe.Sizeof(C.voxgate_sink{}))))
	if sink == nil {
		return nil, out, errors.New("flac: out of memory")
	}
	out = room(out, frameSlack)
	sink.len, sink.pos = C.size_t(len(out)), C.size_t(len(out))
	var status C.int
	full := out[:cap(out)]
	e := C.voxgate_flac_open(sink, C.uint(rate), C.FLAC__uint64(n), (*C.uchar)(unsafe.Pointer(&full[0])), C.size_t(len(full)), &status)
	if e == nil {
		C.free(unsafe.Pointer(sink))
		return nil, out, fmt.Errorf("flac: init failed (status %d)", int(status))
	}
	return &Encoder{e: e, sink: sink}, out[:sink.len], nil
}

// room makes sure out has room for n more bytes.
func room(out []byte, n int) []byte {
	if cap(out)-len(out) >= n {
		return out
	}
	return append(out[:len(out):len(out)], make([]byte, n)...)[:len(out)]
}

// Encode encodes samples, already quantised to 16 bits, and appends the
// frames that are finished to out.
func (e *Encoder) Encode(out []byte, samples []int16) ([]byte, error) {
	if len(samples) == 0 {
		return out, nil
	}
	if cap(e.pcm) < len(samples) {
		e.pcm = make([]int32, len(samples))
	}
	pcm := e.pcm[:len(samples)]
	for i, s := range samples {
		pcm[i] = int32(s)
	}
	out = room(out, 2*len(samples)+frameSlack)
	full := out[:cap(out)]
	// Go memory passed to C for the duration of the call only; the sink
	// lets go of it before the call returns.
	ok := C.voxgate_flac_process(e.e, e.sink, (*C.FLAC__int32)(unsafe.Pointer(&pcm[0])), C.uint(len(pcm)),
		(*C.uchar)(unsafe.Pointer(&full[0])), C.size_t(len(full)))
	out = out[:e.sink.len]
	if ok == 0 {
		return out, e.err()
	}
	return out, nil
}

// Finish writes the last frame and rewrites STREAMINFO with the stream's
// MD5 and frame sizes.
func (e *Encoder) Finish(out []byte) ([]byte, error) {
	out = room(out, frameSlack)
	full := out[:cap(out)]
	ok := C.voxgate_flac_finish(e.e, e.sink, (*C.uchar)(unsafe.Pointer(&full[0])), C.size_t(len(full)))
	out = out[:e.sink.len]
	if ok == 0 {
		return out, e.err()
	}
	return out, nil
}

func (e *Encoder) err() error {
	if e.sink.overflow != 0 {
		return errors.New("flac: output buffer too small")
	}
	return fmt.Errorf("flac: %s", C.GoString(C.voxgate_flac_state(e.e)))
}

// Close frees the encoder.
func (e *Encoder) Close() {
	if e.e != nil {
		C.FLAC__stream_encoder_delete(e.e)
		C.free(unsafe.Pointer(e.sink))
		e.e, e.sink = nil, nil
	}
}

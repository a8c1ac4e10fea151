package provenance

// FLAC is decoded for its fingerprint with libFLAC's stream decoder (the
// format's reference implementation, which gateway/audio already links
// to encode FLAC; Debian's libflac-dev), reading from a copy of the file
// in C memory and mixing every frame down to mono floats in C, so no
// callback crosses into Go. Like the other decoders it runs in the
// fingerprint worker's child process (worker.go).

/*
#cgo pkg-config: flac
#include <stdlib.h>
#include <string.h>
#include <FLAC/stream_decoder.h>

typedef struct {
	const unsigned char *data;
	size_t len, pos;
	float *out;
	size_t n, cap, max;
	unsigned rate;
	int err;
} voxgate_flac_in;

static FLAC__StreamDecoderReadStatus voxgate_flac_read(const FLAC__StreamDecoder *d, FLAC__byte buf[], size_t *bytes, void *cd) {
	voxgate_flac_in *s = cd;
	if (s->pos >= s->len) {
		*bytes = 0;
		return FLAC__STREAM_DECODER_READ_STATUS_END_OF_STREAM;
	}
	size_t n = *bytes;
	if (n > s->len - s->pos) {
		n = s->len - s->pos;
	}
	memcpy(buf, s->data + s->pos, n);
	s->pos += n;
	*bytes = n;
	return FLAC__STREAM_DECODER_READ_STATUS_CONTINUE;
}

static FLAC__StreamDecoderWriteStatus voxgate_flac_write(const FLAC__StreamDecoder *d, const FLAC__Frame *f, const FLAC__int32 *const buf[], void *cd) {
	voxgate_flac_in *s = cd;
	unsigned ch = f->header.channels, bs = f->header.blocksize, bps = f->header.bits_per_sample;
	if (ch == 0 || bps == 0 || bps > 32 || s->n + bs > s->max) {
		s->err = 1;
		return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT;
	}
	s->rate = f->header.sample_rate;
	if (s->n + bs > s->cap) {
		size_t c = s->cap ? s->cap : 65536;
		while (c < s->n + bs) {
			c *= 2;
		}
		float *o = realloc(s->out, c * sizeof(float));
		if (o == NULL) {
			s->err = 1;
			return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT;
		}
		s->out = o;
		s->cap = c;
	}
	double scale = 1.0 / (double)(1ull << (bps - 1)) / ch;
	for (unsigned i = 0; i < bs; i++) {
		double v = 0;
		for (unsigned c = 0; c < ch; c++) {
			v += buf[c][i];
		}
		s->out[s->n++] = (float)(v * scale);
	}
	return FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE;
}

static void voxgate_flac_error(const FLAC__StreamDecoder *d, FLAC__StreamDecoderErrorStatus status, void *cd) {
	((voxgate_flac_in *)cd)->err = 1;
}

// voxgate_flac_decode decodes s->data; 0 when it went to the end.
static int voxgate_flac_decode(voxgate_flac_in *s) {
	FLAC__StreamDecoder *d = FLAC__stream_decoder_new();
	if (d == NULL) {
		return -1;
	}
	if (FLAC__stream_decoder_init_stream(d, voxgate_flac_read, NULL, NULL, NULL, NULL,
			voxgate_flac_write, NULL, voxgate_flac_error, s) != FLAC__STREAM_DECODER_INIT_STATUS_OK) {
		FLAC__stream_decoder_delete(d);
		return -2;
	}
	FLAC__bool ok = FLAC__stream_decoder_process_until_end_of_stream(d);
	FLAC__stream_decoder_finish(d);
	FLAC__stream_decoder_delete(d);
	return ok && !s->err ? 0 : -3;
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/voxgate/voxgate/gateway/audio"
)

// maxFLACSamples bounds a decoded FLAC file (about 17 minutes at 48
// kHz): a tiny file of constant frames could otherwise claim gigabytes.
const maxFLACSamples = 48_000 * 60 * 17

// decodeFLAC decodes FLAC to mono samples and their rate.
func decodeFLAC(data []byte) ([]float32, int, error) {
	if len(data) == 0 {
		return nil, 0, ErrNoAudio
	}
	cdata := C.CBytes(data)
	defer C.free(cdata)
	in := (*C.voxgate_flac_in)(C.calloc(1, C.size_t(unsafe.Sizeof(C.voxgate_flac_in{}))))
	defer C.free(unsafe.Pointer(in))
	in.data, in.len, in.max = (*C.uchar)(cdata), C.size_t(len(data)), maxFLACSamples
	rc := C.voxgate_flac_decode(in)
	defer C.free(unsafe.Pointer(in.out))
	if rc != 0 || in.n == 0 || in.rate == 0 {
		return nil, 0, fmt.Errorf("%w: not FLAC, or FLAC that libFLAC could not decode (%d)", audio.ErrCorrupt, int(rc))
	}
	out := make([]float32, int(in.n))
	copy(out, unsafe.Slice((*float32)(unsafe.Pointer(in.out)), int(in.n)))
	return out, int(in.rate), nil
}

// Package lame is a minimal cgo binding to libmp3lame for encoding a whole
// mono float32 clip to constant-bitrate MP3 in one call.
//
// Why our own binding and not github.com/viert/go-lame: that package is an
// io.Writer over 16-bit byte buffers that allocates per Write, drops the
// error of the final flush, relies on a finalizer to free the encoder, and
// does not expose lame_get_lametag_frame, so its output starts with an empty
// placeholder frame instead of the Xing/LAME tag that tells decoders the
// encoder delay and padding. The gateway needs exactly one call per clip,
// on float samples, with the tag filled in; that is a screenful of C.
//
// Build needs libmp3lame-dev (lame/lame.h and libmp3lame.so); run time needs
// libmp3lame0.
package lame

/*
#cgo LDFLAGS: -lmp3lame
#include <stdarg.h>
#include <stdlib.h>
#include <lame/lame.h>

// LAME reports through printf-style callbacks that default to stderr; a
// library inside a server must not write there.
static void voxgate_lame_quiet(const char *format, va_list ap) {
	(void)format;
	(void)ap;
}

enum {
	VOXGATE_LAME_EINIT = -1000,
	VOXGATE_LAME_EPARAMS = -1001,
	VOXGATE_LAME_ETAG = -1002,
};

// voxgate_lame_encode encodes n mono samples (full scale +-1.0) at rate Hz
// as CBR MP3 of kbps, writes the stream to out and returns its length, or a
// negative LAME or VOXGATE_LAME_* error code. The first frame of the stream
// is the Xing/LAME "Info" tag frame with the encoder delay and padding.
static int voxgate_lame_encode(const float *pcm, int n, int rate, int kbps,
		int quality, unsigned char *out, int outsize, int *delay, int *padding) {
	lame_t gf = lame_init();
	if (gf == NULL) {
		return VOXGATE_LAME_EINIT;
	}
	lame_set_errorf(gf, voxgate_lame_quiet);
	lame_set_debugf(gf, voxgate_lame_quiet);
	lame_set_msgf(gf, voxgate_lame_quiet);
	lame_set_num_channels(gf, 1);
	lame_set_in_samplerate(gf, rate);
	lame_set_out_samplerate(gf, rate);
	lame_set_mode(gf, MONO);
	lame_set_VBR(gf, vbr_off);
	lame_set_brate(gf, kbps);
	lame_set_quality(gf, quality);
	lame_set_bWriteVbrTag(gf, 1);
	lame_set_num_samples(gf, (unsigned long)n);
	// LAME quietly substitutes the nearest valid rate or bitrate for an
	// invalid one (resampling on its own); refuse instead.
	if (lame_init_params(gf) < 0 || lame_get_out_samplerate(gf) != rate ||
			lame_get_brate(gf) != kbps) {
		lame_close(gf);
		return VOXGATE_LAME_EPARAMS;
	}
	int total = 0;
	if (n > 0) {
		int w = lame_encode_buffer_ieee_float(gf, pcm, NULL, n, out, outsize);
		if (w < 0) {
			lame_close(gf);
			return w;
		}
		total = w;
	}
	int w = lame_encode_flush(gf, out + total, outsize - total);
	if (w < 0) {
		lame_close(gf);
		return w;
	}
	total += w;
	// LAME put an empty frame first; overwrite it with the final tag.
	size_t tag = lame_get_lametag_frame(gf, out, (size_t)total);
	if (tag > (size_t)total) {
		lame_close(gf);
		return VOXGATE_LAME_ETAG;
	}
	*delay = lame_get_encoder_delay(gf);
	*padding = lame_get_encoder_padding(gf);
	lame_close(gf);
	return total;
}

*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Result is an encoded MP3 stream and the gapless-playback figures LAME also
// wrote into its Xing/LAME tag.
type Result struct {
	// Data is the MP3 stream. It starts with LAME's Info tag frame when
	// that tag fits in a frame of the chosen bitrate; LAME leaves it out at
	// low bitrates (e.g. 32 kbps at 24 kHz).
	Data []byte
	// Delay is the number of samples of encoder delay at the start.
	Delay int
	// Padding is the number of padding samples at the end.
	Padding int
}

// Encode encodes mono samples in [-1, 1] at rate Hz as constant-bitrate MP3
// at kbps with LAME's algorithm quality q (0 best and slowest .. 9 worst).
// The rate and bitrate must be a combination MPEG audio allows; others
// are an error (LAME itself would quietly substitute the nearest valid
// ones). Safe for concurrent use: each call has its own encoder.
func Encode(samples []float32, rate, kbps, q int) (Result, error) {
	if len(samples) > 1<<30 {
		return Result{}, fmt.Errorf("lame: clip of %d samples is too long", len(samples))
	}
	if rate <= 0 || kbps <= 0 {
		return Result{}, fmt.Errorf("lame: invalid rate %d Hz or bitrate %d kbps", rate, kbps)
	}
	// A CBR stream is bitrate*duration long, plus the tag frame, the
	// encoder delay and padding (under 4000 samples) and a frame's slack.
	// Sizing the buffer by that, rather than by lame.h's worst case of
	// 1.25 bytes per sample, keeps a 60 s clip's buffer near its real size;
	// if LAME still runs out of room we retry once with the worst case.
	size := int(float64(kbps)*125*float64(len(samples)+4000)/float64(rate)) + 16384
	res, code := encode(samples, rate, kbps, q, size)
	if code == -1 {
		res, code = encode(samples, rate, kbps, q, len(samples)+len(samples)/4+16384)
	}
	if code < 0 {
		return Result{}, fmt.Errorf("lame: encoding %d Hz at %d kbps failed: %s", rate, kbps, errorText(code))
	}
	return res, nil
}

// encode makes one attempt with an output buffer of size bytes and returns
// the negative error code of the C helper on failure.
func encode(samples []float32, rate, kbps, q, size int) (Result, int) {
	out := make([]byte, size)
	var pcm *C.float
	if len(samples) > 0 {
		pcm = (*C.float)(unsafe.Pointer(&samples[0]))
	}
	var delay, padding C.int
	// Go memory passed to C for the duration of the call only, holding no
	// Go pointers: allowed by the cgo pointer rules, and no copy needed.
	n := int(C.voxgate_lame_encode(pcm, C.int(len(samples)), C.int(rate), C.int(kbps), C.int(q),
		(*C.uchar)(unsafe.Pointer(&out[0])), C.int(size), &delay, &padding))
	if n < 0 {
		return Result{}, n
	}
	return Result{Data: out[:n:n], Delay: int(delay), Padding: int(padding)}, 0
}

func errorText(code int) string {
	switch code {
	case C.VOXGATE_LAME_EINIT:
		return "lame_init failed"
	case C.VOXGATE_LAME_EPARAMS:
		return "invalid encoder parameters"
	case C.VOXGATE_LAME_ETAG:
		return "tag frame larger than the stream"
	case -1:
		return "output buffer too small"
	case -2:
		return "out of memory"
	case -3:
		return "parameters not initialised"
	case -4:
		return "psychoacoustic model failure"
	default:
		return fmt.Sprintf("error %d", code)
	}
}

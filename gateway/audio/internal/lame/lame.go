// Package lame is a minimal cgo binding to libmp3lame for encoding mono
// float32 audio to constant-bitrate MP3, in one call (Encode) or a chunk
// at a time (Encoder), with LAME's Xing/LAME tag frame filled in.
//
// Why our own binding and not github.com/viert/go-lame: that package is an
// io.Writer over 16-bit byte buffers that allocates per Write, drops the
// error of the final flush, relies on a finalizer to free the encoder, and
// does not expose lame_get_lametag_frame, so its output starts with an empty
// placeholder frame instead of the Xing/LAME tag that tells decoders the
// encoder delay and padding. The gateway needs float input, chunks written
// straight into its output buffer, and the tag filled in; that is a
// screenful of C.
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

// voxgate_lame_open makes an encoder of n mono samples (full scale +-1.0)
// at rate Hz as CBR MP3 of kbps whose first frame is the Xing/LAME "Info"
// tag frame, or returns NULL with *code set. With tag 0 the stream has no
// tag frame and n is ignored (a live stream of unknown length).
static lame_t voxgate_lame_open(int n, int rate, int kbps, int quality, int tag, int *code) {
	lame_t gf = lame_init();
	if (gf == NULL) {
		*code = VOXGATE_LAME_EINIT;
		return NULL;
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
	lame_set_bWriteVbrTag(gf, tag);
	if (tag) {
		lame_set_num_samples(gf, (unsigned long)n);
	}
	// LAME quietly substitutes the nearest valid rate or bitrate for an
	// invalid one (resampling on its own); refuse instead.
	if (lame_init_params(gf) < 0 || lame_get_out_samplerate(gf) != rate ||
			lame_get_brate(gf) != kbps) {
		lame_close(gf);
		*code = VOXGATE_LAME_EPARAMS;
		return NULL;
	}
	return gf;
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
	e, err := NewEncoder(len(samples), rate, kbps, q)
	if err != nil {
		return Result{}, err
	}
	defer e.Close()
	out := make([]byte, 0, e.SizeHint())
	if out, err = e.Encode(out, samples); err != nil {
		return Result{}, err
	}
	if out, err = e.Finish(out); err != nil {
		return Result{}, err
	}
	return Result{Data: out[:len(out):len(out)], Delay: e.Delay(), Padding: e.Padding()}, nil
}

// Encoder encodes one clip of a known length given in chunks, or a live
// stream (NewStreamEncoder). Not safe for concurrent use; Close frees its
// C memory.
type Encoder struct {
	gf         C.lame_t
	n          int
	rate, kbps int
	stream     bool // no tag frame: Finish writes none
}

// NewEncoder returns an encoder of a clip of n samples (LAME writes the
// count into the tag) at rate Hz, kbps and quality q (see Encode).
func NewEncoder(n, rate, kbps, q int) (*Encoder, error) {
	if n > 1<<30 {
		return nil, fmt.Errorf("lame: clip of %d samples is too long", n)
	}
	if rate <= 0 || kbps <= 0 {
		return nil, fmt.Errorf("lame: invalid rate %d Hz or bitrate %d kbps", rate, kbps)
	}
	var code C.int
	gf := C.voxgate_lame_open(C.int(n), C.int(rate), C.int(kbps), C.int(q), 1, &code)
	if gf == nil {
		return nil, fmt.Errorf("lame: encoding %d Hz at %d kbps failed: %s", rate, kbps, errorText(int(code)))
	}
	return &Encoder{gf: gf, n: n, rate: rate, kbps: kbps}, nil
}

// NewStreamEncoder returns an encoder of a live stream of unknown length
// at rate Hz, kbps and quality q (see Encode), whose frames are sent as
// they come out of Encode. Such a stream has no Xing/LAME tag frame: the
// tag carries the frame count and the end padding, known only once the
// stream has ended, and it must be the first frame, which is sent long
// before then. (LAME would otherwise start the stream with an empty
// placeholder frame that is never filled in.) Decoders play the stream
// without gapless trimming, as they play any MP3 stream: the encoder
// delay (576 samples) and the last frame's padding stay in.
func NewStreamEncoder(rate, kbps, q int) (*Encoder, error) {
	if rate <= 0 || kbps <= 0 {
		return nil, fmt.Errorf("lame: invalid rate %d Hz or bitrate %d kbps", rate, kbps)
	}
	var code C.int
	gf := C.voxgate_lame_open(0, C.int(rate), C.int(kbps), C.int(q), 0, &code)
	if gf == nil {
		return nil, fmt.Errorf("lame: encoding %d Hz at %d kbps failed: %s", rate, kbps, errorText(int(code)))
	}
	return &Encoder{gf: gf, rate: rate, kbps: kbps, stream: true}, nil
}

// SizeHint is the stream's expected length in bytes: a CBR stream is
// bitrate·duration long, plus the tag frame, the encoder delay and
// padding (under 4000 samples) and a frame's slack.
func (e *Encoder) SizeHint() int {
	return int(float64(e.kbps)*125*float64(e.n+4000)/float64(e.rate)) + 8192
}

// room makes sure out has room for n more bytes.
func room(out []byte, n int) []byte {
	if cap(out)-len(out) >= n {
		return out
	}
	return append(out[:len(out):len(out)], make([]byte, n)...)[:len(out)]
}

// Encode appends the MP3 frames of samples to out and returns it; it
// grows out only if out lacks room for lame.h's worst case of the chunk
// (1.25 bytes a sample plus 7200).
func (e *Encoder) Encode(out []byte, samples []float32) ([]byte, error) {
	for len(samples) > 0 {
		chunk := samples[:min(len(samples), 1<<16)]
		samples = samples[len(chunk):]
		need := len(chunk) + len(chunk)/4 + 7200
		out = room(out, need)
		free := out[len(out):cap(out)]
		// Go memory passed to C for the duration of the call only, holding
		// no Go pointers: allowed by the cgo pointer rules, and no copy.
		w := C.lame_encode_buffer_ieee_float(e.gf, (*C.float)(unsafe.Pointer(&chunk[0])), nil, C.int(len(chunk)),
			(*C.uchar)(unsafe.Pointer(&free[0])), C.int(len(free)))
		if w < 0 {
			return out, fmt.Errorf("lame: encoding failed: %s", errorText(int(w)))
		}
		out = out[:len(out)+int(w)]
	}
	return out, nil
}

// Finish flushes the encoder into out and writes the final tag frame over
// the placeholder LAME put first (out must then hold the whole stream).
// A stream encoder (NewStreamEncoder) only appends its last frames.
func (e *Encoder) Finish(out []byte) ([]byte, error) {
	out = room(out, 7200)
	free := out[len(out):cap(out)]
	w := C.lame_encode_flush(e.gf, (*C.uchar)(unsafe.Pointer(&free[0])), C.int(len(free)))
	if w < 0 {
		return out, fmt.Errorf("lame: flush failed: %s", errorText(int(w)))
	}
	out = out[:len(out)+int(w)]
	if len(out) > 0 && !e.stream {
		tag := C.lame_get_lametag_frame(e.gf, (*C.uchar)(unsafe.Pointer(&out[0])), C.size_t(len(out)))
		if int(tag) > len(out) {
			return out, fmt.Errorf("lame: %s", errorText(C.VOXGATE_LAME_ETAG))
		}
	}
	return out, nil
}

// Delay is the number of samples of encoder delay at the start.
func (e *Encoder) Delay() int { return int(C.lame_get_encoder_delay(e.gf)) }

// Padding is the number of padding samples at the end (known after Finish).
func (e *Encoder) Padding() int { return int(C.lame_get_encoder_padding(e.gf)) }

// Close frees the encoder.
func (e *Encoder) Close() {
	if e.gf != nil {
		C.lame_close(e.gf)
		e.gf = nil
	}
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

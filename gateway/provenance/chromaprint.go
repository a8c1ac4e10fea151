package provenance

// Chromaprint (Debian's libchromaprint-dev) computes the acoustic
// fingerprint; libopusfile decodes Ogg Opus, which gateway/audio's
// decoder does not (it reads WAV, MP3, PCM and G.711).

// #cgo pkg-config: libchromaprint opusfile
// #include <stdlib.h>
// #include <chromaprint.h>
// #include <opusfile.h>
import "C"

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/voxgate/voxgate/gateway/audio"
)

// ErrNoAudio is audio too short, silent or undecodable to fingerprint.
var ErrNoAudio = errors.New("provenance: no audio to fingerprint")

// Fingerprint returns the raw Chromaprint fingerprint of mono samples at
// rate: one 32-bit value for every ~124 ms of audio (Chromaprint resamples
// to 11025 Hz itself).
func Fingerprint(samples []float32, rate int) ([]uint32, error) {
	if len(samples) == 0 || rate <= 0 {
		return nil, ErrNoAudio
	}
	ctx := C.chromaprint_new(C.CHROMAPRINT_ALGORITHM_DEFAULT)
	if ctx == nil {
		return nil, errors.New("provenance: chromaprint_new failed")
	}
	defer C.chromaprint_free(ctx)
	if C.chromaprint_start(ctx, C.int(rate), 1) != 1 {
		return nil, fmt.Errorf("provenance: chromaprint cannot start at %d Hz", rate)
	}
	// Fed in blocks of int16, converted from a Go buffer: cgo passes a
	// pointer to Go memory that holds no Go pointers, which is allowed
	// for the call's duration.
	var block [4096]int16
	for off := 0; off < len(samples); off += len(block) {
		n := copy16(block[:], samples[off:])
		if C.chromaprint_feed(ctx, (*C.int16_t)(unsafe.Pointer(&block[0])), C.int(n)) != 1 {
			return nil, errors.New("provenance: chromaprint_feed failed")
		}
	}
	if C.chromaprint_finish(ctx) != 1 {
		return nil, errors.New("provenance: chromaprint_finish failed")
	}
	var fp *C.uint32_t
	var size C.int
	if C.chromaprint_get_raw_fingerprint(ctx, &fp, &size) != 1 {
		return nil, errors.New("provenance: no fingerprint")
	}
	defer C.chromaprint_dealloc(unsafe.Pointer(fp))
	if size <= 0 {
		return nil, ErrNoAudio
	}
	// Copied out of C memory before it is freed.
	out := make([]uint32, int(size))
	copy(out, unsafe.Slice((*uint32)(unsafe.Pointer(fp)), int(size)))
	return out, nil
}

// copy16 converts float samples to int16 into dst and returns how many.
func copy16(dst []int16, src []float32) int {
	n := min(len(dst), len(src))
	for i := range n {
		v := math.Round(float64(src[i]) * 32767)
		dst[i] = int16(max(-32768, min(32767, v)))
	}
	return n
}

// FingerprintAudio decodes a file of mediaType (WAV, MP3, raw PCM,
// G.711, Ogg Opus, FLAC) and fingerprints it: Ogg Opus decoded with
// libopusfile, FLAC with libFLAC (flac.go), the rest with gateway/audio
// (MP3 with libmpg123).
func FingerprintAudio(data []byte, mediaType string) ([]uint32, error) {
	if Container(mediaType) == "opus" || (len(data) >= 4 && string(data[:4]) == "OggS") {
		samples, err := decodeOpus(data)
		if err != nil {
			return nil, err
		}
		return Fingerprint(samples, 48000)
	}
	if Container(mediaType) == audio.FormatFLAC || (len(data) >= 4 && string(data[:4]) == "fLaC") {
		samples, rate, err := decodeFLAC(data)
		if err != nil {
			return nil, err
		}
		return Fingerprint(samples, rate)
	}
	c, err := audio.Decode(data, mediaType)
	if err != nil {
		return nil, err
	}
	return Fingerprint(c.Samples, c.Rate)
}

// decodeOpus decodes Ogg Opus to mono 48 kHz samples with libopusfile.
func decodeOpus(data []byte) ([]float32, error) {
	if len(data) == 0 {
		return nil, ErrNoAudio
	}
	// libopusfile reads the bytes while of lives: they are copied to C
	// memory, since Go memory may not be kept by C past a call.
	cdata := C.CBytes(data)
	defer C.free(cdata)
	var cerr C.int
	of := C.op_open_memory((*C.uchar)(cdata), C.size_t(len(data)), &cerr)
	if of == nil {
		return nil, fmt.Errorf("%w: not Ogg Opus (opusfile error %d)", audio.ErrCorrupt, int(cerr))
	}
	defer C.op_free(of)
	var out []float32
	var pcm [5760 * 2]C.float
	for {
		n := C.op_read_float_stereo(of, &pcm[0], C.int(len(pcm)))
		if n < 0 {
			return nil, fmt.Errorf("%w: Ogg Opus decoding failed (opusfile error %d)", audio.ErrCorrupt, int(n))
		}
		if n == 0 {
			break
		}
		for i := range int(n) {
			out = append(out, float32(pcm[2*i]+pcm[2*i+1])/2)
		}
	}
	return out, nil
}

// Package soxr is a minimal cgo binding to libsoxr, the SoX resampler
// library, for resampling a whole mono float32 clip held in memory.
//
// Why our own binding and not github.com/zaf/resample (the maintained Go
// wrapper of the same library): that package is shaped as a streaming
// io.Writer over interleaved byte buffers, copies every buffer into C memory
// (C.CBytes), and sets the resampler's thread count from package-level state
// initialised to runtime.NumCPU. The gateway resamples whole clips and
// already runs many requests in parallel, so it wants one soxr_oneshot call
// on the caller's float32 slice, single-threaded, with no copies. That is
// one C call; a dependency for it would cost more than it saves.
//
// Build needs libsoxr-dev (header and libsoxr.so); run time needs libsoxr0.
package soxr

/*
#cgo LDFLAGS: -lsoxr
#include <stdlib.h>
#include <soxr.h>

// voxgate_soxr_oneshot resamples one mono float32 buffer with the "high
// quality" recipe (20-bit precision, linear phase, passband to 91.3% of the
// lower Nyquist frequency) on the calling thread only.
static const char *voxgate_soxr_oneshot(double in_rate, double out_rate,
		const float *in, size_t ilen, float *out, size_t olen, size_t *odone) {
	soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
	soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
	soxr_runtime_spec_t rt = soxr_runtime_spec(1);
	size_t idone = 0;
	soxr_error_t err = soxr_oneshot(in_rate, out_rate, 1, in, ilen, &idone,
		out, olen, odone, &io, &q, &rt);
	return err;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// OutputLen is the number of samples Resample produces for n input samples:
// the input length scaled by the rate ratio, rounded to the nearest sample,
// so that the clip's duration is preserved to within half an output sample.
func OutputLen(n, inRate, outRate int) int {
	return int(math.Round(float64(n) * float64(outRate) / float64(inRate)))
}

// Resample converts the mono samples in from inRate to outRate and returns a
// new slice of OutputLen(len(in), inRate, outRate) samples. The filter is
// libsoxr's linear-phase, band-limited HQ recipe: content above the lower of
// the two Nyquist frequencies is removed before it can alias.
func Resample(in []float32, inRate, outRate int) ([]float32, error) {
	if inRate <= 0 || outRate <= 0 {
		return nil, fmt.Errorf("soxr: invalid rates %d -> %d", inRate, outRate)
	}
	want := OutputLen(len(in), inRate, outRate)
	if len(in) == 0 || want == 0 {
		return []float32{}, nil
	}
	// One spare sample so soxr never stops short because of its own
	// rounding of the output length; we cut to want below.
	out := make([]float32, want+1)
	var done C.size_t
	// Go memory passed to C for the duration of the call only, holding no
	// Go pointers: allowed by the cgo pointer rules, and no copy needed.
	cerr := C.voxgate_soxr_oneshot(C.double(inRate), C.double(outRate),
		(*C.float)(unsafe.Pointer(&in[0])), C.size_t(len(in)),
		(*C.float)(unsafe.Pointer(&out[0])), C.size_t(len(out)), &done)
	if cerr != nil {
		return nil, errors.New("soxr: " + C.GoString(cerr))
	}
	// soxr may deliver a sample fewer than the rounded length; the tail then
	// stays zero (from make) rather than shortening the clip.
	return out[:want], nil
}

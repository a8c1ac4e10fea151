// Package soxr is a minimal cgo binding to libsoxr, the SoX resampler
// library, for resampling mono float32 audio: a whole clip held in memory
// (Resample) or a clip read and written in chunks (Stream), so that a long
// clip never needs its input and output in memory at once.
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

// voxgate_soxr_create makes a streaming resampler with the same recipe.
static soxr_t voxgate_soxr_create(double in_rate, double out_rate, const char **err) {
	soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
	soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
	soxr_runtime_spec_t rt = soxr_runtime_spec(1);
	soxr_error_t e = NULL;
	soxr_t s = soxr_create(in_rate, out_rate, 1, &e, &io, &q, &rt);
	*err = e;
	return s;
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

// Stream resamples a clip that arrives and leaves in chunks, with the same
// filter as Resample and the same result: feeding it a clip in any
// chunking and then flushing yields Resample's samples. It holds about a
// filter's length of state (a few thousand samples). Not safe for
// concurrent use; Close frees its C memory.
type Stream struct {
	s         C.soxr_t
	in, out   int
	want, got int // output samples promised (OutputLen) and produced
	total     int // input samples fed
	// idone and odone receive soxr_process's counts. They live here
	// rather than on Process's stack because a pointer passed to C makes
	// a local escape: a heap allocation per call, on a streamed chunk's
	// hot path.
	idone, odone C.size_t
}

// NewStream returns a Stream from inRate to outRate Hz.
func NewStream(inRate, outRate int) (*Stream, error) {
	if inRate <= 0 || outRate <= 0 {
		return nil, fmt.Errorf("soxr: invalid rates %d -> %d", inRate, outRate)
	}
	var cerr *C.char
	s := C.voxgate_soxr_create(C.double(inRate), C.double(outRate), &cerr)
	if cerr != nil || s == nil {
		msg := "soxr_create failed"
		if cerr != nil {
			msg = C.GoString(cerr)
		}
		return nil, errors.New("soxr: " + msg)
	}
	return &Stream{s: s, in: inRate, out: outRate}, nil
}

// Process feeds in (all of it or a part) and writes resampled samples to
// out. It returns how many input samples it consumed and how many output
// samples it wrote; call again with the rest of in. A nil in means the
// input has ended: Process then drains the filter into out, and returns
// produced 0 once nothing is left. Output never runs past the
// OutputLen of everything fed, and the drain pads with silence up to it,
// so the total matches Resample's exactly.
func (st *Stream) Process(in, out []float32) (consumed, produced int, err error) {
	if len(out) == 0 {
		return 0, 0, nil
	}
	idone, odone := &st.idone, &st.odone
	*idone, *odone = 0, 0
	var cerr C.soxr_error_t
	if in == nil {
		st.want = OutputLen(st.total, st.in, st.out)
		room := min(len(out), st.want-st.got)
		if room <= 0 {
			return 0, 0, nil
		}
		// Go memory passed to C for the duration of the call only.
		cerr = C.soxr_process(st.s, nil, 0, nil, C.soxr_out_t(unsafe.Pointer(&out[0])), C.size_t(room), odone)
		if cerr != nil {
			return 0, 0, errors.New("soxr: " + C.GoString(cerr))
		}
		n := int(*odone)
		if n == 0 { // soxr delivered a sample fewer than the rounded length
			n = room
			clear(out[:n])
		}
		st.got += n
		return 0, n, nil
	}
	if len(in) == 0 {
		return 0, 0, nil
	}
	// Never produce past the final length: soxr may round up by a sample.
	limit := OutputLen(st.total+len(in), st.in, st.out) - st.got
	room := min(len(out), max(limit, 0))
	var op C.soxr_out_t
	if room > 0 {
		op = C.soxr_out_t(unsafe.Pointer(&out[0]))
	}
	cerr = C.soxr_process(st.s, C.soxr_in_t(unsafe.Pointer(&in[0])), C.size_t(len(in)), idone, op, C.size_t(room), odone)
	if cerr != nil {
		return 0, 0, errors.New("soxr: " + C.GoString(cerr))
	}
	st.total += int(*idone)
	st.got += int(*odone)
	return int(*idone), int(*odone), nil
}

// Close frees the resampler.
func (st *Stream) Close() {
	if st.s != nil {
		C.soxr_delete(st.s)
		st.s = nil
	}
}

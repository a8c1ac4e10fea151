// Package ebur128 is a minimal cgo binding to libebur128, for measuring
// the integrated loudness (ITU-R BS.1770-4 K-weighting with the EBU R128
// absolute and relative gates) of mono float samples.
//
// Why libebur128 and not our own K-weighting: it is the implementation
// most tools agree with (FFmpeg's ebur128 filter and loudnorm follow the
// same BS.1770 filters and gates), it is packaged by Debian, and its
// measuring pass is a few biquads per sample, far below what the
// gateway's limiter costs, so the hot path gains nothing from a copy.
// Its true-peak mode is not used: it reports only a clip's maximum, while
// the limiter needs the oversampled peak of every sample (see the audio
// package's loudness.go).
//
// Every call passes Go memory to C only for the duration of the call;
// libebur128 copies what it keeps. Build needs libebur128-dev; run time
// needs libebur128-1.
package ebur128

/*
#cgo pkg-config: libebur128
#include <ebur128.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// Meter measures one mono signal. It is not safe for concurrent use; Close
// frees its C state.
type Meter struct {
	st *C.ebur128_state
}

// NewMeter returns a meter of mono audio at rate Hz that keeps the last
// windowMs milliseconds for Window (0: the library's default of 400 ms,
// enough for the gating block).
func NewMeter(rate int, windowMs int) (*Meter, error) {
	if rate <= 0 {
		return nil, fmt.Errorf("ebur128: sample rate %d", rate)
	}
	// EBUR128_MODE_HISTOGRAM keeps the gating blocks' energies in a fixed
	// histogram (0.1 dB steps) instead of a growing list: constant memory
	// whatever the clip's length, at no measurable cost in accuracy.
	st := C.ebur128_init(1, C.ulong(rate), C.EBUR128_MODE_I|C.EBUR128_MODE_HISTOGRAM)
	if st == nil {
		return nil, errors.New("ebur128: init failed")
	}
	m := &Meter{st: st}
	if windowMs > 400 {
		if rc := C.ebur128_set_max_window(st, C.ulong(windowMs)); rc != C.EBUR128_SUCCESS && rc != C.EBUR128_ERROR_NO_CHANGE {
			m.Close()
			return nil, fmt.Errorf("ebur128: set window: error %d", int(rc))
		}
	}
	return m, nil
}

// Add feeds samples (mono, ±1.0 full scale) to the meter.
func (m *Meter) Add(s []float32) error {
	if len(s) == 0 {
		return nil
	}
	// The samples are read during the call only.
	if rc := C.ebur128_add_frames_float(m.st, (*C.float)(unsafe.Pointer(&s[0])), C.size_t(len(s))); rc != C.EBUR128_SUCCESS {
		return fmt.Errorf("ebur128: add frames: error %d", int(rc))
	}
	return nil
}

// Integrated returns the gated integrated loudness in LUFS of everything
// added, or -Inf when no 400 ms block passes the gates (a clip shorter
// than one block, or silence).
func (m *Meter) Integrated() (float64, error) {
	var out C.double
	if rc := C.ebur128_loudness_global(m.st, &out); rc != C.EBUR128_SUCCESS {
		return 0, fmt.Errorf("ebur128: integrated loudness: error %d", int(rc))
	}
	v := float64(out)
	if v < -1e6 { // -HUGE_VAL from the library
		return math.Inf(-1), nil
	}
	return v, nil
}

// Window returns the ungated K-weighted loudness in LUFS of the last ms
// milliseconds added (at most the window NewMeter was given), -Inf for
// silence.
func (m *Meter) Window(ms int) (float64, error) {
	var out C.double
	if rc := C.ebur128_loudness_window(m.st, C.ulong(ms), &out); rc != C.EBUR128_SUCCESS {
		return 0, fmt.Errorf("ebur128: window loudness: error %d", int(rc))
	}
	v := float64(out)
	if v < -1e6 {
		return math.Inf(-1), nil
	}
	return v, nil
}

// Close frees the meter's C state; the meter must not be used afterwards.
func (m *Meter) Close() {
	if m.st != nil {
		C.ebur128_destroy(&m.st)
		m.st = nil
	}
}

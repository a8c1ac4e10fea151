package mpg123

// #cgo pkg-config: libmpg123
// #include <stdlib.h>
// #include <mpg123.h>
import "C"

import (
	"errors"
	"fmt"
	"io"
	"unsafe"
)

// DecodeMonoStream decodes an MPEG audio stream read from r a piece at a
// time, handing fn the mono samples decoded so far and their rate (the
// slice is reused after fn returns). It is DecodeMono for a file too long
// to hold: the gateway measures a long-form job's encoded file with it.
// libmpg123's feed mode keeps only the frames it has not decoded yet.
func DecodeMonoStream(r io.Reader, fn func(samples []float32, rate int) error) error {
	var cerr C.int
	mh := C.mpg123_new(nil, &cerr)
	if mh == nil {
		return fmt.Errorf("mpg123_new: error %d", int(cerr))
	}
	defer C.mpg123_delete(mh)
	flags := C.long(C.MPG123_FORCE_MONO | C.MPG123_FORCE_FLOAT | C.MPG123_QUIET | C.MPG123_GAPLESS)
	if C.mpg123_param(mh, C.MPG123_FLAGS, flags, 0) != C.MPG123_OK {
		return fmt.Errorf("mpg123_param: %s", C.GoString(C.mpg123_strerror(mh)))
	}
	if C.mpg123_open_feed(mh) != C.MPG123_OK {
		return fmt.Errorf("mpg123_open_feed: %s", C.GoString(C.mpg123_strerror(mh)))
	}
	in := make([]byte, 64<<10)
	// Heap buffers whose addresses go to C: allocated once, not per read.
	buf := make([]float32, 8192)
	done := new(C.size_t)
	rate := 0
	for {
		n, rerr := r.Read(in)
		if n > 0 {
			// mpg123_feed copies the input into the handle's own buffers.
			if C.mpg123_feed(mh, (*C.uchar)(unsafe.Pointer(&in[0])), C.size_t(n)) != C.MPG123_OK {
				return fmt.Errorf("%w: the input was refused", ErrCorrupt)
			}
		}
	read:
		for {
			ret := C.mpg123_read(mh, unsafe.Pointer(&buf[0]), C.size_t(len(buf)*4), done)
			if k := int(*done) / 4; k > 0 && rate > 0 {
				if err := fn(buf[:k], rate); err != nil {
					return err
				}
			}
			switch ret {
			case C.MPG123_OK:
			case C.MPG123_NEW_FORMAT:
				var crate C.long
				var ch, enc C.int
				C.mpg123_getformat(mh, &crate, &ch, &enc)
				rate = int(crate)
			case C.MPG123_NEED_MORE, C.MPG123_DONE:
				break read
			default:
				return fmt.Errorf("%w: %s", ErrCorrupt, C.GoString(C.mpg123_strerror(mh)))
			}
		}
		if errors.Is(rerr, io.EOF) {
			if rate == 0 {
				return fmt.Errorf("%w: no MPEG audio frames", ErrCorrupt)
			}
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

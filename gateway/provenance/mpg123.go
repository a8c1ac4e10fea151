package provenance

// MP3 is decoded for fingerprints with libmpg123 (Debian's
// libmpg123-dev), not with gateway/audio's pure-Go go-mp3: go-mp3's
// output for the gateway's own 22050 Hz (MPEG-2) clips differs from
// ffmpeg's and libmpg123's so much that their fingerprints agree no
// better than unrelated speech (seen in TestIdentifyAfterReencoding), while
// libmpg123 is thread-safe with one handle per call.

// #cgo pkg-config: libmpg123
// #include <stdlib.h>
// #include <mpg123.h>
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/voxgate/voxgate/gateway/audio"
)

// decodeMP3 decodes MPEG audio to mono float samples (mpg123 mixes the
// channels down) and its rate.
func decodeMP3(data []byte) ([]float32, int, error) {
	if len(data) == 0 {
		return nil, 0, ErrNoAudio
	}
	var cerr C.int
	mh := C.mpg123_new(nil, &cerr)
	if mh == nil {
		return nil, 0, fmt.Errorf("provenance: mpg123_new: %d", int(cerr))
	}
	defer C.mpg123_delete(mh)
	C.mpg123_param(mh, C.MPG123_FLAGS, C.MPG123_FORCE_MONO|C.MPG123_FORCE_FLOAT|C.MPG123_QUIET, 0)
	if C.mpg123_open_feed(mh) != C.MPG123_OK {
		return nil, 0, fmt.Errorf("provenance: mpg123_open_feed failed")
	}
	// mpg123_feed copies the input into the handle's own buffers.
	if C.mpg123_feed(mh, (*C.uchar)(unsafe.Pointer(&data[0])), C.size_t(len(data))) != C.MPG123_OK {
		return nil, 0, fmt.Errorf("%w: mpg123 refused the input", audio.ErrCorrupt)
	}
	var out []float32
	rate := 0
	var buf [8192]float32
	for {
		var done C.size_t
		r := C.mpg123_read(mh, unsafe.Pointer(&buf[0]), C.size_t(len(buf)*4), &done)
		out = append(out, buf[:int(done)/4]...)
		switch r {
		case C.MPG123_OK:
		case C.MPG123_NEW_FORMAT:
			var crate C.long
			var ch, enc C.int
			C.mpg123_getformat(mh, &crate, &ch, &enc)
			rate = int(crate)
		case C.MPG123_NEED_MORE, C.MPG123_DONE:
			if rate == 0 || len(out) == 0 {
				return nil, 0, fmt.Errorf("%w: no MPEG audio frames", audio.ErrCorrupt)
			}
			return out, rate, nil
		default:
			return nil, 0, fmt.Errorf("%w: mpg123: %s", audio.ErrCorrupt, C.GoString(C.mpg123_strerror(mh)))
		}
	}
}

package upstream

import (
	"bytes"
	"errors"
	"io"
	"sync"
)

// readBlock is the unit ReadBody reads in: large enough that a clip of a
// few seconds takes a handful of reads, small enough to keep pooled.
const readBlock = 32 << 10

// blockPool recycles ReadBody's read blocks between calls.
var blockPool = sync.Pool{New: func() any { b := make([]byte, readBlock); return &b }}

// ReadBody reads a whole response body of at most limit bytes (the rest,
// if any, is left unread, as io.LimitReader would) and returns it in one
// slice of exactly its length. size is the length the response announced
// (http.Response.ContentLength), -1 if unknown.
//
// It replaces io.ReadAll for audio bodies, which are the hot path of a
// whole-clip call: io.ReadAll grows its slice step by step from 512 bytes,
// so a 150 KB clip costs about fifteen allocations and copies twice its
// size. ReadBody reads into pooled 32 KiB blocks and copies them once into
// the result (not zeroed first), or, when the length is known, reads
// straight into it.
func ReadBody(r io.Reader, size, limit int64) ([]byte, error) {
	if size >= 0 && size <= limit {
		b := make([]byte, size)
		n, err := io.ReadFull(r, b)
		return b[:n], err
	}
	var (
		blocks []*[]byte
		total  int64
		last   int // bytes used in the last block
		err    error
	)
	defer func() {
		for _, b := range blocks {
			blockPool.Put(b)
		}
	}()
	for total < limit && err == nil {
		if len(blocks) == 0 || last == readBlock {
			blocks = append(blocks, blockPool.Get().(*[]byte))
			last = 0
		}
		buf := (*blocks[len(blocks)-1])[last:]
		if room := limit - total; int64(len(buf)) > room {
			buf = buf[:room]
		}
		var n int
		n, err = r.Read(buf)
		last += n
		total += int64(n)
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	pieces := make([][]byte, len(blocks))
	for i, b := range blocks {
		pieces[i] = *b
	}
	if len(pieces) > 0 {
		pieces[len(pieces)-1] = pieces[len(pieces)-1][:last]
	}
	// bytes.Join copies into a result it does not zero first.
	out := bytes.Join(pieces, nil)
	if out == nil {
		out = []byte{}
	}
	return out, err
}

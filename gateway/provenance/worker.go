package provenance

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/voxgate/voxgate/gateway/audio"
)

// Fingerprints are computed in a child process, never in the gateway's
// own. Chromaprint (1.5.1 in Debian 12) and the decoders behind it
// (libopusfile, libmpg123) are C; identify feeds them files uploaded by
// clients. A crash in the child costs one fingerprint; the gateway keeps
// serving and starts another child. (The C heap corruption that first
// showed inside Chromaprint under make bench was the gateway's own bbolt
// memory release zeroing the malloc arena; see bolt.Store.ReleaseMemory.)
// Mozilla, Chromium and most media servers isolate decoders of untrusted
// media the same way.
//
// The protocol is length-prefixed frames over the child's stdin and
// stdout (little-endian):
//
//	request:  u32 len, media type; u32 len, audio bytes
//	response: u8 status (0 fingerprint, 1 no audio, 2 error, 3 media
//	          type not decodable, 4 corrupt audio); u32 n; n u32 values
//	          (status 0) or n bytes of error text

// WorkerCommand is the hidden voxgate subcommand that serves
// fingerprints on stdin/stdout (ServeWorker).
const WorkerCommand = "fingerprint-worker"

// maxWorkerInput bounds one request's audio: identify's upload limit and
// the largest clip indexed are far below it.
const maxWorkerInput = 64 << 20

const (
	statusOK          = 0
	statusNoAudio     = 1
	statusError       = 2
	statusUnsupported = 3
	statusCorrupt     = 4
)

// ServeWorker answers fingerprint requests from r on w until r ends: the
// child side of Workers. It returns nil at a clean end of input.
func ServeWorker(r io.Reader, w io.Writer) error {
	return serveWorker(r, w, FingerprintAudio)
}

func serveWorker(r io.Reader, w io.Writer, fingerprint func([]byte, string) ([]uint32, error)) error {
	br, bw := bufio.NewReaderSize(r, 64<<10), bufio.NewWriterSize(w, 16<<10)
	for {
		mediaType, err := readFrame(br, 1<<10)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		data, err := readFrame(br, maxWorkerInput)
		if err != nil {
			return err
		}
		fp, ferr := fingerprint(data, string(mediaType))
		var hdr [5]byte
		switch {
		case ferr == nil:
			hdr[0] = statusOK
			binary.LittleEndian.PutUint32(hdr[1:], uint32(len(fp)))
			bw.Write(hdr[:])
			var v [4]byte
			for _, x := range fp {
				binary.LittleEndian.PutUint32(v[:], x)
				bw.Write(v[:])
			}
		default:
			msg := ferr.Error()
			switch {
			case errors.Is(ferr, ErrNoAudio):
				hdr[0], msg = statusNoAudio, ""
			case errors.Is(ferr, audio.ErrUnsupportedMediaType):
				hdr[0] = statusUnsupported
			case errors.Is(ferr, audio.ErrCorrupt):
				hdr[0] = statusCorrupt
			default:
				hdr[0] = statusError
			}
			binary.LittleEndian.PutUint32(hdr[1:], uint32(len(msg)))
			bw.Write(hdr[:])
			bw.WriteString(msg)
		}
		if err := bw.Flush(); err != nil {
			return err
		}
	}
}

func readFrame(r *bufio.Reader, limit int) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := int(binary.LittleEndian.Uint32(n[:]))
	if size > limit {
		return nil, fmt.Errorf("provenance worker: frame of %d bytes exceeds %d", size, limit)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("provenance worker: short frame: %w", io.ErrUnexpectedEOF)
	}
	return b, nil
}

// ErrWorker is a fingerprint the child process failed to deliver: it
// crashed, timed out or could not start. The next call starts a new one.
var ErrWorker = errors.New("provenance: fingerprint worker failed")

// Workers fingerprints audio in child processes (see WorkerCommand), one
// request at a time per child. It is safe for concurrent use: callers
// beyond the children wait their turn, bounded by their context.
type Workers struct {
	cmd   []string
	slots chan *child
	// timeout bounds one fingerprint: a child past it is killed, so a
	// hostile file cannot hold a child forever.
	timeout time.Duration
}

// child is one worker process; nil cmd means not started (or dead).
type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// NewWorkers returns n workers running cmd (the program and its
// arguments: a voxgate binary and WorkerCommand). Children start on
// first use.
func NewWorkers(cmd []string, n int, timeout time.Duration) *Workers {
	w := &Workers{cmd: cmd, slots: make(chan *child, max(1, n)), timeout: timeout}
	for range max(1, n) {
		w.slots <- &child{}
	}
	return w
}

// SelfCommand is the command of this program's own worker subcommand.
func SelfCommand() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("provenance: find the voxgate binary for the fingerprint worker: %w", err)
	}
	return []string{exe, WorkerCommand}, nil
}

// Fingerprint decodes data (of mediaType) and fingerprints it in a child.
func (w *Workers) Fingerprint(ctx context.Context, data []byte, mediaType string) ([]uint32, error) {
	if len(data) > maxWorkerInput {
		return nil, fmt.Errorf("%w: %d bytes is more than a fingerprint takes", ErrNoAudio, len(data))
	}
	var c *child
	select {
	case c = <-w.slots:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { w.slots <- c }()
	if c.cmd == nil {
		if err := c.start(w.cmd); err != nil {
			return nil, err
		}
	}
	type result struct {
		fp  []uint32
		err error
	}
	done := make(chan result, 1)
	go func() {
		fp, err := c.roundTrip(data, mediaType)
		done <- result{fp, err}
	}()
	timer := time.NewTimer(w.timeout)
	defer timer.Stop()
	select {
	case r := <-done:
		if r.err != nil && errors.Is(r.err, ErrWorker) {
			c.stop()
		}
		return r.fp, r.err
	case <-timer.C:
		c.stop()
		<-done
		return nil, fmt.Errorf("%w: no answer within %s", ErrWorker, w.timeout)
	case <-ctx.Done():
		c.stop()
		<-done
		return nil, ctx.Err()
	}
}

// Close stops every child.
func (w *Workers) Close() {
	for range cap(w.slots) {
		c := <-w.slots
		c.stop()
	}
}

func (c *child) start(argv []string) error {
	if len(argv) == 0 {
		return fmt.Errorf("%w: no worker command", ErrWorker)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrWorker, err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrWorker, err)
	}
	cmd.Stderr = os.Stderr // a C library's abort message reaches the gateway's log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: start %s: %v", ErrWorker, argv[0], err)
	}
	c.cmd, c.in, c.out = cmd, in, bufio.NewReaderSize(out, 16<<10)
	return nil
}

// stop kills the child (if any) and reaps it.
func (c *child) stop() {
	if c.cmd == nil {
		return
	}
	_ = c.in.Close()
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
	c.cmd, c.in, c.out = nil, nil, nil
}

func (c *child) roundTrip(data []byte, mediaType string) ([]uint32, error) {
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(mediaType)))
	if err := writeAll(c.in, n[:], []byte(mediaType)); err != nil {
		return nil, err
	}
	binary.LittleEndian.PutUint32(n[:], uint32(len(data)))
	if err := writeAll(c.in, n[:], data); err != nil {
		return nil, err
	}
	var hdr [5]byte
	if _, err := io.ReadFull(c.out, hdr[:]); err != nil {
		return nil, fmt.Errorf("%w: %v (did it crash? its stderr is in the gateway's log)", ErrWorker, err)
	}
	size := binary.LittleEndian.Uint32(hdr[1:])
	switch hdr[0] {
	case statusOK:
		if size > maxWorkerInput/4 {
			return nil, fmt.Errorf("%w: answer of %d values", ErrWorker, size)
		}
		buf := make([]byte, 4*int(size))
		if _, err := io.ReadFull(c.out, buf); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrWorker, err)
		}
		fp := make([]uint32, size)
		for i := range fp {
			fp[i] = binary.LittleEndian.Uint32(buf[4*i:])
		}
		return fp, nil
	case statusNoAudio, statusError, statusUnsupported, statusCorrupt:
		if size > 1<<16 {
			return nil, fmt.Errorf("%w: error text of %d bytes", ErrWorker, size)
		}
		msg := make([]byte, size)
		if _, err := io.ReadFull(c.out, msg); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrWorker, err)
		}
		switch hdr[0] {
		case statusNoAudio:
			return nil, ErrNoAudio
		case statusUnsupported:
			return nil, fmt.Errorf("%w (%s)", audio.ErrUnsupportedMediaType, msg)
		case statusCorrupt:
			return nil, fmt.Errorf("%w (%s)", audio.ErrCorrupt, msg)
		}
		return nil, errors.New(string(msg))
	default:
		return nil, fmt.Errorf("%w: unknown status %d", ErrWorker, hdr[0])
	}
}

func writeAll(w io.Writer, parts ...[]byte) error {
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return fmt.Errorf("%w: %v", ErrWorker, err)
		}
	}
	return nil
}

package engine

/*
#include "template.h"
*/
import "C"

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// bufferLength is the duration of audio eSpeak hands to its callback at a
// time. It is the streaming granularity: small enough that the first chunk
// leaves soon after a request arrives, large enough that the per-chunk cost
// (one frame, one gRPC message) stays negligible.
const bufferLength = C.TEMPLATE_BUFFER_MILLIS * time.Millisecond

// Protocol constants, from template.h.
const (
	templateMagic    = uint32(C.TEMPLATE_MAGIC)
	creditUnlimited  = uint32(C.TEMPLATE_CREDIT_UNLIMITED)
	endFrame         = uint32(C.TEMPLATE_END_FRAME)
	maxVoiceBytes    = int(C.TEMPLATE_MAX_VOICE)
	maxTextBytes     = int(C.TEMPLATE_MAX_TEXT)
	statusOK         = uint32(C.TEMPLATE_STATUS_OK)
	statusUnknown    = uint32(C.TEMPLATE_STATUS_UNKNOWN_VOICE)
	statusNoProcess  = uint32(C.TEMPLATE_STATUS_NO_PROCESS)
	templateEnv      = C.TEMPLATE_ENV
	templateStartMax = 30 * time.Second
)

// Bounds on one frame, far above what eSpeak produces (a 60 ms buffer is
// 1,323 samples with a handful of events): a frame past them means the
// stream is corrupt, not that memory should be spent on it.
const (
	maxFrameSamples = 1 << 20
	maxFrameEvents  = 1 << 16
)

// errEngineGone reports that the template process or a child died.
var errEngineGone = errors.New("the eSpeak process ended unexpectedly")

// template is the template process (see template.c) and the control
// socket to it. Its methods may be called concurrently.
type template struct {
	mu  sync.Mutex
	ctl *net.UnixConn // nil once closed
	// rate is the sample rate the template's library produces.
	rate int
	// exited is closed when the current process has been reaped.
	exited <-chan struct{}
}

// startTemplate starts the template process: this very binary, executed
// again with the variable that makes its C constructor take over.
func startTemplate() (*template, error) {
	t := &template{}
	if err := t.start(); err != nil {
		return nil, err
	}
	return t, nil
}

// start launches a template process and waits until it has initialized
// libespeak-ng. Called with t.mu held, or before t is shared.
func (t *template) start() error {
	// SOCK_SEQPACKET keeps each one-byte message, and the descriptor it
	// carries, apart from the next.
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "espeak-template"), os.NewFile(uintptr(fds[1]), "espeak-template-peer")
	defer theirs.Close()
	ctl, err := fileConn(ours)
	if err != nil {
		return err
	}
	cmd := exec.Command(selfPath())
	// ExtraFiles[0] is descriptor 3 in the child.
	cmd.Env = append(os.Environ(), templateEnv+"=3")
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Stderr = os.Stderr // eSpeak's own complaints reach the plugin log
	if err := cmd.Start(); err != nil {
		ctl.Close()
		return fmt.Errorf("start the eSpeak template process: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // reap it; its end shows as end of file on ctl
		close(exited)
	}()

	var ready [4]byte
	_ = ctl.SetReadDeadline(time.Now().Add(templateStartMax))
	_, err = io.ReadFull(ctl, ready[:])
	_ = ctl.SetReadDeadline(time.Time{})
	if rate := int32(binary.LittleEndian.Uint32(ready[:])); err != nil || rate <= 0 {
		ctl.Close()
		_ = cmd.Process.Kill()
		if err == nil {
			err = fmt.Errorf("espeak_Initialize failed (%d): is espeak-ng-data installed?", rate)
		}
		return fmt.Errorf("eSpeak template process: %w", err)
	}
	t.ctl, t.exited = ctl, exited
	t.rate = int(int32(binary.LittleEndian.Uint32(ready[:])))
	return nil
}

// selfPath is the binary to run as the template. /proc/self/exe is the
// running image itself, even if the file was replaced since it started
// (a rebuild while the gateway runs), so both sides speak one protocol.
func selfPath() string {
	if runtime.GOOS == "linux" {
		return "/proc/self/exe"
	}
	if p, err := os.Executable(); err == nil {
		return p
	}
	return os.Args[0]
}

// fileConn turns a socket file into a net.UnixConn, whose reads and
// writes honour deadlines, and closes the file.
func fileConn(f *os.File) (*net.UnixConn, error) {
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	return c.(*net.UnixConn), nil
}

// fork starts a child of the template for one synthesis and returns the
// socket to it. A template that died (a crash, or the kernel's OOM
// killer) is restarted once.
func (t *template) fork() (*net.UnixConn, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("synthesis socket: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "espeak-synthesis"), os.NewFile(uintptr(fds[1]), "espeak-synthesis-peer")
	defer theirs.Close() // the child has its own copy once sent
	conn, err := fileConn(ours)
	if err != nil {
		return nil, err
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	for attempt := 0; ; attempt++ {
		if t.ctl == nil {
			conn.Close()
			return nil, errors.New("the eSpeak engine is closed")
		}
		_, _, err = t.ctl.WriteMsgUnix([]byte{0}, syscall.UnixRights(int(theirs.Fd())), nil)
		if err == nil {
			return conn, nil
		}
		if attempt > 0 {
			break
		}
		t.ctl.Close()
		<-t.exited
		if err = t.start(); err != nil {
			t.ctl = nil
			break
		}
	}
	conn.Close()
	return nil, fmt.Errorf("%w: %v", errEngineGone, err)
}

// close ends the template process; children already forked finish their
// synthesis on their own.
func (t *template) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctl != nil {
		t.ctl.Close()
		t.ctl = nil
		<-t.exited
	}
}

// rendering is one synthesis in a child of the template: the request is
// sent, audio and events come back in frames, and the child renders only
// as much audio ahead as it is granted.
type rendering struct {
	conn *net.UnixConn
	r    *bufio.Reader
	ctx  context.Context
	// stopWatch stops the watch that interrupts I/O when ctx ends.
	stopWatch func() bool
	// events is scratch space for decoding a frame's events.
	events []byte
}

// startRendering forks a child and sends it the request; nothing is
// rendered until the first grant.
func startRendering(ctx context.Context, t *template, text string, opts options) (*rendering, error) {
	if len(opts.voice) == 0 || len(opts.voice) > maxVoiceBytes || len(text) > maxTextBytes {
		return nil, fmt.Errorf("request out of the engine's bounds (voice %d bytes, text %d bytes)", len(opts.voice), len(text))
	}
	conn, err := t.fork()
	if err != nil {
		return nil, err
	}
	r := &rendering{conn: conn, r: bufio.NewReaderSize(conn, 32<<10), ctx: ctx}
	// Ending ctx makes blocked reads and writes return at once; the
	// deadline error is reported as ctx's error.
	r.stopWatch = context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })

	req := make([]byte, 16, 16+len(opts.voice)+len(text))
	binary.LittleEndian.PutUint32(req[0:], templateMagic)
	rateWord := uint32(opts.rate)
	if opts.phonemes {
		rateWord |= uint32(C.TEMPLATE_RATE_PHONEMES)
	}
	binary.LittleEndian.PutUint32(req[4:], rateWord)
	binary.LittleEndian.PutUint32(req[8:], uint32(len(opts.voice)))
	binary.LittleEndian.PutUint32(req[12:], uint32(len(text)))
	req = append(append(req, opts.voice...), text...)
	if _, err := conn.Write(req); err != nil {
		r.close()
		return nil, r.ioError(err)
	}
	return r, nil
}

// grant lets the child render bytes more of audio (creditUnlimited: all of
// it).
func (r *rendering) grant(bytes uint32) error {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], bytes)
	if _, err := r.conn.Write(b[:]); err != nil {
		return r.ioError(err)
	}
	return nil
}

// next reads the next frame: a buffer of audio and events, or io.EOF after
// the end frame of a complete synthesis.
func (r *rendering) next() (buffer, error) {
	var head [8]byte
	if _, err := io.ReadFull(r.r, head[:]); err != nil {
		return buffer{}, r.ioError(err)
	}
	samples, nevents := binary.LittleEndian.Uint32(head[0:]), binary.LittleEndian.Uint32(head[4:])
	if samples == endFrame {
		switch nevents {
		case statusOK:
			return buffer{}, io.EOF
		case statusUnknown:
			return buffer{}, errUnknownVoice
		case statusNoProcess:
			return buffer{}, fmt.Errorf("%w: the template could not fork", errEngineGone)
		}
		return buffer{}, fmt.Errorf("espeak synthesis failed (status %d)", nevents)
	}
	if samples > maxFrameSamples || nevents > maxFrameEvents {
		return buffer{}, fmt.Errorf("corrupt frame from the eSpeak process (%d samples, %d events)", samples, nevents)
	}
	var b buffer
	if samples > 0 {
		// The child sends 16-bit little-endian samples: the wire format
		// is the clip's format, so the bytes are kept as they are.
		b.pcm = make([]byte, 2*samples)
		if _, err := io.ReadFull(r.r, b.pcm); err != nil {
			return buffer{}, r.ioError(err)
		}
	}
	if nevents > 0 {
		n := 16 * int(nevents)
		if cap(r.events) < n {
			r.events = make([]byte, n)
		}
		raw := r.events[:n]
		if _, err := io.ReadFull(r.r, raw); err != nil {
			return buffer{}, r.ioError(err)
		}
		for i := 0; i < n; i += 16 {
			if e, ok := decodeEvent(raw[i : i+16]); ok {
				b.events = append(b.events, e)
			}
		}
	}
	return b, nil
}

// ioError says why I/O with the child failed: the context's error if it
// ended, otherwise that the child is gone.
func (r *rendering) ioError(err error) error {
	if cerr := r.ctx.Err(); cerr != nil {
		return cerr
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
		return errEngineGone
	}
	return fmt.Errorf("eSpeak process: %w", err)
}

// close ends the rendering; a child still rendering sees its socket
// closed and exits.
func (r *rendering) close() {
	r.stopWatch()
	r.conn.Close()
}

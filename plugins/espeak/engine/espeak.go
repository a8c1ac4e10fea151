package engine

/*
#cgo pkg-config: espeak-ng
#include <stdint.h>
#include <stdlib.h>
#include <espeak-ng/speak_lib.h>

void voxgate_set_synth_callback(void);
int voxgate_synth(const char *text, size_t size, uintptr_t handle);
*/
import "C"

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime/cgo"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// bufferLength is the duration of audio eSpeak hands to the callback at a
// time. It is the streaming granularity: small enough that the first chunk
// leaves soon after a request arrives, large enough that the per-chunk cost
// (one cgo callback, one gRPC message) stays negligible.
const bufferLength = 60 * time.Millisecond

// Speaking rates in words per minute, as libespeak-ng documents them for
// espeakRATE.
const (
	rateMinimum = int(C.espeakRATE_MINIMUM)
	rateMaximum = int(C.espeakRATE_MAXIMUM)
	rateNormal  = int(C.espeakRATE_NORMAL)
)

// errUnknownVoice reports a voice name libespeak-ng cannot select.
var errUnknownVoice = errors.New("unknown voice")

// library is the process's one libespeak-ng instance.
//
// This is package-level mutable state on purpose: libespeak-ng keeps all of
// its synthesis state (current voice, rate, output buffers, callback) in C
// globals and is not thread-safe, so there can only be one engine per
// process and every use of it must be serialized. The gateway scales eSpeak
// by running several plugin processes instead.
var library struct {
	once sync.Once
	err  error
	// lock is a one-slot semaphore rather than a sync.Mutex so that waiting
	// for the engine honours context cancellation.
	lock       chan struct{}
	sampleRate int
	voices     []voice
}

// voice is one eSpeak voice (a language definition file).
type voice struct {
	// id is the voice file's base name, lower-cased ("en", "en-us", "de");
	// espeak_SetVoiceByName accepts it.
	id       string
	name     string
	language string
	gender   string
}

// eventKind says what an eSpeak event marks.
type eventKind int

const (
	eventWord     eventKind = iota // start of a word
	eventSentence                  // start of a sentence
	eventClause                    // end of a sentence or clause
)

// event is an eSpeak synthesis event, converted to Go conventions.
type event struct {
	kind eventKind
	// offset is the 0-based index, in runes, into the synthesized text
	// (eSpeak counts characters from 1).
	offset int
	// length is the word's length in runes (word events only).
	length int
	// audio is the event's time from the start of the clip.
	audio time.Duration
}

// buffer is one piece of synthesizer output: the audio eSpeak produced since
// the previous buffer and the events that occurred in it.
type buffer struct {
	// pcm is 16-bit little-endian mono PCM at the library's sample rate. It
	// is a fresh slice the receiver may keep.
	pcm    []byte
	events []event
}

// options are the per-call synthesis settings.
type options struct {
	voice string
	// rate is the speaking rate in words per minute, within
	// rateMinimum..rateMaximum.
	rate int
}

// openLibrary initializes libespeak-ng once per process and lists its
// voices.
func openLibrary() error {
	library.once.Do(func() {
		// AUDIO_OUTPUT_SYNCHRONOUS makes espeak_Synth run on the calling
		// thread and call the callback there before it returns: no eSpeak
		// threads, and the caller's goroutine sees every buffer in order.
		// DONT_EXIT turns a missing espeak-ng-data into an error return
		// instead of exit(1).
		rate := C.espeak_Initialize(C.AUDIO_OUTPUT_SYNCHRONOUS,
			C.int(bufferLength/time.Millisecond), nil, C.espeakINITIALIZE_DONT_EXIT)
		if rate <= 0 {
			library.err = fmt.Errorf("espeak_Initialize failed (%d): is espeak-ng-data installed?", int(rate))
			return
		}
		C.voxgate_set_synth_callback()
		library.sampleRate = int(rate)
		library.voices = listVoices()
		library.lock = make(chan struct{}, 1)
	})
	return library.err
}

// listVoices copies eSpeak's voice table into Go values, one per voice file.
// Called once, from openLibrary: the C array it reads is rebuilt by the next
// espeak_ListVoices call.
func listVoices() []voice {
	list := C.espeak_ListVoices(nil)
	var voices []voice
	seen := make(map[string]bool)
	for p := list; *p != nil; p = (**C.espeak_VOICE)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(*p))) {
		v := *p
		ident := C.GoString(v.identifier) // e.g. "gmw/en-US"
		id := strings.ToLower(ident[strings.LastIndexByte(ident, '/')+1:])
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		voices = append(voices, voice{
			id:       id,
			name:     C.GoString(v.name),
			language: firstLanguage(v.languages),
			gender:   genderName(int(v.gender)),
		})
	}
	return voices
}

// firstLanguage returns the first (most preferred) language of an eSpeak
// languages field: a sequence of one priority byte followed by a
// NUL-terminated language tag, ended by an empty tag.
func firstLanguage(languages *C.char) string {
	if languages == nil || *languages == 0 {
		return ""
	}
	return C.GoString((*C.char)(unsafe.Add(unsafe.Pointer(languages), 1)))
}

// genderName maps eSpeak's gender code (0 none, 1 male, 2 female).
func genderName(code int) string {
	switch code {
	case 1:
		return "male"
	case 2:
		return "female"
	}
	return ""
}

// synthesis is the Go state of one espeak_Synth call, reached from the C
// callback through a cgo.Handle.
type synthesis struct {
	ctx      context.Context
	onBuffer func(buffer) error
	// err is why the synthesis was aborted, if it was.
	err error
}

// synthesize speaks text with opts and hands every buffer the synthesizer
// produces to onBuffer, in order, as soon as it exists. It returns when
// synthesis is complete, or early with the error of ctx or onBuffer.
// Calls are serialized process-wide.
func synthesize(ctx context.Context, text string, opts options, onBuffer func(buffer) error) error {
	if err := openLibrary(); err != nil {
		return err
	}
	select {
	case library.lock <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-library.lock }()
	if err := ctx.Err(); err != nil {
		return err
	}

	// The voice and rate are process-global in eSpeak: set both on every
	// call so nothing leaks from the previous one.
	cvoice := C.CString(opts.voice)
	defer C.free(unsafe.Pointer(cvoice))
	if rc := C.espeak_SetVoiceByName(cvoice); rc != C.EE_OK {
		return fmt.Errorf("%w %q", errUnknownVoice, opts.voice)
	}
	if rc := C.espeak_SetParameter(C.espeakRATE, C.int(opts.rate), 0); rc != C.EE_OK {
		return fmt.Errorf("espeak_SetParameter(rate=%d) failed (%d)", opts.rate, int(rc))
	}

	s := &synthesis{ctx: ctx, onBuffer: onBuffer}
	h := cgo.NewHandle(s)
	defer h.Delete()
	// A NUL would end the C string early; a space keeps rune offsets intact.
	ctext := C.CString(strings.ReplaceAll(text, "\x00", " "))
	defer C.free(unsafe.Pointer(ctext))
	rc := C.voxgate_synth(ctext, C.size_t(len(text)+1), C.uintptr_t(h))
	if s.err != nil {
		// The callback aborted mid-message; make sure nothing of it is
		// left queued for the next call.
		C.espeak_Cancel()
		return s.err
	}
	if rc != C.EE_OK {
		return fmt.Errorf("espeak_Synth failed (%d)", int(rc))
	}
	return nil
}

// goSynthCallback is eSpeak's synth callback. It runs on the thread that
// called espeak_Synth, inside synthesize. Returning 1 aborts synthesis.
//
//export goSynthCallback
func goSynthCallback(wav *C.short, n C.int, events *C.espeak_EVENT) (abort C.int) {
	var s *synthesis
	// A panic must not unwind through eSpeak's C frames.
	defer func() {
		if r := recover(); r != nil {
			if s != nil {
				s.err = fmt.Errorf("espeak callback panicked: %v", r)
			}
			abort = 1
		}
	}()
	// Every event list, even an empty one, ends with a terminator event
	// that carries the user_data given to espeak_Synth.
	s = cgo.Handle(uintptr(events.user_data)).Value().(*synthesis)
	if err := s.ctx.Err(); err != nil {
		s.err = err
		return 1
	}
	if wav == nil { // synthesis complete
		return 0
	}
	var b buffer
	if n > 0 {
		samples := unsafe.Slice((*int16)(unsafe.Pointer(wav)), int(n))
		b.pcm = make([]byte, 2*len(samples))
		for i, v := range samples {
			binary.LittleEndian.PutUint16(b.pcm[2*i:], uint16(v))
		}
	}
	for ev := events; ev._type != C.espeakEVENT_LIST_TERMINATED; ev = (*C.espeak_EVENT)(unsafe.Add(unsafe.Pointer(ev), unsafe.Sizeof(*ev))) {
		var kind eventKind
		switch ev._type {
		case C.espeakEVENT_WORD:
			kind = eventWord
		case C.espeakEVENT_SENTENCE:
			kind = eventSentence
		case C.espeakEVENT_END:
			kind = eventClause
		default:
			continue
		}
		b.events = append(b.events, event{
			kind:   kind,
			offset: max(int(ev.text_position)-1, 0),
			length: int(ev.length),
			audio:  time.Duration(ev.audio_position) * time.Millisecond,
		})
	}
	if len(b.pcm) == 0 && len(b.events) == 0 {
		return 0
	}
	if err := s.onBuffer(b); err != nil {
		s.err = err
		return 1
	}
	return 0
}

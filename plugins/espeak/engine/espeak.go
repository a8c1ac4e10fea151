package engine

/*
#cgo pkg-config: espeak-ng
#include <espeak-ng/speak_lib.h>
*/
import "C"

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// Speaking rates in words per minute, as libespeak-ng documents them for
// espeakRATE.
const (
	rateMinimum = int(C.espeakRATE_MINIMUM)
	rateMaximum = int(C.espeakRATE_MAXIMUM)
	rateNormal  = int(C.espeakRATE_NORMAL)
)

// errUnknownVoice reports a voice name libespeak-ng cannot select.
var errUnknownVoice = errors.New("unknown voice")

// library is the process's libespeak-ng, initialized once to learn the
// sample rate and list the voices. Nothing is synthesized with it: that
// happens in children of the template process (template.c), each starting
// from a library that has never synthesized.
//
// This is package-level state on purpose: libespeak-ng keeps its state in
// C globals, so there is one per process whatever Go does. It is written
// once, under once, and only read afterwards.
var library struct {
	once       sync.Once
	err        error
	sampleRate int
	voices     []voice
}

// voice is one eSpeak voice (a language definition file).
type voice struct {
	// file is the voice file's path under espeak-ng-data/voices
	// ("gmw/en-US"); espeak_SetVoiceByName selects the voice by it.
	file   string
	name   string
	gender string
	// languages are the languages the voice speaks, as eSpeak lists them:
	// the voice's own first ("en-gb"), then those it also serves ("en").
	languages []language
}

// language is one entry of a voice's languages.
type language struct {
	// code is the language tag as eSpeak writes it ("en-gb", "cmn",
	// "chr-US-Qaaa-x-west").
	code string
	// priority ranks the voice among those serving code: lower is
	// preferred (eSpeak's own voice selection uses it so).
	priority int
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
	// phonemes reads [[...]] in the text as eSpeak phoneme input
	// (sdk.MarkupESpeak).
	phonemes bool
}

// openLibrary initializes libespeak-ng once per process and lists its
// voices.
func openLibrary() error {
	library.once.Do(func() {
		// AUDIO_OUTPUT_SYNCHRONOUS: the mode the template synthesizes in,
		// so the rate reported is the rate it produces. DONT_EXIT turns a
		// missing espeak-ng-data into an error return instead of exit(1).
		rate := C.espeak_Initialize(C.AUDIO_OUTPUT_SYNCHRONOUS,
			C.int(bufferLength/time.Millisecond), nil, C.espeakINITIALIZE_DONT_EXIT)
		if rate <= 0 {
			library.err = fmt.Errorf("espeak_Initialize failed (%d): is espeak-ng-data installed?", int(rate))
			return
		}
		library.sampleRate = int(rate)
		library.voices = listVoices()
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
		file := C.GoString(v.identifier) // e.g. "gmw/en-US"
		langs := languages(v.languages)
		if file == "" || len(langs) == 0 || seen[strings.ToLower(file)] {
			continue
		}
		seen[strings.ToLower(file)] = true
		voices = append(voices, voice{
			file:      file,
			name:      C.GoString(v.name),
			gender:    genderName(int(v.gender)),
			languages: langs,
		})
	}
	return voices
}

// languages decodes an eSpeak languages field: a sequence of entries, each
// one priority byte followed by a NUL-terminated language tag, ended by an
// entry whose priority byte is 0.
func languages(field *C.char) []language {
	var out []language
	for p := unsafe.Pointer(field); p != nil && *(*C.char)(p) != 0; {
		priority := int(*(*C.uchar)(p))
		code := C.GoString((*C.char)(unsafe.Add(p, 1)))
		out = append(out, language{code: code, priority: priority})
		// Past the priority byte, the tag and its NUL.
		p = unsafe.Add(p, 1+len(code)+1)
	}
	return out
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

// decodeEvent decodes one event of a frame (type, text position, length,
// audio position; see template.c) into Go conventions. ok is false for
// the kinds of event the plugin does not use.
func decodeEvent(raw []byte) (e event, ok bool) {
	le := binary.LittleEndian
	switch C.espeak_EVENT_TYPE(le.Uint32(raw[0:])) {
	case C.espeakEVENT_WORD:
		e.kind = eventWord
	case C.espeakEVENT_SENTENCE:
		e.kind = eventSentence
	case C.espeakEVENT_END:
		e.kind = eventClause
	default:
		return event{}, false
	}
	e.offset = max(int(int32(le.Uint32(raw[4:])))-1, 0)
	e.length = int(int32(le.Uint32(raw[8:])))
	e.audio = time.Duration(int32(le.Uint32(raw[12:]))) * time.Millisecond
	return e, true
}

// engine runs syntheses, each in its own child of the template process,
// so any number may run at once without sharing state.
type engine struct {
	tmpl *template
	// renders bounds the live renderings (a child process each); slots
	// bounds those rendering at the same moment, so that CPU-bound work
	// does not oversubscribe the cores. Both are semaphores as channels,
	// so that waiting honours context cancellation.
	renders chan struct{}
	slots   chan struct{}
}

// newEngine starts the template process. maxRenders bounds the renderings
// alive at once.
func newEngine(maxRenders int) (*engine, error) {
	if err := openLibrary(); err != nil {
		return nil, err
	}
	t, err := startTemplate()
	if err != nil {
		return nil, err
	}
	if t.rate != library.sampleRate {
		t.close()
		return nil, fmt.Errorf("the template process renders at %d Hz, the library reports %d Hz", t.rate, library.sampleRate)
	}
	return &engine{tmpl: t, renders: make(chan struct{}, maxRenders), slots: make(chan struct{}, runtime.NumCPU())}, nil
}

// close stops the template process.
func (e *engine) close() { e.tmpl.close() }

// acquire takes a place in sem, or gives up when ctx ends.
func acquire(ctx context.Context, sem chan struct{}) error {
	select {
	case sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// cleanText makes text safe to hand to eSpeak as a C string: a NUL would
// end it early, and a space in its place keeps rune offsets intact.
func cleanText(text string) string {
	return strings.ReplaceAll(text, "\x00", " ")
}

// synthesize speaks text with opts and hands every buffer the synthesizer
// produces to onBuffer, in order, as soon as it exists. It returns when
// synthesis is complete, or early with the error of ctx or onBuffer.
func (e *engine) synthesize(ctx context.Context, text string, opts options, onBuffer func(buffer) error) error {
	if err := acquire(ctx, e.renders); err != nil {
		return err
	}
	defer func() { <-e.renders }()
	if err := acquire(ctx, e.slots); err != nil {
		return err
	}
	defer func() { <-e.slots }()

	r, err := startRendering(ctx, e.tmpl, cleanText(text), opts)
	if err != nil {
		return err
	}
	defer r.close()
	if err := r.grant(creditUnlimited); err != nil {
		return err
	}
	for {
		b, err := r.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if errors.Is(err, errUnknownVoice) {
			return fmt.Errorf("%w %q", errUnknownVoice, opts.voice)
		}
		if err != nil {
			return err
		}
		if len(b.pcm) == 0 && len(b.events) == 0 {
			continue
		}
		// Frames the child sent before ctx ended may still be buffered;
		// none of them is delivered after it.
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := onBuffer(b); err != nil {
			return err
		}
	}
}

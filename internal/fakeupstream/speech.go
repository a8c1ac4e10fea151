// Package fakeupstream holds what the fake provider servers under it
// (openai, elevenlabs, cartesia) share: the "speech" they render, the
// fault injection and request recording every fake offers (Control), and
// the chunked writer that streams their bodies.
//
// The fakes are the far side of the network in tests and benchmarks: they
// speak each provider's documented wire format strictly (paths, auth
// headers, JSON fields, error shapes) and answer with real audio a decoder
// accepts. They are cheap per request: audio is tiled from blocks rendered
// once when a server starts, never synthesized per call.
//
// The speech is a 440 Hz tone while a character is "spoken" and silence for
// whitespace and at both ends, CharSeconds per character divided by the
// speaking speed. Word and character timings (Speak) are exact for the
// audio the fakes return, so timestamp tests can hold plugins to them.
package fakeupstream

import (
	"math"
	"unicode"
	"unicode/utf8"
)

const (
	// CharSeconds is how long the fake speech takes per character
	// (whitespace included) at speed 1: about 16 characters a second,
	// close to natural speech.
	CharSeconds = 0.06
	// EdgeSeconds is the silence before the first and after the last
	// character.
	EdgeSeconds = 0.05
	// ToneHz is the pitch of the fake speech.
	ToneHz = 440
)

// Span is the timing of a piece of text in a clip, in seconds from its
// start.
type Span struct {
	Text       string
	Start, End float64
}

// Utterance is the fake speech for one text: its timing, from which the
// servers render audio of exactly that length.
type Utterance struct {
	// Chars has one span per character (rune) of the text, whitespace
	// included.
	Chars []Span
	// Words has one span per whitespace-separated word, from its first
	// character's start to its last character's end.
	Words []Span
	// Seconds is the length of the whole clip.
	Seconds float64
	// speech is the real speech of a Voice; nil for the tone.
	speech *recording
}

// recording is speech a Voice rendered.
type recording struct {
	samples []int16
	rate    int
}

// Speak lays out text spoken at speed (0 meaning 1).
func Speak(text string, speed float64) Utterance {
	if speed <= 0 {
		speed = 1
	}
	per := CharSeconds / speed
	u := Utterance{Chars: make([]Span, 0, utf8.RuneCountInString(text))}
	t := EdgeSeconds
	var word []rune
	var wordStart float64
	for _, r := range text {
		u.Chars = append(u.Chars, Span{Text: string(r), Start: t, End: t + per})
		if unicode.IsSpace(r) {
			if len(word) > 0 {
				u.Words = append(u.Words, Span{Text: string(word), Start: wordStart, End: t})
				word = word[:0]
			}
		} else {
			if len(word) == 0 {
				wordStart = t
			}
			word = append(word, r)
		}
		t += per
	}
	if len(word) > 0 {
		u.Words = append(u.Words, Span{Text: string(word), Start: wordStart, End: t})
	}
	u.Seconds = t + EdgeSeconds
	return u
}

// Fixed is an utterance of the given length with no text: one unbroken
// tone between the edge silences. Benchmarks use it for a body that does
// not depend on the request.
func Fixed(seconds float64) Utterance {
	return Utterance{
		Chars:   []Span{{Text: "a", Start: EdgeSeconds, End: max(seconds-EdgeSeconds, EdgeSeconds)}},
		Seconds: max(seconds, 2*EdgeSeconds),
	}
}

// frames returns the number of samples at rate covering t seconds.
func frames(t float64, rate int) int {
	return int(math.Round(t * float64(rate)))
}

// voiced is the utterance of speech a Voice rendered: its words as the
// voice timed them, each character an equal share of its word, spaces
// between words as the gaps.
func voiced(text string, samples []int16, rate int, words []Span) Utterance {
	u := Utterance{Words: words, Seconds: float64(len(samples)) / float64(rate), speech: &recording{samples: samples, rate: rate}}
	runes := []rune(text)
	k, t := 0, 0.0
	for i := 0; i < len(runes); {
		if unicode.IsSpace(runes[i]) || k >= len(words) {
			next := t
			if k < len(words) {
				next = words[k].Start
			}
			u.Chars = append(u.Chars, Span{Text: string(runes[i]), Start: t, End: max(next, t)})
			i++
			continue
		}
		j := i
		for j < len(runes) && !unicode.IsSpace(runes[j]) {
			j++
		}
		w := words[k]
		per := (w.End - w.Start) / float64(j-i)
		for c := i; c < j; c++ {
			at := w.Start + per*float64(c-i)
			u.Chars = append(u.Chars, Span{Text: string(runes[c]), Start: at, End: at + per})
		}
		t, i = w.End, j
		k++
	}
	return u
}

package testkit

import (
	"encoding/binary"
	"math"
	"strings"
	"unicode/utf8"
)

// The plugin "speaks" each word as a sine tone whose length grows with the
// word, separated by silence. That gives real, decodable audio with exact
// word timestamps and one natural chunk per word, at no cost.

const (
	nativeRate = 16000
	// wordBase and wordPerRune set a word's tone length; gap is the silence
	// after each word. At speed 1 a five-letter word takes 0.3 s.
	wordBase    = 0.1
	wordPerRune = 0.04
	gap         = 0.06
)

// word is one spoken word and where it sits in the clip, in samples.
type word struct {
	text       string
	start, end int // tone samples [start, end)
	next       int // first sample after the trailing gap
}

// layout places the words of text at rate and speed (0 means 1).
func layout(text string, rate int, speed float64) []word {
	if speed <= 0 {
		speed = 1
	}
	fields := strings.Fields(text)
	words := make([]word, len(fields))
	pos := 0
	for i, f := range fields {
		tone := int(float64(rate) * (wordBase + wordPerRune*float64(utf8.RuneCountInString(f))) / speed)
		silence := int(float64(rate) * gap / speed)
		words[i] = word{text: f, start: pos, end: pos + tone, next: pos + tone + silence}
		pos += tone + silence
	}
	return words
}

// renderWord appends the PCM (16-bit little-endian mono) of w, tone and
// trailing gap, to dst. A freq of 0 renders silence.
func renderWord(dst []byte, w word, rate int, freq float64) []byte {
	n := w.next - w.start
	if freq == 0 {
		return append(dst, make([]byte, 2*n)...)
	}
	tone := w.end - w.start
	// A 5 ms linear fade at both ends keeps the tone from clicking.
	fade := rate / 200
	for i := 0; i < n; i++ {
		var v float64
		if i < tone {
			v = 0.3 * math.Sin(2*math.Pi*freq*float64(i)/float64(rate))
			if i < fade {
				v *= float64(i) / float64(fade)
			} else if tone-i < fade {
				v *= float64(tone-i) / float64(fade)
			}
		}
		dst = binary.LittleEndian.AppendUint16(dst, uint16(int16(v*math.MaxInt16)))
	}
	return dst
}

// wavHeader returns the 44-byte RIFF header of a 16-bit mono WAV file
// holding dataBytes of PCM at rate.
func wavHeader(rate, dataBytes int) []byte {
	h := make([]byte, 0, 44)
	h = append(h, "RIFF"...)
	h = binary.LittleEndian.AppendUint32(h, uint32(36+dataBytes))
	h = append(h, "WAVEfmt "...)
	h = binary.LittleEndian.AppendUint32(h, 16)
	h = binary.LittleEndian.AppendUint16(h, 1) // PCM
	h = binary.LittleEndian.AppendUint16(h, 1) // mono
	h = binary.LittleEndian.AppendUint32(h, uint32(rate))
	h = binary.LittleEndian.AppendUint32(h, uint32(rate*2))
	h = binary.LittleEndian.AppendUint16(h, 2)
	h = binary.LittleEndian.AppendUint16(h, 16)
	h = append(h, "data"...)
	h = binary.LittleEndian.AppendUint32(h, uint32(dataBytes))
	return h
}

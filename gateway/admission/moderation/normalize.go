package moderation

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// This file turns a request's text into the forms the built-in check
// matches against. It is a hot path (every moderated request runs it once
// over up to the model's text limit), so it is hand-written as a single
// pass over the runes that appends into buffers reused across calls; no
// library offers the separator bookkeeping the matcher needs.
//
// Normalization, in order, for every rune:
//
//  1. Unicode NFKC (golang.org/x/text/unicode/norm): full-width and other
//     compatibility forms become their plain letters ("ＨＡＴＥ" -> "HATE",
//     "ﬁ" -> "fi"), and letters with combining marks are composed.
//  2. Invisible characters are dropped: format characters (category Cf:
//     ZWSP, ZWNJ, ZWJ, word joiner, soft hyphen, BOM, bidi controls, tag
//     characters), combining marks left over after composition (Mn, Me:
//     zalgo stacks, strike-through overlays, variation selectors) and the
//     Hangul fillers, which render as blanks but count as letters.
//  3. Diacritics are stripped from precomposed letters ("é" -> "e"), so
//     accented spellings of a term match it.
//  4. Letters are lower-cased (Unicode simple case mapping; final sigma is
//     folded to sigma).
//
// From the normalized runes three forms are built:
//
//   - norm: the normalized text with its separators, which the configured
//     regular expressions run over.
//   - plain: only the letters and digits, with a flag on each byte where a
//     word starts. Terms are matched here on word boundaries, and the flags
//     let the matcher see through separators inside a word
//     ("s.p.a.c.i.n.g", "s p a c i n g", "s-p-a-c-i-n-g").
//   - alt: like plain after mapping common leetspeak characters (0 -> o,
//     1 -> i, 3 -> e, 4 -> a, 5 -> s, 7 -> t, @ -> a, $ -> s) and a few
//     Cyrillic and Greek letters that look like Latin ones to the Latin
//     letter. It is only matched when the mapping changed something.

// views holds the normalized forms of one text. Its buffers are reused
// between calls through a sync.Pool, so a warm call allocates nothing.
type views struct {
	norm  []byte
	plain view
	alt   view
	// altDiffers is set when a leetspeak or look-alike mapping applied, so
	// alt differs from plain and is worth matching.
	altDiffers bool
	// it is kept here because it is too big for the stack: a pooled views
	// makes the normalizer free of allocation.
	it norm.Iter
}

// view is the letters and digits of a text with its word starts.
type view struct {
	s []byte
	// start[i] is true when a word (a run of letters and digits between
	// separators) starts at s[i].
	start []bool
	// inWord is the scan state: the previous rune was a letter or digit.
	inWord bool
}

func (v *view) reset() {
	v.s, v.start, v.inWord = v.s[:0], v.start[:0], false
}

// addByte appends one ASCII byte, like add.
func (v *view) addByte(c byte, word bool) {
	if !word {
		v.inWord = false
		return
	}
	v.s = append(v.s, c)
	v.start = append(v.start, !v.inWord)
	v.inWord = true
}

// add appends one normalized rune: letters and digits extend the current
// word, anything else ends it.
func (v *view) add(r rune, word bool) {
	if !word {
		v.inWord = false
		return
	}
	first := !v.inWord
	v.inWord = true
	if r < utf8.RuneSelf {
		v.s = append(v.s, byte(r))
		v.start = append(v.start, first)
		return
	}
	n := len(v.s)
	v.s = utf8.AppendRune(v.s, r)
	v.start = append(v.start, first)
	for i := n + 1; i < len(v.s); i++ {
		v.start = append(v.start, false)
	}
}

// boundary reports whether a word starts or ends at byte offset i.
func (v *view) boundary(i int) bool {
	return i == 0 || i == len(v.s) || v.start[i]
}

// singleAt reports whether the word starting at i is one character long.
func (v *view) singleAt(i int) bool {
	if !v.start[i] {
		return false
	}
	_, n := utf8.DecodeRune(v.s[i:])
	return v.boundary(i + n)
}

// singleBefore reports whether the word ending at i is one character long.
func (v *view) singleBefore(i int) bool {
	_, n := utf8.DecodeLastRune(v.s[:i])
	return v.start[i-n]
}

// build normalizes text into v.
func (v *views) build(text string) {
	v.norm = v.norm[:0]
	v.plain.reset()
	v.alt.reset()
	v.altDiffers = false
	if isASCII(text) {
		// ASCII is already in NFKC and has nothing to strip: skip the
		// normalizer and classify bytes through a table, which is most of
		// the cost for plain English.
		for i := 0; i < len(text); i++ {
			c := asciiTable[text[i]]
			v.norm = append(v.norm, c.lower)
			v.plain.addByte(c.lower, c.word)
			v.altDiffers = v.altDiffers || c.lookalike
		}
	} else {
		it := &v.it
		it.InitString(norm.NFKC, text)
		for !it.Done() {
			seg := it.Next()
			for len(seg) > 0 {
				r, n := utf8.DecodeRune(seg)
				seg = seg[n:]
				v.addRune(r)
			}
		}
	}
	if v.altDiffers {
		v.buildAlt()
	}
}

// addRune folds one NFKC rune and appends it to norm and plain.
func (v *views) addRune(r rune) {
	if r < utf8.RuneSelf {
		c := asciiTable[r]
		v.norm = append(v.norm, c.lower)
		v.plain.addByte(c.lower, c.word)
		v.altDiffers = v.altDiffers || c.lookalike
		return
	}
	r, keep := fold(r)
	if !keep {
		return
	}
	v.norm = utf8.AppendRune(v.norm, r)
	v.plain.add(r, isWordRune(r))
	if !v.altDiffers {
		_, v.altDiffers = lookalike(r)
	}
}

// buildAlt derives alt from norm, which holds the folded runes already.
// It runs only for texts that contain a leetspeak character or a
// look-alike letter, so ordinary text pays for one view, not two.
func (v *views) buildAlt() {
	for i := 0; i < len(v.norm); {
		if c := v.norm[i]; c < utf8.RuneSelf {
			i++
			v.alt.addByte(asciiTable[c].alt, asciiTable[c].altWord)
			continue
		}
		r, n := utf8.DecodeRune(v.norm[i:])
		i += n
		if a, ok := lookalike(r); ok {
			v.alt.add(a, true)
		} else {
			v.alt.add(r, isWordRune(r))
		}
	}
}

// asciiClass is what build needs to know about an ASCII byte.
type asciiClass struct {
	lower     byte
	word      bool
	lookalike bool
	// alt and altWord describe the lower-cased byte in the alt view.
	alt     byte
	altWord bool
}

// asciiTable classifies every ASCII byte once, at start-up.
var asciiTable = func() (t [utf8.RuneSelf]asciiClass) {
	for c := range t {
		r, _ := fold(rune(c))
		a, la := lookalike(r)
		t[c] = asciiClass{lower: byte(r), word: isWordRune(r), lookalike: la, alt: byte(a), altWord: la || isWordRune(r)}
	}
	return t
}()

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// fold lower-cases r, strips its diacritics, and reports false for runes
// that must vanish (invisible formatting and stray combining marks).
func fold(r rune) (rune, bool) {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return r, true
	}
	switch r {
	case 0x115F, 0x1160, 0x3164, 0xFFA0: // Hangul fillers
		return 0, false
	case 'ς':
		return 'σ', true
	}
	if unicode.In(r, unicode.Cf, unicode.Mn, unicode.Me) {
		return 0, false
	}
	r = stripDiacritics(r)
	return unicode.ToLower(r), true
}

// stripDiacritics returns the base letter of a precomposed letter whose
// canonical decomposition is that letter followed by combining marks
// ("é" -> "e", "ǖ" -> "u"), and r itself otherwise. Letters whose
// decomposition is not base + marks (Hangul syllables, say) are kept.
func stripDiacritics(r rune) rune {
	var buf [utf8.UTFMax]byte
	n := utf8.EncodeRune(buf[:], r)
	d := norm.NFD.Properties(buf[:n]).Decomposition()
	if len(d) == 0 {
		return r
	}
	base, size := utf8.DecodeRune(d)
	for rest := d[size:]; len(rest) > 0; {
		m, k := utf8.DecodeRune(rest)
		if !unicode.In(m, unicode.Mn, unicode.Me) {
			return r
		}
		rest = rest[k:]
	}
	return base
}

// isWordRune reports whether r belongs to a word: letters, digits and the
// spacing marks of scripts that write vowels with them.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || '0' <= r && r <= '9'
	}
	// IsLetter and IsNumber answer Latin-1 from a table; only other
	// scripts pay for the range-table searches.
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Mc, r)
}

// lookalike maps leetspeak characters and Latin look-alikes of other
// scripts to the Latin letter they stand for. It covers the common
// substitutions, not the whole Unicode confusables table: the aim is that
// trivial evasions do not pass, at no cost to ordinary text.
func lookalike(r rune) (rune, bool) {
	switch r {
	case '0':
		return 'o', true
	case '1':
		return 'i', true
	case '3':
		return 'e', true
	case '4', '@':
		return 'a', true
	case '5', '$':
		return 's', true
	case '7':
		return 't', true
	}
	if r < utf8.RuneSelf {
		return r, false
	}
	switch r {
	// Cyrillic (lower case: fold ran first).
	case 'а':
		return 'a', true
	case 'в':
		return 'b', true
	case 'е', 'ё':
		return 'e', true
	case 'к':
		return 'k', true
	case 'м':
		return 'm', true
	case 'н':
		return 'h', true
	case 'о':
		return 'o', true
	case 'р':
		return 'p', true
	case 'с':
		return 'c', true
	case 'т':
		return 't', true
	case 'у':
		return 'y', true
	case 'х':
		return 'x', true
	case 'і':
		return 'i', true
	case 'ј':
		return 'j', true
	case 'ѕ':
		return 's', true
	case 'ԁ':
		return 'd', true
	// Greek.
	case 'α':
		return 'a', true
	case 'ε':
		return 'e', true
	case 'ι':
		return 'i', true
	case 'κ':
		return 'k', true
	case 'ν':
		return 'v', true
	case 'ο':
		return 'o', true
	case 'ρ':
		return 'p', true
	case 'τ':
		return 't', true
	case 'υ':
		return 'u', true
	case 'χ':
		return 'x', true
	}
	return r, false
}

// Package phonetic checks and converts the pronunciations of phoneme
// rules: IPA and CMU/ARPAbet as callers write them, into the forms
// providers take (IPA for SSML and Cartesia, eSpeak's phoneme mnemonics).
//
// The tables are hand-written: the notations are small and fixed, and no
// maintained Go library converts between them. The IPA to eSpeak table
// is for eSpeak's English phoneme set (the mnemonics are per language);
// its test checks it against espeak-ng itself, which prints the IPA of
// the phonemes it is given.
package phonetic

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Alphabets a phoneme rule may be written in.
const (
	IPA = "ipa"
	CMU = "cmu"
)

// MaxChars bounds a pronunciation's length in characters.
const MaxChars = 300

// ipaLetters are the IPA chart's letters (pulmonic and other consonants,
// vowels, clicks, implosives), the r-coloured vowels and the ligatures
// (ʧ ʤ ʦ ʣ) people still write.
const ipaLetters = "iyɨʉɯuɪʏʊeøɘɵɤoəɛœɜɞʌɔæɐaɶɑɒɚɝ" +
	"pbtdʈɖcɟkgɡqɢʔmɱnɳɲŋɴʙrʀⱱɾɽɸβfvθðszʃʒʂʐçʝxɣχʁħʕhɦɬɮʋɹɻjɰlɭʎʟʍwɥʜʢʡɕʑɺɧɫ" +
	"ʘǀǃǂǁɓɗʄɠʛʧʤʦʣ"

// ipaMarks are the suprasegmentals, modifier letters and tone letters:
// stress, length, aspiration and the like, and the syllable and group
// breaks.
const ipaMarks = "ˈˌːˑ˞ʰʷʲˠˤⁿˡʼ˥˦˧˨˩↗↘ꜛꜜ.|‖"

// CheckIPA returns an error naming the first character of s that is not
// an IPA symbol (letters, diacritics, suprasegmentals; spaces between
// words), or nil.
func CheckIPA(s string) error {
	if strings.TrimSpace(s) == "" || utf8.RuneCountInString(s) > MaxChars {
		return fmt.Errorf("must be 1 to %d IPA characters", MaxChars)
	}
	for _, r := range s {
		switch {
		case r == ' ', strings.ContainsRune(ipaLetters, r), strings.ContainsRune(ipaMarks, r),
			unicode.Is(unicode.Mn, r) && r >= 0x300 && r <= 0x36F: // combining diacritics, tie bars
		default:
			return fmt.Errorf("%q (U+%04X) is not an IPA symbol", r, r)
		}
	}
	return nil
}

// cmuToIPA maps each ARPAbet phone (CMU Pronouncing Dictionary set) to
// IPA; vowels take a stress digit.
var cmuToIPA = map[string]string{
	"AA": "ɑ", "AE": "æ", "AH": "ʌ", "AO": "ɔ", "AW": "aʊ", "AY": "aɪ", "EH": "ɛ", "ER": "ɝ", "EY": "eɪ",
	"IH": "ɪ", "IY": "i", "OW": "oʊ", "OY": "ɔɪ", "UH": "ʊ", "UW": "u",
	"B": "b", "CH": "tʃ", "D": "d", "DH": "ð", "F": "f", "G": "ɡ", "HH": "h", "JH": "dʒ", "K": "k", "L": "l",
	"M": "m", "N": "n", "NG": "ŋ", "P": "p", "R": "ɹ", "S": "s", "SH": "ʃ", "T": "t", "TH": "θ", "V": "v",
	"W": "w", "Y": "j", "Z": "z", "ZH": "ʒ",
}

// isCMUVowel reports whether phone (without digit) is a vowel.
func isCMUVowel(phone string) bool {
	switch phone {
	case "AA", "AE", "AH", "AO", "AW", "AY", "EH", "ER", "EY", "IH", "IY", "OW", "OY", "UH", "UW":
		return true
	}
	return false
}

// CheckCMU returns an error naming the first phone of s that is not an
// ARPAbet phone, or nil. Phones are separated by spaces; a vowel may end
// in a stress digit (0 none, 1 primary, 2 secondary), a consonant not.
func CheckCMU(s string) error {
	phones := strings.Fields(s)
	if len(phones) == 0 || utf8.RuneCountInString(s) > MaxChars {
		return fmt.Errorf("must be 1 to %d characters of ARPAbet phones separated by spaces", MaxChars)
	}
	for _, p := range phones {
		base, digit := splitStress(p)
		if _, ok := cmuToIPA[base]; !ok {
			return fmt.Errorf("%q is not an ARPAbet phone (AA, AE, ... ZH; vowels with a stress digit 0, 1 or 2)", p)
		}
		if digit != "" && !isCMUVowel(base) {
			return fmt.Errorf("%q: only vowels carry a stress digit", p)
		}
		if digit != "" && (len(digit) != 1 || digit[0] < '0' || digit[0] > '2') {
			return fmt.Errorf("%q: a stress digit is 0, 1 or 2", p)
		}
	}
	return nil
}

// splitStress splits an ARPAbet phone into its upper-cased base and its
// trailing digits.
func splitStress(p string) (base, digit string) {
	i := len(p)
	for i > 0 && p[i-1] >= '0' && p[i-1] <= '9' {
		i--
	}
	return strings.ToUpper(p[:i]), p[i:]
}

// Check checks a pronunciation in alphabet.
func Check(alphabet, s string) error {
	switch alphabet {
	case IPA:
		return CheckIPA(s)
	case CMU:
		return CheckCMU(s)
	}
	return fmt.Errorf("alphabet must be %q or %q", IPA, CMU)
}

// ToIPA returns s, in alphabet, as IPA. CMU stress becomes a stress mark
// before the vowel; an unstressed AH or ER becomes ə or ɚ. s must have
// passed Check.
func ToIPA(alphabet, s string) string {
	if alphabet != CMU {
		return s
	}
	var b strings.Builder
	for _, p := range strings.Fields(s) {
		base, digit := splitStress(p)
		ipa := cmuToIPA[base]
		switch {
		case digit == "1":
			b.WriteString("ˈ")
		case digit == "2":
			b.WriteString("ˌ")
		case digit == "0" && base == "AH":
			ipa = "ə"
		case digit == "0" && base == "ER":
			ipa = "ɚ"
		}
		b.WriteString(ipa)
	}
	return b.String()
}

// espeakTable maps IPA sequences to eSpeak's English phoneme mnemonics,
// tried longest first. Vowels with and without a length mark map alike,
// as English tells them apart by quality.
var espeakTable = map[string]string{
	"iː": "i:", "i": "i", "ɪ": "I", "e": "e", "ɛ": "E", "æ": "a", "a": "a", "ɑː": "A:", "ɑ": "A:", "ɒ": "0",
	"ɔː": "O:", "ɔ": "O:", "o": "o", "oː": "o", "ʊ": "U", "uː": "u:", "u": "u:", "ʌ": "V", "ə": "@", "ɐ": "a#",
	"ɜː": "3:", "ɜ": "3:", "ɝ": "3:", "ɝː": "3:", "ɚ": "3", "eɪ": "eI", "aɪ": "aI", "ɔɪ": "OI", "aʊ": "aU", "oʊ": "oU",
	"əʊ": "oU", "ɪə": "i@", "eə": "e@", "ɛə": "e@", "ʊə": "U@", "ɑːɹ": "A@", "ɔːɹ": "O@",
	"ɪɹ": "i@3", "ɛɹ": "e@", "ʊɹ": "U@", "oːɹ": "o@", // r-coloured vowels as eSpeak's en-us speaks them
	"p": "p", "b": "b", "t": "t", "d": "d", "k": "k", "ɡ": "g", "g": "g", "f": "f", "v": "v", "θ": "T", "ð": "D",
	"s": "s", "z": "z", "ʃ": "S", "ʒ": "Z", "tʃ": "tS", "t͡ʃ": "tS", "ʧ": "tS", "dʒ": "dZ", "d͡ʒ": "dZ", "ʤ": "dZ",
	"h": "h", "m": "m", "n": "n", "ŋ": "N", "l": "l", "ɫ": "l", "ɹ": "r", "r": "r", "ɾ": "t#", "j": "j", "w": "w",
	"x": "x", "ʔ": "?", "ç": "C", "ts": "ts", "ʦ": "ts", "ɲ": "n^", "ʎ": "l^", "ʍ": "w", "ɦ": "h",
	"n̩": "n-", "l̩": "l-", "m̩": "m-",
	"ˈ": "'", "ˌ": ",", "ː": ":", ".": "", " ": " ",
}

// espeakKeys are espeakTable's keys, longest first.
var espeakKeys = func() []string {
	keys := make([]string, 0, len(espeakTable))
	for k := range espeakTable {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if len(keys[i]) != len(keys[j]) {
			return len(keys[i]) > len(keys[j])
		}
		return keys[i] < keys[j]
	})
	return keys
}()

// ToESpeak converts an IPA pronunciation to eSpeak's English phoneme
// mnemonics, for eSpeak's [[...]] phoneme input. ok is false, with the
// symbols eSpeak has no phoneme for, when the conversion would lose
// some: the caller then speaks the word another way.
func ToESpeak(ipa string) (out string, missing []string, ok bool) {
	var b strings.Builder
	for rest := ipa; rest != ""; {
		matched := false
		for _, k := range espeakKeys {
			if strings.HasPrefix(rest, k) {
				b.WriteString(espeakTable[k])
				rest = rest[len(k):]
				matched = true
				break
			}
		}
		if !matched {
			r, n := utf8.DecodeRuneInString(rest)
			missing = append(missing, string(r))
			rest = rest[n:]
		}
	}
	return b.String(), missing, len(missing) == 0
}

// Segments splits an IPA pronunciation into phonemes: a letter with the
// diacritics and modifiers that follow it, a tie-barred or common
// two-letter affricate or diphthong as one, a stress mark on its own.
// Cartesia takes custom pronunciations as such segments joined by "|".
func Segments(ipa string) []string {
	var out []string
	runes := []rune(strings.ReplaceAll(ipa, " ", ""))
	for i := 0; i < len(runes); {
		r := runes[i]
		if r == '.' || r == '|' || r == '‖' {
			i++
			continue
		}
		if r == 'ˈ' || r == 'ˌ' {
			out = append(out, string(r))
			i++
			continue
		}
		j := i + 1
		if j < len(runes) && isPair(r, runes[j]) {
			j++
		}
		for j < len(runes) && (unicode.Is(unicode.Mn, runes[j]) || strings.ContainsRune("ːˑ˞ʰʷʲˠˤⁿˡʼ", runes[j])) {
			j++
			if runes[j-1] == '\u0361' || runes[j-1] == '\u035C' { // a tie bar joins the next letter
				if j < len(runes) {
					j++
				}
			}
		}
		out = append(out, string(runes[i:j]))
		i = j
	}
	return out
}

// isPair reports whether a and b are an English affricate or diphthong
// written without a tie bar.
func isPair(a, b rune) bool {
	switch string([]rune{a, b}) {
	case "tʃ", "dʒ", "aɪ", "aʊ", "eɪ", "oʊ", "ɔɪ", "əʊ":
		return true
	}
	return false
}

package engine

import (
	"strings"

	"github.com/voxgate/voxgate/sdk"
)

// voiceTable holds every name a request may give an eSpeak voice by, and
// the provider's voice list, which has one entry per name: the list is
// what the gateway checks a saved voice's voice_id against, so a name the
// plugin accepts must be in it.
//
// The names, each lower-cased, in the order they are claimed (a name
// claimed once is not claimed again):
//  1. each voice's own language, the first of its languages, as
//     `espeak-ng --voices` shows it ("en-gb", "en-us", "de", "fr-fr");
//  2. each voice's file name ("en", "fr", "yue-latn-jyutping"), the ids
//     this plugin used to list, so saved voices keep working;
//  3. the other languages voices serve ("en", "zh", "es-mx"), each for the
//     voice eSpeak prefers for it (the lowest priority number, then the
//     first listed), as `espeak-ng -v en` picks one.
type voiceTable struct {
	byName map[string]*voice
	list   []sdk.Voice
}

// newVoiceTable builds the table of voices, in eSpeak's order.
func newVoiceTable(voices []voice) *voiceTable {
	t := &voiceTable{byName: make(map[string]*voice)}
	claim := func(name string, v *voice) {
		name = strings.ToLower(name)
		if name == "" || t.byName[name] != nil {
			return
		}
		t.byName[name] = v
		t.list = append(t.list, sdk.Voice{ID: name, Name: v.name, Language: v.languages[0].code, Gender: v.gender})
	}
	for i := range voices {
		claim(voices[i].languages[0].code, &voices[i])
	}
	for i := range voices {
		claim(voices[i].file[strings.LastIndexByte(voices[i].file, '/')+1:], &voices[i])
	}
	// The voice eSpeak prefers for each further language.
	best := make(map[string]*voice)
	var order []string
	for i := range voices {
		v := &voices[i]
		for _, l := range v.languages[1:] {
			code := strings.ToLower(l.code)
			b, seen := best[code]
			if !seen {
				order = append(order, code)
			}
			if !seen || l.priority < priorityFor(b, code) {
				best[code] = v
			}
		}
	}
	for _, code := range order {
		claim(code, best[code])
	}
	return t
}

// priorityFor is v's priority for the language code.
func priorityFor(v *voice, code string) int {
	for _, l := range v.languages {
		if strings.EqualFold(l.code, code) {
			return l.priority
		}
	}
	return 1 << 30
}

// resolve returns the voice a request's voice name selects: a name of the
// table, in any case, optionally followed by an eSpeak variant ("en-gb+f3").
// variant is the part after "+", "" if none.
func (t *voiceTable) resolve(name string) (v *voice, variant string, ok bool) {
	base, variant, hasVariant := strings.Cut(name, "+")
	v = t.byName[strings.ToLower(base)]
	if v == nil || (hasVariant && !validVariant(variant)) {
		return nil, "", false
	}
	return v, variant, true
}

// validVariant reports whether s can name an eSpeak variant ("f3",
// "klatt2", "whisper"). Checking the characters keeps arbitrary strings
// (file paths among them: eSpeak loads a variant by file name) away from
// the library.
func validVariant(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

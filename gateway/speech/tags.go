package speech

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/voxgate/voxgate/sdk"
)

// tagPattern matches an audio tag: a short bracketed direction such as
// "[laughs]" or "[whispers]", on one line. The public client strips the
// same bracketed spans on its direct paths.
var tagPattern = regexp.MustCompile(`\[[^\[\]\n]{1,64}\]`)

// applyTags returns text as model should receive it: the tags model
// performs (sdk.Model.AudioTags) kept, every other tag removed with one
// warning each, in the public client's wording. name returns the model as
// "provider/model".
//
// Hot path (every request): a text without '[' holds no tag, and is not
// given to the regular expression; name, the model's for the warnings, is
// made only for one.
func applyTags(text string, m *sdk.Model, name func() string) (string, []string) {
	if strings.IndexByte(text, '[') < 0 {
		return text, nil
	}
	spans := tagPattern.FindAllStringIndex(text, -1)
	if len(spans) == 0 {
		return text, nil
	}
	var warnings []string
	for _, sp := range spans {
		if tag := text[sp[0]:sp[1]]; !performs(m, tag) {
			warnings = append(warnings, fmt.Sprintf("Audio tag %s is not supported by %s and was removed.", tag, name()))
		}
	}
	// Remove from the last to the first, so earlier spans stay valid.
	out := text
	for i := len(spans) - 1; i >= 0; i-- {
		sp := spans[i]
		if performs(m, text[sp[0]:sp[1]]) {
			continue
		}
		before, after := out[:sp[0]], out[sp[1]:]
		b, a := strings.TrimRight(before, " \t"), strings.TrimLeft(after, " \t")
		// One space where the tag and the spaces around it were; none
		// at either end of a line or before punctuation.
		sep := ""
		if b != "" && a != "" && (len(b) < len(before) || len(a) < len(after)) &&
			!startsWithPunct(a) && !strings.HasSuffix(b, "\n") && !strings.HasPrefix(a, "\n") {
			sep = " "
		}
		out = b + sep + a
	}
	return strings.TrimSpace(out), warnings
}

func startsWithPunct(s string) bool {
	for _, r := range s {
		return isPunctuation(r) && r != '['
	}
	return false
}

// performs reports whether m performs tag rather than reading it out.
func performs(m *sdk.Model, tag string) bool {
	inner := strings.ToLower(strings.TrimSpace(tag[1 : len(tag)-1]))
	return slices.Contains(m.AudioTags, sdk.AnyAudioTag) || slices.Contains(m.AudioTags, inner)
}

// withoutTags returns text with every audio tag removed: what is spoken
// as words, for references, transcripts and word lists.
func withoutTags(text string) string {
	if !strings.Contains(text, "[") {
		return text
	}
	return strings.Join(strings.Fields(tagPattern.ReplaceAllString(text, " ")), " ")
}

// dropTagWords removes timestamps of audio tags, which a provider that
// performs them may report as words: a tag is never a spoken word.
func dropTagWords(ts []sdk.WordTimestamp) []sdk.WordTimestamp {
	out := ts[:0]
	for _, w := range ts {
		t := strings.TrimSpace(w.Text)
		if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
			continue
		}
		out = append(out, w)
	}
	return out
}

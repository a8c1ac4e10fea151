package jobs

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/voxgate/voxgate/gateway/store"
)

// Chunking. A job's text is cut when the job is made, once: the chunks
// are what the worker renders, checkpoints and never renders again, so
// they must not depend on anything that may change while the job waits.
// A chunk is whole paragraphs where they fit in the limit (the voice
// model's longest text, capped by jobs.chunk_chars), else whole
// sentences, else words; never a word cut in two unless a single word is
// longer than the limit. Paragraphs of another chapter or speaker start a
// new chunk.

// Chapter is a part of a job's text that starts at a Markdown heading
// (or the text's start, before any heading).
type Chapter struct {
	// Title is the heading's text ("" for the part before any heading).
	Title string `json:"title"`
}

// SplitOptions say how Split reads a text.
type SplitOptions struct {
	// Markdown reads headings (# to ######) as chapter starts and drops
	// emphasis, link and list markup, which is not to be spoken.
	Markdown bool
	// Limit is the most characters of one chunk.
	Limit int
	// Labels are the speaker labels and chapter titles that have a voice
	// of their own: a paragraph that starts with "Label: " is spoken by
	// label's voice (the label is not spoken); a chapter whose title is a
	// label, by that voice unless its paragraphs name another.
	Labels map[string]bool
}

// Split cuts text into chapters and chunks (Index in order from 0). A
// text with no heading has one chapter.
func Split(text string, o SplitOptions) ([]Chapter, []store.JobChunk) {
	limit := max(o.Limit, 16)
	chapters := []Chapter{{}}
	var chunks []store.JobChunk
	var cur strings.Builder
	curVoice, chapVoice := "", ""
	curChapter := 0
	flush := func() {
		if t := strings.TrimSpace(cur.String()); t != "" {
			chunks = append(chunks, store.JobChunk{Index: len(chunks), Chapter: curChapter, Voice: curVoice, Text: t})
		}
		cur.Reset()
	}
	add := func(para, voice string, chapter int) {
		n := utf8.RuneCountInString(para)
		if chapter != curChapter || voice != curVoice || utf8.RuneCountInString(cur.String())+2+n > limit {
			flush()
			curChapter, curVoice = chapter, voice
		}
		if n <= limit {
			if cur.Len() > 0 {
				cur.WriteString("\n\n")
			}
			cur.WriteString(para)
			return
		}
		for _, piece := range cutLong(para, limit) {
			flush()
			cur.WriteString(piece)
		}
	}
	for _, para := range paragraphs(text, o.Markdown) {
		if o.Markdown {
			if title, ok := heading(para); ok {
				title = strings.TrimSpace(plainMarkdown(title))
				flush()
				if len(chunks) > 0 || curChapter > 0 || chapters[0].Title != "" {
					chapters = append(chapters, Chapter{Title: title})
				} else {
					chapters[0].Title = title
				}
				curChapter = len(chapters) - 1
				chapVoice = ""
				if o.Labels[title] {
					chapVoice = title
				}
				add(title+".", chapVoice, curChapter)
				continue
			}
			para = plainMarkdown(para)
			if strings.TrimSpace(para) == "" {
				continue
			}
		}
		voice := chapVoice
		if label, rest, ok := strings.Cut(para, ":"); ok && o.Labels[strings.TrimSpace(label)] && strings.TrimSpace(rest) != "" {
			voice, para = strings.TrimSpace(label), strings.TrimSpace(rest)
		}
		add(para, voice, curChapter)
	}
	flush()
	return chapters, chunks
}

// paragraphs returns text's paragraphs: runs of lines between blank
// lines, each line's ends trimmed; in Markdown, a heading line is a
// paragraph of its own and list and quote markers go.
func paragraphs(text string, markdown bool) []string {
	var out []string
	var cur []string
	end := func() {
		if len(cur) > 0 {
			out = append(out, strings.Join(cur, " "))
			cur = nil
		}
	}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if markdown && !strings.HasPrefix(line, "#") {
			line = strings.TrimSpace(mdListItem.ReplaceAllString(line, ""))
		}
		switch {
		case line == "":
			end()
		case markdown && strings.HasPrefix(line, "#"):
			end()
			out = append(out, line)
		default:
			cur = append(cur, line)
		}
	}
	end()
	return out
}

// heading returns the title of a Markdown ATX heading ("## Title").
func heading(para string) (string, bool) {
	n := 0
	for n < len(para) && para[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n == len(para) || para[n] != ' ' {
		return "", false
	}
	t := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(para[n:]), "#"))
	return t, t != ""
}

var (
	mdLink     = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	mdEmphasis = regexp.MustCompile("[*_`~]{1,3}")
	mdListItem = regexp.MustCompile(`^(\s*([-*+]|\d+[.)])\s+|>\s*)+`)
)

// plainMarkdown drops the Markdown markup a listener should not hear:
// links keep their text, emphasis and code marks go, as do quote and list
// markers at the start.
func plainMarkdown(para string) string {
	para = mdListItem.ReplaceAllString(para, "")
	para = mdLink.ReplaceAllString(para, "$1")
	return mdEmphasis.ReplaceAllString(para, "")
}

// cutLong cuts a paragraph longer than limit at sentence ends, then at
// clause ends and spaces, into pieces of at most limit characters.
func cutLong(para string, limit int) []string {
	var out []string
	for utf8.RuneCountInString(para) > limit {
		at := cutPoint(para, limit)
		out = append(out, strings.TrimSpace(para[:at]))
		para = strings.TrimSpace(para[at:])
	}
	if para != "" {
		out = append(out, para)
	}
	return out
}

// cutPoint returns the byte offset to cut s at so that s[:at] holds at
// most limit characters: after the last sentence end in range, else the
// last clause end, else the last space, else at limit characters.
func cutPoint(s string, limit int) int {
	sentence, clause, space, n, hard := -1, -1, -1, 0, len(s)
	for i, r := range s {
		if n == limit {
			hard = i
			break
		}
		n++
		next := i + utf8.RuneLen(r)
		followedBySpace := next >= len(s) || s[next] == ' ' || s[next] == '\n'
		switch {
		case strings.ContainsRune(".!?…。！？", r) && followedBySpace:
			sentence = next
		case strings.ContainsRune(",;:—", r) && followedBySpace:
			clause = next
		case unicode.IsSpace(r):
			space = i
		}
	}
	for _, at := range []int{sentence, clause, space} {
		if at > 0 {
			return at
		}
	}
	return hard
}

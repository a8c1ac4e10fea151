package jobs

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplit(t *testing.T) {
	long := strings.Repeat("This sentence is eight words long, give or take. ", 20)
	tests := []struct {
		name         string
		text         string
		o            SplitOptions
		wantChapters []string
		wantChunks   []string // text, with voice as "voice|" prefix when set
	}{
		{"paragraphs packed to the limit", "One.\n\nTwo.\n\nThree is longer.", SplitOptions{Limit: 12},
			[]string{""}, []string{"One.\n\nTwo.", "Three is longer."}},
		{"lines of a paragraph joined", "A line\nand its next.\n\n\nB.", SplitOptions{Limit: 100},
			[]string{""}, []string{"A line and its next.\n\nB."}},
		{"headings start chapters and are spoken", "# Part one\n\nIt begins.\n\n## Part *two*\nIt ends.", SplitOptions{Markdown: true, Limit: 100},
			[]string{"Part one", "Part two"}, []string{"Part one.\n\nIt begins.", "Part two.\n\nIt ends."}},
		{"text before the first heading is a chapter", "Preface.\n\n# One\n\nBody.", SplitOptions{Markdown: true, Limit: 100},
			[]string{"", "One"}, []string{"Preface.", "One.\n\nBody."}},
		{"headings are text in plain text", "# Not a heading\n\nBody.", SplitOptions{Limit: 100},
			[]string{""}, []string{"# Not a heading\n\nBody."}},
		{"markdown markup dropped", "- a [link](http://x) and **bold** `code`\n> quoted", SplitOptions{Markdown: true, Limit: 100},
			[]string{""}, []string{"a link and bold code quoted"}},
		{"speaker labels switch voices", "ANNA: Hello.\n\nBEN: Hi.\n\nANNA: Bye.\n\nNarration.\n\nNobody: here", SplitOptions{Limit: 100, Labels: map[string]bool{"ANNA": true, "BEN": true}},
			[]string{""}, []string{"ANNA|Hello.", "BEN|Hi.", "ANNA|Bye.", "Narration.\n\nNobody: here"}},
		{"a chapter titled like a label takes its voice", "# ANNA\n\nMine.\n\n# Other\n\nTheirs.", SplitOptions{Markdown: true, Limit: 100, Labels: map[string]bool{"ANNA": true}},
			[]string{"ANNA", "Other"}, []string{"ANNA|ANNA.\n\nMine.", "Other.\n\nTheirs."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chapters, chunks := Split(tt.text, tt.o)
			var titles []string
			for _, c := range chapters {
				titles = append(titles, c.Title)
			}
			if strings.Join(titles, "|") != strings.Join(tt.wantChapters, "|") {
				t.Errorf("chapters %q, want %q", titles, tt.wantChapters)
			}
			var got []string
			for i, c := range chunks {
				if c.Index != i {
					t.Errorf("chunk %d has index %d", i, c.Index)
				}
				s := c.Text
				if c.Voice != "" {
					s = c.Voice + "|" + s
				}
				got = append(got, s)
			}
			if strings.Join(got, "\x00") != strings.Join(tt.wantChunks, "\x00") {
				t.Errorf("chunks %q, want %q", got, tt.wantChunks)
			}
		})
	}
	t.Run("long paragraphs cut at sentence ends within the limit", func(t *testing.T) {
		_, chunks := Split(long+"\n\n"+strings.Repeat("x", 250), SplitOptions{Limit: 120})
		var joined []string
		for _, c := range chunks {
			if n := utf8.RuneCountInString(c.Text); n > 120 {
				t.Errorf("chunk of %d characters: %q", n, c.Text)
			}
			if !strings.HasPrefix(c.Text, "x") && !strings.HasSuffix(c.Text, "take.") {
				t.Errorf("chunk not cut at a sentence end: %q", c.Text)
			}
			joined = append(joined, c.Text)
		}
		if got, want := strings.Join(strings.Fields(strings.Join(joined, " ")), ""), strings.Join(strings.Fields(long+strings.Repeat("x", 250)), ""); got != want {
			t.Error("the chunks do not add up to the text")
		}
	})
}

func TestCutPointPrefersSentencesThenClausesThenSpaces(t *testing.T) {
	for _, tt := range []struct{ s, want string }{
		{"One two. Three four, five six", "One two."},
		{"One two, three four five six", "One two,"},
		{"One two three four five six", "One two three"},
		{"Onetwothreefourfivesix", "Onetwothreefour"},
	} {
		if got := tt.s[:cutPoint(tt.s, 15)]; got != tt.want {
			t.Errorf("cutPoint(%q) cuts %q, want %q", tt.s, got, tt.want)
		}
	}
}

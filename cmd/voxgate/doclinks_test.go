package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestDocLinks checks every relative link of README.md and docs/*.md: the
// file (or directory) it names exists, and its #anchor, if any, is a
// heading of that markdown file, as GitHub names headings. Moving a
// section from one page to another must bring its links along.
func TestDocLinks(t *testing.T) {
	docs, _ := filepath.Glob("../../docs/*.md")
	docs = append(docs, "../../README.md")
	anchors := map[string]map[string]bool{} // by cleaned path
	headingsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := headingAnchors(t, path)
		anchors[path] = a
		return a
	}
	var n int
	for _, doc := range docs {
		for _, l := range markdownLinks(t, doc) {
			n++
			target, frag, _ := strings.Cut(l.target, "#")
			where := fmt.Sprintf("%s:%d: link %q", doc, l.line, l.target)
			file := filepath.Clean(doc)
			if target != "" {
				p, err := url.PathUnescape(target)
				if err != nil {
					t.Errorf("%s: %v", where, err)
					continue
				}
				file = filepath.Join(filepath.Dir(doc), p)
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s: no such file %s", where, file)
					continue
				}
			}
			if frag == "" {
				continue
			}
			if !strings.HasSuffix(file, ".md") {
				t.Errorf("%s: an anchor into %s, which is not markdown", where, file)
				continue
			}
			if !headingsOf(file)[frag] {
				t.Errorf("%s: %s has no heading with anchor #%s", where, file, frag)
			}
		}
	}
	if n < 50 {
		t.Fatalf("found only %d links in README.md and docs/; the scan is broken", n)
	}
}

func TestHeadingAnchor(t *testing.T) {
	tests := []struct{ heading, want string }{
		{"Other APIs: OpenAI and ElevenLabs", "other-apis-openai-and-elevenlabs"},
		{"One request's path", "one-requests-path"},
		{"`gateway/` by role", "gateway-by-role"},
		{"PostgreSQL (or the bbolt file) away", "postgresql-or-the-bbolt-file-away"},
		{"Decision: an optional bidirectional RPC, `sdk.InputStreamer`", "decision-an-optional-bidirectional-rpc-sdkinputstreamer"},
		{"A full disk (bbolt)", "a-full-disk-bbolt"},
		{"[Linked](x.md) heading", "linked-heading"},
		{"snake_case stays", "snake_case-stays"},
		{"Größe ändern", "größe-ändern"},
	}
	for _, tt := range tests {
		if got := headingAnchor(tt.heading); got != tt.want {
			t.Errorf("headingAnchor(%q) = %q, want %q", tt.heading, got, tt.want)
		}
	}
}

// mdLink is one link of a markdown file.
type mdLink struct {
	line   int
	target string
}

var (
	// inlineLink matches the destination of an inline link or image,
	// `](target)` or `](target "title")`; link texts may span lines, their
	// destinations do not in our documents.
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refLink matches a reference definition, `[name]: target`.
	refLink = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$`)
	// codeSpan matches an inline code span, whose text is not markdown.
	codeSpan = regexp.MustCompile("``[^`]+(?:`[^`]+)*``|`[^`]+`")
	heading  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	// linkText keeps only the text of a link or image in a heading.
	linkText = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// markdownLinks returns the relative links of a markdown file, outside
// code blocks and code spans. Hand-written rather than a markdown parser:
// the module has none among its dependencies, and inline links with
// one-line destinations are all our documents use.
func markdownLinks(t *testing.T, path string) []mdLink {
	t.Helper()
	var out []mdLink
	forProse(t, path, func(n int, l string) {
		l = codeSpan.ReplaceAllString(l, "")
		var targets []string
		for _, m := range inlineLink.FindAllStringSubmatch(l, -1) {
			targets = append(targets, m[1])
		}
		if m := refLink.FindStringSubmatch(l); m != nil {
			targets = append(targets, m[1])
		}
		for _, target := range targets {
			if u, err := url.Parse(target); err == nil && (u.Scheme != "" || u.Host != "") {
				continue // absolute: http(s), mailto
			}
			out = append(out, mdLink{n, target})
		}
	})
	return out
}

// headingAnchors returns the anchors GitHub gives the headings of a
// markdown file.
func headingAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	seen := map[string]int{}
	forProse(t, path, func(_ int, l string) {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			return
		}
		a := headingAnchor(m[1])
		// A repeated heading gets -1, -2, ... as GitHub numbers them.
		if k := seen[a]; k > 0 {
			out[fmt.Sprintf("%s-%d", a, k)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	})
	return out
}

// headingAnchor is GitHub's anchor of a heading: its text as rendered,
// lowercased, with every character other than a letter, a digit, a space,
// "-" or "_" removed and spaces made hyphens.
func headingAnchor(h string) string {
	h = linkText.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// forProse calls fn with each line of a markdown file outside fenced code
// blocks, numbered from 1.
func forProse(t *testing.T, path string, fn func(n int, line string)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fence := ""
	for i, l := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(l)
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
		case fence != "" && strings.HasPrefix(trimmed, fence):
			fence = ""
		case fence == "":
			fn(i+1, l)
		}
	}
}

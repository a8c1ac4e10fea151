package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsCommandsRun reads every shell example in README.md and docs/
// that runs the binary, and checks it works as written from the
// repository root: the binary is bin/voxgate (make build puts it there;
// a bare `voxgate` is not on PATH), and its command and flags exist
// (each line is run with --help appended, which fails on an unknown
// command or flag).
func TestDocsCommandsRun(t *testing.T) {
	docs, _ := filepath.Glob("../../docs/*.md")
	docs = append(docs, "../../README.md")
	bare := regexp.MustCompile(`(^|[|;&]\s*|\$\(\s*)voxgate\s`)
	var n int
	for _, doc := range docs {
		for _, ex := range shellLines(t, doc) {
			if bare.MatchString(ex.text) {
				t.Errorf("%s:%d runs `voxgate`, which is not on PATH after `make build`; write bin/voxgate:\n  %s", doc, ex.line, ex.text)
				continue
			}
			i := strings.Index(ex.text, "bin/voxgate ")
			if i < 0 {
				continue
			}
			cmd := ex.text[i+len("bin/voxgate "):]
			for _, cut := range []string{" #", " |", ">", " &&"} {
				if j := strings.Index(cmd, cut); j >= 0 {
					cmd = cmd[:j]
				}
			}
			args := append(strings.Fields(cmd), "--help")
			n++
			if out, stderr, code := cli(t, args...); code != 0 {
				t.Errorf("%s:%d: `bin/voxgate %s` does not parse (exit %d): %s%s", doc, ex.line, cmd, code, out, stderr)
			}
		}
	}
	if n < 5 {
		t.Fatalf("found only %d bin/voxgate examples in the docs; the scan is broken", n)
	}
}

type shellLine struct {
	line int
	text string
}

// shellLines returns the lines of a markdown file's ```sh blocks.
func shellLines(t *testing.T, path string) []shellLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []shellLine
	in := false
	sc := bufio.NewScanner(f)
	for i := 1; sc.Scan(); i++ {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "```"):
			in = !in && (l == "```sh" || l == "```bash" || l == "```shell")
		case in:
			out = append(out, shellLine{i, strings.TrimSpace(l)})
		}
	}
	return out
}

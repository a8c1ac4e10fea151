package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/testenv"
)

// TestReadmeSnippets runs the README's examples of the three APIs as a
// reader copies them, against a gateway started from the committed
// gateway.yaml on a fresh data directory, with the development key that
// start prints: every curl block as a bash script, every JavaScript block
// with node and the official openai and @elevenlabs/elevenlabs-js SDKs
// (pinned in test/sdkclients, installed by `make test`). Only the address
// changes (the gateway listens on a free port, not 8080), and the
// `export VOXGATE_KEY=vxk_...` placeholder line is left out: the test sets
// the variable. Each example must exit 0 and leave audio files behind that
// ffprobe decodes; an answer with a problem body instead of audio fails
// (curl without --fail exits 0 on a 422, so the files are what is judged).
func TestReadmeSnippets(t *testing.T) {
	ffprobe := testenv.NeedTool(t, "ffprobe")
	bash := testenv.NeedTool(t, "bash")
	testenv.NeedTool(t, "curl")
	blocks := codeBlocks(t, "../../README.md")

	// The committed gateway.yaml as it is, but for the plugins' directory:
	// the plugins `make build` put where VOXGATE_BIN_DIR says.
	committed := readFile(t, "../../gateway.yaml")
	const pluginsLine = "  dir: ./bin/plugins"
	if !strings.Contains(committed, pluginsLine+"\n") {
		t.Fatalf("gateway.yaml has no %q line to point at the built plugins", pluginsLine)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(cfg, []byte(strings.Replace(committed, pluginsLine+"\n", "  dir: "+pluginsDir()+"\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, cfg, "--data", filepath.Join(dir, "data", "voxgate.db"))
	key := regexp.MustCompile(`vxk_[A-Za-z0-9_-]+`).FindString(s.banner())
	if key == "" {
		t.Fatalf("the committed gateway.yaml printed no development key: %q", s.stdout.String())
	}
	local := strings.NewReplacer("http://127.0.0.1:8080", "http://"+s.addr, "127.0.0.1:8080", s.addr, "localhost:8080", s.addr)
	env := append(os.Environ(), "VOXGATE_KEY="+key)

	// The README must keep an example of each API: voxgate's own body,
	// OpenAI's (told apart by "input"), ElevenLabs' (under /elevenlabs),
	// and each official SDK.
	covers := map[string]*regexp.Regexp{
		"curl, voxgate's own API": regexp.MustCompile(`/v1/audio/speech[^\n]*[\s\S]*"text"`),
		"curl, OpenAI's API":      regexp.MustCompile(`/v1/audio/speech[^\n]*[\s\S]*"input"`),
		"curl, ElevenLabs' API":   regexp.MustCompile(`/elevenlabs/v1/text-to-speech/`),
		"the OpenAI SDK":          regexp.MustCompile(`from "openai"`),
		"the ElevenLabs SDK":      regexp.MustCompile(`from "@elevenlabs/elevenlabs-js"`),
	}
	found := map[string]bool{}
	var ran int
	for _, b := range blocks {
		var run func(t *testing.T, work string)
		switch {
		case isShell(b.lang) && strings.Contains(b.text, "curl "):
			run = func(t *testing.T, work string) {
				var script strings.Builder
				script.WriteString("set -euo pipefail\n")
				for _, l := range strings.Split(b.text, "\n") {
					if !strings.HasPrefix(strings.TrimSpace(l), "export VOXGATE_KEY=") {
						script.WriteString(local.Replace(l) + "\n")
					}
				}
				runIn(t, work, env, bash, "-c", script.String())
			}
		case b.lang == "js" || b.lang == "javascript" || b.lang == "mjs":
			run = func(t *testing.T, work string) {
				node := testenv.NeedTool(t, "node")
				modules, _ := filepath.Abs("../../test/sdkclients/node_modules")
				for _, pkg := range []string{"openai", "@elevenlabs/elevenlabs-js"} {
					if _, err := os.Stat(filepath.Join(modules, pkg)); err != nil {
						if os.Getenv("CI") != "" {
							t.Fatalf("test/sdkclients/node_modules lacks %s (make test installs it)", pkg)
						}
						t.Skipf("test/sdkclients/node_modules lacks %s: run `make test`", pkg)
					}
				}
				// The SDKs as the reader's `npm install` would place them.
				if err := os.Symlink(modules, filepath.Join(work, "node_modules")); err != nil {
					t.Fatal(err)
				}
				script := filepath.Join(work, "snippet.mjs")
				if err := os.WriteFile(script, []byte(local.Replace(b.text)), 0o600); err != nil {
					t.Fatal(err)
				}
				runIn(t, work, env, node, script)
				if err := os.Remove(script); err != nil {
					t.Fatal(err)
				}
			}
		case b.lang == "python" || b.lang == "py":
			t.Errorf("README.md:%d shows a Python example, which this test cannot run here (no Python SDKs installed); keep the README's examples to curl and JavaScript", b.line)
			continue
		default:
			continue
		}
		for what, re := range covers {
			if re.MatchString(b.text) {
				found[what] = true
			}
		}
		ran++
		t.Run(fmt.Sprintf("README.md:%d %s", b.line, b.lang), func(t *testing.T) {
			work := t.TempDir()
			run(t, work)
			entries, err := os.ReadDir(work)
			if err != nil {
				t.Fatal(err)
			}
			var files int
			for _, e := range entries {
				if e.Name() == "node_modules" {
					continue
				}
				files++
				checkAudio(t, ffprobe, filepath.Join(work, e.Name()))
			}
			if files == 0 {
				t.Errorf("the example wrote no file; write the audio with -o or writeFile so that it can be checked:\n%s", b.text)
			}
		})
	}
	for what := range covers {
		if !found[what] {
			t.Errorf("the README has no runnable example of %s", what)
		}
	}
	if ran == 0 {
		t.Fatal("found no curl or JavaScript example in README.md; the scan is broken")
	}
}

// runIn runs a command in dir, failing the test with its output when it
// does not exit 0.
func runIn(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", filepath.Base(name), err, out)
	}
}

// checkAudio has ffprobe read a file the example wrote: it must hold
// audio of some length, not a problem body.
func checkAudio(t *testing.T, ffprobe, path string) {
	t.Helper()
	out, err := exec.Command(ffprobe, "-v", "error", "-show_entries", "stream=codec_type:format=duration", "-of", "json", path).Output()
	var p struct {
		Streams []struct {
			CodecType string `json:"codec_type"`
		} `json:"streams"`
		Format struct {
			Duration string `json:"duration"`
		} `json:"format"`
	}
	if err == nil {
		err = json.Unmarshal(out, &p)
	}
	seconds, _ := strconv.ParseFloat(p.Format.Duration, 64)
	if err != nil || len(p.Streams) == 0 || p.Streams[0].CodecType != "audio" || seconds <= 0 {
		body, _ := os.ReadFile(path)
		t.Errorf("%s is not audio (ffprobe: %v %s); it holds:\n%.300s", filepath.Base(path), err, out, body)
	}
}

func isShell(lang string) bool { return lang == "sh" || lang == "bash" || lang == "shell" }

// codeBlock is a fenced code block of a markdown file.
type codeBlock struct {
	lang string
	// line is the line of the opening fence.
	line int
	text string
}

// codeBlocks returns a markdown file's fenced code blocks. A hand-written
// scan rather than a markdown parser: the module has none among its
// dependencies, and fences of three backticks at the start of a line are
// all our documents use.
func codeBlocks(t *testing.T, path string) []codeBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out  []codeBlock
		cur  *codeBlock
		text strings.Builder
	)
	sc := bufio.NewScanner(f)
	for i := 1; sc.Scan(); i++ {
		l := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(l, "```"):
			cur = &codeBlock{lang: strings.TrimSpace(strings.TrimPrefix(l, "```")), line: i}
			text.Reset()
		case cur != nil && strings.TrimSpace(l) == "```":
			cur.text = text.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			text.WriteString(l + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

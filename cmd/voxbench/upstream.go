package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
)

// The fakes of OpenAI's speech API run in a child process of their own
// (this binary, re-run as `voxbench fake-upstream`): a provider is never in
// its client's process, and on a shared 2-core machine the hand-over
// between processes (a wake-up of the other side) is a large part of a
// loopback request. With the fakes in the load generator's process the
// direct path would pay none of it while the gateway's upstream leg pays
// it all, so the direct baseline would be cheaper than any real provider.

// fakeUpstreamCmd is the hidden subcommand that serves the fakes.
const fakeUpstreamCmd = "fake-upstream"

// upstreamURLs are the roots of the fakes, e.g. http://127.0.0.1:41234
// (the API is under /v1).
type upstreamURLs struct {
	// Clip answers every request with the same ClipSeconds clip, written
	// in ClipChunk pieces without pauses, in the format asked (pcm, wav,
	// or mp3, OpenAI's default: the fake's MP3 tone, 44.1 kHz 64 kbit/s).
	Clip string `json:"clip"`
	// Small is Clip with a SmallClipSeconds clip (32,000 bytes of PCM).
	Small string `json:"small"`
	// Eleven is a fake of ElevenLabs' API answering a ClipSeconds clip
	// (mp3 or pcm_<rate>, as output_format asks) in ClipChunk pieces.
	Eleven string `json:"elevenlabs"`
	// Stream answers with audio as long as the text (fakeupstream.Speak),
	// in StreamChunk pieces with StreamDelay between them.
	Stream string `json:"stream"`
	// Live is Stream at real-time pace (ManyStreamsDelay between chunks),
	// for the concurrent-streams phase.
	Live string `json:"live"`
}

// upstreams is the running fake-upstream process.
type upstreams struct {
	upstreamURLs
	*child
}

// startUpstreams starts the fake-upstream process and waits for its URLs.
func startUpstreams(p plan) (*upstreams, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return startUpstreamsWith(self, p)
}

// startUpstreamsWith runs the fake upstream from the voxbench binary self.
func startUpstreamsWith(self string, p plan) (*upstreams, error) {
	cfg, _ := json.Marshal(p)
	c, line, err := startChild(self, fakeUpstreamCmd, string(cfg))
	if err != nil {
		return nil, fmt.Errorf("fake upstream: %w", err)
	}
	u := &upstreams{child: c}
	if err := json.Unmarshal([]byte(line), &u.upstreamURLs); err != nil {
		u.close()
		return nil, fmt.Errorf("fake upstream did not start: %w", err)
	}
	logf("fake upstream (pid %d): clip %s, small clip %s, ElevenLabs %s, stream %s, live %s", c.cmd.Process.Pid, u.Clip, u.Small, u.Eleven, u.Stream, u.Live)
	return u, nil
}

// close ends the fake-upstream process.
func (u *upstreams) close() { u.stop() }

// child is a process of this binary re-run as one of its subcommands
// (see runChild in main.go): it prints one line when it is ready and serves
// until its stdin closes.
type child struct {
	cmd   *exec.Cmd
	stdin io.Closer
}

// startChild runs self with args and returns the line it printed first.
func startChild(self string, args ...string) (*child, string, error) {
	cmd := exec.Command(self, args...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start: %w", err)
	}
	c := &child{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		c.stop()
		return nil, "", fmt.Errorf("did not start: %w", err)
	}
	return c, strings.TrimSpace(line), nil
}

// stop ends the child: it exits when its stdin closes, or is killed
// after 5 s.
func (c *child) stop() {
	_ = c.stdin.Close()
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

// serveFakes is the fake-upstream process: it starts the fakes,
// prints their URLs as one JSON line and serves until stdin closes.
func serveFakes(planJSON string) error {
	var p plan
	if err := json.Unmarshal([]byte(planJSON), &p); err != nil {
		return fmt.Errorf("fake upstream: bad plan: %w", err)
	}
	// MaxRecorded -1: a load test must not keep every request.
	clip := openai.New(nil, fakeupstream.Options{FixedSeconds: p.ClipSeconds, ChunkSize: p.ClipChunk, MaxRecorded: -1})
	defer clip.Close()
	small := openai.New(nil, fakeupstream.Options{FixedSeconds: p.SmallClipSeconds, ChunkSize: p.ClipChunk, MaxRecorded: -1})
	defer small.Close()
	eleven := elevenlabs.New(nil, fakeupstream.Options{FixedSeconds: p.ClipSeconds, ChunkSize: p.ClipChunk, MaxRecorded: -1})
	defer eleven.Close()
	stream := openai.New(nil, fakeupstream.Options{ChunkSize: p.StreamChunk, ChunkDelay: p.StreamDelay, MaxRecorded: -1})
	defer stream.Close()
	live := openai.New(nil, fakeupstream.Options{ChunkSize: p.StreamChunk, ChunkDelay: p.ManyStreamsDelay, MaxRecorded: -1})
	defer live.Close()
	b, _ := json.Marshal(upstreamURLs{Clip: clip.URL, Small: small.URL, Eleven: eleven.URL, Stream: stream.URL, Live: live.URL})
	if _, err := fmt.Printf("%s\n", b); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // until the harness closes it
	return nil
}

// hostOf returns host:port of a root URL.
func hostOf(root string) string {
	pu, err := url.Parse(root)
	if err != nil {
		panic(err) // the fakes print valid URLs
	}
	return pu.Host
}

package harness

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Child is `voxgate serve --config cfg` of bin/voxgate running in a
// process of its own, with what it prints kept for the test to read:
// stdout (the development keys of a first start) and stderr (its log).
// It is stopped with SIGTERM when the test ends, unless it already
// exited; a failed test gets the log's tail without its access lines.
type Child struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	logs bytes.Buffer
	out  bytes.Buffer
	done chan struct{}
}

// Spawn starts the child on config file cfg, with env added to this
// process's environment.
func Spawn(t testing.TB, cfg string, env ...string) *Child {
	t.Helper()
	c := &Child{done: make(chan struct{})}
	c.cmd = exec.Command(filepath.Join(BinDir(t), "voxgate"), "serve", "--config", cfg)
	if len(env) > 0 {
		c.cmd.Env = append(os.Environ(), env...)
	}
	stdout, _ := c.cmd.StdoutPipe()
	stderr, _ := c.cmd.StderrPipe()
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var copies sync.WaitGroup
	copies.Add(2)
	pipe := func(r io.Reader, into *bytes.Buffer) {
		defer copies.Done()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			c.mu.Lock()
			into.WriteString(sc.Text() + "\n")
			c.mu.Unlock()
		}
	}
	go pipe(stdout, &c.out)
	go pipe(stderr, &c.logs)
	go func() {
		copies.Wait()
		_ = c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			_ = c.cmd.Process.Kill()
		}
		if t.Failed() {
			var kept []string // the access log's lines left out
			for _, line := range strings.Split(c.Log(), "\n") {
				if !strings.Contains(line, `"msg":"request"`) {
					kept = append(kept, line)
				}
			}
			t.Logf("gateway log (tail, without access lines):\n%s", tailOf(strings.Join(kept, "\n"), 8000))
		}
	})
	return c
}

// Log returns what the child has logged so far (its stderr).
func (c *Child) Log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.logs.String()
}

// Stdout returns what the child has printed on stdout so far.
func (c *Child) Stdout() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// Done is closed once the child has exited and its output is read.
func (c *Child) Done() <-chan struct{} { return c.done }

// Exited reports whether the child has exited.
func (c *Child) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Signal sends sig to the child.
func (c *Child) Signal(sig os.Signal) error { return c.cmd.Process.Signal(sig) }

// PID is the child's process id.
func (c *Child) PID() int { return c.cmd.Process.Pid }

// Stop sends SIGTERM and waits up to 30 s for the child to exit; it
// reports whether it did.
func (c *Child) Stop() bool {
	_ = c.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		return true
	case <-time.After(30 * time.Second):
		return false
	}
}

package edge

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
)

func testListenerMetrics() listenerMetrics {
	return listenerMetrics{
		open:         prometheus.NewGauge(prometheus.GaugeOpts{Name: "open"}),
		rejected:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rejected"}, []string{"limit"}),
		acceptErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "accept_errors"}),
	}
}

// failingListener fails its first accepts with errs, then accepts from a
// real listener.
type failingListener struct {
	net.Listener
	errs []error
}

func (f *failingListener) Accept() (net.Conn, error) {
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		return nil, err
	}
	return f.Listener.Accept()
}

func TestListenerRetriesTemporaryAcceptErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	m := testListenerMetrics()
	ll := newLimitListener(&failingListener{Listener: ln, errs: []error{emfile, emfile, syscall.ECONNABORTED}}, connLimits{}, m, zap.NewNop())
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			defer c.Close()
			time.Sleep(time.Second)
		}
	}()
	c, err := ll.Accept()
	if err != nil {
		t.Fatalf("Accept gave up: %v", err)
	}
	c.Close()
	if n := testutil.ToFloat64(m.acceptErrors); n != 3 {
		t.Errorf("accept errors counted: %v, want 3", n)
	}

	// A permanent error, or a closed listener, ends Accept.
	perm := newLimitListener(&failingListener{Listener: ln, errs: []error{errors.New("permanent")}}, connLimits{}, m, zap.NewNop())
	if _, err := perm.Accept(); err == nil {
		t.Fatal("a permanent error was retried")
	}
}

func TestTemporary(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{&net.OpError{Op: "accept", Err: os.NewSyscallError("accept4", syscall.EMFILE)}, true},
		{&net.OpError{Op: "accept", Err: os.NewSyscallError("accept4", syscall.ENFILE)}, true},
		{syscall.ENOBUFS, true},
		{syscall.ECONNABORTED, true},
		{net.ErrClosed, false},
		{io.EOF, false},
		{errors.New("something else"), false},
	}
	for _, tt := range tests {
		if got := temporary(tt.err); got != tt.want {
			t.Errorf("temporary(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// serveListener accepts on ll and holds each connection open until the
// client closes it.
func serveListener(ll net.Listener) {
	for {
		c, err := ll.Accept()
		if err != nil {
			return
		}
		go func() {
			_, _ = io.Copy(io.Discard, c)
			c.Close()
		}()
	}
}

// readAnswer reads what the server sends before closing, within a second;
// "" when it sends nothing (the connection was accepted and held).
func readAnswer(t *testing.T, c net.Conn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	b, _ := io.ReadAll(c)
	return string(b)
}

func TestListenerLimits(t *testing.T) {
	tests := []struct {
		name   string
		limits connLimits
		limit  string
	}{
		{"total", connLimits{max: 2}, "max_conns"},
		{"per address", connLimits{perIP: 2}, "max_conns_per_ip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			m := testListenerMetrics()
			ll := newLimitListener(ln, tt.limits, m, zap.NewNop())
			defer ll.Close()
			go serveListener(ll)
			dial := func() net.Conn {
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			a, b := dial(), dial()
			defer b.Close()
			if got := readAnswer(t, a); got != "" {
				t.Fatalf("a connection within the limit was answered %q", got)
			}
			over := dial()
			got := readAnswer(t, over)
			over.Close()
			if !strings.HasPrefix(got, "HTTP/1.1 503 ") || !strings.Contains(got, `"code":"service_unavailable"`) {
				t.Fatalf("a connection past the limit got %q", got)
			}
			head, body, _ := strings.Cut(got, "\r\n\r\n")
			if !strings.Contains(head, fmt.Sprintf("Content-Length: %d", len(body))) {
				t.Errorf("Content-Length does not match the body: %q", got)
			}
			if n := testutil.ToFloat64(m.rejected.WithLabelValues(tt.limit)); n != 1 {
				t.Errorf("rejections counted under %s: %v", tt.limit, n)
			}
			// A closed connection frees its slot.
			a.Close()
			for deadline := time.Now().Add(5 * time.Second); testutil.ToFloat64(m.open) > 1; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the closed connection's slot was not given back")
				}
			}
			again := dial()
			defer again.Close()
			if got := readAnswer(t, again); got != "" {
				t.Fatalf("a connection after one closed was answered %q", got)
			}
		})
	}
}

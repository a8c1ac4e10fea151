package edge

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/admission/auth"
)

// The listener between the TCP socket and fasthttp. fasthttp's accept loop
// treats every accept error but a timeout as permanent: when the process
// runs out of file descriptors (EMFILE) it returns from Serve and the
// gateway stops for good. This listener retries such errors itself, and
// bounds open connections so that descriptors stay available for the
// store, the plugins and the admin socket in the first place.

// connLimits bound the listener's open connections.
type connLimits struct {
	// max is the most open connections; 0 means no bound.
	max int
	// perIP is the most open connections from one address; 0 means none.
	perIP int
}

// listenerMetrics are the listener's collectors.
type listenerMetrics struct {
	open         prometheus.Gauge
	rejected     *prometheus.CounterVec
	acceptErrors prometheus.Counter
}

// limitListener retries temporary accept errors with backoff and closes
// connections past its limits at once, after a 503 problem.
type limitListener struct {
	net.Listener
	limits  connLimits
	log     *zap.Logger
	metrics listenerMetrics

	open   atomic.Int64
	mu     sync.Mutex
	perIP  map[netip.Addr]int
	closed atomic.Bool
	// conns are the open connections, so that a shutdown whose drain ran
	// out of time can close them (fasthttp only closes idle ones).
	connsMu sync.Mutex
	conns   map[*limitedConn]struct{}
}

func newLimitListener(ln net.Listener, l connLimits, m listenerMetrics, log *zap.Logger) *limitListener {
	return &limitListener{Listener: ln, limits: l, metrics: m, log: log, perIP: map[netip.Addr]int{}, conns: map[*limitedConn]struct{}{}}
}

// overloaded is the whole answer to a connection past the limits: written
// on a fresh socket, whose send buffer is empty, so it never blocks.
var overloaded = func() []byte {
	body := `{"type":"urn:voxgate:problem:service_unavailable","title":"Service unavailable","status":503,` +
		`"code":"service_unavailable","detail":"the gateway has too many open connections; retry shortly"}`
	return []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\n" +
		"Retry-After: 1\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}()

// maxAcceptBackoff bounds the wait between retries of a failing accept,
// as net/http's Server does.
const maxAcceptBackoff = time.Second

// Accept returns the next connection within the limits. Temporary errors
// (out of descriptors or buffers, a connection aborted before accept) are
// logged, counted and retried with a backoff from 5 ms doubling to 1 s.
func (l *limitListener) Accept() (net.Conn, error) {
	var backoff time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if l.closed.Load() || !temporary(err) {
				return nil, err
			}
			l.metrics.acceptErrors.Inc()
			backoff = min(max(2*backoff, 5*time.Millisecond), maxAcceptBackoff)
			if backoff == 5*time.Millisecond || backoff == maxAcceptBackoff {
				l.log.Warn("accepting connections failed; retrying", zap.Error(err), zap.Duration("backoff", backoff))
			}
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if reason := l.admit(c); reason != "" {
			l.metrics.rejected.WithLabelValues(reason).Inc()
			_ = c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
			_, _ = c.Write(overloaded)
			_ = c.Close()
			continue
		}
		l.metrics.open.Inc()
		lc := &limitedConn{Conn: c, l: l, ip: remoteIP(c)}
		l.connsMu.Lock()
		l.conns[lc] = struct{}{}
		l.connsMu.Unlock()
		return lc, nil
	}
}

// admit counts c in, or returns why it is over the limits.
func (l *limitListener) admit(c net.Conn) string {
	if n := l.open.Add(1); l.limits.max > 0 && n > int64(l.limits.max) {
		l.open.Add(-1)
		return "max_conns"
	}
	if l.limits.perIP > 0 {
		ip := remoteIP(c)
		l.mu.Lock()
		over := l.perIP[ip] >= l.limits.perIP
		if !over {
			l.perIP[ip]++
		}
		l.mu.Unlock()
		if over {
			l.open.Add(-1)
			return "max_conns_per_ip"
		}
	}
	return ""
}

// release counts a closed connection out.
func (l *limitListener) release(ip netip.Addr) {
	l.open.Add(-1)
	l.metrics.open.Dec()
	if l.limits.perIP > 0 {
		l.mu.Lock()
		if l.perIP[ip]--; l.perIP[ip] <= 0 {
			delete(l.perIP, ip)
		}
		l.mu.Unlock()
	}
}

// closeUnused closes the open connections that have not sent a byte. To
// fasthttp such a connection is busy (it waits for its first request for
// up to server.read_timeout), so a shutdown would wait on it, while it
// holds no request: a client's spare keep-alive connection, dialled and
// never used. Closing it loses nothing; the client dials another instance.
func (l *limitListener) closeUnused() {
	l.connsMu.Lock()
	var unused []*limitedConn
	for c := range l.conns {
		if !c.used.Load() {
			unused = append(unused, c)
		}
	}
	l.connsMu.Unlock()
	for _, c := range unused {
		_ = c.Close()
	}
}

// closeConns closes every open connection, busy or not, and returns how
// many there were: the last step of a shutdown whose drain ran out of time.
func (l *limitListener) closeConns() int {
	l.connsMu.Lock()
	open := make([]*limitedConn, 0, len(l.conns))
	for c := range l.conns {
		open = append(open, c)
	}
	l.connsMu.Unlock()
	for _, c := range open {
		_ = c.Close()
	}
	return len(open)
}

// Close stops Accept for good.
func (l *limitListener) Close() error {
	l.closed.Store(true)
	return l.Listener.Close()
}

// limitedConn gives its slot back when closed, once.
type limitedConn struct {
	net.Conn
	l    *limitListener
	ip   netip.Addr
	once sync.Once
	// used is set once the client has sent a byte (closeUnused).
	used atomic.Bool
	// linger is set when the connection is closed with a request's body
	// unread (lingerClose).
	linger atomic.Bool
	// memo is the last API key checked on this connection (checkKey),
	// used only by the goroutine serving it, one request at a time.
	memo auth.Memo
}

// Bounds of a lingering close: how long, and how much of the client's
// unread request it reads and drops before closing.
const (
	lingerTime  = 2 * time.Second
	lingerBytes = 8 << 20
)

// lingerOnClose asks that conn, when closed, first read and drop what the
// client is still sending (lingerClose). It is for a request refused before
// its body was read (too large, unparsable): closing a socket with unread
// data makes the kernel send a reset, which can destroy the answer before
// the client reads it, so that the client sees "connection reset" instead
// of the 413. nginx does the same (lingering_close).
func lingerOnClose(conn net.Conn) {
	if c, ok := conn.(*limitedConn); ok {
		c.linger.Store(true)
	}
}

func (c *limitedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && !c.used.Load() {
		c.used.Store(true)
	}
	return n, err
}

func (c *limitedConn) Close() error {
	if c.linger.CompareAndSwap(true, false) {
		// In the background: the caller is a server worker that must
		// not wait. The connection counts as open until it is closed.
		go c.lingerClose()
		return nil
	}
	return c.close()
}

// lingerClose sends the end of the answer (a FIN, no reset), reads and
// drops up to lingerBytes of what the client still sends for up to
// lingerTime, then closes.
func (c *limitedConn) lingerClose() {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.Conn.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.CopyN(io.Discard, c.Conn, lingerBytes)
	_ = c.close()
}

func (c *limitedConn) close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.connsMu.Lock()
		delete(c.l.conns, c)
		c.l.connsMu.Unlock()
		c.l.release(c.ip)
	})
	return err
}

func remoteIP(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			return ip.Unmap()
		}
	}
	return netip.Addr{}
}

// temporary reports whether an accept error is worth retrying: the
// process or system is out of descriptors or memory for now, or one
// connection went away between the handshake and the accept.
func temporary(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EINTR, syscall.EAGAIN, syscall.EPROTO} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// DefaultMaxConns is the connection limit when the config gives none: the
// open-files limit less a reserve for the store's pool, the plugins'
// sockets, the admin socket and log files (a quarter, at most 1,024),
// and at least 64.
func DefaultMaxConns() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<30 {
		return 0 // unknown or effectively unlimited: no bound of our own
	}
	lim := int(r.Cur)
	return max(64, lim-min(lim/4, 1024))
}

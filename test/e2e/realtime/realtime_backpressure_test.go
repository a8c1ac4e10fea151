package realtime

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/voxgate/voxgate/test/e2e/harness"
)

// The realtime socket's limits in time and memory: a client that stops
// reading, a socket that stays idle, a gateway that shuts down
// (docs/realtime.md, "Limits and failures").

// stallText is far more speech than the socket buffers between the
// gateway and a client hold (about 25 minutes of eSpeak audio, 65 MB of
// PCM), so that a client that stops reading stalls the gateway's writes,
// and well under a context's 32 KiB of unspoken text.
var stallText = strings.Repeat("This sentence is here to make a long utterance that takes a while to speak. ", 320)

// rawSocket is a realtime socket whose frames the test reads itself,
// straight off the TCP connection: nothing is read before the test asks
// (a client that stops reading), and each frame's place in the gateway's
// byte stream is known. gorilla does the handshake and the writing.
type rawSocket struct {
	t        testing.TB
	ws       *websocket.Conn
	tcp      *net.TCPConn
	socketID string
	read     int64 // bytes of the stream read so far, handshake excluded
}

// rawFrame is one server frame: a message (a control frame's payload in
// raw) and where it lies in the stream, [start, end).
type rawFrame struct {
	op         int
	msg        harness.RealtimeMsg
	start, end int64
}

func dialRaw(t testing.TB, tg *harness.Gateway, org string) *rawSocket {
	t.Helper()
	var tcp *net.TCPConn
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err == nil {
				tcp = c.(*net.TCPConn)
			}
			return c, err
		}}
	ws, resp, err := d.Dial("ws://"+strings.TrimPrefix(tg.Base, "http://")+harness.RealtimePath, http.Header{"Authorization": {"Bearer " + tg.Keys[org]}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { ws.Close() })
	// The gateway sends nothing before the first start, so gorilla's
	// reader holds no byte past the handshake: the stream is all ours.
	return &rawSocket{t: t, ws: ws, tcp: tcp, socketID: resp.Header.Get("X-Request-Id")}
}

func (rs *rawSocket) send(v any) {
	rs.t.Helper()
	if err := rs.ws.WriteJSON(v); err != nil {
		rs.t.Fatalf("send: %v", err)
	}
}

// tryNext reads the next frame, or says why the stream ended. The
// deadline only keeps a broken gateway from hanging the test.
func (rs *rawSocket) tryNext() (rawFrame, error) {
	_ = rs.tcp.SetReadDeadline(time.Now().Add(30 * time.Second))
	f := rawFrame{start: rs.read}
	var hdr [8]byte
	if err := rs.full(hdr[:2]); err != nil {
		return f, err
	}
	if hdr[1]&0x80 != 0 {
		return f, errors.New("a masked frame from the server")
	}
	f.op = int(hdr[0] & 0x0f)
	n := int64(hdr[1] & 0x7f)
	switch n {
	case 126:
		if err := rs.full(hdr[:2]); err != nil {
			return f, err
		}
		n = int64(binary.BigEndian.Uint16(hdr[:2]))
	case 127:
		if err := rs.full(hdr[:8]); err != nil {
			return f, err
		}
		n = int64(binary.BigEndian.Uint64(hdr[:8]))
	}
	data := make([]byte, n)
	if err := rs.full(data); err != nil {
		return f, err
	}
	f.end = rs.read
	f.msg.Raw = data
	switch f.op {
	case websocket.BinaryMessage:
		k := int(data[0])
		f.msg.Type, f.msg.ContextID, f.msg.Audio = "audio", string(data[1:1+k]), data[1+k:]
	case websocket.TextMessage:
		if err := json.Unmarshal(data, &f.msg); err != nil {
			f.msg.Type = "undecodable"
		}
	}
	return f, nil
}

func (rs *rawSocket) full(b []byte) error {
	n, err := io.ReadFull(rs.tcp, b)
	rs.read += int64(n)
	return err
}

// next returns the next message frame, skipping pings.
func (rs *rawSocket) next() rawFrame {
	rs.t.Helper()
	for {
		f, err := rs.tryNext()
		if err != nil {
			rs.t.Fatalf("reading the socket: %v", err)
		}
		switch f.op {
		case websocket.PingMessage:
			continue
		case websocket.CloseMessage:
			rs.t.Fatalf("the gateway closed the socket: %x", f.msg.Raw)
		}
		return f
	}
}

// expect reads up to the first message of type typ and context id.
func (rs *rawSocket) expect(typ, id string) rawFrame {
	rs.t.Helper()
	for {
		if f := rs.next(); f.msg.Type == typ && f.msg.ContextID == id {
			return f
		} else if f.msg.Type == "error" || f.msg.Type == "done" {
			rs.t.Fatalf("got %s, want a %s of %q", f.msg.Raw, typ, id)
		}
	}
}

// written returns how far into the stream the gateway has written: what
// the client read, plus what waits in the kernel (the client socket's
// receive queue, the gateway socket's send queue), and that send queue
// alone. ok is false where /proc/net/tcp is not there to say.
func (rs *rawSocket) written() (at, serverQueue int64, ok bool) {
	// A dual-stack listener's accepted socket is listed in tcp6 (as an
	// IPv4-mapped address) while the client's is in tcp: read both.
	var b []byte
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if part, err := os.ReadFile(name); err == nil {
			b = append(b, part...)
		}
	}
	if len(b) == 0 {
		return 0, 0, false
	}
	client := fmt.Sprintf(":%04X", rs.tcp.LocalAddr().(*net.TCPAddr).Port)
	server := fmt.Sprintf(":%04X", rs.tcp.RemoteAddr().(*net.TCPAddr).Port)
	var clientQueue int64
	found := 0
	for _, line := range strings.Split(string(b), "\n") {
		// sl local_address rem_address st tx_queue:rx_queue ...
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		var tx, rx int64
		if _, err := fmt.Sscanf(f[4], "%x:%x", &tx, &rx); err != nil {
			continue
		}
		switch {
		case strings.HasSuffix(f[1], client) && strings.HasSuffix(f[2], server):
			clientQueue = rx
			found++
		case strings.HasSuffix(f[1], server) && strings.HasSuffix(f[2], client):
			serverQueue = tx
			found++
		}
	}
	return rs.read + clientQueue + serverQueue, serverQueue, found == 2
}

// waitStalled waits, the client reading nothing, until the gateway can
// write no more: the kernel's buffers are full (bytes wait in the
// gateway's send queue) and nothing moves. It returns how far the
// gateway had written.
func (rs *rawSocket) waitStalled() int64 {
	rs.t.Helper()
	prev, stable := int64(-1), 0
	deadline := time.Now().Add(30 * time.Second)
	for stable < 5 {
		at, queued, ok := rs.written()
		if !ok {
			rs.t.Skip("/proc/net/tcp{,6} does not list this connection: the bytes in flight cannot be counted")
		}
		if at == prev && queued > 0 {
			stable++
		} else {
			stable = 0
		}
		prev = at
		if time.Now().After(deadline) {
			rs.t.Fatal("the gateway's writes never stalled")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return prev
}

// slowClientConfig gives a client that reads nothing one second
// (server.write_timeout) before its socket is closed.
var slowClientConfig = strings.Replace(realtimeConfig, "  listen: 127.0.0.1:0\n", "  listen: 127.0.0.1:0\n  write_timeout: 1s\n", 1)

func TestRealtimeClientThatStopsReadingIsCutOff(t *testing.T) {
	// Not parallel: a stall against a write timeout of a second.
	tg := harness.Start(t, slowClientConfig)
	rs := dialRaw(t, tg, "acme")
	rs.send(harness.StartMsg("s"))
	rs.expect("started", "s")
	rs.send(harness.TextMsg("s", stallText))
	rs.send(harness.ControlMsg("close", "s"))
	rs.expect("audio", "s")
	// From here the client reads nothing.

	// The stalled context holds no eSpeak instance: another organization
	// is served meanwhile.
	r := tg.Do("POST", "/v1/audio/speech", "globex", harness.SpeechBody("Another client is served meanwhile."))
	if r.Status != 200 || len(r.Body) == 0 {
		t.Errorf("speech while a realtime client stalls: %d, %d bytes", r.Status, len(r.Body))
	}

	// The context ends as too slow; the provider was paused, not run
	// through the text into memory: most of the text never reached it.
	var row harness.RealtimeLogRow
	harness.WaitFor(t, "the stalled context's row", func() bool {
		rows := tg.RealtimeRows("acme", rs.socketID)
		if len(rows) > 0 {
			row = rows[0]
		}
		return len(rows) > 0
	})
	if row.Status != 499 || row.ErrorCode != "client_too_slow" || row.CharCount == 0 || row.CharCount >= len(stallText)/2 {
		t.Errorf("row %+v: want 499 client_too_slow, with less than half of the %d characters spoken", row.LogRow, len(stallText))
	}
	t.Logf("the provider was handed %d of the %d characters before the socket was closed", row.CharCount, len(stallText))
	// The socket and its context are gone, not just the context.
	harness.WaitFor(t, "the socket to be closed", func() bool {
		m := string(tg.MetricsBody())
		return strings.Contains(m, "voxgate_realtime_sockets_open 0") && strings.Contains(m, "voxgate_realtime_contexts_open 0")
	})
	// Reading again, the client gets what was in flight, then the end of
	// the connection: no close frame can follow audio the client did not
	// read (most libraries report 1006).
	for {
		f, err := rs.tryNext()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("the connection did not end: %v", err)
			}
			break
		}
		if f.op == websocket.CloseMessage || f.msg.Type == "done" || f.msg.Type == "error" {
			t.Errorf("after the stall: %s", f.msg.Raw)
		}
	}
}

// idleConfig closes a socket after one second without a message
// (server.idle_timeout).
var idleConfig = strings.Replace(realtimeConfig, "  listen: 127.0.0.1:0\n", "  listen: 127.0.0.1:0\n  idle_timeout: 1s\n", 1)

// expectClose reads rc to its end and fails unless the gateway closed it
// with code.
func expectClose(t *testing.T, rc *harness.RealtimeClient, code int, text string) {
	t.Helper()
	for range rc.Msgs {
	}
	err := <-rc.Closed
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != code || ce.Text != text {
		t.Errorf("the socket ended with %v, want close %d %q", err, code, text)
	}
}

func TestRealtimeIdleSocketIsClosed(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, idleConfig)
	busy := tg.DialRealtime("acme")
	busy.Send(harness.StartMsg("b"))
	busy.Expect("started", "b")

	// A socket that sends nothing is closed.
	expectClose(t, tg.DialRealtime("acme"), websocket.CloseNormalClosure, "idle")
	// So is one opened after that: by the time it closes, busy has sent
	// nothing for longer than the idle timeout, but holds an open
	// context, which keeps it.
	expectClose(t, tg.DialRealtime("acme"), websocket.CloseNormalClosure, "idle")
	busy.Send(harness.TextMsg("b", "Still here."))
	busy.Send(harness.ControlMsg("close", "b"))
	msgs := busy.Until(harness.IsType("done", "b"))
	if done := msgs[len(msgs)-1]; done.Reason != "completed" || len(audioOf(msgs, "b")) == 0 {
		t.Errorf("the socket with a context: %v", harness.RawOf(msgs))
	}
	// With its context done, it is idle in turn.
	expectClose(t, busy, websocket.CloseNormalClosure, "idle")
	harness.WaitFor(t, "the sockets to be counted closed", func() bool {
		return strings.Contains(string(tg.MetricsBody()), "voxgate_realtime_sockets_open 0")
	})
}

func TestRealtimeShutdownClosesSockets(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, realtimeConfig)
	rc := tg.DialRealtime("acme")
	rc.Send(harness.StartMsg("a"))
	rc.Expect("started", "a")
	rc.Send(harness.TextMsg("a", stallText))
	rc.Expect("audio", "a")
	// A client that reads nothing, with audio waiting for it, does not
	// hold the shutdown up either: it never answers the close frame.
	stalled := dialRaw(t, tg, "globex")
	stalled.send(harness.StartMsg("s"))
	stalled.expect("started", "s")
	stalled.send(harness.TextMsg("s", stallText))
	stalled.expect("audio", "s")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tg.Core.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	expectClose(t, rc, websocket.CloseGoingAway, "the gateway is shutting down")
}

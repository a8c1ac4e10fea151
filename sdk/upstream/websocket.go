package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/voxgate/voxgate/sdk"
)

// The WebSocket side of an Endpoint, for providers whose input-streaming
// API is a WebSocket (sdk.InputStreamer). gorilla/websocket: maintained,
// without dependencies, so the SDK stays light.

// Socket is a provider WebSocket opened by DialWebSocket. Reads happen on
// one goroutine and writes on one other (gorilla's rule); Close may be
// called from anywhere, and ends a blocked read.
type Socket struct {
	*websocket.Conn
	provider string
}

// DialWebSocket opens the provider WebSocket at path (with query) under
// the endpoint's base URL, http(s) becoming ws(s), authenticated with key
// like Do and carrying the endpoint's Header. A refused handshake is the
// same *sdk.Error Do would return for that status and body; a missing key
// fails before any connection. The socket is closed when ctx ends.
func (e *Endpoint) DialWebSocket(ctx context.Context, path string, query url.Values, key string) (*Socket, error) {
	if key == "" {
		return nil, sdk.Errorf(sdk.KindUnauthorized, "%s: no API key: configure the gateway's managed key or send your own", e.API.Provider)
	}
	u, err := url.Parse(e.BaseURL + path)
	if err != nil {
		return nil, sdk.Errorf(sdk.KindInternal, "%s: %v", e.API.Provider, err)
	}
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	case "http":
		u.Scheme = "ws"
	}
	if len(query) > 0 {
		u.RawQuery = query.Encode()
	}
	h := http.Header{}
	for k, v := range e.Header {
		h.Set(k, v)
	}
	e.API.Authorize(h, key)
	d := websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: cmpDuration(e.Client.Timeout, 30*time.Second),
	}
	if t, ok := e.Client.Transport.(*http.Transport); ok {
		d.TLSClientConfig = t.TLSClientConfig
		d.NetDialContext = t.DialContext
	}
	conn, resp, err := d.DialContext(ctx, u.String(), h)
	if err != nil {
		if resp != nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
			resp.Body.Close()
			return nil, e.explain(resp.StatusCode, resp.Header, body, key)
		}
		return nil, TransportError(ctx, e.API.Provider, err)
	}
	s := &Socket{Conn: conn, provider: e.API.Provider}
	go func() {
		<-ctx.Done()
		_ = conn.Close()
	}()
	return s, nil
}

// ReadError maps an error of reading the socket: the caller's context
// ended, the provider closed it (with its close reason), or the
// connection broke.
func (s *Socket) ReadError(ctx context.Context, err error) *sdk.Error {
	if ctx.Err() != nil {
		return TransportError(ctx, s.provider, ctx.Err())
	}
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		kind := sdk.KindUpstream
		switch ce.Code {
		case websocket.ClosePolicyViolation:
			kind = sdk.KindInvalidRequest
		case websocket.CloseTryAgainLater, websocket.CloseServiceRestart:
			kind = sdk.KindUnavailable
		}
		msg := strings.TrimSpace(ce.Text)
		if msg == "" {
			msg = "the provider closed the socket"
		}
		return &sdk.Error{Kind: kind, Message: s.provider + ": " + msg, UpstreamCode: "websocket_close_" + strconv.Itoa(ce.Code)}
	}
	return TransportError(ctx, s.provider, err)
}

func cmpDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

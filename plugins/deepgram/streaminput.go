package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

// Input streaming through Deepgram's speak WebSocket (docs/realtime.md,
// "Pooled provider sockets"). The socket carries one stream of text:
// {"type": "Speak", "text"} buffers text, {"type": "Flush"} has it spoken
// (binary audio, then {"type": "Flushed"}), {"type": "Clear"} drops what
// is buffered and stops the audio ({"type": "Cleared"}), {"type": "Close"}
// ends the socket (developers.deepgram.com, "Text-to-Speech Streaming":
// Getting Started, Flush, Clear, Close). There is no context id: one
// socket, one stream at a time.
//
// So pooling here is reuse, not multiplexing: the pool's cap is one
// context per socket, and a socket whose context has ended (its last
// Flushed, or Cleared after a cancel) stays open for the next context of
// the same URL (model, encoding, rate) and key, from any client socket of
// any organization using that key, instead of a new handshake per turn.
// Deepgram documents a limit of 20 Flush messages per 60 s on a socket
// (a 21st is ignored with a Warning); the pool counts them per socket
// (MuxPool.Budget), a socket with none left takes no new context, and a
// context skips a segment's Flush (its text is flushed with the next)
// rather than spend the one it needs to finish.

var _ sdk.InputStreamer = (*Provider)(nil)

// Deepgram's documented Flush limit per socket.
const (
	flushLimit  = 20
	flushWindow = 60 * time.Second
)

// newPool is the plugin's pool of speak sockets: one context at a time on
// each, an idle socket closed after 15 s (well before Deepgram's own
// timeout), a cleared context's slot retired after 10 s without Cleared.
func newPool() *upstream.MuxPool {
	return &upstream.MuxPool{Cap: 1, Idle: 15 * time.Second, CloseWait: 10 * time.Second,
		Budget: flushLimit, BudgetWindow: flushWindow, RouteFrame: routeSpeak}
}

// routeSpeak routes a speak socket's message: everything is the socket's
// one context; Cleared is the last of a cancelled context.
func routeSpeak(kind int, data []byte) (string, bool) {
	if kind != websocket.TextMessage {
		return "", false
	}
	var m struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(data, &m) == nil && m.Type == "Cleared" {
		return "", true
	}
	return "", false
}

// speakControl is a control message of the speak socket.
type speakControl struct {
	Type string `json:"type"`
}

// speakText is a Speak message.
type speakText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// speakEvent is a text message of the speak socket.
type speakEvent struct {
	Type        string `json:"type"`
	Description string `json:"description"`
	Code        string `json:"code"`
	ErrCode     string `json:"err_code"`
	ErrMsg      string `json:"err_msg"`
}

// StreamInput implements sdk.InputStreamer over a pooled speak socket.
// Raw PCM only, as on the other bridged providers. A socket that fails
// before the context's first audio is replaced and the text so far sent
// again (twice at most); after audio, the failure is the context's.
func (p *Provider) StreamInput(ctx context.Context, req *sdk.SynthesizeRequest, in <-chan sdk.TextInput, send func(sdk.StreamEvent) error) error {
	if req.Timestamps {
		return sdk.Errorf(sdk.KindUnsupported, "deepgram: Aura returns no word timestamps")
	}
	probe := *req
	probe.Text = "-" // prepare validates a request with text
	c, err := prepare(&probe)
	if err != nil {
		return err
	}
	if c.query.Get("encoding") != "linear16" || c.query.Get("container") != "none" {
		return sdk.Errorf(sdk.KindInvalidRequest, "deepgram: input streaming sends raw PCM; ask for format pcm")
	}
	if c.query.Has("speed") {
		return sdk.Errorf(sdk.KindInvalidRequest, "deepgram: the speak WebSocket takes no speed; leave speed at 1")
	}
	// The socket's documented parameters: no container (always raw) and
	// no tag.
	q := url.Values{"model": {c.query.Get("model")}, "encoding": {"linear16"}, "sample_rate": {c.query.Get("sample_rate")}}
	if v := c.query.Get("mip_opt_out"); v != "" {
		q.Set("mip_opt_out", v)
	}
	cfg := p.cfg.Load()
	pi := upstream.PooledInput{Pool: p.pool, Endpoint: cfg.Endpoint, Path: speakPath, Query: q, NewID: newStreamID}
	r := &speakReader{c: c, send: send}
	return pi.Serve(ctx, req.Credentials.APIKey, nil, send, in, r.run, func() bool { return r.audio })
}

// newStreamID names a context in the pool (Deepgram never sees it).
func newStreamID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// speakReader turns one context's socket messages into events.
type speakReader struct {
	c     *call
	send  func(sdk.StreamEvent) error
	audio bool
	odd   []byte
}

// run speaks the input on st: each text as a Speak, a Flush after each
// (budget permitting) and at the end; done at the Flushed of the last
// Flush. A cancelled or failed context is cleared at Deepgram.
func (r *speakReader) run(ctx context.Context, st *upstream.MuxStream, texts *upstream.InputLog) (err error) {
	finished := false
	defer func() {
		if finished {
			st.MarkFinal()
			st.Close()
			return
		}
		// Cancelled or failed: Deepgram drops the buffer and stops the
		// audio; the socket takes the next context once Cleared comes.
		_ = st.CloseWith(speakControl{Type: "Clear"})
	}()
	wctx, stopWriter := context.WithCancel(ctx)
	defer stopWriter()
	// flushes counts the Flush messages written; last is set once the
	// final one is (the writer's), then read by the reader.
	type progress struct {
		flushes int
		last    bool
	}
	prog := make(chan progress, 1)
	prog <- progress{}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		pending := false // text written since the last Flush
		flush := func(final bool) bool {
			keep := 1 // the final Flush's
			if final {
				keep = 0
			}
			// The final Flush is always written: Open and the kept one
			// leave it room.
			if !st.Spend(keep) && !final {
				return true // flushed with a later one
			}
			pr := <-prog
			if err := st.WriteJSON(speakControl{Type: "Flush"}); err != nil {
				prog <- pr
				return false
			}
			pr.flushes++
			pr.last = final
			prog <- pr
			pending = false
			return true
		}
		for i := 0; ; {
			t, have, done := texts.At(i)
			switch {
			case have:
				i++
				if t.Text != "" {
					if st.WriteJSON(speakText{Type: "Speak", Text: t.Text}) != nil {
						return
					}
					pending = true
				}
				// Deepgram speaks only what is flushed: every segment
				// (a whole sentence) is, while the budget lasts.
				if (pending || t.Flush) && !flush(false) {
					return
				}
				continue
			case done:
				// The last Flush ends the context at its Flushed (a Flush
				// of nothing still answers Flushed).
				flush(true)
				return
			}
			select {
			case <-texts.Arrived():
			case <-wctx.Done():
				return
			}
		}
	}()
	flushed := 0
	for {
		kind, data, err := st.NextFrame(ctx)
		if err != nil {
			return err
		}
		if kind == websocket.BinaryMessage {
			if err := r.audioFrame(data); err != nil {
				return err
			}
			continue
		}
		var ev speakEvent
		if json.Unmarshal(data, &ev) != nil {
			return &sdk.Error{Kind: sdk.KindUpstream, Message: "deepgram: a speak socket message is not JSON"}
		}
		switch ev.Type {
		case "Flushed":
			flushed++
			pr := <-prog
			prog <- pr
			if pr.last && flushed >= pr.flushes {
				<-ended
				finished = true
				if len(r.odd) > 0 {
					return &sdk.Error{Kind: sdk.KindUpstream, Message: "deepgram: truncated PCM (odd byte count)"}
				}
				return nil
			}
		case "Warning":
			// A limit passed (text buffer, Flush rate): the text is not
			// spoken as asked, which the context cannot hide.
			return &sdk.Error{Kind: warningKind(ev.Code), Message: "deepgram: " + ev.Description, UpstreamCode: ev.Code}
		case "Error":
			return &sdk.Error{Kind: sdk.KindUpstream, Message: "deepgram: " + ev.Description, UpstreamCode: ev.Code}
		}
	}
}

// warningKind classifies a speak socket warning.
func warningKind(code string) sdk.ErrorKind {
	if strings.Contains(strings.ToUpper(code), "LIMIT") {
		return sdk.KindRateLimited
	}
	return sdk.KindInvalidRequest
}

// audioFrame passes on one binary frame of PCM, whole samples only.
func (r *speakReader) audioFrame(data []byte) error {
	pcm := append(r.odd, data...)
	whole := len(pcm) &^ 1
	r.odd = append([]byte(nil), pcm[whole:]...)
	if whole == 0 {
		return nil
	}
	ev := sdk.StreamEvent{Audio: pcm[:whole]}
	if !r.audio {
		ev.MediaType, r.audio = r.c.mediaType, true
	}
	return r.send(ev)
}

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

// Input streaming through Cartesia's TTS WebSocket (docs/realtime.md,
// "Pooled provider sockets"). Every segment is a continuation of the
// context (continue: true), which keeps prosody and one timeline across
// sentences; max_buffer_delay_ms 0 because the gateway sends whole
// sentences, so generation need not wait for more text.
//
// The socket multiplexes contexts by context_id, so contexts share pooled
// sockets (sdk/upstream.MuxPool), one group per URL and API key, across
// every client socket of every organization using the key. Cartesia
// documents no cap of contexts per socket; its limits are the account's
// (docs.cartesia.ai, "Concurrency and WebSocket Limits", read
// 2026-11-28): contexts active at once (unique context_ids) up to the
// plan's TTS concurrency (2 to 15, custom above), a 429 past it; WebSocket
// connections up to 10x that concurrency; idle connections closed after 5
// minutes. The pool's cap of 16 contexts a socket is ours: it keeps a
// burst from sharing one TCP connection's head-of-line blocking, and
// ⌈contexts ÷ 16⌉ sockets is far inside 10x the concurrency that lets
// those contexts run. Idle sockets close after 60 s, inside Cartesia's 5
// minutes.

var _ sdk.InputStreamer = (*Provider)(nil)

const wsPath = "/tts/websocket"

// muxCap is the pool's cap of contexts per socket (see above: ours, not
// Cartesia's).
const muxCap = 16

// newPool is the plugin's pool of TTS WebSockets.
func newPool() *upstream.MuxPool {
	return &upstream.MuxPool{Cap: muxCap, Idle: 60 * time.Second, CloseWait: 10 * time.Second, Route: routeContext}
}

// routeContext returns the context a server message is for, and whether
// it is the context's last (done, or an error, which ends it).
func routeContext(data []byte) (string, bool) {
	var m struct {
		Type      string `json:"type"`
		ContextID string `json:"context_id"`
		Done      bool   `json:"done"`
	}
	if json.Unmarshal(data, &m) != nil {
		return "", false
	}
	return m.ContextID, m.Type == "done" || m.Type == "error"
}

// wsRequest is a generation request of the WebSocket.
type wsRequest struct {
	ttsBody
	ContextID        string `json:"context_id"`
	Continue         bool   `json:"continue"`
	MaxBufferDelayMs int    `json:"max_buffer_delay_ms"`
}

// wsCancel cancels a context.
type wsCancel struct {
	ContextID string `json:"context_id"`
	Cancel    bool   `json:"cancel"`
}

// StreamInput implements sdk.InputStreamer on a pooled socket. The socket
// speaks raw PCM only, like /tts/sse. A socket that fails before the
// context's first audio is replaced and the context's text so far sent
// again on the new one (twice at most); after audio, the failure is the
// context's.
func (p *Provider) StreamInput(ctx context.Context, req *sdk.SynthesizeRequest, in <-chan sdk.TextInput, send func(sdk.StreamEvent) error) error {
	probe := *req
	probe.Text = "-" // prepare validates a request with text
	c, err := p.prepare(&probe)
	if err != nil {
		return err
	}
	if c.enc.Format != sdk.FormatPCM {
		return sdk.Errorf(sdk.KindInvalidRequest, "cartesia: input streaming sends raw PCM; ask for format pcm")
	}
	cfg := p.cfg.Load()
	// One group of sockets per base URL, API version and key: the
	// context's voice, model and format travel in its messages.
	pi := upstream.PooledInput{Pool: p.pool, Endpoint: cfg.Endpoint, Path: wsPath, Group: cfg.Header["Cartesia-Version"], NewID: newContextID}
	r := &wsReader{req: req, c: c, send: send}
	return pi.Serve(ctx, req.Credentials.APIKey, c.warnings, send, in, r.run, func() bool { return r.audio })
}

// newContextID returns a context id unique within the process.
func newContextID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "voxgate-" + hex.EncodeToString(b[:])
}

// wsReader turns one context's messages into events.
type wsReader struct {
	req   *sdk.SynthesizeRequest
	c     *call
	send  func(sdk.StreamEvent) error
	audio bool // some audio was sent
	odd   []byte
}

// run speaks the input as context st until its done. A context that ends
// otherwise (cancelled, failed) is cancelled at Cartesia, which then
// sends nothing more for it: its slot is free at once.
func (r *wsReader) run(ctx context.Context, st *upstream.MuxStream, texts *upstream.InputLog) error {
	id := st.ID()
	finished := false
	wctx, stopWriter := context.WithCancel(ctx)
	ended := make(chan struct{})
	defer func() {
		stopWriter()
		<-ended // one writer at a time: the cancel comes after its last
		if finished || st.Final() {
			st.Close()
			return
		}
		_ = st.WriteJSON(wsCancel{ContextID: id, Cancel: true})
		st.MarkFinal()
		st.Close()
	}()
	base := wsRequest{ttsBody: r.c.body, ContextID: id, Continue: true}
	base.AddTimestamps = r.req.Timestamps
	// The writer: the input from its start (a reopened context sends it
	// all again) as continuations, then the end of the context. Its
	// failures show on the reading side.
	go func() {
		defer close(ended)
		for i := 0; ; {
			t, have, done := texts.At(i)
			switch {
			case have:
				m := base
				m.Transcript = t.Text
				if st.WriteJSON(m) != nil {
					return
				}
				i++
				continue
			case done:
				m := base
				m.Transcript, m.Continue = "", false
				_ = st.WriteJSON(m)
				return
			}
			select {
			case <-texts.Arrived():
			case <-wctx.Done():
				return
			}
		}
	}()
	for {
		data, err := st.Next(ctx)
		if err != nil {
			return err
		}
		var ev event
		if err := json.Unmarshal(data, &ev); err != nil {
			return &sdk.Error{Kind: sdk.KindUpstream, Message: "cartesia: a WebSocket message is not JSON"}
		}
		switch ev.Type {
		case "error":
			e := eventError(&ev)
			e.Message = upstream.Redact(e.Message, r.req.Credentials.APIKey)
			return e
		case "done":
			finished = true
			if len(r.odd) > 0 {
				return &sdk.Error{Kind: sdk.KindUpstream, Message: "cartesia: truncated PCM (odd byte count)"}
			}
			return nil
		case "timestamps":
			wt := ev.WordTimestamps
			if wt == nil || !r.req.Timestamps {
				continue
			}
			// Cartesia times a context's words on the context's own
			// timeline: the input stream's.
			n := min(len(wt.Words), len(wt.Start), len(wt.End))
			words := make([]sdk.WordTimestamp, n)
			for i := range n {
				words[i] = sdk.WordTimestamp{Text: wt.Words[i], Start: wt.Start[i], End: wt.End[i]}
			}
			if err := r.send(sdk.StreamEvent{Words: words}); err != nil {
				return err
			}
		case "chunk":
			buf := bytes.NewBuffer(r.odd)
			if err := decodeChunk(ev.Data, buf); err != nil {
				return err
			}
			pcm := buf.Bytes()
			whole := len(pcm) &^ 1
			r.odd = bytes.Clone(pcm[whole:])
			if whole == 0 {
				continue
			}
			e := sdk.StreamEvent{Audio: pcm[:whole]}
			if !r.audio {
				e.MediaType, r.audio = r.c.mediaType, true
			}
			if err := r.send(e); err != nil {
				return err
			}
		}
	}
}

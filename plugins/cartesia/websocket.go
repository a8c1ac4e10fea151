package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

// Input streaming through Cartesia's TTS WebSocket (docs/realtime.md): one
// socket and one context per gateway context. Every segment is a
// continuation of the context (continue: true), which keeps prosody and
// one timeline across sentences; max_buffer_delay_ms 0 because the gateway
// sends whole sentences, so generation need not wait for more text.

var _ sdk.InputStreamer = (*Provider)(nil)

const wsPath = "/tts/websocket"

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

// StreamInput implements sdk.InputStreamer. The socket speaks raw PCM
// only, like /tts/sse.
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
	var id [12]byte
	_, _ = rand.Read(id[:])
	contextID := "voxgate-" + hex.EncodeToString(id[:])
	sockCtx, closeSock := context.WithCancel(context.Background())
	defer closeSock()
	sock, err := p.cfg.Load().DialWebSocket(sockCtx, wsPath, nil, req.Credentials.APIKey)
	if err != nil {
		return err
	}
	base := wsRequest{ttsBody: c.body, ContextID: contextID, Continue: true}
	base.AddTimestamps = req.Timestamps
	// The writer: each segment as a continuation, then the end of the
	// context; on cancel, Cartesia's cancel message before the socket goes.
	writerDone, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(writerDone)
		for {
			select {
			case t, ok := <-in:
				m := base
				if !ok {
					m.Transcript, m.Continue = "", false
					_ = sock.WriteJSON(m)
					return
				}
				m.Transcript = t.Text
				if sock.WriteJSON(m) != nil {
					return
				}
			case <-ctx.Done():
				return
			case <-quit:
				return
			}
		}
	}()
	defer func() { <-writerDone }()
	defer close(quit)
	// A context cancelled before Cartesia said done (whether or not all
	// text was sent) is cancelled upstream too, then the socket closes.
	// The writer has stopped first: one writer at a time.
	go func() {
		select {
		case <-ctx.Done():
			<-writerDone
			_ = sock.WriteJSON(wsCancel{ContextID: contextID, Cancel: true})
			closeSock()
		case <-sockCtx.Done():
		}
	}()
	for _, w := range c.warnings {
		if err := send(sdk.StreamEvent{Warning: w}); err != nil {
			return err
		}
	}
	first := true
	var odd []byte
	for {
		_, data, err := sock.ReadMessage()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return sock.ReadError(ctx, err)
		}
		var ev event
		if err := json.Unmarshal(data, &ev); err != nil {
			return &sdk.Error{Kind: sdk.KindUpstream, Message: "cartesia: a WebSocket message is not JSON"}
		}
		switch ev.Type {
		case "error":
			e := eventError(&ev)
			e.Message = upstream.Redact(e.Message, req.Credentials.APIKey)
			return e
		case "done":
			if len(odd) > 0 {
				return &sdk.Error{Kind: sdk.KindUpstream, Message: "cartesia: truncated PCM (odd byte count)"}
			}
			return nil
		case "timestamps":
			wt := ev.WordTimestamps
			if wt == nil || !req.Timestamps {
				continue
			}
			// Cartesia times a context's words on the context's own
			// timeline: the input stream's.
			n := min(len(wt.Words), len(wt.Start), len(wt.End))
			words := make([]sdk.WordTimestamp, n)
			for i := range n {
				words[i] = sdk.WordTimestamp{Text: wt.Words[i], Start: wt.Start[i], End: wt.End[i]}
			}
			if err := send(sdk.StreamEvent{Words: words}); err != nil {
				return err
			}
		case "chunk":
			buf := bytes.NewBuffer(odd)
			if err := decodeChunk(ev.Data, buf); err != nil {
				return err
			}
			pcm := buf.Bytes()
			whole := len(pcm) &^ 1
			odd = bytes.Clone(pcm[whole:])
			if whole == 0 {
				continue
			}
			e := sdk.StreamEvent{Audio: pcm[:whole]}
			if first {
				e.MediaType, first = c.mediaType, false
			}
			if err := send(e); err != nil {
				return err
			}
		}
	}
}

package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"time"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

// Input streaming through ElevenLabs' multi-context WebSocket
// (multi-stream-input, docs/realtime.md "Pooled provider sockets"): every
// context of the process with the same voice, model, format and key shares
// a few sockets of the pool, at most five contexts on one (ElevenLabs'
// documented cap), a new socket when all are full, an idle one closed
// after 15 s (ElevenLabs closes a socket after 20 s without text). The
// gateway sends whole, moderated sentences, so sockets are opened with
// auto_mode=true, which ElevenLabs recommends for exactly that: generation
// starts on each text at once, without the chunk schedule's buffering.

var _ sdk.InputStreamer = (*Provider)(nil)

// muxCap is multi-stream-input's documented cap of contexts per socket.
const muxCap = 5

// newPool is the plugin's pool of multi-context sockets.
func newPool() *upstream.MuxPool {
	return &upstream.MuxPool{Cap: muxCap, Idle: 15 * time.Second, CloseWait: 10 * time.Second, Route: routeMulti}
}

// routeMulti returns the context a server message is for, and whether it
// is the context's last (isFinal).
func routeMulti(data []byte) (string, bool) {
	var m struct {
		ContextID  string `json:"contextId"`
		ContextID2 string `json:"context_id"`
		IsFinal    *bool  `json:"isFinal"`
		IsFinal2   *bool  `json:"is_final"`
	}
	if json.Unmarshal(data, &m) != nil {
		return "", false
	}
	id := cmp.Or(m.ContextID, m.ContextID2)
	final := m.IsFinal != nil && *m.IsFinal || m.IsFinal2 != nil && *m.IsFinal2
	return id, final
}

// multiOpen is the first message of a context.
type multiOpen struct {
	Text          string         `json:"text"`
	ContextID     string         `json:"context_id"`
	VoiceSettings *voiceSettings `json:"voice_settings,omitempty"`
}

// multiText is a text or flush message of a context.
type multiText struct {
	Text      *string `json:"text,omitempty"`
	ContextID string  `json:"context_id"`
	Flush     bool    `json:"flush,omitempty"`
}

// multiClose closes a context: what was flushed is finished, then isFinal.
type multiClose struct {
	ContextID    string `json:"context_id"`
	CloseContext bool   `json:"close_context"`
}

// streamAnswer is any server message: audio (with the alignment of its
// characters relative to its own start), the final marker, or an error.
type streamAnswer struct {
	Audio     string           `json:"audio"`
	IsFinal   *bool            `json:"isFinal"`
	Alignment *streamAlignment `json:"alignment"`
	Message   string           `json:"message"`
	Error     string           `json:"error"`
}

type streamAlignment struct {
	Chars            []string  `json:"chars"`
	CharStartTimesMs []float64 `json:"charStartTimesMs"`
	CharsDurationsMs []float64 `json:"charsDurationsMs"`
}

// StreamInput implements sdk.InputStreamer over a pooled multi-context
// socket. Only raw PCM streams this way here: pieces of it follow each
// other, and its length gives the timeline the alignments are placed on.
// A socket that fails before the context's first audio is replaced, and
// the context's text so far sent again on the new one; after audio, the
// failure is the context's.
func (p *Provider) StreamInput(ctx context.Context, req *sdk.SynthesizeRequest, in <-chan sdk.TextInput, send func(sdk.StreamEvent) error) error {
	probe := *req
	probe.Text = "-" // prepare validates a request with text
	c, err := p.prepare(&probe, true)
	if err != nil {
		return err
	}
	if c.enc.Format != sdk.FormatPCM {
		return sdk.Errorf(sdk.KindInvalidRequest, "elevenlabs: input streaming sends raw PCM; ask for format pcm")
	}
	q := url.Values{"model_id": {req.Model}, "output_format": {c.query.Get("output_format")}, "auto_mode": {"true"}}
	if v := c.query.Get("enable_logging"); v != "" {
		q.Set("enable_logging", v)
	}
	cfg := p.cfg.Load()
	path := "/v1/text-to-speech/" + url.PathEscape(req.Voice) + "/multi-stream-input"
	// One group of sockets per URL (base, voice, model, format) and key.
	pi := upstream.PooledInput{Pool: p.pool, Endpoint: cfg.Endpoint, Path: path, Query: q, NewID: newContextID}
	r := &multiReader{req: req, c: c, send: send}
	return pi.Serve(ctx, req.Credentials.APIKey, c.warnings, send, in, r.run, func() bool { return r.audio })
}

// newContextID returns a context id unique within the process.
func newContextID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// multiReader turns one context's server messages into events.
type multiReader struct {
	req     *sdk.SynthesizeRequest
	c       *call
	send    func(sdk.StreamEvent) error
	samples int64 // audio so far: the alignments' origin
	audio   bool  // some audio was sent
	odd     []byte
}

// run speaks the input on stream st until the context's isFinal; it closes
// the context on the socket whatever happens.
func (r *multiReader) run(ctx context.Context, st *upstream.MuxStream, texts *upstream.InputLog) (err error) {
	id := st.ID()
	closed := false
	defer func() {
		if closed || st.Final() {
			st.Close()
			return
		}
		// Cancelled or failed: the provider stops the context (its slot
		// is free once its isFinal comes back).
		_ = st.CloseWith(multiClose{ContextID: id, CloseContext: true})
	}()
	if err := st.WriteJSON(multiOpen{Text: " ", ContextID: id, VoiceSettings: r.c.body.VoiceSettings}); err != nil {
		return err
	}
	wctx, stopWriter := context.WithCancel(ctx)
	defer stopWriter()
	ended := make(chan struct{})
	// The writer: the input from its start (a reopened context sends it
	// all again), then a flush and the close of the context. Its failures
	// show on the reading side.
	go func() {
		defer close(ended)
		for i := 0; ; {
			t, have, done := texts.At(i)
			switch {
			case have:
				text := t.Text
				if st.WriteJSON(multiText{Text: &text, ContextID: id, Flush: t.Flush}) != nil {
					return
				}
				i++
				continue
			case done:
				_ = st.WriteJSON(multiText{ContextID: id, Flush: true})
				_ = st.WriteJSON(multiClose{ContextID: id, CloseContext: true})
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
		var a streamAnswer
		if err := json.Unmarshal(data, &a); err != nil {
			return &sdk.Error{Kind: sdk.KindUpstream, Message: "elevenlabs: a multi-stream-input message is not JSON"}
		}
		switch {
		case a.Error != "" || a.Message != "" && a.Audio == "":
			return &sdk.Error{Kind: streamErrorKind(a.Error), Message: "elevenlabs: " + upstream.Redact(a.Message, r.req.Credentials.APIKey), UpstreamCode: a.Error}
		case a.IsFinal != nil && *a.IsFinal:
			closed = true
			<-ended
			if len(r.odd) > 0 {
				return &sdk.Error{Kind: sdk.KindUpstream, Message: "elevenlabs: truncated PCM (odd byte count)"}
			}
			return nil
		case a.Audio == "":
			continue
		}
		pcm, err := base64.StdEncoding.DecodeString(a.Audio)
		if err != nil {
			return &sdk.Error{Kind: sdk.KindUpstream, Message: "elevenlabs: audio is not base64"}
		}
		ev := sdk.StreamEvent{}
		rate := r.c.enc.SampleRate
		if r.req.Timestamps && a.Alignment != nil {
			ev.Words = a.Alignment.words(float64(r.samples) / float64(rate))
		}
		// Pieces hold whole samples: an odd byte waits for the next one.
		pcm = append(r.odd, pcm...)
		whole := len(pcm) &^ 1
		r.odd = append([]byte(nil), pcm[whole:]...)
		ev.Audio = pcm[:whole]
		r.samples += int64(whole / 2)
		if !r.audio && len(ev.Audio) > 0 {
			ev.MediaType, r.audio = r.c.mediaType, true
		}
		if len(ev.Audio) == 0 && len(ev.Words) == 0 {
			continue
		}
		if err := r.send(ev); err != nil {
			return err
		}
	}
}

// streamErrorKind classifies a stream-input error code.
func streamErrorKind(code string) sdk.ErrorKind {
	switch code {
	case "invalid_api_key", "needs_authorization":
		return sdk.KindUnauthorized
	case "voice_not_found", "invalid_message", "model_not_found", "max_character_limit_exceeded":
		return sdk.KindInvalidRequest
	case "quota_exceeded", "rate_limit_exceeded", "too_many_concurrent_requests":
		return sdk.KindRateLimited
	}
	return sdk.KindUpstream
}

// words groups the characters of one audio message into words, placed at
// offset seconds (the audio before the message).
func (a *streamAlignment) words(offset float64) []sdk.WordTimestamp {
	n := min(len(a.Chars), len(a.CharStartTimesMs), len(a.CharsDurationsMs))
	al := alignment{Characters: a.Chars[:n], Starts: make([]float64, n), Ends: make([]float64, n)}
	for i := range n {
		al.Starts[i] = offset + a.CharStartTimesMs[i]/1000
		al.Ends[i] = offset + (a.CharStartTimesMs[i]+a.CharsDurationsMs[i])/1000
	}
	return al.words()
}

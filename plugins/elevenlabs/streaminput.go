package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/url"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

// Input streaming through ElevenLabs' stream-input WebSocket
// (docs/realtime.md): one socket per context. The gateway sends whole,
// moderated sentences, so the socket is opened with auto_mode=true, which
// ElevenLabs recommends for exactly that: generation starts on each text
// at once, without the chunk schedule's buffering.

var _ sdk.InputStreamer = (*Provider)(nil)

// streamOpen is the first message of a stream-input socket.
type streamOpen struct {
	Text          string         `json:"text"`
	VoiceSettings *voiceSettings `json:"voice_settings,omitempty"`
}

// streamText is a text message (an empty text ends the input).
type streamText struct {
	Text  string `json:"text"`
	Flush bool   `json:"flush,omitempty"`
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

// StreamInput implements sdk.InputStreamer with stream-input. Only raw PCM
// streams this way here: pieces of it follow each other, and its length
// gives the timeline the alignments are placed on.
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
	rate := c.enc.SampleRate
	q := url.Values{"model_id": {req.Model}, "output_format": {c.query.Get("output_format")}, "auto_mode": {"true"}}
	if v := c.query.Get("enable_logging"); v != "" {
		q.Set("enable_logging", v)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sock, err := p.cfg.Load().DialWebSocket(ctx, "/v1/text-to-speech/"+url.PathEscape(req.Voice)+"/stream-input", q, req.Credentials.APIKey)
	if err != nil {
		return err
	}
	defer sock.Close()
	if err := sock.WriteJSON(streamOpen{Text: " ", VoiceSettings: c.body.VoiceSettings}); err != nil {
		return sock.ReadError(ctx, err)
	}
	// The writer: text as it comes, then the end of input. Its failures
	// show on the reading side, which owns the result.
	go func() {
		for {
			select {
			case t, ok := <-in:
				if !ok {
					_ = sock.WriteJSON(streamText{Text: ""})
					return
				}
				if sock.WriteJSON(streamText{Text: t.Text, Flush: t.Flush}) != nil {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	for _, w := range c.warnings {
		if err := send(sdk.StreamEvent{Warning: w}); err != nil {
			return err
		}
	}
	var (
		samples int64 // audio so far: the alignments' origin
		first   = true
		odd     []byte
	)
	for {
		_, data, err := sock.ReadMessage()
		if err != nil {
			return sock.ReadError(ctx, err)
		}
		var a streamAnswer
		if err := json.Unmarshal(data, &a); err != nil {
			return &sdk.Error{Kind: sdk.KindUpstream, Message: "elevenlabs: a stream-input message is not JSON"}
		}
		switch {
		case a.Error != "" || a.Message != "" && a.Audio == "":
			return &sdk.Error{Kind: streamErrorKind(a.Error), Message: "elevenlabs: " + upstream.Redact(a.Message, req.Credentials.APIKey), UpstreamCode: a.Error}
		case a.IsFinal != nil && *a.IsFinal:
			if len(odd) > 0 {
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
		if req.Timestamps && a.Alignment != nil {
			ev.Words = a.Alignment.words(float64(samples) / float64(rate))
		}
		// Pieces hold whole samples: an odd byte waits for the next one.
		pcm = append(odd, pcm...)
		whole := len(pcm) &^ 1
		odd = append([]byte(nil), pcm[whole:]...)
		ev.Audio = pcm[:whole]
		samples += int64(whole / 2)
		if first && len(ev.Audio) > 0 {
			ev.MediaType, first = c.mediaType, false
		}
		if len(ev.Audio) == 0 && len(ev.Words) == 0 {
			continue
		}
		if err := send(ev); err != nil {
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

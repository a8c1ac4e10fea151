package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

// maxLine bounds one line of a stream: a line holds one chunk of base64
// audio, tens of KB.
const maxLine = 16 << 20

// streamLine is one line of POST /tts/v1/voice:stream: a result with a
// chunk of audio, or an error that ends the stream.
type streamLine struct {
	Result *synthesisAnswer `json:"result"`
	Error  *rpcStatus       `json:"error"`
}

// readLines reads the newline-delimited JSON of a stream answer and calls
// fn with each result's audio, in order, until the end of r. An error line
// ends the stream with its *sdk.Error, mapped by its gRPC code as the
// gateway would have mapped it to an HTTP status; so does an error from
// fn (a failed send: the listener went away). key is redacted from
// upstream messages, as Endpoint does for error answers. It returns the
// last usage a line reported (every line repeats the call's whole count).
func readLines(ctx context.Context, r io.Reader, key string, fn func(audio []byte) error) (*usage, error) {
	var used *usage
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var l streamLine
		if err := json.Unmarshal(line, &l); err != nil {
			return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "inworld: a stream line is not JSON"}
		}
		if l.Error != nil {
			name, code := l.Error.name()
			e := upstream.ErrorFromStatus(httpStatus(code), providerID, name, l.Error.Message, 0)
			e.Message = upstream.Redact(e.Message, key)
			return nil, e
		}
		if l.Result != nil && l.Result.Usage != nil {
			used = l.Result.Usage
		}
		if l.Result == nil || l.Result.AudioContent == "" {
			continue // a line of timestamps or usage only
		}
		audio, err := base64.StdEncoding.DecodeString(l.Result.AudioContent)
		if err != nil {
			return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "inworld: a stream line's audioContent is not base64"}
		}
		if err := fn(audio); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "inworld: a stream line exceeds 16 MiB"}
		}
		return nil, upstream.TransportError(ctx, providerID, err)
	}
	return used, nil
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

// maxEvent bounds one event: a hex audio chunk is tens of KB, the last
// event of a stream that repeats the whole audio some MB.
const maxEvent = 64 << 20

// readEvents reads the server-sent events of a T2A stream and calls fn
// with each one's JSON data, in order, until the end of r or a "[DONE]"
// marker. An error from fn (a failed send, or an event carrying a
// nonzero base_resp) ends the stream.
//
// Hand-written rather than a library: the plugin imports only the sdk and
// the standard library, and the subset of SSE MiniMax uses (data lines,
// blank-line separators) is a few lines of bufio.
func readEvents(ctx context.Context, r io.Reader, fn func(*t2aAnswer) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEvent)
	var data []byte
	dispatch := func() (bool, error) {
		defer func() { data = data[:0] }()
		trimmed := bytes.TrimSpace(data)
		switch {
		case len(trimmed) == 0:
			return false, nil
		case bytes.Equal(trimmed, []byte("[DONE]")):
			return true, nil
		}
		var ev t2aAnswer
		if err := json.Unmarshal(trimmed, &ev); err != nil {
			return false, &sdk.Error{Kind: sdk.KindUpstream, Message: "minimax: an event is not JSON"}
		}
		return false, fn(&ev)
	}
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if done, err := dispatch(); done || err != nil {
				return err
			}
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
		}
		// "event:", "id:", "retry:" and ":" comments carry nothing we use.
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &sdk.Error{Kind: sdk.KindUpstream, Message: "minimax: an event exceeds 64 MiB"}
		}
		return upstream.TransportError(ctx, providerID, err)
	}
	_, err := dispatch()
	return err
}

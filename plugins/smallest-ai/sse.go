package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

// event is the JSON data of one server-sent event of POST /tts/live:
// {"audio": "<base64>", "done": false, "status": "206"} for a chunk and
// {"status": "200", "done": true} at the end. An error reported inside
// the stream carries a non-2xx status with error and message, as the
// endpoint's error bodies do.
type event struct {
	Audio   string          `json:"audio"`
	Done    bool            `json:"done"`
	Status  json.RawMessage `json:"status"`
	Error   string          `json:"error"`
	Message string          `json:"message"`
}

// status reads the event's status, which the reference shows as a
// string ("206") but which is read as a number too.
func (e *event) status() int {
	s := strings.Trim(string(bytes.TrimSpace(e.Status)), `"`)
	n, _ := strconv.Atoi(s)
	return n
}

// maxEvent bounds one event: a chunk of base64 audio is tens of KB.
const maxEvent = 16 << 20

// readEvents reads the server-sent events of r and calls fn with the
// decoded audio of each chunk, in order, until the event with done true.
// A stream that ends without it was cut short. An error event ends the
// stream with its *sdk.Error; so does an error from fn (a failed send:
// the listener went away).
//
// Hand-written rather than a library: the plugin imports only the sdk and
// the standard library, and the SSE subset used here (event and data
// lines, blank-line separators) is a few lines of bufio.
func readEvents(ctx context.Context, r io.Reader, fn func(audio []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEvent)
	var data []byte
	// dispatch handles the event gathered so far; done reports its end.
	dispatch := func() (done bool, err error) {
		if len(data) == 0 {
			return false, nil
		}
		var ev event
		err = json.Unmarshal(data, &ev)
		data = data[:0]
		if err != nil {
			return false, &sdk.Error{Kind: sdk.KindUpstream, Message: "smallest-ai: an event is not JSON"}
		}
		if st := ev.status(); st >= 300 || ev.Error != "" {
			if st < 400 {
				st = http.StatusInternalServerError
			}
			code, msg := ev.Error, ev.Message
			if msg == "" {
				code, msg = "", ev.Error
			}
			return true, upstream.ErrorFromStatus(st, providerID, code, msg, 0)
		}
		if ev.Audio != "" {
			audio, err := base64.StdEncoding.DecodeString(ev.Audio)
			if err != nil {
				return false, &sdk.Error{Kind: sdk.KindUpstream, Message: "smallest-ai: an event's audio is not base64"}
			}
			if err := fn(audio); err != nil {
				return false, err
			}
		}
		return ev.Done, nil
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
		// "event: audio", "id:", "retry:" and ":" comments carry nothing
		// we use: the JSON says what the event holds.
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &sdk.Error{Kind: sdk.KindUpstream, Message: "smallest-ai: an event exceeds 16 MiB"}
		}
		return upstream.TransportError(ctx, providerID, err)
	}
	if done, err := dispatch(); done || err != nil {
		return err
	}
	if ctx.Err() != nil {
		return upstream.TransportError(ctx, providerID, ctx.Err())
	}
	return &sdk.Error{Kind: sdk.KindUnavailable, Retryable: true, Message: "smallest-ai: the stream ended before its last event"}
}

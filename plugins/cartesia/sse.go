package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

// event is one server-sent event of /tts/sse: "chunk" (base64 audio in
// Data), "timestamps", "done" or "error".
type event struct {
	Type           string `json:"type"`
	Data           string `json:"data"`
	Done           bool   `json:"done"`
	StatusCode     int    `json:"status_code"`
	WordTimestamps *struct {
		Words []string  `json:"words"`
		Start []float64 `json:"start"`
		End   []float64 `json:"end"`
	} `json:"word_timestamps"`
	// An error event: "error" in older API versions; error_code, title
	// and message from 2026-03-01.
	Error     string  `json:"error"`
	ErrorCode *string `json:"error_code"`
	Title     string  `json:"title"`
	Message   string  `json:"message"`
}

// maxEvent bounds one event: a chunk of base64 audio is tens of KB.
const maxEvent = 16 << 20

// readEvents reads the server-sent events of r and calls fn with each
// one's JSON data, in order, until a "done" event or the end of r. An
// "error" event ends the stream with its *sdk.Error; so does an error
// from fn (a failed send: the listener went away).
//
// Hand-written rather than a library: the plugin imports only the sdk and
// the standard library, and the subset of SSE Cartesia uses (data lines,
// blank-line separators, ignorable event/id/comment lines) is a few lines
// of bufio.
func readEvents(ctx context.Context, r io.Reader, fn func(*event) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEvent)
	var data []byte
	dispatch := func() (bool, error) {
		if len(data) == 0 {
			return false, nil
		}
		var ev event
		err := json.Unmarshal(data, &ev)
		data = data[:0]
		if err != nil {
			return false, &sdk.Error{Kind: sdk.KindUpstream, Message: "cartesia: an event is not JSON"}
		}
		switch ev.Type {
		case "error":
			return true, eventError(&ev)
		case "done":
			return true, nil
		}
		return false, fn(&ev)
	}
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if stop, err := dispatch(); stop || err != nil {
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
		// "event:", "id:", "retry:" and ":" comments carry nothing we use:
		// the JSON's type field names the event.
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &sdk.Error{Kind: sdk.KindUpstream, Message: "cartesia: an event exceeds 16 MiB"}
		}
		return upstream.TransportError(ctx, providerID, err)
	}
	_, err := dispatch()
	return err
}

// eventError maps an error event to an *sdk.Error by its status code.
func eventError(ev *event) *sdk.Error {
	status := ev.StatusCode
	if status < 400 {
		status = http.StatusInternalServerError
	}
	code := ""
	if ev.ErrorCode != nil {
		code = *ev.ErrorCode
	}
	msg := ev.Message
	if msg == "" {
		msg = ev.Error
	}
	if msg == "" {
		msg = ev.Title
	}
	return upstream.ErrorFromStatus(status, providerID, code, msg, 0)
}

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
	"strings"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

// event is the data of one server-sent event of a speech stream:
// speech.audio.delta carries audio_data, speech.audio.done the usage. An
// error inside the stream comes in the API's error envelope.
type event struct {
	Type          string `json:"type"`
	AudioData     string `json:"audio_data"`
	Object        string `json:"object"`
	RawStatusCode int    `json:"raw_status_code"`
}

// maxEvent bounds one event: a base64 audio chunk is tens of KB.
const maxEvent = 16 << 20

// readEvents reads the events of a speech stream and calls fn with the
// decoded audio of each delta, in order, until speech.audio.done or the
// end of r. An error event, or an error from fn (a failed send: the
// listener went away), ends the stream.
//
// Hand-written rather than a library: the plugin imports only the sdk and
// the standard library, and the SSE subset the API uses (event and data
// lines, blank-line separators) is a few lines of bufio.
func readEvents(ctx context.Context, r io.Reader, fn func([]byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEvent)
	var data []byte
	name := ""
	dispatch := func() (done bool, err error) {
		defer func() { data, name = data[:0], "" }()
		trimmed := bytes.TrimSpace(data)
		if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("[DONE]")) {
			return len(trimmed) > 0, nil
		}
		var ev event
		if err := json.Unmarshal(trimmed, &ev); err != nil {
			return false, &sdk.Error{Kind: sdk.KindUpstream, Message: "mistral: an event is not JSON"}
		}
		switch {
		case ev.Object == "error" || ev.Type == "error" || name == "error":
			status := ev.RawStatusCode
			if status < 400 {
				status = http.StatusInternalServerError
			}
			code, msg := parseError(trimmed)
			e := upstream.ErrorFromStatus(status, providerID, code, msg, 0)
			api.Classify(e)
			return true, e
		case ev.Type == "speech.audio.done" || name == "speech.audio.done":
			return true, nil
		case ev.Type == "speech.audio.delta" || strings.HasSuffix(name, ".delta"):
			audio, err := base64.StdEncoding.DecodeString(ev.AudioData)
			if err != nil {
				return false, &sdk.Error{Kind: sdk.KindUpstream, Message: "mistral: a delta's audio_data is not base64"}
			}
			return false, fn(audio)
		}
		// Unknown event types are skipped: the type list is open.
		return false, nil
	}
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if done, err := dispatch(); done || err != nil {
				return err
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(line[len("data:"):], []byte(" "))...)
		case bytes.HasPrefix(line, []byte("event:")):
			name = strings.TrimSpace(string(line[len("event:"):]))
		}
		// "id:", "retry:" and ":" comments carry nothing we use.
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &sdk.Error{Kind: sdk.KindUpstream, Message: "mistral: an event exceeds 16 MiB"}
		}
		return upstream.TransportError(ctx, providerID, err)
	}
	_, err := dispatch()
	return err
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

// retryInfo is the plugin's HTTP transport: Google says how long to wait
// after a 429 (or 503) in the error body, as a google.rpc.RetryInfo
// detail, rather than in a Retry-After header. For such an answer without
// the header, it copies the delay into one, so that the retry loop and the
// error mapping of upstream.Endpoint, which read the header, honour it.
type retryInfo struct {
	next http.RoundTripper
}

// maxErrorBody bounds what retryInfo reads of an error body: Google's are
// a few hundred bytes.
const maxErrorBody = 64 << 10

// RoundTrip implements http.RoundTripper.
func (t retryInfo) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) || resp.Header.Get("Retry-After") != "" {
		return resp, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if d := retryDelay(body); d > 0 {
		resp.Header.Set("Retry-After", strconv.FormatFloat(d.Seconds(), 'f', -1, 64))
	}
	return resp, nil
}

// retryDelay reads the retryDelay of a RetryInfo detail ("23s", "0.5s")
// in Google's error envelope; 0 when there is none.
func retryDelay(body []byte) time.Duration {
	var b struct {
		Error struct {
			Details []struct {
				Type       string `json:"@type"`
				RetryDelay string `json:"retryDelay"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &b) != nil {
		return 0
	}
	for _, d := range b.Error.Details {
		if strings.HasSuffix(d.Type, "google.rpc.RetryInfo") {
			if v, err := time.ParseDuration(d.RetryDelay); err == nil && v > 0 {
				return v
			}
		}
	}
	return 0
}

// maxEvent bounds one server-sent event: each carries a GenerateContentResponse
// with a piece of base64 audio, tens of KB.
const maxEvent = 16 << 20

// readEvents reads the server-sent events of streamGenerateContent?alt=sse
// and calls fn with each one's answer, in order, until the end of r. An
// error from fn (a failed send, or an error inside the answer) ends the
// stream with that error.
//
// Hand-written rather than a library: the plugin imports only the sdk and
// the standard library, and the subset of SSE Google uses ("data:" lines
// separated by blank lines, CRLF or LF) is a few lines of bufio.
func readEvents(ctx context.Context, r io.Reader, fn func(*answer) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEvent)
	var data []byte
	dispatch := func() error {
		if len(data) == 0 {
			return nil
		}
		var a answer
		err := json.Unmarshal(data, &a)
		data = data[:0]
		if err != nil {
			return &sdk.Error{Kind: sdk.KindUpstream, Message: "google: a stream event is not JSON"}
		}
		return fn(&a)
	}
	for sc.Scan() {
		line := sc.Bytes() // ScanLines drops a trailing \r too
		if len(line) == 0 {
			if err := dispatch(); err != nil {
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
			return &sdk.Error{Kind: sdk.KindUpstream, Message: "google: a stream event exceeds 16 MiB"}
		}
		return upstream.TransportError(ctx, providerID, err)
	}
	return dispatch()
}

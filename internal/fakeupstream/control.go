package fakeupstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options configure a fake server. The zero value is a fast fake that
// accepts the package's default key.
type Options struct {
	// Keys are the API keys the fake accepts; nil means the fake
	// package's Key constant.
	Keys []string
	// ChunkSize is how many bytes of audio each streamed write (or SSE
	// event) carries; 0 means 4096.
	ChunkSize int
	// ChunkDelay is the pause between streamed writes: a realistic
	// provider produces audio at a few times real time.
	ChunkDelay time.Duration
	// Latency is how long the fake waits before answering (first byte).
	// A latency beyond the client's deadline simulates a hung upstream;
	// the wait ends early when the client goes away.
	Latency time.Duration
	// FixedSeconds, when above 0, makes every clip last that long
	// whatever the text, with bodies rendered once at start: what
	// benchmarks want from a "realistic audio body".
	FixedSeconds float64
	// MaxRecorded bounds the requests kept for Requests (the oldest are
	// dropped); 0 means 256, negative means none. Calls counts all.
	MaxRecorded int
	// Voice, when set, makes the fakes that support it (openai,
	// elevenlabs, cartesia) speak real speech in PCM and WAV instead of
	// the tone, with the voice's word times as their timings: for tests
	// of the gateway's aligner, which needs audio that says the text.
	Voice Voice
	// NewModels are model ids the provider has beyond those the fake
	// knows, as a model released after the fake was written would be:
	// the fakes accept each where the provider's API would, treating it
	// like the most restrictive model they know. A plugin passes such an
	// id through (its sdk.AnyModel entry); a test names one here to show
	// that the id reaches the provider as the caller wrote it.
	NewModels []string
}

// Voice renders real speech for a fake (Options.Voice).
type Voice interface {
	// Speak renders text at speed (0 = normal) as 16-bit mono samples at
	// a rate of the voice's choosing, with the span of each
	// whitespace-separated word of text, in order.
	Speak(text string, speed float64) (samples []int16, rate int, words []Span, err error)
}

// Speak lays out text spoken at speed: the tone speech of the package's
// Speak, or real speech when Options.Voice is set.
func (c *Control) Speak(text string, speed float64) (Utterance, error) {
	if c.opts.Voice == nil {
		return Speak(text, speed), nil
	}
	samples, rate, words, err := c.opts.Voice.Speak(text, speed)
	if err != nil {
		return Utterance{}, fmt.Errorf("fake voice: %w", err)
	}
	return voiced(text, samples, rate, words), nil
}

// Fault is a failure a fake answers with instead of doing its work, in
// the provider's own error format.
type Fault struct {
	// Path limits the fault to requests whose URL path starts with it;
	// empty matches every request.
	Path string
	// Status is the HTTP status to answer with: 401, 429, 500, 503, ...
	Status int
	// RetryAfter, if set, is sent as the Retry-After header verbatim
	// ("2", "0.05", or an HTTP date).
	RetryAfter string
	// Code and Message override the provider error body's code and
	// message; empty means a realistic default for Status.
	Code, Message string
}

// Request is a request a fake received.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	Body   []byte
}

// JSON decodes the request body into v.
func (r Request) JSON(v any) error { return json.Unmarshal(r.Body, v) }

// Control is the half of a fake that tests steer: fault injection, delays,
// and what was received. Every fake server embeds one; its methods are safe
// for concurrent use.
type Control struct {
	mu         sync.Mutex
	opts       Options
	queued     []Fault // FailNext faults, consumed in order
	always     []Fault // FailAlways faults
	latency    time.Duration
	chunkDelay time.Duration
	requests   []Request
	calls      map[string]int
	total      int
	hold       chan struct{} // non-nil: streams wait after their first chunk
	breakAfter int           // > 0: the next audio stream breaks after this many chunks (BreakStreamAfter)
	aborted    int
	answer     []byte // the last audio a fake answered (RecordAnswer)
	// violations are what the traffic broke of the fake's API document
	// (Judge); Reset keeps them, for they are the test's to answer for.
	violations []string
}

// NewControl returns a Control with opts' delays.
func NewControl(opts Options) *Control {
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = 4096
	}
	if opts.MaxRecorded == 0 {
		opts.MaxRecorded = 256
	}
	return &Control{opts: opts, latency: opts.Latency, chunkDelay: opts.ChunkDelay, calls: map[string]int{}}
}

// FailNext makes the next n requests matching f.Path fail with f.
func (c *Control) FailNext(n int, f Fault) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for range n {
		c.queued = append(c.queued, f)
	}
}

// FailAlways makes every request matching f.Path fail with f until Reset.
// Queued FailNext faults are used first.
func (c *Control) FailAlways(f Fault) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.always = append(c.always, f)
}

// SetLatency changes Options.Latency for later requests.
func (c *Control) SetLatency(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.latency = d
}

// SetChunkDelay changes Options.ChunkDelay for later requests.
func (c *Control) SetChunkDelay(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.chunkDelay = d
}

// Reset drops faults and recorded requests, zeroes the counters,
// releases held streams and restores the delays of the Options.
func (c *Control) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queued, c.always, c.requests = nil, nil, nil
	c.calls, c.total = map[string]int{}, 0
	c.latency, c.chunkDelay = c.opts.Latency, c.opts.ChunkDelay
	c.aborted, c.breakAfter = 0, 0
	if c.hold != nil {
		close(c.hold)
		c.hold = nil
	}
}

// Calls returns how many requests arrived, rejected ones included.
func (c *Control) Calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// CallsTo returns how many requests arrived for exactly this URL path.
func (c *Control) CallsTo(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[path]
}

// Requests returns the recorded requests, oldest first.
func (c *Control) Requests() []Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Request(nil), c.requests...)
}

// LastRequest returns the most recent recorded request.
func (c *Control) LastRequest() (Request, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.requests) == 0 {
		return Request{}, false
	}
	return c.requests[len(c.requests)-1], true
}

// RecordAnswer keeps b as the last audio the fake answered, so that a
// test can check a client passed the provider's bytes on untouched. The
// fake must not change b afterwards.
func (c *Control) RecordAnswer(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.answer = b
}

// LastAnswer returns the audio of the last RecordAnswer, nil if none.
func (c *Control) LastAnswer() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.answer
}

// Keys returns the accepted API keys, or def if Options.Keys is nil.
func (c *Control) Keys(def string) []string {
	if c.opts.Keys == nil {
		return []string{def}
	}
	return c.opts.Keys
}

// NewModel reports whether id is one of Options.NewModels: a model the
// provider has although the fake does not list it.
func (c *Control) NewModel(id string) bool { return slices.Contains(c.opts.NewModels, id) }

// ChunkSize returns Options.ChunkSize (4096 if unset).
func (c *Control) ChunkSize() int { return c.opts.ChunkSize }

// FixedSeconds returns Options.FixedSeconds.
func (c *Control) FixedSeconds() float64 { return c.opts.FixedSeconds }

// Begin is what a fake's handler calls first: it reads and records the
// request, waits out the latency (false if the client went away
// meanwhile) and returns the fault to answer with, if any.
func (c *Control) Begin(r *http.Request) (req Request, fault *Fault, ok bool) {
	body, _ := io.ReadAll(r.Body)
	req = Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: body}
	c.mu.Lock()
	c.total++
	c.calls[r.URL.Path]++
	if c.opts.MaxRecorded > 0 {
		if len(c.requests) >= c.opts.MaxRecorded {
			c.requests = append(c.requests[:0], c.requests[1:]...)
		}
		c.requests = append(c.requests, req)
	}
	for i, f := range c.queued {
		if strings.HasPrefix(r.URL.Path, f.Path) {
			fault = &f
			c.queued = append(c.queued[:i], c.queued[i+1:]...)
			break
		}
	}
	if fault == nil {
		for _, f := range c.always {
			if strings.HasPrefix(r.URL.Path, f.Path) {
				fault = &f
				break
			}
		}
	}
	latency := c.latency
	c.mu.Unlock()
	if !Wait(r.Context(), latency) {
		return req, nil, false
	}
	return req, fault, true
}

// Wait pauses for d, returning false if ctx ends first.
func Wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Pause waits the current chunk delay; false if ctx ended.
func (c *Control) Pause(ctx context.Context) bool {
	c.mu.Lock()
	d, hold := c.chunkDelay, c.hold
	c.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return false
		}
	}
	return Wait(ctx, d)
}

// HoldStreams makes audio bodies stop after their first chunk until
// ReleaseStreams (or until the client goes away): a test can then see
// what a client has while the provider is provably still sending.
func (c *Control) HoldStreams() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hold == nil {
		c.hold = make(chan struct{})
	}
}

// ReleaseStreams lets held streams go on.
func (c *Control) ReleaseStreams() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hold != nil {
		close(c.hold)
		c.hold = nil
	}
}

// BreakStreamAfter makes the next audio stream break after it has sent
// chunks pieces of audio (at least 1): an HTTP body's connection is
// closed without ending the body, a WebSocket's without a close frame.
// It is a provider that dies mid-utterance, after some of the audio
// reached the client. The fakes that support it say so.
func (c *Control) BreakStreamAfter(chunks int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.breakAfter = max(1, chunks)
}

// Breaks is what a fake asks after sending the written-th piece of audio
// of a stream (counted from 1): whether the stream is to break now
// (BreakStreamAfter). A break happens once.
func (c *Control) Breaks(written int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.breakAfter <= 0 || written < c.breakAfter {
		return false
	}
	c.breakAfter = 0
	return true
}

// Aborted returns how many audio bodies ended early because the client
// went away.
func (c *Control) Aborted() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.aborted
}

func (c *Control) abort() {
	c.mu.Lock()
	c.aborted++
	c.mu.Unlock()
}

// WriteAudio streams a body to w: chunks of ChunkSize bytes, each flushed
// at once (chunked transfer encoding), with the chunk delay between them.
// It stops early when the client goes away, and breaks the connection
// between two chunks where BreakStreamAfter says.
func (c *Control) WriteAudio(ctx context.Context, w http.ResponseWriter, a Audio) {
	flusher, _ := w.(http.Flusher)
	size := c.opts.ChunkSize
	buf := make([]byte, 0, size)
	first := true
	written := 0
	emit := func() bool {
		if !first && !c.Pause(ctx) {
			c.abort()
			return false
		}
		first = false
		if _, err := w.Write(buf); err != nil {
			c.abort()
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		buf = buf[:0]
		written++
		if c.Breaks(written) {
			breakBody(w)
			return false
		}
		return true
	}
	for _, p := range a.Parts {
		for len(p) > 0 {
			n := copy(buf[len(buf):size], p)
			buf, p = buf[:len(buf)+n], p[n:]
			if len(buf) == size && !emit() {
				return
			}
		}
	}
	if len(buf) > 0 {
		emit()
	}
}

// breakBody ends a chunked body between two chunks, as a provider that
// dies between writes does: the connection is closed where the next
// chunk's size line would start, with no last (empty) chunk. That is
// the cut a client can take for the body's end (fasthttp's streamed
// reader reports io.EOF there; the gateway tells it apart by the
// connection, gateway/providers/dispatch's peerConn). A body cut inside
// a chunk is caught by any reader; dispatch's TestBodyNextBrokenEnd
// covers both.
func breakBody(w http.ResponseWriter) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = buf.Flush()
	_ = conn.Close()
}

// WriteJSON answers with status and v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// DecodeStrict decodes a JSON body into v rejecting fields v does not
// have, the way the fakes hold clients to the documented schema.
func DecodeStrict(body []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("data after the JSON value")
	}
	return nil
}

// UnknownField returns the field name of DecodeStrict's error for a field
// the schema lacks.
func UnknownField(err error) (string, bool) {
	_, field, ok := strings.Cut(err.Error(), "json: unknown field ")
	if !ok {
		return "", false
	}
	return strings.Trim(field, `"`), true
}

// ParseMultipart parses a recorded multipart/form-data request body (up
// to 32 MiB of it in memory).
func ParseMultipart(r Request) (*multipart.Form, error) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, errors.New("Content-Type is not multipart/form-data with a boundary")
	}
	return multipart.NewReader(bytes.NewReader(r.Body), params["boundary"]).ReadForm(32 << 20)
}

// BreakConn ends a provider's connection abruptly, as a crash would (no
// WebSocket close frame, no end of the HTTP body), after everything
// written on it: it half-closes the connection, so the client reads each
// byte written before the break and then the end. Closing it outright
// may reset it (when the client's last messages are still unread here),
// and a reset makes the client's kernel drop what it had received but
// not yet read, so the audio a client saw before a break would depend on
// timing. The caller's own Close (when the client has gone too) frees it.
func BreakConn(c net.Conn) {
	if hc, ok := c.(interface{ CloseWrite() error }); ok && hc.CloseWrite() == nil {
		return
	}
	_ = c.Close()
}

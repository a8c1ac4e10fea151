package upstream

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"

	"github.com/voxgate/voxgate/sdk"
)

// InputLog is a realtime context's text input as it arrived, kept whole
// so that a context moved to a new pooled socket (MuxPool) can send it
// again from its start. Every plugin bridging an input stream to a
// provider socket reads its input this way.
type InputLog struct {
	mu     sync.Mutex
	texts  []sdk.TextInput
	closed bool
	signal chan struct{}
}

// CollectInput reads in into a new InputLog until in is closed or ctx
// ends.
func CollectInput(ctx context.Context, in <-chan sdk.TextInput) *InputLog {
	l := &InputLog{signal: make(chan struct{}, 1)}
	go func() {
		for {
			select {
			case t, ok := <-in:
				l.mu.Lock()
				if ok {
					l.texts = append(l.texts, t)
				} else {
					l.closed = true
				}
				l.mu.Unlock()
				select {
				case l.signal <- struct{}{}:
				default:
				}
				if !ok {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return l
}

// At returns the i-th input (ok) if it has arrived; done reports that
// the input ended before it (there is no i-th input, nor will be).
func (l *InputLog) At(i int) (t sdk.TextInput, ok, done bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i < len(l.texts) {
		return l.texts[i], true, false
	}
	return sdk.TextInput{}, false, l.closed
}

// Arrived is signalled when input arrives or ends; wait on it after At
// found nothing new.
func (l *InputLog) Arrived() <-chan struct{} { return l.signal }

// maxReopen is how many times RunPooled moves a context that has had no
// audio yet to a new socket after its socket failed.
const maxReopen = 2

// RunPooled runs one realtime context on a socket of pool (key groups
// the sockets it may share; newID names the context; dial opens a new
// socket): run speaks the context on the stream it is given, and audio
// reports whether any of its audio has come. A socket that fails before
// the context's first audio is replaced and run called again on the new
// one (the InputLog it reads sends the text again from its start), at
// most maxReopen times; after audio, the failure is the context's.
// Errors come back with apiKey redacted.
func RunPooled(ctx context.Context, pool *MuxPool, key, apiKey string, newID func() string,
	dial func(context.Context) (*Socket, error), run func(*MuxStream) error, audio func() bool) error {
	for attempt := 0; ; attempt++ {
		st, err := pool.Open(ctx, key, newID(), dial)
		if err != nil {
			if ctx.Err() != nil || attempt >= maxReopen {
				return redactError(err, apiKey)
			}
			continue
		}
		err = run(st)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || audio() || attempt >= maxReopen || !reopenable(err) {
			return redactError(err, apiKey)
		}
	}
}

// reopenable reports whether a context's failure was its socket's (a
// transport failure or close), not the provider refusing the context.
func reopenable(err error) bool {
	var se *sdk.Error
	if !errors.As(err, &se) {
		return false
	}
	return se.UpstreamCode == "" || strings.HasPrefix(se.UpstreamCode, "websocket_close_1006") || se.Kind == sdk.KindUnavailable
}

// redactError is err with apiKey taken out of its message.
func redactError(err error, apiKey string) error {
	var se *sdk.Error
	if errors.As(err, &se) && apiKey != "" {
		cp := *se
		cp.Message = Redact(cp.Message, apiKey)
		return &cp
	}
	return err
}

// PooledInput is where a provider's pooled input streams connect: the
// WebSocket at Endpoint's Path with Query, its sockets shared by the
// contexts of one API key (and of one Group: what else must keep
// contexts apart, such as an API version the socket was opened with).
// It is the common part of the ElevenLabs, Cartesia and Deepgram
// plugins' StreamInput.
type PooledInput struct {
	Pool     *MuxPool
	Endpoint *Endpoint
	Path     string
	Query    url.Values
	Group    string
	// NewID names a context (sent to the provider where it multiplexes
	// contexts on a socket).
	NewID func() string
}

// Serve speaks one context of the API key key: it sends warnings first,
// collects in (CollectInput) and runs the context on a pooled socket
// (RunPooled), run reading the collected text; audio reports whether
// any audio has come.
func (p PooledInput) Serve(ctx context.Context, key string, warnings []string, send func(sdk.StreamEvent) error,
	in <-chan sdk.TextInput, run func(context.Context, *MuxStream, *InputLog) error, audio func() bool) error {
	// The pool's key never leaves the process.
	poolKey := p.Endpoint.BaseURL + p.Path + "?" + p.Query.Encode() + "\x00" + p.Group + "\x00" + key
	dial := func(sctx context.Context) (*Socket, error) {
		return p.Endpoint.DialWebSocket(sctx, p.Path, p.Query, key)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, w := range warnings {
		if err := send(sdk.StreamEvent{Warning: w}); err != nil {
			return err
		}
	}
	texts := CollectInput(ctx, in)
	return RunPooled(ctx, p.Pool, poolKey, key, p.NewID, dial,
		func(st *MuxStream) error { return run(ctx, st, texts) }, audio)
}

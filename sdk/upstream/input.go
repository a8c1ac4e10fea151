package upstream

import (
	"context"
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

package sdktest

import (
	"context"
	"sync"

	"github.com/voxgate/voxgate/sdk"
)

// InputContext is one realtime context a test runs through a plugin's
// StreamInput: the test sends more text on In and closes it to end the
// context; Audio and Err are final once the WaitGroup StartInput was
// given is done.
type InputContext struct {
	In    chan sdk.TextInput
	Audio int // bytes of audio received
	// First is closed at the context's first audio, or when it ended
	// without any.
	First chan struct{}
	Err   error
}

// StartInput starts a context of s for req, with first as its first
// input, on a goroutine counted by wg.
func StartInput(ctx context.Context, s sdk.InputStreamer, req *sdk.SynthesizeRequest, first sdk.TextInput, wg *sync.WaitGroup) *InputContext {
	c := &InputContext{In: make(chan sdk.TextInput, 64), First: make(chan struct{})}
	c.In <- first
	wg.Add(1)
	go func() {
		defer wg.Done()
		var once sync.Once
		c.Err = s.StreamInput(ctx, req, c.In, func(e sdk.StreamEvent) error {
			c.Audio += len(e.Audio)
			if len(e.Audio) > 0 {
				once.Do(func() { close(c.First) })
			}
			return nil
		})
		once.Do(func() { close(c.First) })
	}()
	return c
}

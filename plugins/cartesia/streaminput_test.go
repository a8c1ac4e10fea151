package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/cartesia"
	"github.com/voxgate/voxgate/sdk"
)

// inputRequest is a StreamInput request of key.
func inputRequest(key string) *sdk.SynthesizeRequest {
	return &sdk.SynthesizeRequest{Model: defaultModel, Voice: fake.VoiceKatie, Format: sdk.FormatPCM, SampleRate: 24000,
		Credentials: sdk.Credentials{APIKey: key}}
}

// context1 runs one context: it sends text, waits until told to close,
// and returns the audio it got.
type context1 struct {
	in    chan sdk.TextInput
	audio int
	first chan struct{}
	err   error
}

func startContext(ctx context.Context, p *Provider, key, text string, wg *sync.WaitGroup) *context1 {
	c := &context1{in: make(chan sdk.TextInput, 8), first: make(chan struct{})}
	c.in <- sdk.TextInput{Text: text}
	wg.Add(1)
	go func() {
		defer wg.Done()
		var once sync.Once
		c.err = p.StreamInput(ctx, inputRequest(key), c.in, func(e sdk.StreamEvent) error {
			c.audio += len(e.Audio)
			if len(e.Audio) > 0 {
				once.Do(func() { close(c.first) })
			}
			return nil
		})
		once.Do(func() { close(c.first) })
	}()
	return c
}

// TestPooledSocketsShareContexts opens 320 contexts at once over two
// keys, within the keys' concurrency limit (the fake enforces Cartesia's
// account limits: contexts active at once, sockets at 10x that): they
// share at most ⌈contexts per key ÷ 16⌉ sockets per key, none carrying
// more than the pool's 16, and every context gets all its audio. Idle
// sockets then serve the next context without a dial.
func TestPooledSocketsShareContexts(t *testing.T) {
	const contexts = 320
	keys := []string{fake.Key, "sk_car_second_0123456789abcdef"}
	srv := fake.New(t, fakeupstream.Options{Keys: keys, ChunkSize: 4800})
	srv.SetConcurrencyLimit(contexts / len(keys))
	p := configured(t, srv, nil)
	defer p.pool.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	all := make([]*context1, contexts)
	for i := range all {
		all[i] = startContext(ctx, p, keys[i%len(keys)], fmt.Sprintf("Context number %d says hello. ", i), &wg)
	}
	for _, c := range all {
		<-c.first
	}
	for _, c := range all {
		close(c.in)
	}
	wg.Wait()
	want := fakeupstream.Speak("Context number 0 says hello. ", 1).Seconds
	for i, c := range all {
		if got := float64(c.audio/2) / 24000; c.err != nil || got < want-0.2 {
			t.Fatalf("context %d: %v after %.3fs of audio", i, c.err, got)
		}
	}
	total, most, refused := srv.Contexts()
	perKey := srv.SocketsByKey()
	limit := int64((contexts/len(keys) + muxCap - 1) / muxCap)
	for _, k := range keys {
		if perKey[k] > limit || perKey[k] == 0 {
			t.Errorf("key %s…: %d sockets for %d contexts, want at most %d", k[:6], perKey[k], contexts/len(keys), limit)
		}
	}
	if total != contexts || most > muxCap || refused != 0 {
		t.Errorf("%d contexts, at most %d on a socket, %d refused", total, most, refused)
	}
	t.Logf("%d contexts over %v sockets", total, perKey)
	before := srv.Sockets()
	var wg2 sync.WaitGroup
	c := startContext(ctx, p, keys[0], "Again. ", &wg2)
	close(c.in)
	wg2.Wait()
	if after := srv.Sockets(); c.err != nil || after != before {
		t.Errorf("a context after the others: %v, %d sockets opened (was %d)", c.err, after, before)
	}
}

// TestConcurrencyLimitIsTheAccounts: a context past the key's concurrency
// limit is refused by Cartesia (429), and the context says so as a
// throttled one; the others are not disturbed.
func TestConcurrencyLimitIsTheAccounts(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{ChunkSize: 2400, ChunkDelay: 5 * time.Millisecond})
	srv.SetConcurrencyLimit(2)
	p := configured(t, srv, nil)
	defer p.pool.Close()
	var wg sync.WaitGroup
	a := startContext(t.Context(), p, fake.Key, "The first of two allowed. ", &wg)
	b := startContext(t.Context(), p, fake.Key, "The second of two allowed. ", &wg)
	<-a.first
	<-b.first
	var wg3 sync.WaitGroup
	c := startContext(t.Context(), p, fake.Key, "One too many. ", &wg3)
	close(c.in)
	wg3.Wait()
	var se *sdk.Error
	if !errors.As(c.err, &se) || se.Kind != sdk.KindRateLimited {
		t.Errorf("a third context: %v, want rate limited", c.err)
	}
	close(a.in)
	close(b.in)
	wg.Wait()
	if a.err != nil || b.err != nil {
		t.Errorf("the allowed contexts: %v, %v", a.err, b.err)
	}
}

// TestCancelFreesTheSlot: a cancelled context is cancelled at Cartesia,
// which sends nothing more for it, and its slot is free at once: a socket
// cancelled on over and over keeps serving.
func TestCancelFreesTheSlot(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{ChunkSize: 2400, ChunkDelay: 5 * time.Millisecond})
	p := configured(t, srv, nil)
	defer p.pool.Close()
	for i := range 2 * muxCap {
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		c := startContext(ctx, p, fake.Key, "A long answer that the user interrupts before it ends, as users do. ", &wg)
		<-c.first
		cancel()
		wg.Wait()
		if c.err == nil {
			t.Fatalf("context %d: cancelled without an error", i)
		}
	}
	if n := p.pool.Contexts(); n != 0 {
		t.Errorf("%d slots still held after every context was cancelled", n)
	}
	for deadline := time.Now().Add(10 * time.Second); srv.Cancels() < 2*muxCap && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n, sockets := srv.Cancels(), srv.Sockets(); n != 2*muxCap || sockets != 1 {
		t.Errorf("%d cancels at the provider over %d sockets, want %d over one", n, sockets, 2*muxCap)
	}
}

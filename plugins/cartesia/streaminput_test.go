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
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// inputRequest is a StreamInput request of key.
func inputRequest(key string) *sdk.SynthesizeRequest {
	return &sdk.SynthesizeRequest{Model: defaultModel, Voice: fake.VoiceKatie, Format: sdk.FormatPCM, SampleRate: 24000,
		Credentials: sdk.Credentials{APIKey: key}}
}

// startContext starts a context of key saying text.
func startContext(ctx context.Context, p *Provider, key, text string, wg *sync.WaitGroup) *sdktest.InputContext {
	return sdktest.StartInput(ctx, p, inputRequest(key), sdk.TextInput{Text: text}, wg)
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
	all := make([]*sdktest.InputContext, contexts)
	// A few words each: every context is open at once whatever it says
	// (none ends its input before all have had their first audio), and
	// each still gets its audio in several chunks interleaved with the
	// others' on the shared sockets; the plugin's and the fake's JSON and
	// base64 work grows with the audio, and was most of this test's time
	// under the race detector with a sentence each.
	say := func(i int) string { return fmt.Sprintf("Context %d. ", i) }
	for i := range all {
		all[i] = startContext(ctx, p, keys[i%len(keys)], say(i), &wg)
	}
	for _, c := range all {
		<-c.First
	}
	for _, c := range all {
		close(c.In)
	}
	wg.Wait()
	want := fakeupstream.Speak(say(0), 1).Seconds
	for i, c := range all {
		if got := float64(c.Audio/2) / 24000; c.Err != nil || got < want-0.2 {
			t.Fatalf("context %d: %v after %.3fs of audio", i, c.Err, got)
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
	close(c.In)
	wg2.Wait()
	if after := srv.Sockets(); c.Err != nil || after != before {
		t.Errorf("a context after the others: %v, %d sockets opened (was %d)", c.Err, after, before)
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
	<-a.First
	<-b.First
	var wg3 sync.WaitGroup
	c := startContext(t.Context(), p, fake.Key, "One too many. ", &wg3)
	close(c.In)
	wg3.Wait()
	var se *sdk.Error
	if !errors.As(c.Err, &se) || se.Kind != sdk.KindRateLimited {
		t.Errorf("a third context: %v, want rate limited", c.Err)
	}
	close(a.In)
	close(b.In)
	wg.Wait()
	if a.Err != nil || b.Err != nil {
		t.Errorf("the allowed contexts: %v, %v", a.Err, b.Err)
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
		<-c.First
		cancel()
		wg.Wait()
		if c.Err == nil {
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

package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/deepgram"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// inputRequest is a StreamInput request of key.
func inputRequest(key string) *sdk.SynthesizeRequest {
	return &sdk.SynthesizeRequest{Model: "aura-2", Voice: "thalia-en", Format: sdk.FormatPCM, SampleRate: 24000,
		Credentials: sdk.Credentials{APIKey: key}}
}

// startContext starts a context of key saying text.
func startContext(ctx context.Context, p *Provider, key, text string, wg *sync.WaitGroup) *sdktest.InputContext {
	return sdktest.StartInput(ctx, p, inputRequest(key), sdk.TextInput{Text: text}, wg)
}

func seconds(texts ...string) float64 {
	var s float64
	for _, t := range texts {
		s += fakeupstream.Speak(t, 1).Seconds
	}
	return s
}

// TestStreamInputSpeaksEachSegment: every segment is spoken as it comes
// (a Flush each), and the context ends with all its audio.
func TestStreamInputSpeaksEachSegment(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{ChunkSize: 4800})
	p := configured(t, srv, nil)
	defer p.pool.Close()
	var wg sync.WaitGroup
	c := startContext(t.Context(), p, fake.Key, "The first sentence. ", &wg)
	<-c.First // spoken before the second arrives
	c.In <- sdk.TextInput{Text: "And the second one. "}
	close(c.In)
	wg.Wait()
	want := seconds("The first sentence. ", "And the second one. ")
	if got := float64(c.Audio/2) / 24000; c.Err != nil || got < want-0.01 || got > want+0.01 {
		t.Errorf("%v after %.3fs of audio, want %.3fs", c.Err, got, want)
	}
}

// TestPooledSpeakSocketsAreReused opens 200 contexts at once over two keys
// (one socket each: Deepgram's socket carries one stream), then as many
// again once they have ended: the second round reuses the idle sockets
// instead of dialling.
func TestPooledSpeakSocketsAreReused(t *testing.T) {
	const contexts = 200
	keys := []string{fake.Key, "dg_second_key_0123456789abcdef0123456789"}
	srv := fake.New(t, fakeupstream.Options{Keys: keys, ChunkSize: 4800})
	p := configured(t, srv, nil)
	defer p.pool.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	round := func() {
		var wg sync.WaitGroup
		all := make([]*sdktest.InputContext, contexts)
		for i := range all {
			all[i] = startContext(ctx, p, keys[i%len(keys)], fmt.Sprintf("Context number %d says hello. ", i), &wg)
		}
		for _, c := range all {
			<-c.First
		}
		for _, c := range all {
			close(c.In)
		}
		wg.Wait()
		for i, c := range all {
			if c.Err != nil || c.Audio == 0 {
				t.Fatalf("context %d: %v after %d bytes", i, c.Err, c.Audio)
			}
		}
	}
	round()
	perKey := srv.SpeakSocketsByKey()
	for _, k := range keys {
		if perKey[k] != contexts/int64(len(keys)) {
			t.Errorf("key %s…: %d sockets for %d contexts at once, want one each", k[:6], perKey[k], contexts/len(keys))
		}
	}
	round()
	if after := srv.SpeakSocketsByKey(); after[keys[0]] != perKey[keys[0]] || after[keys[1]] != perKey[keys[1]] {
		t.Errorf("the second round dialled: %v sockets, was %v", after, perKey)
	}
}

// TestFlushLimitRotatesSockets runs contexts one after the other on one
// key, two Flushes each (a segment and the end), well past Deepgram's 20
// Flushes per minute on a socket: the pool moves to a new socket when one
// has no Flush left, so no Flush is refused and every context ends.
func TestFlushLimitRotatesSockets(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{ChunkSize: 9600})
	p := configured(t, srv, nil)
	defer p.pool.Close()
	const contexts = 25
	for i := range contexts {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		var wg sync.WaitGroup
		c := startContext(ctx, p, fake.Key, fmt.Sprintf("Turn %d. ", i), &wg)
		close(c.In)
		wg.Wait()
		cancel()
		if c.Err != nil || c.Audio == 0 {
			t.Fatalf("context %d: %v after %d bytes", i, c.Err, c.Audio)
		}
	}
	taken, refused, most := srv.Flushes()
	_, sockets := srv.SpeakSockets()
	if refused != 0 || most > fake.FlushLimit {
		t.Errorf("%d Flushes refused, at most %d on a socket in a window", refused, most)
	}
	if want := (taken + fake.FlushLimit - 1) / fake.FlushLimit; sockets != want {
		t.Errorf("%d sockets for %d Flushes, want %d", sockets, taken, want)
	}
	t.Logf("%d Flushes over %d sockets", taken, sockets)
}

// TestCancelClearsTheStream: a cancelled context is cleared at Deepgram
// (Clear: no audio is made for text nobody hears), and the socket serves
// the next context once Cleared comes back.
func TestCancelClearsTheStream(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{ChunkSize: 2400, ChunkDelay: 5 * time.Millisecond})
	p := configured(t, srv, nil)
	defer p.pool.Close()
	for i := range 3 {
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
	// Each slot is free once Deepgram's Cleared comes back.
	for deadline := time.Now().Add(10 * time.Second); (srv.Clears() < 3 || p.pool.Contexts() > 0) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n, held := srv.Clears(), p.pool.Contexts(); n != 3 || held != 0 {
		t.Errorf("%d streams cleared at the provider, want 3; %d slots still held", n, held)
	}
	_, before := srv.SpeakSockets()
	var wg sync.WaitGroup
	c := startContext(t.Context(), p, fake.Key, "After the interruptions. ", &wg)
	close(c.In)
	wg.Wait()
	if got, want := float64(c.Audio/2)/24000, seconds("After the interruptions. "); c.Err != nil || got < want-0.01 || got > want+0.01 {
		t.Errorf("a context after the cleared ones: %v after %.3fs of audio, want %.3fs (audio of a cleared one leaked in?)", c.Err, got, want)
	}
	if _, total := srv.SpeakSockets(); total != before {
		t.Errorf("the context after the cleared ones dialled: %d sockets opened, was %d", total, before)
	}
}

// TestStreamInputRefusesOtherFormats: the socket sends raw PCM only here.
func TestStreamInputRefusesOtherFormats(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	defer p.pool.Close()
	req := inputRequest(fake.Key)
	req.Format, req.SampleRate, req.Bitrate = sdk.FormatMP3, 22050, 48
	in := make(chan sdk.TextInput)
	close(in)
	err := p.StreamInput(t.Context(), req, in, func(sdk.StreamEvent) error { return nil })
	var se *sdk.Error
	if !errors.As(err, &se) || se.Kind != sdk.KindInvalidRequest {
		t.Errorf("mp3: %v, want invalid request", err)
	}
}

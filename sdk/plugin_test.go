package sdk_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/testplugin/calllog"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// These tests drive the real wire: the test kit plugin
// (internal/testplugin), built once by TestMain and started per test
// through go-plugin exactly as the gateway starts plugins.

var testPlugin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sdk-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	testPlugin, err = sdktest.BuildPlugin(context.Background(), "github.com/voxgate/voxgate/internal/testplugin", dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// startProvider starts the test plugin with a call log and returns it and
// the log's path.
func startProvider(t testing.TB) (sdk.Provider, string) {
	t.Helper()
	p := sdktest.StartPlugin(t, testPlugin)
	log := filepath.Join(t.TempDir(), "calls.jsonl")
	if err := p.Configure(context.Background(), map[string]string{"call_log": log}); err != nil {
		t.Fatalf("Configure: %v", err)
	}
	return p, log
}

func request(options string) *sdk.SynthesizeRequest {
	return &sdk.SynthesizeRequest{Model: "test", Voice: "alpha", Text: "one two three four", Options: []byte(options)}
}

// method is one plugin call under test, returning what streamed before the
// error (for Stream) and the error.
type method struct {
	name string // as in the call log
	call func(ctx context.Context, p sdk.Provider, options string) (chunks int, err error)
}

var methods = []method{
	{"synthesize", func(ctx context.Context, p sdk.Provider, options string) (int, error) {
		_, err := p.Synthesize(ctx, request(options))
		return 0, err
	}},
	{"stream", func(ctx context.Context, p sdk.Provider, options string) (int, error) {
		n := 0
		err := p.Stream(ctx, request(options), func(sdk.Chunk) error { n++; return nil })
		return n, err
	}},
	{"clone", func(ctx context.Context, p sdk.Provider, options string) (int, error) {
		_, err := p.Clone(ctx, &sdk.CloneRequest{Model: "test", Name: "x", Options: []byte(options),
			Samples: []sdk.Sample{{Filename: "a.wav", MediaType: "audio/wav", Data: []byte("RIFF")}}})
		return 0, err
	}},
}

func TestPluginErrorsArriveIntact(t *testing.T) {
	p, _ := startProvider(t)
	want := &sdk.Error{Kind: sdk.KindRateLimited, Message: "slow down", UpstreamStatus: 429, UpstreamCode: "rate_limit_exceeded", Retryable: true, RetryAfter: 2500 * time.Millisecond}
	fail := `"fail": {"kind": "rate_limited", "message": "slow down", "status": 429, "code": "rate_limit_exceeded", "retryable": true, "retry_after_ms": 2500}`
	for _, m := range methods {
		t.Run(m.name, func(t *testing.T) {
			_, err := m.call(t.Context(), p, "{"+fail+"}")
			var e *sdk.Error
			if !errors.As(err, &e) {
				t.Fatalf("got %T %v, want *sdk.Error", err, err)
			}
			if *e != *want {
				t.Errorf("got %#v\nwant %#v", e, want)
			}
		})
	}
	t.Run("stream after audio", func(t *testing.T) {
		chunks, err := methods[1].call(t.Context(), p, `{"after_chunks": 2, `+fail+`}`)
		if chunks != 2 {
			t.Errorf("%d chunks arrived before the error, want 2", chunks)
		}
		var e *sdk.Error
		if !errors.As(err, &e) || *e != *want {
			t.Errorf("got %#v, want %#v", err, want)
		}
	})
	t.Run("every kind", func(t *testing.T) {
		for k := sdk.KindInternal; k <= sdk.KindUpstream; k++ {
			_, err := p.Synthesize(t.Context(), request(`{"fail": {"kind": "`+k.String()+`"}}`))
			var e *sdk.Error
			if !errors.As(err, &e) || e.Kind != k {
				t.Errorf("kind %s arrived as %v", k, err)
			}
		}
	})
}

// waitForCall polls the call log until pred holds for some line. It waits,
// it does not time anything: the bound only stops a broken test.
func waitForCall(t *testing.T, log string, pred func(calllog.Call) bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		calls, err := calllog.Read(log)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range calls {
			if pred(c) {
				return
			}
		}
	}
	t.Fatalf("the call log %s never showed the expected line", log)
}

func TestCancelReachesPlugin(t *testing.T) {
	p, log := startProvider(t)
	for _, m := range methods {
		t.Run(m.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := m.call(ctx, p, `{"hang": true}`)
				done <- err
			}()
			// Cancel only once the plugin is inside the call.
			waitForCall(t, log, func(c calllog.Call) bool { return c.Method == m.name && c.Event == "" })
			cancel()
			err := <-done
			var e *sdk.Error
			if !errors.As(err, &e) || !errors.Is(err, context.Canceled) {
				t.Errorf("got %T %v; want an *sdk.Error that is context.Canceled", err, err)
			}
			// The plugin saw its context end: the cancellation crossed the wire.
			waitForCall(t, log, func(c calllog.Call) bool { return c.Method == m.name && c.Event == "canceled" })
		})
	}
}

func TestDeadlineReachesPlugin(t *testing.T) {
	p, log := startProvider(t)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := p.Synthesize(ctx, request(`{"hang": true}`))
	var e *sdk.Error
	if !errors.As(err, &e) || e.Kind != sdk.KindTimeout || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %T %v; want KindTimeout that is context.DeadlineExceeded", err, err)
	}
	waitForCall(t, log, func(c calllog.Call) bool { return c.Method == "synthesize" && c.Event == "canceled" })
}

func TestPluginCrash(t *testing.T) {
	wantUnavailable := func(t *testing.T, err error) {
		t.Helper()
		var e *sdk.Error
		if !errors.As(err, &e) || e.Kind != sdk.KindUnavailable {
			t.Errorf("got %T %v; want KindUnavailable", err, err)
		}
	}
	for _, m := range methods {
		t.Run(m.name, func(t *testing.T) {
			p, _ := startProvider(t)
			options := `{"crash": true}`
			if m.name == "stream" {
				options = `{"crash": true, "after_chunks": 1}`
			}
			chunks, err := m.call(t.Context(), p, options)
			wantUnavailable(t, err)
			// A crash may lose chunks the plugin had sent but gRPC had
			// not yet written, so up to one chunk may arrive, never more.
			if chunks > 1 {
				t.Errorf("%d chunks arrived before the crash, want at most 1", chunks)
			}
			// The process is gone: later calls fail the same way.
			_, err = p.Describe(t.Context())
			wantUnavailable(t, err)
		})
	}
}

func TestPanicKeepsPluginAlive(t *testing.T) {
	p, _ := startProvider(t)
	for _, m := range methods {
		_, err := m.call(t.Context(), p, `{"panic": true}`)
		var e *sdk.Error
		if !errors.As(err, &e) || e.Kind != sdk.KindInternal || !strings.Contains(e.Message, "panic") {
			t.Errorf("%s: got %v; want KindInternal about the panic", m.name, err)
		}
	}
	if _, err := p.Synthesize(t.Context(), request("")); err != nil {
		t.Errorf("after the panics: %v", err)
	}
}

func TestLargeMessages(t *testing.T) {
	// Both well past gRPC's default 4 MiB receive limit.
	p, _ := startProvider(t)
	resp, err := p.Synthesize(t.Context(), request(`{"pad_ms": 200000}`))
	if err != nil {
		t.Fatalf("6 MB clip: %v", err)
	}
	if len(resp.Audio) < 6<<20 {
		t.Errorf("clip is %d bytes, want over 6 MiB", len(resp.Audio))
	}
	sample := bytes.Repeat([]byte{1}, 6<<20)
	if _, err := p.Clone(t.Context(), &sdk.CloneRequest{Model: "test", Name: "big",
		Samples: []sdk.Sample{{Filename: "a.wav", MediaType: "audio/wav", Data: sample}}}); err != nil {
		t.Errorf("6 MiB cloning sample: %v", err)
	}
}

func TestRequestReachesPlugin(t *testing.T) {
	p, log := startProvider(t)
	req := &sdk.SynthesizeRequest{
		Model: "test", Voice: "beta", Text: "héllo wörld", Speed: 1.5, Format: sdk.FormatWAV, SampleRate: 24000,
		Timestamps: true, Options: []byte(`{"custom":"x"}`), Credentials: sdk.Credentials{APIKey: "sk-org", BYOK: true},
	}
	resp, err := p.Synthesize(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	clip, err := sdktest.Decode(resp.MediaType, resp.Audio)
	if err != nil || clip.SampleRate != 24000 || clip.Format != sdk.FormatWAV {
		t.Errorf("clip %+v, %v; want 24 kHz WAV", clip, err)
	}
	calls, err := calllog.Read(log)
	if err != nil || len(calls) != 1 {
		t.Fatalf("call log: %v, %v", calls, err)
	}
	got := calls[0]
	key := sha256.Sum256([]byte("sk-org"))
	want := calllog.Call{
		Seq: got.Seq, Method: "synthesize", Model: "test", Voice: "beta", Text: "héllo wörld", Format: "wav",
		SampleRate: 24000, Speed: 1.5, Timestamps: true, Options: json.RawMessage(`{"custom":"x"}`), BYOK: true,
		KeySHA256: hex.EncodeToString(key[:]),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the plugin received %+v\nwant %+v", got, want)
	}
}

package provenance

import (
	"context"
	"errors"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/audio"
)

// workerArg makes this test binary a fingerprint worker (see TestMain),
// so the tests run real child processes as the gateway does.
const workerArg = "fingerprint-worker-test"

// Media types the test worker misbehaves on, as a broken library would.
const (
	crashType = "audio/x-crash" // the child aborts (SIGABRT, as glibc does on heap corruption)
	hangType  = "audio/x-hang"  // the child never answers
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == workerArg {
		err := serveWorker(os.Stdin, os.Stdout, func(data []byte, mediaType string) ([]uint32, error) {
			switch mediaType {
			case crashType:
				_ = syscall.Kill(os.Getpid(), syscall.SIGABRT)
				time.Sleep(time.Minute)
			case hangType:
				time.Sleep(time.Hour)
			}
			return FingerprintAudio(data, mediaType)
		})
		if err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func testWorkers(t *testing.T, timeout time.Duration) *Workers {
	t.Helper()
	w := NewWorkers([]string{os.Args[0], workerArg}, 1, timeout)
	t.Cleanup(w.Close)
	return w
}

// TestWorkersMatchInProcess: a child computes the fingerprint the
// library computes in-process, and maps the input's faults to the errors
// identify turns into 415 and 400.
func TestWorkersMatchInProcess(t *testing.T) {
	data, err := os.ReadFile(speech(t, "Provenance fingerprints are computed in a child process."))
	if err != nil {
		t.Fatal(err)
	}
	want, err := FingerprintAudio(data, "audio/wav")
	if err != nil {
		t.Fatal(err)
	}
	w := testWorkers(t, 30*time.Second)
	for i := range 3 { // one child serves request after request
		got, err := w.Fingerprint(context.Background(), data, "audio/wav")
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("call %d: the child's fingerprint (%d values) differs from the in-process one (%d)", i, len(got), len(want))
		}
	}
	for _, tc := range []struct {
		name, mediaType string
		data            []byte
		want            error
	}{
		{"not a WAV", "audio/wav", []byte("RIFF....WAVEnot really"), audio.ErrCorrupt},
		{"unknown type", "audio/x-unknown", []byte{1, 2, 3, 4}, audio.ErrUnsupportedMediaType},
		{"silence", "audio/pcm;rate=16000", make([]byte, 320), ErrNoAudio},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := w.Fingerprint(context.Background(), tc.data, tc.mediaType)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if errors.Is(err, ErrWorker) {
				t.Fatalf("an input's fault was reported as the worker's: %v", err)
			}
		})
	}
}

// TestWorkersSurviveACrashAndAHang: a child that aborts or hangs costs
// that one fingerprint (ErrWorker); the next call gets a new child.
func TestWorkersSurviveACrashAndAHang(t *testing.T) {
	data, err := os.ReadFile(speech(t, "A crash costs one fingerprint, never the gateway."))
	if err != nil {
		t.Fatal(err)
	}
	w := testWorkers(t, 2*time.Second)
	for _, bad := range []string{crashType, hangType} {
		t.Run(bad, func(t *testing.T) {
			if _, err := w.Fingerprint(context.Background(), data, bad); !errors.Is(err, ErrWorker) {
				t.Fatalf("error %v, want ErrWorker", err)
			}
			if _, err := w.Fingerprint(context.Background(), data, "audio/wav"); err != nil {
				t.Fatalf("after the child failed, the next call: %v", err)
			}
		})
	}
	// A caller that gives up does not leave the child busy.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := w.Fingerprint(ctx, data, hangType); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a cancelled call: %v", err)
	}
	if _, err := w.Fingerprint(context.Background(), data, "audio/wav"); err != nil {
		t.Fatalf("after a cancelled call: %v", err)
	}
}

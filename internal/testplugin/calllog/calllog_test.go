package calllog

import (
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
)

func TestAppendRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "calls.jsonl")
	if calls, err := Read(path); err != nil || calls != nil {
		t.Fatalf("missing log: %v, %v; want no calls", calls, err)
	}
	var w Writer
	if err := w.Append(Call{Method: "synthesize"}); err != nil {
		t.Fatalf("append without a path must discard: %v", err)
	}
	w.SetPath(path)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if err := w.Append(Call{Seq: int64(i), Method: "stream", Options: json.RawMessage(`{"a":1}`)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := w.Append(Call{Method: "stream", Event: "canceled"}); err != nil {
		t.Fatal(err)
	}
	calls, err := Read(path)
	if err != nil || len(calls) != 21 {
		t.Fatalf("read %d calls, %v; want 21", len(calls), err)
	}
	if n, _ := Count(path, "stream"); n != 20 {
		t.Errorf("Count(stream) = %d, want 20 (event lines excluded)", n)
	}
	if n, _ := Count(path, "synthesize"); n != 0 {
		t.Errorf("Count(synthesize) = %d, want 0", n)
	}
}

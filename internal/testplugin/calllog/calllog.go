// Package calllog is the record the test plugin (internal/testplugin) keeps
// of the calls it received: one JSON object per line, appended to the file
// named by the plugin's `call_log` setting. Gateway tests read it to assert
// what reached the provider, and that nothing did.
package calllog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
)

// Call is one line of the log.
type Call struct {
	// Seq numbers the calls of one plugin process from 1.
	Seq int64 `json:"seq"`
	// Method is "synthesize", "stream", "clone", "voices" or "moderate".
	Method string `json:"method"`
	// Event is empty for the call itself and "canceled" for the line a
	// hanging call writes once it sees its context end.
	Event      string          `json:"event,omitempty"`
	Model      string          `json:"model,omitempty"`
	Voice      string          `json:"voice,omitempty"`
	Text       string          `json:"text,omitempty"`
	Format     string          `json:"format,omitempty"`
	SampleRate int             `json:"sample_rate,omitempty"`
	Speed      float64         `json:"speed,omitempty"`
	Timestamps bool            `json:"timestamps,omitempty"`
	Options    json.RawMessage `json:"options,omitempty"`
	// Name is the requested voice name of a clone call.
	Name string `json:"name,omitempty"`
	// Samples is the number of audio samples of a clone call.
	Samples int `json:"samples,omitempty"`
	// BYOK and KeySHA256 describe the credentials without revealing them:
	// KeySHA256 is the hex SHA-256 of the API key, empty when there was none.
	BYOK      bool   `json:"byok,omitempty"`
	KeySHA256 string `json:"key_sha256,omitempty"`
}

// Writer appends calls to a log file. The zero value (no path) discards
// them. It is safe for concurrent use.
type Writer struct {
	mu   sync.Mutex
	path string
}

// SetPath directs later calls to path; "" turns logging off.
func (w *Writer) SetPath(path string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.path = path
}

// Append writes one line for c. Each line is written with a single write to
// a file opened for appending, so a plugin that exits right after (the crash
// behaviour) leaves a whole line behind.
func (w *Writer) Append(c Call) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.path == "" {
		return nil
	}
	line, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode call: %w", err)
	}
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open call log: %w", err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("write call log: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close call log: %w", err)
	}
	return nil
}

// Read returns the calls logged at path, oldest first. A missing file means
// no calls.
func Read(path string) ([]Call, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read call log: %w", err)
	}
	var calls []Call
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var c Call
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("call log %s: %w", path, err)
		}
		calls = append(calls, c)
	}
	return calls, sc.Err()
}

// Count returns how many calls of method (all methods if "") path records,
// not counting event lines.
func Count(path, method string) (int, error) {
	calls, err := Read(path)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range calls {
		if c.Event == "" && (method == "" || c.Method == method) {
			n++
		}
	}
	return n, nil
}

package dialect

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestHasTopLevelKey(t *testing.T) {
	tests := []struct {
		body string
		want bool
	}{
		{`{"model":"tts-1","input":"hi","voice":"alloy"}`, true},
		{` { "input" : "hi" } `, true},
		{`{"text":"input","model":"x"}`, false},
		{`{"text":"say \"input\": now"}`, false},
		{`{"providerOptions":{"input":1},"text":"x"}`, false},
		{`{"a":[1,{"input":2}],"b":{"c":[]},"input":null}`, true},
		{`{"a":true,"b":-1.5e3,"input":"x"}`, true},
		{`{"text":"x"}`, false},
		{`{}`, false},
		{`[]`, false},
		{``, false},
		{`{"input"`, true},
		{`{"a":"unterminated`, false},
		{`{"a" 1,"input":2}`, false},
		{`{"inputs":"x"}`, false},
	}
	for _, tt := range tests {
		if got := HasTopLevelKey([]byte(tt.body), "input"); got != tt.want {
			t.Errorf("HasTopLevelKey(%s) = %v, want %v", tt.body, got, tt.want)
		}
	}
}

// FuzzHasTopLevelKey checks the scanner against encoding/json on valid
// objects: it must find exactly the top-level keys the decoder sees.
func FuzzHasTopLevelKey(f *testing.F) {
	f.Add(`{"input":"x"}`)
	f.Add(`{"text":"input"}`)
	f.Add(`{"a":{"input":1},"b":[{"input":2}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(body), &m) != nil {
			HasTopLevelKey([]byte(body), "input") // must not panic
			return
		}
		if strings.Contains(body, `\`) {
			return // escaped keys are documented as not recognised
		}
		_, want := m["input"]
		if got := HasTopLevelKey([]byte(body), "input"); got != want {
			t.Errorf("HasTopLevelKey(%s) = %v, want %v", body, got, want)
		}
	})
}

func BenchmarkHasTopLevelKey(b *testing.B) {
	body := []byte(`{"model":"espeak/espeak-ng","voice":"en","text":"Hello from voxgate, a sentence of ordinary length.","output":{"format":"mp3"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if HasTopLevelKey(body, "input") {
			b.Fatal("found")
		}
	}
}

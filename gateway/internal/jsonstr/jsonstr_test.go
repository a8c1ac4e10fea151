package jsonstr

import (
	"encoding/json"
	"testing"
)

// FuzzAppend checks Append against encoding/json: with escapeHTML the
// bytes are what json.Marshal writes; without it they decode to the same
// string.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{"", "plain", `q"b\s`, "\n\r\t\b\f\x00\x1f\x7f", "<a&b>", "\u2028\u2029", "é日本🎙️", "bad\xff\xfeutf8", `\b`, `\\f`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		got := `"` + string(Append(nil, s, true)) + `"`
		if got != string(want) {
			t.Fatalf("Append(%q, html) = %s, encoding/json %s", s, got, want)
		}
		var back, orig string
		if err := json.Unmarshal([]byte(`"`+string(Append(nil, s, false))+`"`), &back); err != nil {
			t.Fatalf("Append(%q) is not a JSON string: %v", s, err)
		}
		_ = json.Unmarshal(want, &orig)
		if back != orig {
			t.Fatalf("Append(%q) decodes to %q, want %q", s, back, orig)
		}
	})
}

package dispatch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// jsonTextCases are strings whose escaping is easy to get wrong.
func jsonTextCases() map[string]string {
	cases := map[string]string{
		"empty":                 "",
		"plain":                 "Hello, world.",
		"quotes":                `She said "hi" and ""left""`,
		"backslashes":           `C:\path\to\file \\ \" \n`,
		"quote and backslash":   `\"`,
		"newline cr tab":        "a\nb\rc\td\r\n",
		"backspace formfeed":    "a\bb\fc",
		"DEL":                   "a\x7fb",
		"line separators":       "one\u2028two\u2029three",
		"only separators":       "\u2028\u2029",
		"invalid byte":          "a\xffb",
		"invalid bytes run":     "\xfe\xff\xc0\xc1",
		"lone continuation":     "x\x80y",
		"truncated rune at end": "caf\xc3",
		"truncated 3-byte":      "x\xe2\x80",
		"encoded surrogate":     "\xed\xa0\x80",
		"overlong slash":        "\xc0\xaf",
		"replacement char":      "a\ufffdb",
		"multi-byte runes":      "Ünïcödé, 日本語, Ελληνικά",
		"emoji":                 "🎙️ 👩‍👩‍👧 🏳️‍🌈",
		"html":                  "<b>&amp;</b> <script>x</script>",
		"placeholder":           "{{voxgate:text}}",
		"long mixed":            strings.Repeat("ab\"c\\\x01é\u2028<", 200),
		"NUL":                   "\x00",
		"all controls":          allControls(),
	}
	for b := 0; b < 0x20; b++ {
		cases[fmt.Sprintf("control %#02x", b)] = fmt.Sprintf("x%cy", b)
	}
	return cases
}

func allControls() string {
	var sb strings.Builder
	for b := 0; b < 0x20; b++ {
		sb.WriteByte(byte(b))
	}
	return sb.String()
}

// checkJSONText fails t if appendJSONText(s), in quotes, does not decode
// to what encoding/json's own round trip of s gives.
func checkJSONText(t *testing.T, s string) {
	t.Helper()
	const prefix = `{"input":"`
	out := appendJSONText([]byte(prefix), s)
	if !bytes.HasPrefix(out, []byte(prefix)) {
		t.Fatalf("appendJSONText(%q) clobbered dst: %q", s, out)
	}
	esc := out[len(prefix):]
	if !utf8.Valid(esc) {
		t.Errorf("appendJSONText(%q) = %q: not valid UTF-8", s, esc)
	}
	for _, b := range esc {
		if b < 0x20 {
			t.Errorf("appendJSONText(%q) = %q: raw control byte %#02x", s, esc, b)
		}
	}
	if bytes.Contains(esc, []byte("\u2028")) || bytes.Contains(esc, []byte("\u2029")) {
		t.Errorf("appendJSONText(%q) = %q: raw U+2028/U+2029", s, esc)
	}

	var got string
	if err := json.Unmarshal(append(append([]byte{'"'}, esc...), '"'), &got); err != nil {
		t.Fatalf("appendJSONText(%q) = %q: not a JSON string body: %v", s, esc, err)
	}
	m, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var want string
	if err := json.Unmarshal(m, &want); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("appendJSONText(%q) = %q decodes to %q; encoding/json gives %q", s, esc, got, want)
	}
}

func TestAppendJSONTextRoundTrip(t *testing.T) {
	for name, s := range jsonTextCases() {
		t.Run(name, func(t *testing.T) { checkJSONText(t, s) })
	}
}

// TestAppendJSONTextExact pins the escapes the doc comment promises.
func TestAppendJSONTextExact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"abc", "abc"},
		{`a"b`, `a\"b`},
		{`a\b`, `a\\b`},
		{"\n\r\t", `\n\r\t`},
		{"\x00\x01\x1f", `\u0000\u0001\u001f`},
		{"\x7f", "\x7f"},
		{"<>&", "<>&"},
		{"\u2028\u2029", `\u2028\u2029`},
		{"a\xffb", `a\ufffdb`},
		{"é🎙", "é🎙"},
	}
	for _, tt := range tests {
		if got := string(appendJSONText(nil, tt.in)); got != tt.want {
			t.Errorf("appendJSONText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzAppendJSONText(f *testing.F) {
	for _, s := range jsonTextCases() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkJSONText(t, s) })
}

// BenchmarkAppendJSONText compares the hand-written escaper with
// json.Marshal on a typical request text.
func BenchmarkAppendJSONText(b *testing.B) {
	// 200 characters, one of them a quote.
	sentence := (`She said: "` + strings.Repeat("The quick brown fox jumps over the lazy dog. ", 5))[:200]
	b.Run("appendJSONText", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(sentence)))
		buf := make([]byte, 0, 1024)
		for b.Loop() {
			buf = appendJSONText(buf[:0], sentence)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(sentence)))
		for b.Loop() {
			if _, err := json.Marshal(sentence); err != nil {
				b.Fatal(err)
			}
		}
	})
}

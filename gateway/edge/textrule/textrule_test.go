package textrule

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/gateway/problem"
)

func TestJSON(t *testing.T) {
	for _, c := range []struct {
		name string
		doc  string
		want []problem.FieldError
	}{
		{"plain", `{"model":"espeak/espeak-ng","voice":"en","text":"hello"}`, nil},
		{"escapes that are fine", `{"text":"a\nb\tc \"q\" \\ \/ \u00e9 \ud83c\udf99 \u0001 \u007f","x":"\u0020"}`, nil},
		{"escaped backslash before u0000 is no NUL", `{"text":"\\u0000"}`, nil},
		{"raw DEL in a value", "{\"text\":\"a\x7fb\"}", nil},
		{"NUL in a value", `{"model":"espeak/espeak-ng","voice":"en\u0000x","text":"hello"}`,
			[]problem.FieldError{problem.Field(msgNUL, "voice")}},
		{"NUL after other escapes", `{"text":"a\nb\"c\u0000"}`, []problem.FieldError{problem.Field(msgNUL, "text")}},
		{"NUL in a nested value", `{"providerOptions":{"a":{"b":["x","\u0000"]}}}`,
			[]problem.FieldError{problem.Field(msgNUL, "providerOptions", "a", "b", "1")}},
		{"NUL in a key", `{"providerOptions":{"k\u0000":"v"}}`,
			[]problem.FieldError{problem.Field(msgKeyCtl, "providerOptions", "k\x00")}},
		{"newline in a key", `{"providerOptions":{"k\n" : 1}}`,
			[]problem.FieldError{problem.Field(msgKeyCtl, "providerOptions", "k\n")}},
		{"escaped control in a key", `{"providerOptions":{"\u001fk":1}}`,
			[]problem.FieldError{problem.Field(msgKeyCtl, "providerOptions", "\x1fk")}},
		{"raw DEL in a key", "{\"providerOptions\":{\"k\x7f\":1}}",
			[]problem.FieldError{problem.Field(msgKeyCtl, "providerOptions", "k\x7f")}},
		{"several, in order", `{"title":"\u0000","tags":["ok","\u0000"],"provider_options":{"z":"\u0000","a\t":0}}`,
			[]problem.FieldError{
				problem.Field(msgKeyCtl, "provider_options", "a\t"), problem.Field(msgNUL, "provider_options", "z"),
				problem.Field(msgNUL, "tags", "1"), problem.Field(msgNUL, "title"),
			}},
		{"top-level string", `"\u0000"`, []problem.FieldError{problem.Field(msgNUL)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !json.Valid([]byte(c.doc)) {
				t.Fatalf("test document is not JSON: %s", c.doc)
			}
			if got := JSON([]byte(c.doc)); !reflect.DeepEqual(got, c.want) {
				t.Errorf("JSON(%s) =\n %q\nwant\n %q", c.doc, got, c.want)
			}
		})
	}
}

func TestName(t *testing.T) {
	for s, want := range map[string]string{
		"":                        "",
		"3f1c9a4e-0000-4000-8000": "",
		"voix été 🎙️":             "",
		"a\x00b":                  msgNameCtl,
		"a\nb":                    msgNameCtl,
		"a\x7f":                   msgNameCtl,
		"caf\xe9":                 msgUTF8,
	} {
		if got := Name(s); got != want {
			t.Errorf("Name(%q) = %q, want %q", s, got, want)
		}
		if got := NameBytes([]byte(s)); got != want {
			t.Errorf("NameBytes(%q) = %q, want %q", s, got, want)
		}
	}
}

// TestCleanAgreesWithTheWalk checks the fast scan against the slow walk
// on random documents: strings (keys and values) of random escapes and
// characters in random nesting. The scan may never pass a document the
// walk faults; without duplicate keys (which the walk's decoded map
// collapses) the two agree exactly.
func TestCleanAgreesWithTheWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 27))
	pieces := []string{`a`, `é`, ` `, `\n`, `\t`, `\"`, `\\`, `\/`, `\u0000`, `\u0001`, `\u001f`, `\u0020`, `\u007f`, `\u00e9`,
		"\x7f", `\\u0000`, `\ud83c\udf99`, `u0000`, `\b`, `\f`, `\r`}
	str := func() string {
		var b strings.Builder
		b.WriteByte('"')
		for range rng.IntN(5) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		b.WriteByte('"')
		return b.String()
	}
	var value func(depth int) string
	value = func(depth int) string {
		switch k := rng.IntN(6); {
		case depth > 3 || k < 2:
			return str()
		case k == 2:
			return []string{"1", "true", "null", "-2.5e3"}[rng.IntN(4)]
		case k == 3:
			var parts []string
			for range rng.IntN(4) {
				parts = append(parts, value(depth+1))
			}
			return "[" + strings.Join(parts, " , ") + "]"
		default:
			var parts []string
			for i := range rng.IntN(4) {
				// A distinct prefix keeps keys unique whatever follows.
				k := str()
				parts = append(parts, `"`+string(rune('a'+i))+k[1:]+" :\n"+value(depth+1))
			}
			return "{" + strings.Join(parts, ",") + "}"
		}
	}
	faulted := 0
	for range 20000 {
		doc := []byte(value(0))
		if !json.Valid(doc) {
			t.Fatalf("generated invalid JSON: %s", doc)
		}
		var v any
		if err := json.Unmarshal(doc, &v); err != nil {
			t.Fatal(err)
		}
		var slow []problem.FieldError
		walk(v, nil, &slow)
		if fast := clean(doc); fast != (len(slow) == 0) {
			t.Fatalf("clean(%s) = %v, but the walk found %q", doc, fast, slow)
		}
		if len(slow) > 0 {
			faulted++
		}
	}
	if faulted < 1000 {
		t.Errorf("only %d of 20000 documents broke the rule: the generator tests too little", faulted)
	}
}

// speechBody is a typical request: a few fields, a text with line breaks.
var speechBody = []byte(`{"model":"openai/gpt-4o-mini-tts","voice":"alloy","text":"` +
	strings.Repeat(`The quick brown fox jumps over the lazy dog.\nAnd again: \"quoted\" words. `, 40) +
	`","providerOptions":{"instructions":"speak calmly"},"output":{"format":"mp3"}}`)

func TestJSONDoesNotAllocateOnValidBodies(t *testing.T) {
	plain := []byte(`{"model":"espeak/espeak-ng","voice":"en","text":"hello there","speed":1.2}`)
	for name, doc := range map[string][]byte{"plain": plain, "escapes": speechBody} {
		if n := testing.AllocsPerRun(100, func() { _ = JSON(doc) }); n != 0 {
			t.Errorf("%s: %v allocations per valid body, want 0", name, n)
		}
	}
}

func BenchmarkJSON(b *testing.B) {
	for name, doc := range map[string][]byte{
		"plain":   []byte(`{"model":"espeak/espeak-ng","voice":"en","text":"` + strings.Repeat("hello there ", 200) + `"}`),
		"escapes": speechBody,
	} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				_ = JSON(doc)
			}
		})
	}
}

package store

import (
	"errors"
	"reflect"
	"testing"
)

func TestSanitizeText(t *testing.T) {
	for in, want := range map[string]string{
		"":                    "",
		"plain":               "plain",
		"tab\tand\x01\x7f":    "tab\tand\x01\x7f", // valid text is left alone
		"en\x00x":             "en\ufffdx",
		"\x00\x00":            "\ufffd\ufffd",
		"caf\xe9":             "caf\ufffd",
		"a\xff\xfeb\x00":      "a\ufffdb\ufffd", // a run of invalid bytes is one replacement
		"\ufffd stays \ufffd": "\ufffd stays \ufffd",
	} {
		if got := SanitizeText(in); got != want || !ValidText(got) {
			t.Errorf("SanitizeText(%q) = %q, want %q", in, got, want)
		}
		if ValidText(in) != (in == want) {
			t.Errorf("ValidText(%q) = %v", in, ValidText(in))
		}
	}
}

// TestLogRowTextCoversEveryField sets each string field of LogRow, found
// by reflection, to a NUL in turn: CheckText must refuse it and Sanitize
// must repair it. A string field added to LogRow without adding it to
// logRowText fails here, not in production on PostgreSQL.
func TestLogRowTextCoversEveryField(t *testing.T) {
	typ := reflect.TypeFor[LogRow]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Type.Kind() != reflect.String {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			var r LogRow
			reflect.ValueOf(&r).Elem().Field(i).SetString("a\x00b")
			var te *TextError
			if err := r.CheckText(); !errors.As(err, &te) || !errors.Is(err, ErrInvalidText) {
				t.Fatalf("CheckText = %v, want a *TextError", err)
			}
			if !r.Sanitize() || !r.Sanitized || r.CheckText() != nil {
				t.Fatalf("Sanitize left %+v", r)
			}
			if got := reflect.ValueOf(r).Field(i).String(); got != "a\ufffdb" {
				t.Errorf("sanitized to %q", got)
			}
		})
	}
	r := LogRow{RequestID: "r", OrgID: "o", ErrorDetail: "fine\n"}
	if r.Sanitize() || r.Sanitized {
		t.Error("Sanitize changed a valid row")
	}
}

func TestCheckValueTextNamesThePath(t *testing.T) {
	v := map[string]any{"b": []any{1.0, "ok", map[string]any{"c": "x\x00"}}, "a": true}
	var te *TextError
	if err := CheckValueText("provider_options", v); !errors.As(err, &te) || te.Field != "provider_options.b.2.c" {
		t.Errorf("CheckValueText = %v, want a *TextError naming provider_options.b.2.c", err)
	}
	if err := CheckValueText("provider_options", map[string]any{"k\xff": 1.0}); !errors.Is(err, ErrInvalidText) {
		t.Errorf("a key of invalid UTF-8: %v", err)
	}
	if err := CheckValueText("x", map[string]any{"k": []any{"\t", nil, 2.0}}); err != nil {
		t.Errorf("valid text refused: %v", err)
	}
}

func BenchmarkLogRowCheckText(b *testing.B) {
	r := LogRow{RequestID: "3f1c9a4e-5b6d-4c1e-9f00-0123456789ab", OrgID: "acme", Path: "/v1/audio/speech", Provider: "openai",
		Model: "gpt-4o-mini-tts", VoiceID: "alloy", ProviderOptions: `{"instructions":"speak calmly"}`, KeyID: "key-1", Cache: "miss"}
	b.ReportAllocs()
	for b.Loop() {
		if r.CheckText() != nil {
			b.Fatal("refused")
		}
	}
}

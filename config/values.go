package config

import (
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// Secret is a string that never prints: fmt and zap see "[redacted]".
type Secret string

// String redacts the value.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString redacts the value.
func (s Secret) GoString() string { return s.String() }

// MarshalText redacts the value, so it never reaches JSON or YAML output.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Value returns the secret itself; call it only where it is used.
func (s Secret) Value() string { return string(s) }

// Duration is a time.Duration written as "500ms", "60s" in YAML.
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	// Errors are *yaml.TypeError values: yaml.v3 then goes on decoding the
	// rest of the file, so one run reports every mistake.
	v, err := time.ParseDuration(s)
	if err != nil {
		return typeError("line %d: %q is not a duration like 500ms or 60s", n.Line, s)
	}
	if v < 0 {
		return typeError("line %d: duration %q must not be negative", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// typeError is a decoding error yaml.v3 collects instead of stopping at.
func typeError(format string, args ...any) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf(format, args...)}}
}

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

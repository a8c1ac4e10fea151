package upstream

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/voxgate/voxgate/sdk"
)

// Check holds a plugin's checks of the providerOptions values it passes
// on, against the types and ranges its provider documents. The caller
// then gets a validation error naming the field, and the provider is not
// called: a value it would refuse costs no round trip and no quota, and
// the gateway can say which field to fix. Hand-written per plugin because
// the providers document their ranges in prose as often as in schemas;
// each check names the document it follows in a comment.
//
// The checks run in order and keep the first failure; a nil value (an
// option not given) passes every check.
//
//	c := upstream.NewCheck("elevenlabs")
//	upstream.InRange(c, "voice_settings.speed", o.Speed, 0.7, 1.2)
//	c.OneOf("apply_text_normalization", o.Normalization, "auto", "on", "off")
//	if err := c.Err(); err != nil { ... }
type Check struct {
	provider string
	err      *sdk.Error
}

// NewCheck returns an empty Check whose messages name provider.
func NewCheck(provider string) *Check { return &Check{provider: provider} }

// Err returns the first failed check, nil if none failed.
func (c *Check) Err() error {
	if c.err == nil {
		return nil
	}
	return c.err
}

// Fail records a failure of field with a formatted reason, unless an
// earlier check failed. The message reads "<provider>: providerOptions
// field <field> <reason>".
func (c *Check) Fail(field, format string, args ...any) {
	if c.err != nil {
		return
	}
	c.err = sdk.InvalidOption(field, "%s: providerOptions field %s %s", c.provider, field, fmt.Sprintf(format, args...))
}

// InRange checks lo <= *v <= hi.
func InRange[T cmp.Ordered](c *Check, field string, v *T, lo, hi T) {
	if v != nil && (*v < lo || *v > hi) {
		c.Fail(field, "must be between %v and %v, got %v", lo, hi, *v)
	}
}

// OneOf checks that *v is one of allowed.
func (c *Check) OneOf(field string, v *string, allowed ...string) {
	if v != nil && !slices.Contains(allowed, *v) {
		c.Fail(field, "must be one of %s, got %q", strings.Join(allowed, ", "), *v)
	}
}

// MaxItems checks that a list of n items has at most max.
func (c *Check) MaxItems(field string, n, max int) {
	if n > max {
		c.Fail(field, "takes at most %d items, got %d", max, n)
	}
}

// NotEmpty checks that a string given is not empty.
func (c *Check) NotEmpty(field string, v *string) {
	if v != nil && strings.TrimSpace(*v) == "" {
		c.Fail(field, "must not be empty")
	}
}

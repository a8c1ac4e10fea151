package edge

import (
	"errors"
	"slices"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/problem"
)

func TestPathParams(t *testing.T) {
	for pattern, want := range map[string][]string{
		"/v1/voices":      nil,
		"/v1/voices/{id}": {"id"},
		"/elevenlabs/v1/text-to-speech/{voice_id}/stream":    {"voice_id"},
		"/v1/pronunciation-dictionaries/{id}/rules/{ruleId}": {"id", "ruleId"},
		"/files/{path:*}": {"path"},
	} {
		if got := pathParams(pattern); !slices.Equal(got, want) {
			t.Errorf("pathParams(%s) = %q, want %q", pattern, got, want)
		}
	}
}

// TestNamesChecked calls a wrapped handler with the parameters the router
// would set (raw, as sent) and query strings: a name with a control
// character or invalid UTF-8, raw or once decoded, is refused naming the
// parameter, and the handler does not run.
func TestNamesChecked(t *testing.T) {
	for _, c := range []struct {
		name, id, query string
		path            []string
	}{
		{"plain", "3f1c9a4e-5b6d-4c1e-9f00-0123456789ab", "limit=5", nil},
		{"percent-encoded space", "en%20us", "", nil},
		{"raw NUL", "a\x00b", "", []string{"id"}},
		{"encoded NUL", "a%00b", "", []string{"id"}},
		{"encoded newline", "a%0Ab", "", []string{"id"}},
		{"encoded invalid UTF-8", "%FF", "", []string{"id"}},
		{"query value", "v1", "provider=espeak%00", []string{"provider"}},
		{"query name", "v1", "a%01=1", []string{"a\x01"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ran := false
			h := namesChecked("/v1/voices/{id}", func(*fasthttp.RequestCtx, *exchange) error { ran = true; return nil })
			var ctx fasthttp.RequestCtx
			ctx.Request.SetRequestURI("/v1/voices/x?" + c.query)
			ctx.SetUserValue("id", c.id)
			err := h(&ctx, &exchange{})
			var pe *problem.Error
			switch {
			case c.path == nil && (err != nil || !ran):
				t.Errorf("refused: %v", err)
			case c.path != nil && (!errors.As(err, &pe) || pe.Code != problem.ValidationFailed || ran ||
				len(pe.Validation) != 1 || !slices.Equal(pe.Validation[0].Path, c.path)):
				t.Errorf("= %v (handler ran: %v), want validation_failed naming %q", err, ran, c.path)
			}
		})
	}
}

package problem

import (
	"fmt"
	"slices"
	"testing"

	"github.com/voxgate/voxgate/sdk"
)

// TestFromPlugin: a plugin's refusal of a providerOptions value it checked
// itself names the caller's field; a refusal by the provider stays the
// provider's.
func TestFromPlugin(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		code   Code
		status int
		path   []string
	}{
		{"an option out of range", sdk.InvalidOption("voice_settings.speed", "elevenlabs: must be between 0.7 and 1.2"),
			ValidationFailed, 400, []string{"providerOptions", "voice_settings", "speed"}},
		{"through wrapping", fmt.Errorf("turn 2: %w", sdk.InvalidOption("seed", "elevenlabs: must be 0 to 4294967295")),
			ValidationFailed, 400, []string{"providerOptions", "seed"}},
		{"the provider refused", &sdk.Error{Kind: sdk.KindInvalidRequest, Message: "voice not found", UpstreamStatus: 404},
			ProviderRejected, 422, nil},
		{"another kind with a field is not the caller's", &sdk.Error{Kind: sdk.KindUpstream, Message: "boom", Field: "seed"},
			ProviderError, 502, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := From(tt.err, "elevenlabs")
			if e.Code != tt.code || e.Status() != tt.status || e.Provider != "elevenlabs" {
				t.Fatalf("got %s %d (provider %q), want %s %d", e.Code, e.Status(), e.Provider, tt.code, tt.status)
			}
			if tt.path == nil {
				if len(e.Validation) != 0 {
					t.Errorf("validation %+v", e.Validation)
				}
				return
			}
			if len(e.Validation) != 1 || !slices.Equal(e.Validation[0].Path, tt.path) || e.Validation[0].Message == "" {
				t.Errorf("validation %+v, want one entry at %v", e.Validation, tt.path)
			}
		})
	}
}

package sdktest

import (
	"context"
	"errors"
	"maps"
	"testing"

	"github.com/voxgate/voxgate/sdk"
)

// Configurer is what Configure needs: an sdk.Provider or an sdk.Moderator.
type Configurer interface {
	Configure(ctx context.Context, settings map[string]string) error
}

// Configure merges settings (later maps win; nil maps are skipped), hands
// them to p.Configure and returns p, failing the test if Configure
// refuses them. A plugin's tests configure a fresh provider against their
// fake in nearly every test, the base URL in one map and the case's own
// settings in another; this says it once.
func Configure[P Configurer](tb testing.TB, p P, settings ...map[string]string) P {
	tb.Helper()
	merged := map[string]string{}
	for _, s := range settings {
		maps.Copy(merged, s)
	}
	if err := p.Configure(tb.Context(), merged); err != nil {
		tb.Fatalf("Configure: %v", err)
	}
	return p
}

// AsError returns the *sdk.Error err is or wraps, failing the test when
// there is none: every error a provider returns must be one, since the
// gateway maps its Kind to the client's status and decides retries by it.
func AsError(tb testing.TB, err error) *sdk.Error {
	tb.Helper()
	var e *sdk.Error
	if !errors.As(err, &e) {
		tb.Fatalf("got %v (%T), want an *sdk.Error", err, err)
	}
	return e
}

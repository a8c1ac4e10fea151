package sdk

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrorKind classifies a plugin failure so the gateway can map it to a
// problem code without parsing messages.
type ErrorKind int

const (
	// KindInternal is a bug or unexpected failure inside the plugin.
	KindInternal ErrorKind = iota
	// KindInvalidRequest: the provider rejected the request itself (unknown
	// voice, bad option). Retrying the same request cannot help.
	KindInvalidRequest
	// KindUnauthorized: the credentials were missing or rejected upstream.
	KindUnauthorized
	// KindRateLimited: upstream asked to slow down; see RetryAfter.
	KindRateLimited
	// KindUnavailable: upstream or the engine is temporarily down.
	KindUnavailable
	// KindTimeout: upstream did not answer in time.
	KindTimeout
	// KindUnsupported: the provider or model cannot do this (stream, clone,
	// timestamps).
	KindUnsupported
	// KindUpstream: upstream failed in another way (a 4xx/5xx not covered
	// above).
	KindUpstream
)

var kindNames = [...]string{"internal", "invalid_request", "unauthorized", "rate_limited", "unavailable", "timeout", "unsupported", "upstream"}

// String returns the kind's snake_case name.
func (k ErrorKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Error is a plugin failure with what the gateway needs to report it: the
// upstream HTTP status and error code, and whether a retry can help. It
// crosses the process boundary intact.
type Error struct {
	Kind ErrorKind
	// Message is a human-readable description. It must not contain
	// credentials or the request's full text.
	Message string
	// UpstreamStatus is the provider's HTTP status, 0 if none.
	UpstreamStatus int
	// UpstreamCode is the provider's own error code, "" if none.
	UpstreamCode string
	// Retryable says a later identical call may succeed.
	Retryable bool
	// RetryAfter is the provider's requested delay, 0 if none.
	RetryAfter time.Duration
	// Field names the providerOptions field whose value the plugin
	// refuses, with KindInvalidRequest: its path inside providerOptions,
	// segments joined by dots ("voice_settings.speed", "seed"). The
	// gateway then answers validation_failed naming
	// providerOptions.<Field>, the caller's own field, rather than
	// provider_rejected_request: the value was checked against the
	// provider's documented types and ranges and never sent. Empty for
	// every other error. See InvalidOption.
	Field string

	// cause is the local error behind this one (a context error, a gRPC
	// transport failure), kept so that errors.Is(err, context.Canceled)
	// still works on an *Error. It never crosses the process boundary.
	cause error
}

// Unwrap returns the local error this one was made from, if any: the
// context error of a cancelled or expired call, or the transport failure of
// a call to a plugin process that died. Errors that came from the plugin
// itself unwrap to nil.
func (e *Error) Unwrap() error { return e.cause }

// Error implements error.
func (e *Error) Error() string {
	s := e.Kind.String() + ": " + e.Message
	if e.UpstreamStatus != 0 {
		s += fmt.Sprintf(" (upstream %d", e.UpstreamStatus)
		if e.UpstreamCode != "" {
			s += " " + e.UpstreamCode
		}
		s += ")"
	}
	return s
}

// InvalidOption returns the error of a providerOptions value the plugin
// refuses before calling the provider: KindInvalidRequest naming field
// (see Error.Field), with a formatted message that should say what the
// provider documents ("must be between 0.7 and 1.2").
func InvalidOption(field, format string, args ...any) *Error {
	return &Error{Kind: KindInvalidRequest, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Errorf returns an *Error of the given kind with a formatted message.
func Errorf(kind ErrorKind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// AsError returns err as an *Error. Context errors become KindTimeout or
// KindUnavailable; anything else becomes KindInternal.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Kind: KindTimeout, Message: err.Error(), Retryable: true, cause: err}
	case errors.Is(err, context.Canceled):
		return &Error{Kind: KindUnavailable, Message: err.Error(), cause: err}
	}
	return &Error{Kind: KindInternal, Message: err.Error()}
}

// UnimplementedProvider can be embedded in a Provider to answer the optional
// methods with KindUnsupported.
type UnimplementedProvider struct{}

// Configure accepts any settings.
func (UnimplementedProvider) Configure(context.Context, map[string]string) error { return nil }

// Voices returns no voices.
func (UnimplementedProvider) Voices(context.Context, *VoicesRequest) ([]Voice, error) {
	return nil, nil
}

// Stream reports KindUnsupported.
func (UnimplementedProvider) Stream(context.Context, *SynthesizeRequest, func(Chunk) error) error {
	return Errorf(KindUnsupported, "streaming is not supported")
}

// Clone reports KindUnsupported.
func (UnimplementedProvider) Clone(context.Context, *CloneRequest) (*CloneResponse, error) {
	return nil, Errorf(KindUnsupported, "voice cloning is not supported")
}

package sdk

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginpb "github.com/voxgate/voxgate/sdk/proto"
)

// An *Error crosses the process boundary as a gRPC status whose details hold
// a pluginpb.Error. The status code is chosen to be meaningful to generic
// gRPC tooling, but the host trusts only the detail: a status without one
// did not come from the plugin's code but from the transport (the process
// died, the connection closed) or from the host's own context.

// grpcCode returns the gRPC code a status of kind k carries.
func grpcCode(k ErrorKind) codes.Code {
	switch k {
	case KindInternal:
		return codes.Internal
	case KindInvalidRequest:
		return codes.InvalidArgument
	case KindUnauthorized:
		return codes.Unauthenticated
	case KindRateLimited:
		return codes.ResourceExhausted
	case KindUnavailable:
		return codes.Unavailable
	case KindTimeout:
		return codes.DeadlineExceeded
	case KindUnsupported:
		return codes.Unimplemented
	}
	return codes.Unknown
}

// errorToStatus turns a plugin implementation's error into the status the
// plugin side returns. Errors that are not *Error go through AsError, so a
// plain error arrives as KindInternal and a context error as
// KindTimeout/KindUnavailable.
func errorToStatus(err error) error {
	if err == nil {
		return nil
	}
	e := AsError(err)
	code := grpcCode(e.Kind)
	st, detErr := status.New(code, e.Message).WithDetails(&pluginpb.Error{
		Kind:           pluginpb.ErrorKind(e.Kind),
		Message:        e.Message,
		UpstreamStatus: int32(e.UpstreamStatus),
		UpstreamCode:   e.UpstreamCode,
		Retryable:      e.Retryable,
		RetryAfterMs:   e.RetryAfter.Milliseconds(),
		Field:          e.Field,
	})
	if detErr != nil {
		// Only a broken protobuf runtime gets here; the code still says
		// roughly what happened.
		return status.Error(code, e.Message)
	}
	return st.Err()
}

// errorFromRPC turns the error of a gRPC call made with ctx into what the
// host sees: the plugin's own *Error when the status carries one, otherwise
// an *Error classifying the local failure. Context errors stay reachable
// through errors.Is (Error.Unwrap).
func errorFromRPC(ctx context.Context, method string, err error) error {
	if err == nil {
		return nil
	}
	st, isStatus := status.FromError(err)
	if isStatus {
		for _, d := range st.Details() {
			if pe, ok := d.(*pluginpb.Error); ok {
				e := &Error{
					Kind:           ErrorKind(pe.GetKind()),
					Message:        pe.GetMessage(),
					UpstreamStatus: int(pe.GetUpstreamStatus()),
					UpstreamCode:   pe.GetUpstreamCode(),
					Retryable:      pe.GetRetryable(),
					RetryAfter:     time.Duration(pe.GetRetryAfterMs()) * time.Millisecond,
					Field:          pe.GetField(),
				}
				// A plugin that returns its context's error when the
				// propagated deadline fires can answer before the host's
				// own timer has ended ctx (under load the host's timer
				// goroutine runs late). Past the host's deadline it is
				// that deadline all the same: say so to errors.Is. Before
				// it, a timeout is the plugin's own (its upstream's).
				if dl, ok := ctx.Deadline(); ok && e.Kind == KindTimeout && !time.Now().Before(dl) {
					e.cause = context.DeadlineExceeded
				}
				return e
			}
		}
	}
	// The host's own context explains the failure better than the status,
	// which for a cancelled call only says "context canceled".
	if cerr := ctx.Err(); cerr != nil {
		e := AsError(cerr)
		e.Message = fmt.Sprintf("plugin %s: %v", method, cerr)
		return e
	}
	// From here on the failure is the transport's, not the plugin's code.
	// Its text names where the plugin listens (a socket path) and gRPC's
	// internals: it stays in the cause, which logs show (Error), and the
	// message, which callers see, says what failed instead.
	if !isStatus {
		return &Error{Kind: KindInternal, Message: fmt.Sprintf("plugin %s failed", method), cause: err}
	}
	e := &Error{cause: err}
	switch st.Code() {
	case codes.Unavailable, codes.Canceled, codes.Aborted:
		// The plugin process died or its connection is closing (gRPC reports
		// a closing client connection as Canceled). The gateway restarts the
		// plugin, so a later call may succeed.
		e.Kind, e.Retryable = KindUnavailable, true
		e.Message = fmt.Sprintf("plugin %s: the plugin process is not reachable (it is restarted automatically)", method)
	case codes.DeadlineExceeded:
		// The plugin's side enforces the propagated deadline with its own
		// timer, which can fire a moment before the host context's: the
		// call timed out all the same, so say so to errors.Is.
		e.Kind, e.Retryable = KindTimeout, true
		e.Message = fmt.Sprintf("plugin %s: timed out", method)
		e.cause = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	case codes.Unimplemented:
		// A plugin built against an older protocol lacks the method.
		e.Kind = KindUnsupported
		e.Message = fmt.Sprintf("plugin %s: not implemented by this plugin", method)
	default:
		e.Kind = KindInternal
		e.Message = fmt.Sprintf("plugin %s failed", method)
	}
	return e
}

// recoverToError turns a panic in a plugin implementation into a
// KindInternal error, so one bad request does not take down the plugin
// process and every call in flight with it. The stack goes to stderr, which
// go-plugin forwards to the gateway's log. Use as `defer recoverToError(&err)`.
func recoverToError(method string, err *error) {
	r := recover()
	if r == nil {
		return
	}
	fmt.Fprintf(os.Stderr, "voxgate plugin: panic in %s: %v\n%s", method, r, debug.Stack())
	*err = errorToStatus(&Error{Kind: KindInternal, Message: fmt.Sprintf("plugin panicked in %s: %v", method, r)})
}

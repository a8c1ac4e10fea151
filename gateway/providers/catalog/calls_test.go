package catalog

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/sdk"
)

// TestEndByNamesTheBindingDeadline: a call that timed out is reported as
// the request's timeout or the provider's by whichever deadline came
// first, also when the provider's is not its context's (a planned
// stream's, which its connection enforces).
func TestEndByNamesTheBindingDeadline(t *testing.T) {
	p := &Provider{ID: "prov", Policy: Policy{Timeout: 30 * time.Second}}
	now := time.Now()
	past, soon, later := now.Add(-time.Second), now.Add(30*time.Minute), now.Add(time.Hour)
	timeout := &sdk.Error{Kind: sdk.KindTimeout, Message: "prov: timed out: i/o timeout"}
	const provider = "(providers.prov.timeout)"
	tests := []struct {
		name             string
		parent, deadline time.Time // parent zero: no request deadline
		err              error
		want             string // the problem code, or a piece of the message
	}{
		{"the provider's deadline passed", later, past, timeout, provider},
		{"the request's deadline came first", past, later, timeout, string(problem.RequestTimeout)},
		{"both at once", past, past, timeout, string(problem.RequestTimeout)},
		{"no request deadline", time.Time{}, past, timeout, provider},
		{"a timeout before either deadline keeps its message", later, soon, timeout, "i/o timeout"},
		// A call whose deadline passed timed out, whatever its error
		// says (a plugin's "call cancelled" under its own context).
		{"cancelled past the provider's deadline", later, past, &sdk.Error{Kind: sdk.KindUnavailable, Message: "prov: call cancelled"}, provider},
		{"cancelled past the request's deadline", past, later, &sdk.Error{Kind: sdk.KindUnavailable, Message: "prov: call cancelled"}, string(problem.RequestTimeout)},
		{"not a timeout", later, soon, &sdk.Error{Kind: sdk.KindUpstream, Message: "boom"}, "boom"},
	}
	c := NewCalls(nil, nil, true)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := context.Background()
			if !tt.parent.IsZero() {
				var cancel context.CancelFunc
				parent, cancel = context.WithDeadline(parent, tt.parent)
				defer cancel()
			}
			err := c.EndBy(parent, parent, tt.deadline, p, "m", "stream", time.Millisecond, tt.err)
			var pe *problem.Error
			if errors.As(err, &pe) && string(pe.Code) == tt.want {
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("EndBy: %v; want %s", err, tt.want)
			}
			if tt.want == provider && sdk.AsError(err).Kind != sdk.KindTimeout {
				t.Fatalf("EndBy: %v is not a provider timeout", err)
			}
		})
	}
}

// TestCallDeadline: a call is due by its provider's timeout, or by the
// request's deadline when that comes first; DoUntil hands it to the call.
func TestCallDeadline(t *testing.T) {
	p := &Provider{ID: "prov", Policy: Policy{Timeout: 30 * time.Second}}
	c := NewCalls(nil, nil, true)
	start := time.Now()
	soon, cancel := context.WithDeadline(context.Background(), start.Add(time.Second))
	defer cancel()
	late, cancel2 := context.WithDeadline(context.Background(), start.Add(time.Hour))
	defer cancel2()
	for _, tt := range []struct {
		name   string
		parent context.Context
		want   time.Time
	}{
		{"no request deadline", context.Background(), start.Add(30 * time.Second)},
		{"the request's first", soon, start.Add(time.Second)},
		{"the provider's first", late, start.Add(30 * time.Second)},
	} {
		if got := c.Deadline(tt.parent, p, start); !got.Equal(tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	var given time.Time
	_, err := c.DoUntil(soon, p, "m", "synthesize", func(ctx context.Context, deadline time.Time) error {
		given = deadline
		if _, ok := ctx.Deadline(); !ok {
			return errors.New("the call's context lost the request's deadline")
		}
		return nil
	})
	if err != nil || !given.Equal(start.Add(time.Second)) {
		t.Fatalf("DoUntil gave %v, %v; want the request's deadline %v", given, err, start.Add(time.Second))
	}
}

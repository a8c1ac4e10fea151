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
		{"not a timeout", later, past, &sdk.Error{Kind: sdk.KindUpstream, Message: "boom"}, "boom"},
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

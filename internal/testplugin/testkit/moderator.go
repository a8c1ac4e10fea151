package testkit

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/voxgate/voxgate/internal/testplugin/calllog"
	"github.com/voxgate/voxgate/sdk"
)

// Moderator is the test kit's sdk.Moderator; the zero value is ready.
// Its verdict depends on words in the text:
//
//	"forbidden"         block, category "test"
//	"hang-moderation"   block the call until its context ends
//	"crash-moderation"  exit the plugin process (status 3)
//	"fail-moderation"   return a KindUpstream error
//	anything else       allow
type Moderator struct {
	log calllog.Writer
	seq atomic.Int64
}

// Configure reads `call_log`, like the provider.
func (m *Moderator) Configure(_ context.Context, settings map[string]string) error {
	m.log.SetPath(settings["call_log"])
	return nil
}

// Moderate implements sdk.Moderator.
func (m *Moderator) Moderate(ctx context.Context, req *sdk.ModerationRequest) (*sdk.ModerationResult, error) {
	m.record(calllog.Call{Method: "moderate", Text: req.Text})
	switch {
	case strings.Contains(req.Text, "crash-moderation"):
		fmt.Fprintln(os.Stderr, "testplugin: crashing in moderate as requested")
		os.Exit(3)
	case strings.Contains(req.Text, "hang-moderation"):
		<-ctx.Done()
		m.record(calllog.Call{Method: "moderate", Event: "canceled"})
		return nil, ctx.Err()
	case strings.Contains(req.Text, "fail-moderation"):
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "moderation backend failed", UpstreamStatus: 502, Retryable: true}
	case strings.Contains(req.Text, "forbidden"):
		return &sdk.ModerationResult{Decision: sdk.DecisionBlock, Category: "test", Confidence: 1, Detail: `text contains "forbidden"`}, nil
	}
	return &sdk.ModerationResult{Decision: sdk.DecisionAllow}, nil
}

func (m *Moderator) record(c calllog.Call) {
	c.Seq = m.seq.Add(1)
	if err := m.log.Append(c); err != nil {
		fmt.Fprintln(os.Stderr, "testplugin:", err)
	}
}

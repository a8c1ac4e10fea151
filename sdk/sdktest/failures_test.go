package sdktest

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/voxgate/voxgate/sdk"
)

// recorder is a testing.TB that records failures instead of failing:
// the checks are tested by what they say about a wrong answer.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	failed []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// check runs Answer.Check on a goroutine (Fatalf ends it) and returns
// what it failed with.
func check(t *testing.T, a Answer, err error, key string) []string {
	r := &recorder{TB: t}
	var wg sync.WaitGroup
	wg.Go(func() { a.Check(r, err, key) })
	wg.Wait()
	return r.failed
}

func TestAnswerCheck(t *testing.T) {
	const key = "sk-secret-0123456789"
	want := Answer{Kind: sdk.KindRateLimited, Status: 429, Code: "slow_down", Retryable: true, RetryAfter: time.Second, MessageHas: "too many"}
	good := &sdk.Error{Kind: sdk.KindRateLimited, UpstreamStatus: 429, UpstreamCode: "slow_down", Retryable: true, RetryAfter: time.Second, Message: "acme: too many requests"}
	tests := []struct {
		name  string
		err   error
		fails bool
	}{
		{"match", good, false},
		{"wrapped", fmt.Errorf("call: %w", good), false},
		{"not an sdk.Error", errors.New("too many"), true},
		{"nil", nil, true},
		{"kind", &sdk.Error{Kind: sdk.KindUpstream, UpstreamStatus: 429, UpstreamCode: "slow_down", Retryable: true, RetryAfter: time.Second, Message: "too many"}, true},
		{"status", &sdk.Error{Kind: sdk.KindRateLimited, UpstreamStatus: 503, UpstreamCode: "slow_down", Retryable: true, RetryAfter: time.Second, Message: "too many"}, true},
		{"code", &sdk.Error{Kind: sdk.KindRateLimited, UpstreamStatus: 429, Retryable: true, RetryAfter: time.Second, Message: "too many"}, true},
		{"retryable", &sdk.Error{Kind: sdk.KindRateLimited, UpstreamStatus: 429, UpstreamCode: "slow_down", RetryAfter: time.Second, Message: "too many"}, true},
		{"retry after", &sdk.Error{Kind: sdk.KindRateLimited, UpstreamStatus: 429, UpstreamCode: "slow_down", Retryable: true, Message: "too many"}, true},
		{"message", &sdk.Error{Kind: sdk.KindRateLimited, UpstreamStatus: 429, UpstreamCode: "slow_down", Retryable: true, RetryAfter: time.Second, Message: "slow down"}, true},
		{"key shown", &sdk.Error{Kind: sdk.KindRateLimited, UpstreamStatus: 429, UpstreamCode: "slow_down", Retryable: true, RetryAfter: time.Second, Message: "too many for " + key}, true},
		{"key's start shown", &sdk.Error{Kind: sdk.KindRateLimited, UpstreamStatus: 429, UpstreamCode: "slow_down", Retryable: true, RetryAfter: time.Second, Message: "too many for sk-secre…789"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if failed := check(t, want, tt.err, key); (len(failed) > 0) != tt.fails {
				t.Errorf("failures %q; want failing %v", failed, tt.fails)
			}
		})
	}
}

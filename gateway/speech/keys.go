package speech

import (
	"cmp"
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/providers/keypool"
	"github.com/voxgate/voxgate/sdk"
)

// Key pools (#20): a provider configured with several managed keys
// (providers.<id>.api_keys) gets a key per call from its pool. A key the
// provider throttles rests for its Retry-After, one it refuses (401) for
// restKeyRefused, and the call moves to the next key; a key with a
// concurrency limit holds a slot for the call (a stream's whole length).

// Rest periods of a key, when the provider says no more precisely.
const (
	restKeyThrottled = 30 * time.Second
	restKeyRefused   = 5 * time.Minute
)

// keyTry is one call's use of its provider's pool.
type keyTry struct {
	pool  *keypool.Pool
	tried map[string]bool
	lease *keypool.Lease
}

// pooled returns j's key try when j's provider has a pool and the call
// uses the gateway's managed credentials; nil otherwise.
func (s *Service) pooled(j *Job) *keyTry {
	p := s.pools[j.Provider.ID]
	if p == nil || j.Creds.BYOK {
		return nil
	}
	return &keyTry{pool: p, tried: map[string]bool{}}
}

// next leases the next key for j and returns j's credentials with it;
// without a pool, j's credentials as they are. j is not changed: the
// pieces of one long text lease keys concurrently.
func (k *keyTry) next(ctx context.Context, j *Job) (sdk.Credentials, error) {
	if k == nil {
		return j.Creds, nil
	}
	lease, err := k.pool.Acquire(ctx, j.Org, k.tried)
	switch {
	case errors.Is(err, keypool.ErrAllResting):
		return sdk.Credentials{}, &problem.Error{Code: problem.ProviderUnavailable, Provider: j.Provider.ID,
			Detail: "every API key of the provider is resting after the provider throttled or refused it; retry shortly", RetryAfter: 5 * time.Second, Err: err}
	case errors.Is(err, keypool.ErrQueueTimeout):
		return sdk.Credentials{}, &problem.Error{Code: problem.RateLimited, Provider: j.Provider.ID,
			Detail: "the provider's accounts are at their concurrency limit (providers." + j.Provider.ID + ".api_keys max_concurrency); retry shortly", RetryAfter: time.Second, Err: err}
	case err != nil:
		return sdk.Credentials{}, err
	}
	k.lease = lease
	k.tried[lease.Name()] = true
	creds := j.Creds
	creds.APIKey = lease.Secret()
	return creds, nil
}

// retry reports whether the call that just ran with the leased key should
// run again with another: the provider throttled (429) or refused (401)
// that key, which then rests. Otherwise the lease is released, unless
// keep (a stream holds its slot until it ends).
func (k *keyTry) retry(s *Service, j *Job, err error, keep bool) bool {
	if k == nil || k.lease == nil {
		return false
	}
	if err != nil {
		se := sdk.AsError(err)
		switch se.Kind {
		case sdk.KindRateLimited:
			d := se.RetryAfter
			if d <= 0 {
				d = restKeyThrottled
			}
			k.lease.Rest(d)
			return true
		case sdk.KindUnauthorized:
			if s.log != nil {
				s.log.Warn("a provider refused a pooled API key; it rests", zap.String("provider", j.Provider.ID),
					zap.String("key", k.lease.Name()), zap.Duration("for", restKeyRefused))
			}
			k.lease.Rest(restKeyRefused)
			return true
		}
	}
	if err != nil || !keep {
		k.lease.Release()
	}
	return false
}

// release gives back a lease kept for a stream.
func (k *keyTry) release() {
	if k != nil && k.lease != nil {
		k.lease.Release()
	}
}

// leasedSource releases the key its stream holds when it closes.
type leasedSource struct {
	Source
	keys *keyTry
}

func (l *leasedSource) Close() error {
	err := l.Source.Close()
	l.keys.release()
	return err
}

// renderPooled gets a whole clip for req through s.render under the
// provider's timeout, with a key from the provider's pool when it has one:
// a key the provider throttles or refuses rests and the next is tried.
// It is safe for concurrent calls on one job (a long text's pieces).
func (s *Service) renderPooled(ctx context.Context, j *Job, req *sdk.SynthesizeRequest) (resp *sdk.SynthesizeResponse, release func(), err error) {
	keys := s.pooled(j)
	var last error
	for {
		creds, err := keys.next(ctx, j)
		if err != nil {
			return nil, nil, cmp.Or(last, err)
		}
		req.Credentials = creds
		_, err = s.calls.DoUntil(ctx, j.Provider, j.Model.ID, "synthesize", func(ctx context.Context, deadline time.Time) error {
			var err error
			resp, release, err = s.render(ctx, deadline, j, req)
			return err
		})
		if keys.retry(s, j, err, false) {
			last = err
			continue
		}
		return resp, release, err
	}
}

package upstream

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Policy says how Do retries one call. The zero value retries nothing
// (Idempotent false); set Idempotent for calls that are safe to repeat.
type Policy struct {
	// Idempotent marks a call that may be sent again after a failure.
	// Calls that create something (a cloned voice) must leave it false:
	// a lost response does not mean the provider did nothing.
	Idempotent bool
	// MaxAttempts bounds the number of tries, the first included;
	// default 3.
	MaxAttempts int
	// BaseDelay is the backoff before the second try, doubled for each
	// later one (with jitter); default 250 ms.
	BaseDelay time.Duration
	// MaxDelay caps one backoff; default 4 s.
	MaxDelay time.Duration
	// MaxRetryAfter is the longest Retry-After the call waits out itself;
	// a provider asking for more gets its 429/503 handed to the caller,
	// who can tell its own client when to come back. Default 5 s.
	MaxRetryAfter time.Duration
	// Provider names the provider in transport error messages ("openai");
	// empty means the request's host.
	Provider string
}

func (p Policy) withDefaults() Policy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 3
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = 250 * time.Millisecond
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 4 * time.Second
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = 5 * time.Second
	}
	return p
}

// RetryableStatus reports the statuses worth another try: throttling and
// the server-side failures that are usually transient. 501 and other
// 5xx say the request itself cannot work.
func RetryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// Do sends req with client and retries it per policy: on 408, 429, 500,
// 502, 503 and 504 responses and on transport failures (no response
// arrived), with exponential backoff and jitter, waiting at least what a
// Retry-After header asks for. It never sleeps past ctx's deadline: when
// the next wait would end after it, Do stops and hands back what it has.
//
// Do returns the last response whatever its status; the caller checks the
// status and uses ErrorFromResponse for failures, and must close the body.
// A transport failure comes back as an *sdk.Error (see TransportError).
//
// A request with a body can be sent again only if req.GetBody is set
// (http.NewRequest sets it for bytes, strings and bytes.Buffer readers);
// without it Do makes one attempt.
func Do(ctx context.Context, client *http.Client, req *http.Request, policy Policy) (*http.Response, error) {
	p := policy.withDefaults()
	attempts := p.MaxAttempts
	if !p.Idempotent || (req.Body != nil && req.Body != http.NoBody && req.GetBody == nil) {
		attempts = 1
	}
	req = req.WithContext(ctx)
	host := p.Provider
	if host == "" {
		host = req.URL.Host
	}
	for attempt := 1; ; attempt++ {
		resp, err := client.Do(req)
		last := attempt >= attempts
		var wait time.Duration
		switch {
		case err != nil:
			if last || ctx.Err() != nil {
				return nil, TransportError(ctx, host, err)
			}
			wait = p.Backoff(attempt)
		case !RetryableStatus(resp.StatusCode) || last:
			return resp, nil
		default:
			wait = p.Backoff(attempt)
			if ra := RetryAfter(resp.Header, time.Now()); ra > 0 {
				if ra > p.MaxRetryAfter {
					return resp, nil
				}
				wait = max(wait, ra)
			}
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= wait {
			if resp != nil {
				return resp, nil
			}
			return nil, TransportError(ctx, host, err)
		}
		if resp != nil {
			discard(resp)
		}
		if req.GetBody != nil {
			body, gerr := req.GetBody()
			if gerr != nil {
				// Only a broken GetBody gets here; the original failure
				// says more than this one.
				if resp != nil {
					return nil, TransportError(ctx, host, gerr)
				}
				return nil, TransportError(ctx, host, err)
			}
			req.Body = body
		}
		if !sleep(ctx, wait) {
			return nil, TransportError(ctx, host, ctx.Err())
		}
	}
}

// Backoff is the wait before attempt+1 (attempt counts from 1):
// BaseDelay doubled per attempt, capped at MaxDelay, with "equal jitter"
// (half fixed, half random) so that many callers throttled together do
// not return together.
func (p Policy) Backoff(attempt int) time.Duration {
	p = p.withDefaults()
	d := p.BaseDelay << (attempt - 1)
	if d > p.MaxDelay || d <= 0 {
		d = p.MaxDelay
	}
	half := d / 2
	return half + rand.N(half+1)
}

// discard drains a little of a response we are about to retry, so its
// keep-alive connection can go back to the pool, and closes it.
func discard(resp *http.Response) {
	_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
	resp.Body.Close()
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// RetryAfter returns the delay a response asks for: the standard
// Retry-After header in seconds or as an HTTP date (relative to now), or
// the millisecond "retry-after-ms" header some providers (OpenAI) send,
// which wins when present. It returns 0 when there is none or it is
// unreadable.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	return ParseRetryAfter(h.Get("Retry-After"), h.Get("Retry-After-Ms"), now)
}

// ParseRetryAfter is RetryAfter for callers that hold the two header
// values rather than an http.Header.
func ParseRetryAfter(retryAfter, retryAfterMs string, now time.Time) time.Duration {
	if v := strings.TrimSpace(retryAfterMs); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(retryAfter)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

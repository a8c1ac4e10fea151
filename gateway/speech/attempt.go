package speech

import (
	"cmp"
	"context"
	"errors"
	"io"
	rtrace "runtime/trace"

	"github.com/voxgate/voxgate/gateway/observe/stages"
	"github.com/voxgate/voxgate/sdk"
)

// attempt runs j once: from the cache, or reserved from the budgets and
// rendered by the provider. On failure nothing stays reserved.
func (s *Service) attempt(ctx context.Context, org string, j *Job, out *Spoken) error {
	admit := rtrace.StartRegion(ctx, stages.Admit)
	// A hit is moderated like any request, and costs nothing.
	key, hit := s.lookup(ctx, j, "answer")
	if hit != nil {
		admit.End()
		out.Cache, out.Row.Cache = "hit", "hit"
		unbill(&out.Row)
		if j.Delivery == DeliverStream {
			out.Stream, _ = s.replay(hit)
		} else {
			out.Result = hit
		}
		return nil
	}
	out.Cache = cacheState(key, j)
	out.Row.Cache = out.Cache
	var err error
	var release func()
	if j.Delivery == DeliverStream {
		if release, err = s.streams.acquire(org); err != nil {
			admit.End()
			return err
		}
	}
	out.Charge, err = s.reserve(ctx, org, amount(&out.Row))
	admit.End()
	if err != nil {
		if release != nil {
			release()
		}
		return err
	}
	if j.Delivery == DeliverStream {
		if out.Stream, err = s.startStream(ctx, j, key); err == nil {
			out.Stream.Source = &slotSource{Source: out.Stream.Source, release: release}
		} else {
			release()
		}
	} else if out.Result, err = s.synthesize(ctx, j); err == nil {
		out.Row.Cost = s.finalCost(j, out.Result)
		if key != "" {
			s.cache.put(key, out.Result, false)
		}
	}
	if err != nil {
		out.Charge.Settle(context.WithoutCancel(ctx), 0)
		out.Charge = nil
	}
	return err
}

// cacheState is what a request that missed the cache reports.
func cacheState(key string, j *Job) string {
	switch {
	case key == "":
		return ""
	case j.noCache:
		return "bypass"
	}
	return "miss"
}

// replay plays a cached stream back as a stream.
func (s *Service) replay(hit *Result) (*Stream, error) {
	src := &replaySource{mediaType: hit.MediaType, data: hit.Audio}
	first, err := src.Next()
	return &Stream{Source: src, First: first, Ended: err != nil, Conversion: hit.Conversion}, nil
}

// startStream opens j's stream and waits for its first audio. With a
// cache key, the stream is kept once it ended complete.
func (s *Service) startStream(ctx context.Context, j *Job, key string) (*Stream, error) {
	keys := s.pooled(j)
	var last error
	for {
		creds, err := keys.next(ctx, j)
		if err != nil {
			return nil, cmp.Or(last, err)
		}
		// The job is the stream's alone here, and the stream's later
		// pieces keep this key: it holds the lease to the stream's end.
		j.Creds = creds
		st, err := s.firstAudio(ctx, j, key)
		if keys.retry(s, j, err, true) {
			last = err
			continue
		}
		if err != nil {
			return nil, err
		}
		if keys != nil {
			st.Source = &leasedSource{Source: st.Source, keys: keys}
		}
		return st, nil
	}
}

// firstAudio opens j's stream and reads its first audio.
func (s *Service) firstAudio(ctx context.Context, j *Job, key string) (*Stream, error) {
	src, err := s.openStream(ctx, j)
	if err != nil {
		return nil, err
	}
	if key != "" {
		src = &teeSource{Source: src, c: s.cache, key: key, conv: j.conv}
	}
	fa := rtrace.StartRegion(ctx, stages.FirstAudio)
	first, err := src.Next()
	fa.End()
	if err != nil && !(errors.Is(err, io.EOF) && src.MediaType() != "") {
		cerr := src.Close()
		if errors.Is(err, io.EOF) {
			return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: "the provider returned an empty stream"}
		}
		if cerr != nil {
			err = cerr // the same failure, with the timeout made explicit
		}
		return nil, err
	}
	return &Stream{Source: src, First: first, Ended: err != nil, Warnings: j.Warnings, Conversion: j.conv}, nil
}

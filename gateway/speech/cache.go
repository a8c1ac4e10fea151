package speech

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/observe/metrics"
	"github.com/voxgate/voxgate/gateway/speech/respcache"
	"github.com/voxgate/voxgate/sdk"
)

// The response cache (#20): the same request is rendered once. It sits
// after moderation (a hit is still moderated) and before the budget (a
// hit costs nothing), and never decides a request's outcome: a store that
// fails or is full makes misses, counted in voxgate_cache_requests_total.
// Only complete answers are kept: failures never, a stream only once it
// ended cleanly.

// CacheOptions configure the response cache.
type CacheOptions struct {
	// Store keeps the entries; nil turns the cache off.
	Store respcache.Store
	// TTL is how long an entry is served.
	TTL time.Duration
	// MaxEntryBytes bounds what one stream may buffer to be cached.
	MaxEntryBytes int
	// ShareManaged keys requests made with the gateway's own (managed)
	// provider credentials without the organization, so organizations
	// share those entries. Requests with an organization's own key are
	// always kept apart.
	ShareManaged bool
}

// responseCache is the cache as the speech service uses it.
type responseCache struct {
	CacheOptions
	metrics *metrics.Metrics
	log     *zap.Logger
	// writes bounds the puts running in the background: a request never
	// waits for one, and a burst of misses cannot pile up goroutines.
	writes chan struct{}
}

func newResponseCache(o CacheOptions, m *metrics.Metrics, log *zap.Logger) *responseCache {
	if o.Store == nil {
		return nil
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &responseCache{CacheOptions: o, metrics: m, log: log, writes: make(chan struct{}, 4)}
}

// cachedMeta is what an entry keeps besides the audio: everything of
// the Result the answer shows, so that a hit's body is the miss's, with
// its timing metadata (providerMetadata.voxgate) included.
type cachedMeta struct {
	MediaType  string              `json:"m"`
	Timestamps []sdk.WordTimestamp `json:"t,omitempty"`
	Warnings   []string            `json:"w,omitempty"`
	Source     string              `json:"s,omitempty"`
	// Match is nil for NaN (no alignment), which JSON cannot carry.
	Match          *float64  `json:"a,omitempty"`
	ReferenceVoice string    `json:"r,omitempty"`
	Pieces         []float64 `json:"p,omitempty"`
	// Conversion is what the gateway converted the answer from and to:
	// a hit's bytes are the miss's, and say so alike.
	Conversion *Conversion `json:"c,omitempty"`
}

func metaOf(res *Result) cachedMeta {
	m := cachedMeta{MediaType: res.MediaType, Timestamps: res.Timestamps, Warnings: res.Warnings,
		Source: res.Source, ReferenceVoice: res.ReferenceVoice, Pieces: res.Pieces, Conversion: res.Conversion}
	if !math.IsNaN(res.Match) {
		match := res.Match
		m.Match = &match
	}
	return m
}

func (m *cachedMeta) result(audio []byte) *Result {
	res := &Result{Audio: audio, MediaType: m.MediaType, Timestamps: m.Timestamps, Warnings: m.Warnings,
		Source: m.Source, Match: math.NaN(), ReferenceVoice: m.ReferenceVoice, Pieces: m.Pieces, Conversion: m.Conversion}
	if m.Match != nil {
		res.Match = *m.Match
	}
	return res
}

// key is j's cache key: everything that changes the answer's bytes. The
// provider, model and provider voice (a saved voice resolved), the text
// as the provider gets it (pronunciations applied), native speed,
// providerOptions in canonical form, the whole-clip parameters, and how
// it is delivered (a stream's bytes differ from a clip's; so do its
// encoding and where timestamps come from).
func (c *responseCache) key(j *Job, variant string) string {
	scope := "org:" + j.Org
	if c.ShareManaged && !j.Creds.BYOK {
		scope = "managed"
	}
	p := j.Params
	out, vol := "", ""
	if p.Output != nil {
		out = p.Output.Format
		if p.Output.SampleRate != nil {
			out += "@" + strconv.Itoa(*p.Output.SampleRate)
		}
		if p.Output.Bitrate != nil {
			out += "/" + strconv.Itoa(*p.Output.Bitrate)
		}
	}
	if p.VolumeDbfs != nil {
		vol = strconv.FormatFloat(*p.VolumeDbfs, 'g', -1, 64)
	}
	if p.Loudness != nil {
		t := p.Loudness.Target()
		vol = "lufs" + strconv.FormatFloat(t.Integrated, 'g', -1, 64) + "/" + strconv.FormatFloat(t.TruePeak, 'g', -1, 64)
	}
	stream := ""
	if j.Stream.Format != "" {
		stream = j.Stream.Format + "@" + strconv.Itoa(j.Stream.SampleRate)
	}
	return respcache.Key("v3", scope, variant, j.Provider.ID, j.Model.ID, j.Voice, strconv.Itoa(int(j.Delivery)), j.timing, stream, j.renderedText(),
		strconv.FormatFloat(j.Speed, 'g', -1, 64), canonicalJSON(j.Options), out, vol, strconv.FormatFloat(p.Stretch, 'g', -1, 64))
}

// canonicalJSON re-encodes an object with its keys sorted, so that two
// spellings of the same options share an entry.
func canonicalJSON(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v) // encoding/json sorts map keys
	return string(b)
}

func (c *responseCache) count(result string) {
	if c.metrics != nil {
		c.metrics.CacheRequests.WithLabelValues(result).Inc()
	}
}

// get returns the cached answer for key, or nil on a miss.
func (c *responseCache) get(ctx context.Context, key string) *Result {
	e, ok, err := c.Store.Get(ctx, key)
	if err != nil {
		c.count("error")
		c.log.Debug("cache read failed; a miss", zap.Error(err))
		return nil
	}
	var m cachedMeta
	if !ok || json.Unmarshal(e.Meta, &m) != nil || m.MediaType == "" {
		c.count("miss")
		return nil
	}
	c.count("hit")
	return m.result(e.Data)
}

// put keeps a finished answer, in the background. The audio is copied
// unless owned: the caller's buffer may go back to a pool once written.
func (c *responseCache) put(key string, res *Result, owned bool) {
	select {
	case c.writes <- struct{}{}:
	default:
		c.count("write_skipped") // writes are behind: better a miss later
		return
	}
	meta, err := json.Marshal(metaOf(res))
	if err != nil {
		<-c.writes
		c.count("write_error")
		c.log.Debug("cache entry not encoded", zap.Error(err))
		return
	}
	data := res.Audio
	if !owned {
		data = bytes.Clone(res.Audio)
	}
	go func() {
		defer func() { <-c.writes }()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Store.Put(ctx, key, respcache.Entry{Data: data, Meta: meta}, c.TTL); err != nil {
			if errors.Is(err, respcache.ErrTooLarge) {
				c.count("too_large")
				return
			}
			c.count("write_error")
			c.log.Debug("cache write failed", zap.Error(err))
		}
	}()
}

// replaySource plays a cached stream back as a stream.
type replaySource struct {
	mediaType string
	data      []byte
}

// replayChunk is the size of a replayed stream's pieces.
const replayChunk = 32 << 10

func (r *replaySource) MediaType() string { return r.mediaType }

func (r *replaySource) Next() ([]byte, error) {
	if len(r.data) == 0 {
		return nil, io.EOF
	}
	n := min(len(r.data), replayChunk)
	b := r.data[:n]
	r.data = r.data[n:]
	if len(r.data) == 0 {
		return b, io.EOF
	}
	return b, nil
}

func (r *replaySource) Close() error { return nil }

// teeSource keeps a copy of a stream as it goes, and caches it when the
// stream ended complete. A stream longer than MaxEntryBytes is not kept.
type teeSource struct {
	Source
	c    *responseCache
	key  string
	conv *Conversion
	buf  []byte
	over bool
	eof  bool
}

func (t *teeSource) Next() ([]byte, error) {
	b, err := t.Source.Next()
	if !t.over {
		if len(t.buf)+len(b) > t.c.MaxEntryBytes {
			t.over, t.buf = true, nil
		} else {
			t.buf = append(t.buf, b...)
		}
	}
	if errors.Is(err, io.EOF) {
		t.eof = true
	}
	return b, err
}

func (t *teeSource) Close() error {
	err := t.Source.Close()
	if err == nil && t.eof && !t.over && len(t.buf) > 0 {
		t.c.put(t.key, &Result{Audio: t.buf, MediaType: t.Source.MediaType(), Conversion: t.conv}, true)
	}
	t.buf = nil
	return err
}

// lookup returns j's cache key (variant tells apart what is cached of one
// job: the answer, or a conversation turn's raw clip) and its cached
// result on a hit. The key is "" when the cache is off; the result nil on
// a miss or when the request asked to bypass the cache (it is then still
// stored afresh).
func (s *Service) lookup(ctx context.Context, j *Job, variant string) (string, *Result) {
	if s.cache == nil {
		return "", nil
	}
	key := s.cache.key(j, variant)
	if j.noCache {
		s.cache.count("bypass")
		return key, nil
	}
	return key, s.cache.get(ctx, key)
}

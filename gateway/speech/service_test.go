package speech_test

// The pipeline's unit tests (this file and the *_test.go files of package
// speech_test beside it) build a speech.Service as the gateway does, from
// parts that start no process: the in-memory store, the test kit's
// provider in process as the catalog's sdk.Provider values (package
// testkit, the code the testplugin command serves), credit budgets
// counted in memory, and the response cache on a temporary directory.
// They run whole requests through the use cases (Speak, Converse) and
// look at what the edge would get back, what reached the provider, and
// what was charged.

import (
	"cmp"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/voxgate/voxgate/gateway/admission/budget"
	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/observe/metrics"
	"github.com/voxgate/voxgate/gateway/pricing"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/providers/catalog"
	"github.com/voxgate/voxgate/gateway/providers/credentials"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/speech/respcache"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/memory"
	"github.com/voxgate/voxgate/internal/testplugin/testkit"
	"github.com/voxgate/voxgate/sdk"
)

// The organizations and providers of every pipeline. Three providers are
// the test kit, each its own in-process instance: "testkit" and "spare"
// are enabled for acme (spare is where fallbacks go), "closed" for no
// one. globex may use testkit only. Credits: testkit charges one credit
// a character (half a credit on model basic), spare two, closed nothing.
// pipelinePolicy: three test kits, all managed; acme may use testkit
// and spare, globex testkit only, and nobody closed.
func pipelinePolicy() *credentials.Policy {
	return credentials.NewPolicy(
		map[string]credentials.Provider{"testkit": {Managed: true}, "spare": {Managed: true}, "closed": {Managed: true}},
		map[string]map[string]credentials.OrgAccess{
			"acme":   {"testkit": {Enabled: true}, "spare": {Enabled: true}},
			"globex": {"testkit": {Enabled: true}},
		})
}

// setup is what a test changes of the pipeline it builds; the zero value
// is a pipeline without fallbacks, budgets or cache.
type setup struct {
	// maxTextChars is the test kit models' limit (its max_text_chars
	// setting; 0 keeps the kit's 1000).
	maxTextChars int
	// outputFormats is the kit's output_formats setting ("" keeps
	// "pcm,wav").
	outputFormats string
	// audioTags are the tags model "test" of every provider performs.
	audioTags []string
	// routes are the deployment's fallbacks.
	routes map[string]speech.Route
	// orgBudgets are the organizations' credit budgets.
	orgBudgets map[string]budget.Limit
	// cache turns the response cache on.
	cache bool
	// limits, when set, changes the Service's limits.
	limits func(*speech.Limits)
	// timeout bounds each provider call (0: 10 s).
	timeout time.Duration
	// prices, when set, price every model of every provider (as
	// pricing.prices does), in USD.
	prices []pricing.Price
}

// pipeline is a speech.Service with the parts a test looks at.
type pipeline struct {
	svc   *speech.Service
	store *memory.Store
	// providers are the in-process providers by id.
	providers map[string]*provider
	// budget counts the credits reserved and given back.
	budget *ledger
	// cache is the response cache's store (nil: the cache is off).
	cache *cacheStore
	// metrics are the Service's collectors.
	metrics *metrics.Metrics
	// logs are the Service's log lines.
	logs *observer.ObservedLogs
}

// newPipeline builds a Service over the in-memory store and three
// in-process test kits, as gateway.attachProviders wires it.
func newPipeline(t testing.TB, su setup) *pipeline {
	t.Helper()
	ctx := t.Context()
	st := memory.New(store.Options{})
	t.Cleanup(func() { st.Close() })
	p := &pipeline{store: st, providers: map[string]*provider{}, budget: &ledger{Memory: budget.NewMemory(), net: map[string]int64{}},
		metrics: metrics.New()}
	core, logs := observer.New(zap.InfoLevel)
	p.logs = logs
	plugins := map[string]sdk.Provider{}
	settings := map[string]string{}
	if su.maxTextChars > 0 {
		settings["max_text_chars"] = strconv.Itoa(su.maxTextChars)
	}
	if su.outputFormats != "" {
		settings["output_formats"] = su.outputFormats
	}
	for _, id := range []string{"testkit", "spare", "closed"} {
		kit := testkit.NewProvider()
		if err := kit.Configure(ctx, settings); err != nil {
			t.Fatal(err)
		}
		pr := &provider{Provider: kit, tags: su.audioTags}
		p.providers[id], plugins[id] = pr, pr
	}
	timeout := cmp.Or(su.timeout, 10*time.Second)
	policies := map[string]catalog.Policy{
		"testkit": {Timeout: timeout, CreditsPer1kChars: 1000, ModelCredits: map[string]float64{"basic": 500}},
		"spare":   {Timeout: timeout, CreditsPer1kChars: 2000},
		"closed":  {Timeout: timeout},
	}
	if su.prices != nil {
		for id, pol := range policies {
			pol.Currency, pol.Prices = "USD", map[string][]pricing.Price{sdk.AnyModel: su.prices}
			policies[id] = pol
		}
	}
	cat, err := catalog.New(ctx, policies, plugins, func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := credentials.NewSealer(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	deps := speech.Deps{
		Limits: speech.Limits{
			MaxTextChars: 20000, PieceConcurrency: 2,
			MaxTurns: 10, MaxConversationChars: 20000, ConversationConcurrency: 2,
			Output:               audio.Limits{MaxDuration: 10 * time.Minute, MaxBytes: 64 << 20},
			WholeClipConcurrency: 4, WholeClipWait: 10 * time.Second, StreamsPerOrg: 4,
		},
		Catalog:      cat,
		Store:        st,
		Dictionaries: st,
		Credentials:  credentials.NewResolver(pipelinePolicy(), st, sealer),
		Budgets:      budget.New(p.budget, false),
		OrgBudgets:   su.orgBudgets,
		Routes:       su.routes,
		Metrics:      p.metrics,
		Logger:       zap.New(core),
	}
	if su.prices != nil {
		deps.Currency = "USD"
	}
	if su.limits != nil {
		su.limits(&deps.Limits)
	}
	if su.cache {
		disk, err := respcache.OpenDisk(t.TempDir(), 64<<20, 16<<20)
		if err != nil {
			t.Fatal(err)
		}
		p.cache = &cacheStore{Store: disk, stored: make(chan string, 64)}
		deps.Cache = speech.CacheOptions{Store: p.cache, TTL: time.Hour, MaxEntryBytes: 16 << 20}
	}
	p.svc = speech.New(deps)
	return p
}

// speak runs req for org as the edge does, and settles what it reserved
// with the row's credits, as the edge does once it has written the
// answer (a stream's once it ended: no test here looks at what a stream
// holds of a budget).
func (p *pipeline) speak(ctx context.Context, org string, req *speech.Request, ep speech.Delivery) (*speech.Spoken, error) {
	out, err := p.svc.Speak(ctx, org, req, ep)
	if out.Charge != nil {
		out.Charge.Settle(context.WithoutCancel(ctx), int64(out.Row.CreditsUsed))
	}
	return out, err
}

// calls returns every synthesis request provider id received, in order.
func (p *pipeline) calls(id string) []sdk.SynthesizeRequest {
	pr := p.providers[id]
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return append([]sdk.SynthesizeRequest(nil), pr.calls...)
}

// streamed returns the texts provider id was asked to stream, in order.
func (p *pipeline) streamed(id string) []string {
	pr := p.providers[id]
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return append([]string(nil), pr.streamed...)
}

// texts returns the texts provider id was asked to speak, in order.
func (p *pipeline) texts(id string) []string {
	var out []string
	for _, c := range p.calls(id) {
		out = append(out, c.Text)
	}
	return out
}

// saveVoice stores a voice of org and returns its id.
func (p *pipeline) saveVoice(t *testing.T, org string, v store.Voice) string {
	t.Helper()
	v.ID, v.OrgID = uuid.NewString(), org
	if v.Title == "" {
		v.Title = "voice"
	}
	if err := p.store.CreateVoice(t.Context(), &v); err != nil {
		t.Fatal(err)
	}
	return v.ID
}

// provider is the test kit in process with what a test needs around it:
// the synthesis requests it received, failures on demand (besides the
// kit's own providerOptions, which a fallback does not carry over), and
// audio tags its model "test" performs.
type provider struct {
	*testkit.Provider
	tags []string

	mu    sync.Mutex
	calls []sdk.SynthesizeRequest
	// streamed are the texts of the calls that were streams.
	streamed []string
	fail     error
	// billed, when set, is what each answer says its call was billed:
	// a clip's (SynthesizeResponse.Billed), a stream's on its first
	// chunk (a header) or, with billedLast, its last (a final message).
	billed     []sdk.BilledUsage
	billedLast bool
}

// reportBilled makes every later answer say it was billed b, a stream's
// on its last chunk when last is set, else its first.
func (pr *provider) reportBilled(b []sdk.BilledUsage, last bool) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.billed, pr.billedLast = b, last
}

// failWith makes every later call fail with err (nil: succeed again).
func (pr *provider) failWith(err error) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.fail = err
}

// Describe is the kit's description, with model "test" performing
// pr.tags.
func (pr *provider) Describe(ctx context.Context) (*sdk.Description, error) {
	d, err := pr.Provider.Describe(ctx)
	if err != nil {
		return nil, err
	}
	for i := range d.Models {
		if d.Models[i].ID == testkit.ModelTest {
			d.Models[i].AudioTags = pr.tags
		}
	}
	return d, nil
}

func (pr *provider) Synthesize(ctx context.Context, req *sdk.SynthesizeRequest) (*sdk.SynthesizeResponse, error) {
	if err := pr.record(req, false); err != nil {
		return nil, err
	}
	resp, err := pr.Provider.Synthesize(ctx, req)
	if err == nil {
		pr.mu.Lock()
		resp.Billed = pr.billed
		pr.mu.Unlock()
	}
	return resp, err
}

func (pr *provider) Stream(ctx context.Context, req *sdk.SynthesizeRequest, send func(sdk.Chunk) error) error {
	if err := pr.record(req, true); err != nil {
		return err
	}
	pr.mu.Lock()
	billed, last := pr.billed, pr.billedLast
	pr.mu.Unlock()
	if billed == nil {
		return pr.Provider.Stream(ctx, req, send)
	}
	if !last {
		first := true
		return pr.Provider.Stream(ctx, req, func(ch sdk.Chunk) error {
			if first {
				ch.Billed, first = billed, false
			}
			return send(ch)
		})
	}
	if err := pr.Provider.Stream(ctx, req, send); err != nil {
		return err
	}
	return send(sdk.Chunk{Billed: billed}) // a final message, no audio
}

// record keeps a copy of req (a stream's or not) and returns the failure
// asked for, if any.
func (pr *provider) record(req *sdk.SynthesizeRequest, stream bool) error {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.calls = append(pr.calls, *req)
	if stream {
		pr.streamed = append(pr.streamed, req.Text)
	}
	return pr.fail
}

// ledger is the in-process budget counter (budget.Memory) with a record
// of what each budget holds: every reservation minus what was given back.
type ledger struct {
	*budget.Memory

	mu  sync.Mutex
	net map[string]int64
}

func (l *ledger) Reserve(ctx context.Context, key string, n, limit int64, expires time.Time) (bool, int64, error) {
	ok, spent, err := l.Memory.Reserve(ctx, key, n, limit, expires)
	if ok && err == nil {
		l.mu.Lock()
		l.net[key] += n
		l.mu.Unlock()
	}
	return ok, spent, err
}

func (l *ledger) Release(ctx context.Context, key string, n int64) error {
	l.mu.Lock()
	l.net[key] -= n
	l.mu.Unlock()
	return l.Memory.Release(ctx, key, n)
}

// held returns the credits the budgets whose counter key starts with
// prefix ("org:acme:", "key:k1:") hold: spent, or reserved and not yet
// settled.
func (l *ledger) held(prefix string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for k, v := range l.net {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}

// cacheStore is the response cache's disk store, telling the test when
// an entry is written: the pipeline writes entries in the background, so
// a test waits for each write it causes (waitStored), at the latest
// before its temporary directory is removed.
type cacheStore struct {
	respcache.Store
	stored chan string
}

func (c *cacheStore) Put(ctx context.Context, key string, e respcache.Entry, ttl time.Duration) error {
	err := c.Store.Put(ctx, key, e, ttl)
	if err == nil {
		c.stored <- key
	}
	return err
}

// waitStored waits until the cache has written an entry.
func (c *cacheStore) waitStored(t *testing.T) {
	t.Helper()
	select {
	case <-c.stored:
	case <-time.After(10 * time.Second):
		t.Fatal("the response cache wrote no entry")
	}
}

// notStored checks that the cache has written no entry since the last
// waitStored: the writes a request starts begin before it returns, so
// one still to come is already in flight.
func (c *cacheStore) notStored(t *testing.T) {
	t.Helper()
	select {
	case <-c.stored:
		t.Error("the response cache wrote an entry")
	case <-time.After(50 * time.Millisecond):
	}
}

// req is an inline speech request.
func req(model, voice, text string) *speech.Request {
	return &speech.Request{Model: model, Voice: voice, Text: &text}
}

// wantCode checks that err is a problem with code, "" meaning no error,
// and returns the problem.
func wantCode(t *testing.T, err error, code problem.Code) *problem.Error {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return nil
	}
	if err == nil {
		t.Fatalf("no error, want a problem %s", code)
	}
	pe := problem.From(err, "")
	if pe.Code != code {
		t.Fatalf("got problem %s (%s), want %s", pe.Code, pe.Detail, code)
	}
	return pe
}

// drain reads a stream to its end, closes it and returns its audio.
func drain(t *testing.T, st *speech.Stream) []byte {
	t.Helper()
	if st == nil || len(st.First) == 0 {
		t.Fatal("no stream with first audio")
	}
	data := append([]byte(nil), st.First...)
	for !st.Ended {
		b, err := st.Next()
		data = append(data, b...)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatalf("close the stream: %v", err)
	}
	return data
}

// decode decodes a clip the pipeline answered.
func decode(t *testing.T, res *speech.Result) *audio.Clip {
	t.Helper()
	c, err := audio.Decode(res.Audio, res.MediaType)
	if err != nil {
		t.Fatalf("decode %s: %v", res.MediaType, err)
	}
	return c
}

// TestNewBoundsConcurrency: a limit of 0 on what runs at once means one at
// a time, not nothing: a conversation of a Service built with zero
// conversation and piece concurrency still renders, its long turn too.
func TestNewBoundsConcurrency(t *testing.T) {
	p := newPipeline(t, setup{maxTextChars: 40, limits: func(l *speech.Limits) {
		l.ConversationConcurrency, l.PieceConcurrency = 0, 0
	}})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // the bound of a hang
	defer cancel()
	text := func(s string) *string { return &s }
	_, err := p.svc.Converse(ctx, "acme", &speech.ConversationRequest{Model: "testkit/test", Turns: []speech.Turn{
		{Voice: "alpha", Text: text("One turn.")}, {Voice: "beta", Text: text(longText)},
	}}, false)
	wantCode(t, err, "")
	if n := len(p.calls("testkit")); n != 4 {
		t.Errorf("%d provider calls, want 4 (a turn, and the three pieces of the other)", n)
	}
}

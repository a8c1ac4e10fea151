package dispatch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/sdk"
)

// fakePlanner is an sdk.Planner that counts its Plan calls and answers
// with plan.
type fakePlanner struct {
	plan func(req *sdk.PlanRequest) (*sdk.Plan, error)

	mu   sync.Mutex
	reqs []sdk.PlanRequest // copies, Request included
}

func (f *fakePlanner) Plan(_ context.Context, req *sdk.PlanRequest) (*sdk.Plan, error) {
	r := *req.Request
	f.mu.Lock()
	f.reqs = append(f.reqs, sdk.PlanRequest{Request: &r, Stream: req.Stream})
	f.mu.Unlock()
	return f.plan(req)
}

func (f *fakePlanner) Explain(context.Context, *sdk.Failure) error {
	return errors.New("fakePlanner.Explain is not used by Client")
}

func (f *fakePlanner) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

// planning returns a fakePlanner answering every request with a copy of p.
func planning(p *sdk.Plan) *fakePlanner {
	return &fakePlanner{plan: func(*sdk.PlanRequest) (*sdk.Plan, error) {
		c := *p
		return &c, nil
	}}
}

// fakeClock is a settable clock for Options.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Now()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// observations records what Options.Counter's functions count.
type observations struct {
	mu  sync.Mutex
	got []string
}

func (o *observations) observe(provider, result string) {
	o.mu.Lock()
	o.got = append(o.got, provider+":"+result)
	o.mu.Unlock()
}

func (o *observations) counter(provider, result string) func() {
	return func() { o.observe(provider, result) }
}

func (o *observations) list() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.got...)
}

func newTestClient(t testing.TB, o Options) *Client {
	t.Helper()
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// testPlan is a well-formed plan to url, reusable for a minute.
func testPlan(url string) *sdk.Plan {
	return &sdk.Plan{
		Method: "POST",
		URL:    url,
		Header: map[string]string{
			"Content-Type":  "application/json",
			"Authorization": "Bearer sk-test",
		},
		Body:      []byte(`{"model":"tts-1","input":"` + sdk.PlanText + `","voice":"alloy"}`),
		MediaType: "audio/pcm;rate=24000",
		FrameSize: 2,
		ReuseFor:  time.Minute,
	}
}

func baseRequest() *sdk.SynthesizeRequest {
	return &sdk.SynthesizeRequest{
		Model:       "tts-1",
		Voice:       "alloy",
		Text:        "Hello there.",
		Speed:       1,
		Format:      sdk.FormatPCM,
		SampleRate:  24000,
		Options:     []byte(`{"style":"calm"}`),
		Credentials: sdk.Credentials{APIKey: "sk-one"},
	}
}

func TestPlanCacheShapes(t *testing.T) {
	tests := []struct {
		name     string
		provider string
		change   func(r *sdk.SynthesizeRequest)
		stream   bool
		reused   bool
	}{
		{name: "same shape", change: func(*sdk.SynthesizeRequest) {}, reused: true},
		{name: "different text", change: func(r *sdk.SynthesizeRequest) { r.Text = "Something else entirely." }, reused: true},
		{name: "timestamps asked", change: func(r *sdk.SynthesizeRequest) { r.Timestamps = true }, reused: true},
		{name: "different provider", provider: "other", change: func(*sdk.SynthesizeRequest) {}},
		{name: "different model", change: func(r *sdk.SynthesizeRequest) { r.Model = "tts-1-hd" }},
		{name: "different voice", change: func(r *sdk.SynthesizeRequest) { r.Voice = "nova" }},
		{name: "different format", change: func(r *sdk.SynthesizeRequest) { r.Format = sdk.FormatMP3 }},
		{name: "different sample rate", change: func(r *sdk.SynthesizeRequest) { r.SampleRate = 16000 }},
		{name: "different speed", change: func(r *sdk.SynthesizeRequest) { r.Speed = 1.25 }},
		{name: "different options", change: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"style":"angry"}`) }},
		{name: "no options", change: func(r *sdk.SynthesizeRequest) { r.Options = nil }},
		{name: "different API key", change: func(r *sdk.SynthesizeRequest) { r.Credentials.APIKey = "sk-two" }},
		{name: "BYOK", change: func(r *sdk.SynthesizeRequest) { r.Credentials.BYOK = true }},
		{name: "stream", change: func(*sdk.SynthesizeRequest) {}, stream: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestClient(t, Options{})
			pl := planning(testPlan("http://provider.test/v1/speech"))
			ctx := context.Background()

			first, err := c.Plan(ctx, "prov", pl, baseRequest(), false, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			req := baseRequest()
			tt.change(req)
			provider := "prov"
			if tt.provider != "" {
				provider = tt.provider
			}
			second, err := c.Plan(ctx, provider, pl, req, tt.stream, time.Time{})
			if err != nil {
				t.Fatal(err)
			}

			wantCalls := 2
			if tt.reused {
				wantCalls = 1
			}
			if n := pl.calls(); n != wantCalls {
				t.Fatalf("%d Plan calls, want %d", n, wantCalls)
			}
			if tt.reused != (first == second) {
				t.Errorf("reused plan: %v, want %v", first == second, tt.reused)
			}
			if req.Text == sdk.PlanText {
				t.Error("Client.Plan changed the caller's request text")
			}
			for i, r := range pl.reqs {
				if r.Request.Text != sdk.PlanText || r.Request.Timestamps {
					t.Errorf("Plan call %d: text %q, timestamps %v; want the placeholder and no timestamps", i, r.Request.Text, r.Request.Timestamps)
				}
			}
			if last := pl.reqs[len(pl.reqs)-1]; last.Stream != (tt.stream && !tt.reused) {
				t.Errorf("last Plan call: stream %v", last.Stream)
			}
		})
	}
}

func TestPlanReuseForZeroPlansEveryTime(t *testing.T) {
	obs := &observations{}
	c := newTestClient(t, Options{Counter: obs.counter})
	p := testPlan("http://provider.test/v1/speech")
	p.ReuseFor = 0
	pl := planning(p)
	for range 3 {
		if _, err := c.Plan(context.Background(), "prov", pl, baseRequest(), false, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := pl.calls(); n != 3 {
		t.Errorf("%d Plan calls for 3 requests with ReuseFor 0, want 3", n)
	}
	if got, want := strings.Join(obs.list(), " "), "prov:planned prov:planned prov:planned"; got != want {
		t.Errorf("observed %q, want %q", got, want)
	}
}

func TestPlanExpires(t *testing.T) {
	clock := newFakeClock()
	obs := &observations{}
	c := newTestClient(t, Options{Now: clock.Now, Counter: obs.counter})
	pl := planning(testPlan("http://provider.test/v1/speech")) // ReuseFor: a minute
	plan := func() {
		t.Helper()
		if _, err := c.Plan(context.Background(), "prov", pl, baseRequest(), false, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}

	plan()
	clock.Advance(59 * time.Second)
	plan()
	if n := pl.calls(); n != 1 {
		t.Fatalf("%d Plan calls before ReuseFor passed, want 1", n)
	}
	clock.Advance(time.Second) // exactly ReuseFor after planning
	plan()
	if n := pl.calls(); n != 2 {
		t.Fatalf("%d Plan calls once ReuseFor passed, want 2", n)
	}
	clock.Advance(30 * time.Second)
	plan()
	if n := pl.calls(); n != 2 {
		t.Fatalf("%d Plan calls after re-planning, want 2 (the new plan reused)", n)
	}
	if got, want := strings.Join(obs.list(), " "), "prov:planned prov:reused prov:planned prov:reused"; got != want {
		t.Errorf("observed %q, want %q", got, want)
	}
}

func TestPlanUnsupportedIsCached(t *testing.T) {
	clock := newFakeClock()
	obs := &observations{}
	c := newTestClient(t, Options{Now: clock.Now, Counter: obs.counter})
	pl := &fakePlanner{plan: func(*sdk.PlanRequest) (*sdk.Plan, error) {
		return nil, sdk.Errorf(sdk.KindUnsupported, "prov: cannot plan wav")
	}}
	ctx := context.Background()

	for i := range 3 {
		p, err := c.Plan(ctx, "prov", pl, baseRequest(), false, time.Time{})
		if p != nil || sdk.AsError(err).Kind != sdk.KindUnsupported {
			t.Fatalf("call %d: %v, %v; want KindUnsupported", i, p, err)
		}
	}
	if n := pl.calls(); n != 1 {
		t.Errorf("%d Plan calls for one unsupported shape, want 1", n)
	}
	if got, want := strings.Join(obs.list(), " "), "prov:unsupported prov:unsupported prov:unsupported"; got != want {
		t.Errorf("observed %q, want %q", got, want)
	}

	// Another shape is asked again.
	req := baseRequest()
	req.Voice = "nova"
	if _, err := c.Plan(ctx, "prov", pl, req, false, time.Time{}); sdk.AsError(err).Kind != sdk.KindUnsupported {
		t.Fatalf("other shape: %v", err)
	}
	if n := pl.calls(); n != 2 {
		t.Errorf("%d Plan calls after a second shape, want 2", n)
	}

	// The answer is believed for a while, not for ever.
	clock.Advance(unsupportedFor)
	if _, err := c.Plan(ctx, "prov", pl, baseRequest(), false, time.Time{}); sdk.AsError(err).Kind != sdk.KindUnsupported {
		t.Fatalf("after expiry: %v", err)
	}
	if n := pl.calls(); n != 3 {
		t.Errorf("%d Plan calls once the unsupported answer expired, want 3", n)
	}
}

func TestPlanOtherErrorsAreNotCached(t *testing.T) {
	tests := []struct {
		name string
		err  error
		kind sdk.ErrorKind
	}{
		{"invalid request", sdk.Errorf(sdk.KindInvalidRequest, "prov: unknown voice"), sdk.KindInvalidRequest},
		{"unauthorized", sdk.Errorf(sdk.KindUnauthorized, "prov: no API key"), sdk.KindUnauthorized},
		{"unavailable", sdk.Errorf(sdk.KindUnavailable, "plugin restarting"), sdk.KindUnavailable},
		{"wrapped unsupported is still unsupported", fmt.Errorf("plan: %w", sdk.Errorf(sdk.KindUnsupported, "no")), sdk.KindUnsupported},
		{"plain error", errors.New("boom"), sdk.KindInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := &observations{}
			c := newTestClient(t, Options{Counter: obs.counter})
			pl := &fakePlanner{plan: func(*sdk.PlanRequest) (*sdk.Plan, error) { return nil, tt.err }}
			for i := range 2 {
				p, err := c.Plan(context.Background(), "prov", pl, baseRequest(), false, time.Time{})
				if p != nil || !errors.Is(err, tt.err) || sdk.AsError(err).Kind != tt.kind {
					t.Fatalf("call %d: %v, %v; want %v of kind %v", i, p, err, tt.err, tt.kind)
				}
			}
			want := 2
			if tt.kind == sdk.KindUnsupported {
				want = 1
			}
			if n := pl.calls(); n != want {
				t.Errorf("%d Plan calls, want %d", n, want)
			}
			for _, o := range obs.list() {
				if o != "prov:unsupported" {
					t.Errorf("observed %q for a failed plan", o)
				}
			}
		})
	}
}

func TestPlanMalformed(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *sdk.Plan)
	}{
		{"no placeholder", func(p *sdk.Plan) { p.Body = []byte(`{"input":"hello"}`) }},
		{"empty body", func(p *sdk.Plan) { p.Body = nil }},
		{"placeholder twice", func(p *sdk.Plan) {
			p.Body = []byte(`{"input":"` + sdk.PlanText + `","echo":"` + sdk.PlanText + `"}`)
		}},
		{"relative URL", func(p *sdk.Plan) { p.URL = "/v1/audio/speech" }},
		{"URL without host", func(p *sdk.Plan) { p.URL = "http:///v1/audio/speech" }},
		{"ftp URL", func(p *sdk.Plan) { p.URL = "ftp://provider.test/speech" }},
		{"unparsable URL", func(p *sdk.Plan) { p.URL = "http://provider.test/%zz" }},
		{"method DELETE", func(p *sdk.Plan) { p.Method = "DELETE" }},
		{"no method", func(p *sdk.Plan) { p.Method = "" }},
		{"no media type", func(p *sdk.Plan) { p.MediaType = "" }},
		{"header value with newline", func(p *sdk.Plan) { p.Header["X-Evil"] = "a\r\nHost: elsewhere" }},
		{"header name with colon", func(p *sdk.Plan) { p.Header["X:Evil"] = "a" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := &observations{}
			c := newTestClient(t, Options{Counter: obs.counter})
			p := testPlan("http://provider.test/v1/speech")
			tt.change(p)
			pl := planning(p)
			got, err := c.Plan(context.Background(), "prov", pl, baseRequest(), false, time.Time{})
			var se *sdk.Error
			if got != nil || !errors.As(err, &se) || se.Kind != sdk.KindInternal {
				t.Fatalf("got %v, %v; want an *sdk.Error of kind KindInternal", got, err)
			}
			if !strings.Contains(se.Message, "prov") {
				t.Errorf("message %q does not name the provider", se.Message)
			}
			if o := obs.list(); len(o) != 0 {
				t.Errorf("observed %q for a malformed plan", o)
			}
		})
	}
}

func TestPlanCompiles(t *testing.T) {
	c := newTestClient(t, Options{})
	p := testPlan("http://provider.test/v1/speech")
	p.Header["X-B"] = "2"
	p.Header["x-a"] = "1" // names are sent in canonical form
	p.FrameSize, p.MaxAttempts, p.Timeout = 0, 0, 3*time.Second
	pl, err := c.Plan(context.Background(), "prov", planning(p), baseRequest(), false, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if pl.MediaType != p.MediaType || pl.method != "POST" || pl.timeout != 3*time.Second {
		t.Errorf("compiled %+v from %+v", pl, p)
	}
	if pl.frame != 1 || pl.attempts != 1 {
		t.Errorf("frame %d, attempts %d; want 1 and 1 for zero values", pl.frame, pl.attempts)
	}
	if got := string(pl.prefix) + "|" + string(pl.suffix); got != `{"model":"tts-1","input":"|","voice":"alloy"}` {
		t.Errorf("prefix|suffix = %s", got)
	}
	var names []string
	for _, h := range pl.header {
		names = append(names, string(h[0]))
	}
	if got := strings.Join(names, ","); got != "Authorization,Content-Type,X-A,X-B" {
		t.Errorf("headers %s, want all of them, sorted", got)
	}
	// The request a plan fills is the one it describes, whatever request
	// the pooled one served before.
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.SetRequestURI("http://elsewhere.test/old?q=1")
	req.Header.Set("X-A", "old")
	pl.fill(req, "hi")
	if got := req.URI().String(); got != p.URL {
		t.Errorf("filled URL %s, want %s", got, p.URL)
	}
	if got := string(req.Header.Peek("X-A")) + string(req.Header.Peek("x-b")); got != "12" {
		t.Errorf("filled X-A and X-B %q, want 1 and 2", got)
	}
	if got := string(req.Header.Host()); got != "" && got != "provider.test" {
		t.Errorf("filled Host %q", got)
	}
	// The prefix must not share its spare capacity with the suffix:
	// appending to it would overwrite the plan.
	if cap(pl.prefix) != len(pl.prefix) {
		t.Errorf("prefix capacity %d, length %d", cap(pl.prefix), len(pl.prefix))
	}
}

// TestPlanFilledConcurrently fills and writes one plan's requests from
// several goroutines, as concurrent provider calls do: the plan's parsed
// URL and headers are shared, so under the race detector any write to
// them fails here.
func TestPlanFilledConcurrently(t *testing.T) {
	c := newTestClient(t, Options{})
	pl, err := c.Plan(context.Background(), "prov", planning(testPlan("http://provider.test/v1/speech?x=1")), baseRequest(), false, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				req := fasthttp.AcquireRequest()
				pl.fill(req, "hi")
				var b bytes.Buffer
				w := bufio.NewWriter(&b)
				if err := req.Write(w); err != nil {
					t.Error(err)
				}
				w.Flush()
				fasthttp.ReleaseRequest(req)
				if !bytes.HasPrefix(b.Bytes(), []byte("POST /v1/speech?x=1 HTTP/1.1\r\n")) {
					t.Errorf("request line of %.60q", b.Bytes())
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestPlanObserve(t *testing.T) {
	obs := &observations{}
	c := newTestClient(t, Options{Counter: obs.counter})
	ok := planning(testPlan("http://provider.test/v1/speech"))
	no := &fakePlanner{plan: func(*sdk.PlanRequest) (*sdk.Plan, error) {
		return nil, sdk.Errorf(sdk.KindUnsupported, "no")
	}}
	ctx := context.Background()
	_, _ = c.Plan(ctx, "a", ok, baseRequest(), false, time.Time{})
	_, _ = c.Plan(ctx, "a", ok, baseRequest(), false, time.Time{})
	_, _ = c.Plan(ctx, "b", no, baseRequest(), false, time.Time{})
	_, _ = c.Plan(ctx, "b", no, baseRequest(), false, time.Time{})
	if got, want := strings.Join(obs.list(), " "), "a:planned a:reused b:unsupported b:unsupported"; got != want {
		t.Errorf("observed %q, want %q", got, want)
	}
}

func cacheLen(c *Client) int {
	c.plans.mu.RLock()
	defer c.plans.mu.RUnlock()
	return len(c.plans.m)
}

func TestPlanCacheEviction(t *testing.T) {
	c := newTestClient(t, Options{MaxPlans: 8})
	pl := planning(testPlan("http://provider.test/v1/speech"))
	ctx := context.Background()
	for i := range 100 {
		req := baseRequest()
		req.Voice = fmt.Sprintf("voice-%d", i)
		first, err := c.Plan(ctx, "prov", pl, req, false, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if n := cacheLen(c); n > 8 {
			t.Fatalf("after %d shapes the cache holds %d plans, want at most 8", i+1, n)
		}
		again, err := c.Plan(ctx, "prov", pl, req, false, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if again != first {
			t.Fatalf("shape %d: the newest plan is not served from the cache", i)
		}
	}
	if n := pl.calls(); n != 100 {
		t.Errorf("%d Plan calls for 100 shapes asked twice each, want 100", n)
	}
}

// TestPlanCacheEvictsExpiredFirst fills the cache with plans of two
// lifetimes: once the short ones expire, a new plan makes room by dropping
// them, and the live ones stay.
func TestPlanCacheEvictsExpiredFirst(t *testing.T) {
	clock := newFakeClock()
	c := newTestClient(t, Options{MaxPlans: 8, Now: clock.Now})
	pl := &fakePlanner{plan: func(req *sdk.PlanRequest) (*sdk.Plan, error) {
		p := testPlan("http://provider.test/v1/speech")
		if strings.HasPrefix(req.Request.Voice, "short") {
			p.ReuseFor = time.Minute
		} else {
			p.ReuseFor = time.Hour
		}
		return p, nil
	}}
	ctx := context.Background()
	plan := func(voice string) {
		t.Helper()
		req := baseRequest()
		req.Voice = voice
		if _, err := c.Plan(ctx, "prov", pl, req, false, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		plan(fmt.Sprintf("short-%d", i))
		plan(fmt.Sprintf("long-%d", i))
	}
	clock.Advance(2 * time.Minute)
	plan("new")
	before := pl.calls()
	for i := range 4 {
		plan(fmt.Sprintf("long-%d", i))
	}
	plan("new")
	if n := pl.calls() - before; n != 0 {
		t.Errorf("%d live plans were dropped to make room while expired ones were there", n)
	}
	if n := cacheLen(c); n != 5 {
		t.Errorf("cache holds %d plans, want the 4 live ones and the new one", n)
	}
}

// TestPlanConcurrent is for the race detector.
func TestPlanConcurrent(t *testing.T) {
	clock := newFakeClock()
	c := newTestClient(t, Options{MaxPlans: 4, Now: clock.Now})
	pl := planning(testPlan("http://provider.test/v1/speech"))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				req := baseRequest()
				req.Voice = fmt.Sprintf("voice-%d", (g+i)%6)
				if _, err := c.Plan(context.Background(), "prov", pl, req, i%2 == 0, time.Time{}); err != nil {
					t.Error(err)
					return
				}
				if i%50 == 0 {
					clock.Advance(time.Second)
				}
			}
		})
	}
	wg.Wait()
	if n := cacheLen(c); n > 4 {
		t.Errorf("cache holds %d plans, want at most 4", n)
	}
}

// TestPlanNotReusedAcrossNeighbours: the pieces of a long text differ in
// their neighbours, which a plugin may write into the body; a plan made
// for one piece is never reused for another, and one for a whole text
// never for a piece. Equal neighbours reuse it.
func TestPlanNotReusedAcrossNeighbours(t *testing.T) {
	c := newTestClient(t, Options{})
	pl := planning(testPlan("http://provider.test/v1/speech")) // ReuseFor: a minute
	with := func(n *sdk.Neighbours) *sdk.SynthesizeRequest {
		r := baseRequest()
		r.Neighbours = n
		return r
	}
	for _, r := range []*sdk.SynthesizeRequest{
		with(nil),
		with(&sdk.Neighbours{NextText: "b"}),
		with(&sdk.Neighbours{PreviousText: "a", NextText: "c"}),
		with(&sdk.Neighbours{PreviousText: "a", NextText: "c", PreviousIDs: []string{"r1"}}),
		with(&sdk.Neighbours{PreviousText: "a", NextText: "c", PreviousIDs: []string{"r1"}}), // the same again
		with(nil),
	} {
		if _, err := c.Plan(context.Background(), "prov", pl, r, false, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := pl.calls(); n != 4 {
		t.Errorf("%d Plan calls for four different neighbourhoods, want 4", n)
	}
	for i, r := range pl.reqs {
		if i > 0 && r.Request.Neighbours == nil {
			t.Errorf("Plan call %d lost the neighbours", i)
		}
	}
}

package dispatch

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/sdk"
)

// unsupportedFor is how long a provider's "cannot plan this" is believed:
// it depends on the request's shape (a format the plugin must convert),
// not on anything that changes at run time.
const unsupportedFor = 10 * time.Minute

// Planned is a validated plan, ready to send with any text.
type Planned struct {
	provider string
	method   string
	// uri is the plan's URL, parsed once: each request copies it
	// (Request.SetURI) rather than parsing it again. Every request the
	// plan serves shares it, so it is only ever read, through CopyTo:
	// some of fasthttp.URI's getters write to it.
	uri *fasthttp.URI
	// header holds the plan's headers with their names in canonical
	// form, so each request sets them without fasthttp's normalising
	// copy (RequestHeader.SetCanonical).
	header         [][2][]byte
	prefix, suffix []byte
	// MediaType is the media type of the answer's body.
	MediaType string
	frame     int
	attempts  int
	timeout   time.Duration
	// billed are the answer's headers that say what the call was billed:
	// name, unit (sdk.Plan.BilledHeaders).
	billed [][2]string
}

// compile validates p and splits its body around the text.
func compile(provider string, p *sdk.Plan) (*Planned, error) {
	at, err := p.TextSlot()
	if err != nil {
		return nil, err
	}
	pl := &Planned{
		provider:  provider,
		method:    p.Method,
		uri:       &fasthttp.URI{},
		prefix:    p.Body[:at:at],
		suffix:    p.Body[at+len(sdk.PlanText):],
		MediaType: p.MediaType,
		frame:     max(p.FrameSize, 1),
		attempts:  max(p.MaxAttempts, 1),
		timeout:   p.Timeout,
	}
	if err := pl.uri.Parse(nil, []byte(p.URL)); err != nil {
		return nil, fmt.Errorf("plan: url: %w", err)
	}
	for k, v := range p.Header {
		pl.header = append(pl.header, [2][]byte{fasthttp.AppendNormalizedHeaderKey(nil, k), []byte(v)})
	}
	sort.Slice(pl.header, func(i, j int) bool { return string(pl.header[i][0]) < string(pl.header[j][0]) })
	for k, unit := range p.BilledHeaders {
		pl.billed = append(pl.billed, [2]string{k, unit})
	}
	sort.Slice(pl.billed, func(i, j int) bool { return pl.billed[i][0] < pl.billed[j][0] })
	return pl, nil
}

// fill writes the request of the plan with text into req.
func (p *Planned) fill(req *fasthttp.Request, text string) {
	req.Header.SetMethod(p.method)
	req.SetURI(p.uri)
	for _, h := range p.header {
		req.Header.SetCanonical(h[0], h[1])
	}
	var scratch [1024]byte
	req.AppendBody(p.prefix)
	req.AppendBody(appendJSONText(scratch[:0], text))
	req.AppendBody(p.suffix)
}

// key identifies the requests one plan serves: everything in a synthesis
// request but its text. It holds the API key because a plan carries it;
// the cache lives only in memory, like the credentials resolver's.
type key struct {
	provider, model, voice, format string
	rate                           int
	speed                          float64
	options                        string
	apiKey                         string
	byok, stream                   bool
	// neighbours is the request's sdk.Neighbours, flattened: a plugin may
	// write them into the body (or refuse to plan them), so a plan made
	// for one piece of a long text is never reused for another.
	neighbours string
}

// neighboursKey flattens n for the plan cache's key; "" for none, the
// common case, which costs nothing.
func neighboursKey(n *sdk.Neighbours) string {
	if n == nil {
		return ""
	}
	return strconv.Quote(n.PreviousText) + strconv.Quote(n.NextText) + strconv.Quote(strings.Join(n.PreviousIDs, "\x00"))
}

type entry struct {
	plan    *Planned
	err     error // the provider's KindUnsupported answer
	expires time.Time
	// count counts one more use of the entry (Options.Counter's "reused"
	// or "unsupported"), found when the entry was made.
	count func()
}

// planCache maps request shapes to plans. It is hand-written rather than
// an LRU library because entries carry lifetimes set by the plugin and it
// is read on every request: a read-locked map lookup, where LRUs take an
// exclusive lock to reorder on every hit. A full cache drops expired
// entries, then arbitrary ones (Go's map order is random).
type planCache struct {
	mu  sync.RWMutex
	m   map[key]entry
	max int
}

func newPlanCache(max int) *planCache { return &planCache{m: map[key]entry{}, max: max} }

func (c *planCache) get(k key, now time.Time) (entry, bool) {
	c.mu.RLock()
	e, ok := c.m[k]
	c.mu.RUnlock()
	if !ok || !now.Before(e.expires) {
		return entry{}, false
	}
	return e, true
}

func (c *planCache) put(k key, e entry, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		for k, old := range c.m {
			if !now.Before(old.expires) {
				delete(c.m, k)
			}
		}
		for k := range c.m {
			if len(c.m) < c.max*3/4 {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[k] = e
}

// Plan returns the plan of req (whose Text is ignored) for provider, from
// the cache or from planner. An *sdk.Error of kind KindUnsupported says
// the provider cannot plan this request; the caller then uses the
// plugin's own Synthesize or Stream. The planner is asked by deadline,
// when it comes before ctx's (zero: ctx's alone); a plan from the cache
// makes no context.
func (c *Client) Plan(ctx context.Context, provider string, planner sdk.Planner, req *sdk.SynthesizeRequest, stream bool, deadline time.Time) (*Planned, error) {
	k := key{
		provider: provider, model: req.Model, voice: req.Voice, format: req.Format,
		rate: req.SampleRate, speed: req.Speed, options: string(req.Options),
		apiKey: req.Credentials.APIKey, byok: req.Credentials.BYOK, stream: stream,
		neighbours: neighboursKey(req.Neighbours),
	}
	now := c.now()
	if e, ok := c.plans.get(k, now); ok {
		e.count()
		if e.err != nil {
			return nil, e.err // callers only read it (the speech service falls back)
		}
		return e.plan, nil
	}
	r := *req
	r.Text, r.Timestamps = sdk.PlanText, false
	ctx, cancel := withEarlier(ctx, deadline)
	defer cancel()
	p, err := planner.Plan(ctx, &sdk.PlanRequest{Request: &r, Stream: stream})
	if err != nil {
		if sdk.AsError(err).Kind == sdk.KindUnsupported {
			unsupported := c.counter(provider, "unsupported")
			unsupported()
			c.plans.put(k, entry{err: err, expires: now.Add(unsupportedFor), count: unsupported}, now)
		}
		return nil, err
	}
	pl, err := compile(provider, p)
	if err != nil {
		return nil, &sdk.Error{Kind: sdk.KindInternal, Message: provider + ": the plugin planned a malformed request: " + err.Error()}
	}
	c.counter(provider, "planned")()
	if p.ReuseFor > 0 {
		c.plans.put(k, entry{plan: pl, expires: now.Add(p.ReuseFor), count: c.counter(provider, "reused")}, now)
	}
	return pl, nil
}

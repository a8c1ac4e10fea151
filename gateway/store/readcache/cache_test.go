package readcache_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
	"github.com/voxgate/voxgate/gateway/store/readcache"
)

// backend is a real bbolt store that counts the cached kinds' reads and
// can be taken away (every call fails with store.ErrUnavailable, as the
// PostgreSQL backend's do when its server is gone), or made to hold reads.
type backend struct {
	store.Backend
	reads atomic.Int64
	away  atomic.Bool
	// hold, when set, holds each GetVoice's answer until it is closed.
	hold atomic.Pointer[chan struct{}]
}

var errGone = fmt.Errorf("%w: dial tcp 127.0.0.1:5432: connect: connection refused", store.ErrUnavailable)

func (b *backend) gone() error {
	if b.away.Load() {
		return errGone
	}
	return nil
}

func (b *backend) GetVoice(ctx context.Context, org, id string) (*store.Voice, error) {
	if err := b.gone(); err != nil {
		b.reads.Add(1)
		return nil, err
	}
	v, err := b.Backend.GetVoice(ctx, org, id)
	b.reads.Add(1)
	if h := b.hold.Load(); h != nil {
		<-*h // the answer is read; it reaches the cache later
	}
	return v, err
}

func (b *backend) UpdateVoice(ctx context.Context, v *store.Voice) error {
	if err := b.gone(); err != nil {
		return err
	}
	return b.Backend.UpdateVoice(ctx, v)
}

func (b *backend) DictionaryRules(ctx context.Context, org string, ids []string) ([]store.PronunciationRule, [][]store.PronunciationRule, error) {
	b.reads.Add(1)
	if err := b.gone(); err != nil {
		return nil, nil, err
	}
	return b.Backend.DictionaryRules(ctx, org, ids)
}

func (b *backend) GetSecret(ctx context.Context, org, name string) ([]byte, error) {
	b.reads.Add(1)
	if err := b.gone(); err != nil {
		return nil, err
	}
	return b.Backend.GetSecret(ctx, org, name)
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// setup opens a bbolt file behind a backend and a Cache. raw writes
// behind the cache's back, as another instance would.
func setup(t testing.TB, o readcache.Options) (c *readcache.Cache, b *backend, raw store.Backend, clk *clock) {
	t.Helper()
	s, err := bolt.Open(filepath.Join(t.TempDir(), "v.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	clk = &clock{t: time.Unix(1_800_000_000, 0)}
	if o.Now == nil {
		o.Now = clk.now
	}
	b = &backend{Backend: s}
	return readcache.New(b, o), b, s, clk
}

var ctx = context.Background()

func voice(org, id, title string) *store.Voice {
	return &store.Voice{ID: id, OrgID: org, Title: title, Provider: "espeak", Model: "espeak-ng", VoiceID: "en"}
}

func mustTitle(t *testing.T, c *readcache.Cache, org, id, want string) {
	t.Helper()
	v, err := c.GetVoice(ctx, org, id)
	if err != nil {
		t.Fatalf("GetVoice %s/%s: %v", org, id, err)
	}
	if v.Title != want {
		t.Fatalf("GetVoice %s/%s: title %q, want %q", org, id, v.Title, want)
	}
}

func TestVoicesComeFromMemoryAndFollowChanges(t *testing.T) {
	c, b, raw, _ := setup(t, readcache.Options{})
	if err := c.CreateVoice(ctx, voice("acme", "v1", "one")); err != nil {
		t.Fatal(err)
	}
	mustTitle(t, c, "acme", "v1", "one")
	mustTitle(t, c, "acme", "v1", "one")
	if n := b.reads.Load(); n != 1 {
		t.Fatalf("%d reads of the store for two uses, want 1", n)
	}
	// Another organization's voice of the same id is another record.
	if _, err := c.GetVoice(ctx, "globex", "v1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("globex's v1: %v, want not found", err)
	}

	// Another instance changes the voice: nothing is heard until the
	// notification, which makes the next use reread it.
	if err := raw.UpdateVoice(ctx, voice("acme", "v1", "two")); err != nil {
		t.Fatal(err)
	}
	mustTitle(t, c, "acme", "v1", "one")
	c.Apply(store.Change{Kind: store.ChangeVoice, OrgID: "acme", ID: "v1"})
	mustTitle(t, c, "acme", "v1", "two")

	// This instance's own writes apply at once.
	if err := c.UpdateVoice(ctx, voice("acme", "v1", "three")); err != nil {
		t.Fatal(err)
	}
	mustTitle(t, c, "acme", "v1", "three")
	if err := c.DeleteVoice(ctx, "acme", "v1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetVoice(ctx, "acme", "v1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}

	// A notification gap makes every entry reread.
	if err := raw.CreateVoice(ctx, voice("acme", "v2", "behind")); err != nil {
		t.Fatal(err)
	}
	mustTitle(t, c, "acme", "v2", "behind")
	if err := raw.UpdateVoice(ctx, voice("acme", "v2", "missed")); err != nil {
		t.Fatal(err)
	}
	c.Apply(store.Change{Kind: store.ChangeResync})
	mustTitle(t, c, "acme", "v2", "missed")
}

func TestNotFoundIsCachedBriefly(t *testing.T) {
	c, b, raw, clk := setup(t, readcache.Options{NegativeTTL: 5 * time.Second})
	for range 3 {
		if _, err := c.GetVoice(ctx, "acme", "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetVoice: %v", err)
		}
	}
	if n := b.reads.Load(); n != 1 {
		t.Fatalf("%d reads for three lookups of a missing voice, want 1", n)
	}
	// Created by another instance: the notification makes it usable.
	if err := raw.CreateVoice(ctx, voice("acme", "nope", "now")); err != nil {
		t.Fatal(err)
	}
	c.Apply(store.Change{Kind: store.ChangeVoice, OrgID: "acme", ID: "nope"})
	mustTitle(t, c, "acme", "nope", "now")
	// Without a notification, a "not found" lasts NegativeTTL.
	if _, err := c.GetVoice(ctx, "acme", "later"); !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	if err := raw.CreateVoice(ctx, voice("acme", "later", "x")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetVoice(ctx, "acme", "later"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("within the TTL: %v", err)
	}
	clk.add(5 * time.Second)
	mustTitle(t, c, "acme", "later", "x")
}

func TestStaleEntriesServeWhileTheStoreIsAway(t *testing.T) {
	c, b, raw, clk := setup(t, readcache.Options{RetryEvery: time.Second})
	for _, id := range []string{"v1", "v2"} {
		if err := raw.CreateVoice(ctx, voice("acme", id, id)); err != nil {
			t.Fatal(err)
		}
	}
	mustTitle(t, c, "acme", "v1", "v1")
	mustTitle(t, c, "acme", "v2", "v2")
	c.Apply(store.Change{Kind: store.ChangeVoice, OrgID: "acme", ID: "v1"}) // changed just before the outage
	b.away.Store(true)

	// The stale entry is served; the store was asked once, and found away.
	before := b.reads.Load()
	mustTitle(t, c, "acme", "v1", "v1")
	if got := b.reads.Load() - before; got != 1 {
		t.Fatalf("%d reads, want 1", got)
	}
	if st := c.State(); st.Up || st.Since.IsZero() {
		t.Fatalf("state %+v, want away", st)
	}
	// A gap while away: every entry is stale, and served without asking a
	// store known to be away.
	c.Apply(store.Change{Kind: store.ChangeResync})
	b.away.Store(true) // the resync said it was back; it is not
	mustTitle(t, c, "acme", "v2", "v2")
	before = b.reads.Load()
	for range 10 {
		mustTitle(t, c, "acme", "v1", "v1")
		mustTitle(t, c, "acme", "v2", "v2")
	}
	if got := b.reads.Load() - before; got != 0 {
		t.Fatalf("%d reads of a store known to be away, want 0", got)
	}
	if n := c.Counts(readcache.KindVoice, readcache.Stale); n < 20 {
		t.Fatalf("stale count %d", n)
	}
	// A voice never read fails at once, as unavailable (503).
	if _, err := c.GetVoice(ctx, "acme", "v3"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("a voice not in memory: %v, want ErrUnavailable", err)
	}
	// Writes fail as the store's do.
	if err := c.UpdateVoice(ctx, voice("acme", "v1", "x")); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("UpdateVoice while away: %v", err)
	}

	// Back: the first read past RetryEvery tries the store, finds it, and
	// the entries are read afresh.
	b.away.Store(false)
	if err := raw.UpdateVoice(ctx, voice("acme", "v2", "fresh")); err != nil {
		t.Fatal(err)
	}
	mustTitle(t, c, "acme", "v2", "v2")
	clk.add(time.Second)
	mustTitle(t, c, "acme", "v2", "fresh")
	if st := c.State(); !st.Up {
		t.Fatalf("state %+v after the store answered", st)
	}
}

func TestTheWatchSaysWhetherTheStoreIsThere(t *testing.T) {
	c, _, _, _ := setup(t, readcache.Options{})
	c.Apply(store.Change{Kind: store.ChangeDisconnected})
	if c.State().Up {
		t.Fatal("up after the watch lost its connection")
	}
	if _, err := c.GetVoice(ctx, "acme", "v"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("a voice not in memory while away: %v", err)
	}
	c.Apply(store.Change{Kind: store.ChangeResync})
	if !c.State().Up {
		t.Fatal("away after the watch's resync")
	}
	if _, err := c.GetVoice(ctx, "acme", "v"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after the resync: %v", err)
	}
}

// TestAReadUnderWayDuringAChangeIsNotTakenForCurrent: an answer read
// before a change is announced may be the old record; it is kept stale.
func TestAReadUnderWayDuringAChangeIsNotTakenForCurrent(t *testing.T) {
	c, b, raw, _ := setup(t, readcache.Options{})
	if err := raw.CreateVoice(ctx, voice("acme", "v1", "old")); err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	b.hold.Store(&hold)
	done := make(chan *store.Voice)
	go func() {
		v, _ := c.GetVoice(ctx, "acme", "v1")
		done <- v
	}()
	for b.reads.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	// The old voice is read, and its answer on its way: the change lands
	// and is announced before the answer is kept.
	if err := raw.UpdateVoice(ctx, voice("acme", "v1", "new")); err != nil {
		t.Fatal(err)
	}
	c.Apply(store.Change{Kind: store.ChangeVoice, OrgID: "acme", ID: "v1"})
	b.hold.Store(nil)
	close(hold)
	<-done
	mustTitle(t, c, "acme", "v1", "new")
}

func TestDictionaryRules(t *testing.T) {
	c, b, raw, _ := setup(t, readcache.Options{})
	def, err := c.DefaultDictionary(ctx, "acme", &store.Dictionary{ID: "def", Name: store.DefaultDictionaryName})
	if err != nil {
		t.Fatal(err)
	}
	brand := &store.Dictionary{ID: "brand", OrgID: "acme", Name: "Brand"}
	if err := c.CreateDictionary(ctx, brand, 10); err != nil {
		t.Fatal(err)
	}
	rule := func(dict, id, word, repl string) *store.PronunciationRule {
		return &store.PronunciationRule{ID: id, OrgID: "acme", DictionaryID: dict, Word: word, Replacement: repl}
	}
	if err := c.CreateRule(ctx, rule(def.ID, "r1", "AWS", "a w s"), 10); err != nil {
		t.Fatal(err)
	}
	words := func(ids ...string) string {
		t.Helper()
		defs, byID, err := c.DictionaryRules(ctx, "acme", ids)
		if err != nil {
			t.Fatalf("DictionaryRules %v: %v", ids, err)
		}
		out := fmt.Sprint(len(defs))
		for _, r := range defs {
			out += " " + r.Word + "=" + r.Replacement
		}
		for _, rs := range byID {
			out += " |"
			for _, r := range rs {
				out += " " + r.Word + "=" + r.Replacement
			}
		}
		return out
	}
	if got := words(); got != "1 AWS=a w s" {
		t.Fatalf("defaults: %q", got)
	}
	if got := words("brand"); got != "1 AWS=a w s |" {
		t.Fatalf("with brand: %q", got)
	}
	reads := b.reads.Load()
	if got := words("brand"); got != "1 AWS=a w s |" || b.reads.Load() != reads {
		t.Fatalf("again: %q, %d more reads", got, b.reads.Load()-reads)
	}
	// Own writes apply at once, the default's included.
	if err := c.CreateRule(ctx, rule("brand", "r2", "AWS", "amazon"), 10); err != nil {
		t.Fatal(err)
	}
	r1 := rule(def.ID, "r1", "AWS", "ay double-u ess")
	if err := c.UpdateRule(ctx, r1); err != nil {
		t.Fatal(err)
	}
	if got := words("brand"); got != "1 AWS=ay double-u ess | AWS=amazon" {
		t.Fatalf("after own writes: %q", got)
	}
	// Another instance's change to the default dictionary: announced
	// with the dictionary's id, which may be the default.
	if err := raw.DeleteRule(ctx, "acme", def.ID, "r1"); err != nil {
		t.Fatal(err)
	}
	c.Apply(store.Change{Kind: store.ChangeDictionary, OrgID: "acme", ID: def.ID})
	if got := words("brand"); got != "0 | AWS=amazon" {
		t.Fatalf("after another instance's change: %q", got)
	}
	// A missing dictionary is the store's error, kept briefly, and gone
	// once the dictionary is created (here by another instance).
	_, _, err = c.DictionaryRules(ctx, "acme", []string{"later"})
	var missing *store.MissingDictionaryError
	if !errors.As(err, &missing) || missing.ID != "later" {
		t.Fatalf("missing dictionary: %v", err)
	}
	if err := raw.CreateDictionary(ctx, &store.Dictionary{ID: "later", OrgID: "acme", Name: "Later"}, 10); err != nil {
		t.Fatal(err)
	}
	c.Apply(store.Change{Kind: store.ChangeDictionary, OrgID: "acme", ID: "later"})
	if got := words("later"); got != "0 |" {
		t.Fatalf("a dictionary created elsewhere: %q", got)
	}
	// Through an outage, the rules in memory serve.
	b.away.Store(true)
	c.Apply(store.Change{Kind: store.ChangeResync})
	if got := words("brand"); got != "0 | AWS=amazon" {
		t.Fatalf("while away: %q", got)
	}
}

func TestSecrets(t *testing.T) {
	c, b, raw, _ := setup(t, readcache.Options{})
	if _, err := c.GetSecret(ctx, "acme", "byok:openai"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("no secret: %v", err)
	}
	if err := c.PutSecret(ctx, "acme", "byok:openai", []byte("sealed-1")); err != nil {
		t.Fatal(err)
	}
	get := func() string {
		t.Helper()
		v, err := c.GetSecret(ctx, "acme", "byok:openai")
		if err != nil {
			t.Fatal(err)
		}
		return string(v)
	}
	if got := get(); got != "sealed-1" {
		t.Fatalf("after own put: %q", got)
	}
	if err := raw.PutSecret(ctx, "acme", "byok:openai", []byte("sealed-2")); err != nil {
		t.Fatal(err)
	}
	c.Apply(store.Change{Kind: store.ChangeSecret, OrgID: "acme", ID: "byok:openai"})
	if got := get(); got != "sealed-2" {
		t.Fatalf("after another instance's put: %q", got)
	}
	b.away.Store(true)
	c.Apply(store.Change{Kind: store.ChangeResync})
	if got := get(); got != "sealed-2" {
		t.Fatalf("while away: %q", got)
	}
	b.away.Store(false)
	if err := c.DeleteSecret(ctx, "acme", "byok:openai"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetSecret(ctx, "acme", "byok:openai"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

func TestMemoryIsBounded(t *testing.T) {
	c, _, raw, _ := setup(t, readcache.Options{MaxVoices: 50, MaxRules: 30})
	for i := range 500 {
		if err := raw.CreateVoice(ctx, voice("acme", fmt.Sprint(i), "t")); err != nil {
			t.Fatal(err)
		}
	}
	if err := raw.CreateVoice(ctx, voice("acme", "hot", "hot")); err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		mustTitle(t, c, "acme", "hot", "hot") // used between every two others
		if _, err := c.GetVoice(ctx, "acme", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
		if n, cost := c.Size(readcache.KindVoice); n > 50 || cost > 50 {
			t.Fatalf("%d voices (cost %d) held, bound 50", n, cost)
		}
	}
	hits := c.Counts(readcache.KindVoice, readcache.Hit)
	mustTitle(t, c, "acme", "hot", "hot")
	if c.Counts(readcache.KindVoice, readcache.Hit) != hits+1 {
		t.Fatal("the voice used all along was evicted")
	}
	// Rules count one per rule: a dictionary of 40 rules is never kept
	// under a bound of 30, one of 20 is, and evicts what it must.
	for _, d := range []struct {
		id string
		n  int
	}{{"big", 40}, {"small", 20}, {"other", 5}} {
		if err := raw.CreateDictionary(ctx, &store.Dictionary{ID: d.id, OrgID: "acme", Name: d.id}, 10); err != nil {
			t.Fatal(err)
		}
		for i := range d.n {
			if err := raw.CreateRule(ctx, &store.PronunciationRule{ID: fmt.Sprint(d.id, i), OrgID: "acme", DictionaryID: d.id, Word: fmt.Sprint("w", i), Replacement: "r"}, 100); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := c.DictionaryRules(ctx, "acme", []string{d.id}); err != nil {
			t.Fatal(err)
		}
		if _, cost := c.Size(readcache.KindRules); cost > 30 {
			t.Fatalf("rules cost %d past the bound 30", cost)
		}
	}
}

// TestHitsDoNotAllocate holds the hot path to its promise: a cached voice,
// default rules and secret cost no allocation.
func TestHitsDoNotAllocate(t *testing.T) {
	c, _, raw, _ := setup(t, readcache.Options{})
	if err := raw.CreateVoice(ctx, voice("acme", "v1", "t")); err != nil {
		t.Fatal(err)
	}
	if err := raw.PutSecret(ctx, "acme", "byok:x", []byte("s")); err != nil {
		t.Fatal(err)
	}
	warm := func() {
		if _, err := c.GetVoice(ctx, "acme", "v1"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.DictionaryRules(ctx, "acme", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetSecret(ctx, "acme", "byok:x"); err != nil {
			t.Fatal(err)
		}
	}
	warm()
	if n := testing.AllocsPerRun(100, warm); n != 0 {
		t.Fatalf("%v allocations per cached lookup set, want 0", n)
	}
}

// BenchmarkHit is the hot path: a synthesis request's saved voice and
// default rules from memory, from every core at once.
func BenchmarkHit(b *testing.B) {
	c, _, raw, _ := setup(b, readcache.Options{})
	for i := range 1000 {
		if err := raw.CreateVoice(ctx, voice("acme", fmt.Sprint(i), "t")); err != nil {
			b.Fatal(err)
		}
		if _, err := c.GetVoice(ctx, "acme", fmt.Sprint(i)); err != nil {
			b.Fatal(err)
		}
	}
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = fmt.Sprint(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := c.GetVoice(ctx, "acme", ids[i%len(ids)]); err != nil {
				b.Fatal(err)
			}
			if _, _, err := c.DictionaryRules(ctx, "acme", nil); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

package keypool

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/voxgate/voxgate/internal/redistest"
)

func slotStrategies(t *testing.T) map[string]Slots {
	opts, err := redis.ParseURL(redistest.StartT(t).URL())
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return map[string]Slots{"memory": NewMemory(), "redis": NewRedis(c)}
}

func TestPickByWeightAndRest(t *testing.T) {
	p := New("openai", []Key{{Name: "a", Secret: "ka", Weight: 3}, {Name: "b", Secret: "kb", Weight: 1}}, NewMemory(), time.Second, time.Minute)
	counts := map[string]int{}
	for range 4000 {
		l, err := p.Acquire(context.Background(), "o", nil)
		if err != nil {
			t.Fatal(err)
		}
		counts[l.Name()]++
		l.Release()
	}
	if counts["a"] < 2700 || counts["a"] > 3300 {
		t.Errorf("weights 3:1 picked %v", counts)
	}
	// A rested key is out of rotation until its time is up.
	l, _ := p.Acquire(context.Background(), "o", map[string]bool{"b": true})
	l.Rest(150 * time.Millisecond)
	for range 50 {
		if l, _ := p.Acquire(context.Background(), "o", nil); l.Name() != "b" {
			t.Fatal("a resting key was picked")
		}
	}
	if st := p.States(); st["a"].IsZero() || !st["b"].IsZero() {
		t.Errorf("states %v", st)
	}
	// Every key resting, or tried.
	if _, err := p.Acquire(context.Background(), "o", map[string]bool{"b": true}); !errors.Is(err, ErrAllResting) {
		t.Errorf("only a resting key left: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := p.Acquire(context.Background(), "o", map[string]bool{"b": true}); err != nil {
		t.Errorf("after the rest: %v", err)
	}
}

func TestConcurrencyLimit(t *testing.T) {
	for name, slots := range slotStrategies(t) {
		t.Run(name, func(t *testing.T) {
			p := New("p", []Key{{Name: "k", Secret: "s", MaxConcurrency: 2}}, slots, 100*time.Millisecond, time.Minute)
			a, err := p.Acquire(context.Background(), "o", nil)
			if err != nil {
				t.Fatal(err)
			}
			b, err := p.Acquire(context.Background(), "o", nil)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if _, err := p.Acquire(context.Background(), "o", nil); !errors.Is(err, ErrQueueTimeout) || time.Since(start) < 90*time.Millisecond {
				t.Fatalf("a third call: %v after %s", err, time.Since(start))
			}
			// A released slot goes to a waiter.
			got := make(chan error, 1)
			go func() {
				l, err := New("p", []Key{{Name: "k", Secret: "s", MaxConcurrency: 2}}, slots, 2*time.Second, time.Minute).Acquire(context.Background(), "o", nil)
				if err == nil {
					l.Release()
				}
				got <- err
			}()
			time.Sleep(30 * time.Millisecond)
			a.Release()
			if err := <-got; err != nil {
				t.Fatalf("waiter after a release: %v", err)
			}
			b.Release()
			b.Release() // twice is harmless
		})
	}
}

// TestFairBetweenOrganizations: one organization with many waiting calls
// and another with one, on a key with one slot: the lone call is served
// among the first turns, not after the crowd.
func TestFairBetweenOrganizations(t *testing.T) {
	p := New("p", []Key{{Name: "k", Secret: "s", MaxConcurrency: 1}}, NewMemory(), 10*time.Second, time.Minute)
	hold, _ := p.Acquire(context.Background(), "busy", nil)
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	serve := func(org string) {
		defer wg.Done()
		l, err := p.Acquire(context.Background(), org, nil)
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		order = append(order, org)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		l.Release()
	}
	for range 10 {
		wg.Add(1)
		go serve("busy")
	}
	time.Sleep(50 * time.Millisecond) // the crowd queues first
	wg.Add(1)
	go serve("quiet")
	time.Sleep(20 * time.Millisecond)
	hold.Release()
	wg.Wait()
	pos := -1
	for i, o := range order {
		if o == "quiet" {
			pos = i
		}
	}
	if pos < 0 || pos > 2 {
		t.Errorf("the quiet organization was served at turn %d of %v", pos, order)
	}
}

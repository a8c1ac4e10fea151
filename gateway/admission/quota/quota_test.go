package quota

import (
	"errors"
	"sync"
	"testing"
)

func TestQuota(t *testing.T) {
	q := &Quota{Total: 100, PerOrg: 60}
	for i, st := range []struct {
		org  string
		n    int64
		want error
	}{
		{"acme", 50, nil},
		{"acme", 20, ErrOrg},      // 70 > 60
		{"globex", 40, nil},       // 90
		{"initech", 20, ErrTotal}, // 110 > 100
		{"initech", 10, nil},      // 100
	} {
		if err := q.Take(st.org, st.n); !errors.Is(err, st.want) {
			t.Fatalf("step %d: Take(%s, %d) = %v, want %v", i, st.org, st.n, err, st.want)
		}
	}
	if q.Held() != 100 || q.HeldBy("acme") != 50 {
		t.Fatalf("held %d, acme %d", q.Held(), q.HeldBy("acme"))
	}
	q.Give("acme", 50)
	q.Give("globex", 40)
	q.Give("initech", 10)
	if q.Held() != 0 || len(q.orgs) != 0 {
		t.Fatalf("after giving everything back: held %d, orgs %v", q.Held(), q.orgs)
	}
}

func TestQuotaUnbounded(t *testing.T) {
	var q Quota
	if err := q.Take("acme", 1<<40); err != nil || q.Held() != 1<<40 {
		t.Fatalf("an unbounded quota refused or miscounted: %v, %d", err, q.Held())
	}
}

// TestQuotaConcurrent: takes and gives from many goroutines never pass
// the bound and leave nothing counted.
func TestQuotaConcurrent(t *testing.T) {
	q := &Quota{Total: 10, PerOrg: 4}
	var wg sync.WaitGroup
	var mu sync.Mutex
	peak := int64(0)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			org := []string{"a", "b", "c", "d"}[g%4]
			for range 1000 {
				if q.Take(org, 1) == nil {
					mu.Lock()
					peak = max(peak, q.Held())
					mu.Unlock()
					q.Give(org, 1)
				}
			}
		}()
	}
	wg.Wait()
	if peak > 10 || q.Held() != 0 {
		t.Fatalf("peak %d (bound 10), held at the end %d", peak, q.Held())
	}
}

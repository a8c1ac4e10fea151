package memory_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/memory"
)

// call is one call of every method of the contract that can fail, against
// the records seed makes. Writes use ids of their own, so each succeeds
// once the store is up.
type call struct {
	name string
	do   func(ctx context.Context, s *memory.Store) error
}

var day = store.UsageDayOf(time.Now())

func calls() []call {
	v := func(id string) *store.Voice { return &store.Voice{ID: id, OrgID: "o", Title: "t"} }
	first := func(_ any, err error) error { return err }
	page := func(_ any, _ store.Position, _ bool, err error) error { return err }
	return []call{
		{"CreateKey", func(ctx context.Context, s *memory.Store) error {
			return s.CreateKey(ctx, &store.APIKey{ID: "k2", OrgID: "o", Hash: []byte("h2")})
		}},
		{"KeyByHash", func(ctx context.Context, s *memory.Store) error { return first(s.KeyByHash(ctx, []byte("h1"))) }},
		{"ListKeys", func(ctx context.Context, s *memory.Store) error { return first(s.ListKeys(ctx, "o")) }},
		{"RevokeKey", func(ctx context.Context, s *memory.Store) error { return first(s.RevokeKey(ctx, "k1")) }},
		{"UpdateKey", func(ctx context.Context, s *memory.Store) error {
			return first(s.UpdateKey(ctx, &store.APIKey{ID: "k1", Name: "n"}))
		}},
		{"CreateOrg", func(ctx context.Context, s *memory.Store) error { return s.CreateOrg(ctx, &store.Org{ID: "o2"}) }},
		{"GetOrg", func(ctx context.Context, s *memory.Store) error { return first(s.GetOrg(ctx, "o")) }},
		{"UpdateOrg", func(ctx context.Context, s *memory.Store) error { return s.UpdateOrg(ctx, &store.Org{ID: "o"}) }},
		{"ListOrgs", func(ctx context.Context, s *memory.Store) error { return first(s.ListOrgs(ctx)) }},
		{"CreateVoice", func(ctx context.Context, s *memory.Store) error { return s.CreateVoice(ctx, v("v2")) }},
		{"GetVoice", func(ctx context.Context, s *memory.Store) error { return first(s.GetVoice(ctx, "o", "v1")) }},
		{"DeleteVoice", func(ctx context.Context, s *memory.Store) error { return s.DeleteVoice(ctx, "o", "gone") }},
		{"UpdateVoice", func(ctx context.Context, s *memory.Store) error { return s.UpdateVoice(ctx, v("v1")) }},
		{"ListVoices", func(ctx context.Context, s *memory.Store) error { return page(s.ListVoices(ctx, "o", 10, nil)) }},
		{"PutMedia", func(ctx context.Context, s *memory.Store) error {
			return s.PutMedia(ctx, &store.Media{ID: "m2", OrgID: "o"}, []byte("x"))
		}},
		{"GetMedia", func(ctx context.Context, s *memory.Store) error { return first(s.GetMedia(ctx, "o", "m1")) }},
		{"MediaData", func(ctx context.Context, s *memory.Store) error { return first(s.MediaData(ctx, "o", "m1")) }},
		{"DeleteMedia", func(ctx context.Context, s *memory.Store) error { return s.DeleteMedia(ctx, "o", "gone") }},
		{"PutSecret", func(ctx context.Context, s *memory.Store) error { return s.PutSecret(ctx, "o", "new", []byte("c")) }},
		{"GetSecret", func(ctx context.Context, s *memory.Store) error { return first(s.GetSecret(ctx, "o", "openai")) }},
		{"DeleteSecret", func(ctx context.Context, s *memory.Store) error { return s.DeleteSecret(ctx, "o", "gone") }},
		{"ListSecretNames", func(ctx context.Context, s *memory.Store) error { return first(s.ListSecretNames(ctx, "o")) }},
		{"SealFingerprint", func(ctx context.Context, s *memory.Store) error {
			_, _, err := s.SealFingerprint(ctx)
			return err
		}},
		{"RecordSealFingerprint", func(ctx context.Context, s *memory.Store) error {
			return first(s.RecordSealFingerprint(ctx, []byte("fp")))
		}},
		{"AppendLogs", func(ctx context.Context, s *memory.Store) error {
			return s.AppendLogs(ctx, []store.LogRow{{RequestID: "r2", OrgID: "o", Status: 200}})
		}},
		{"ListLogs", func(ctx context.Context, s *memory.Store) error {
			return page(s.ListLogs(ctx, "o", store.LogFilter{}, 10, nil))
		}},
		{"GetLog", func(ctx context.Context, s *memory.Store) error { return first(s.GetLog(ctx, "o", "r1")) }},
		{"PurgeLogs", func(ctx context.Context, s *memory.Store) error {
			return first(s.PurgeLogs(ctx, time.Now().Add(-time.Hour)))
		}},
		{"Usage", func(ctx context.Context, s *memory.Store) error {
			return first(s.Usage(ctx, "o", day, day.Add(store.UsageDay)))
		}},
		{"CreateDictionary", func(ctx context.Context, s *memory.Store) error {
			return s.CreateDictionary(ctx, &store.Dictionary{ID: "d2", OrgID: "o", Name: "D2"}, 10)
		}},
		{"DefaultDictionary", func(ctx context.Context, s *memory.Store) error {
			return first(s.DefaultDictionary(ctx, "o", &store.Dictionary{ID: "def", Name: store.DefaultDictionaryName}))
		}},
		{"GetDictionary", func(ctx context.Context, s *memory.Store) error { return first(s.GetDictionary(ctx, "o", "d1")) }},
		{"UpdateDictionary", func(ctx context.Context, s *memory.Store) error {
			return s.UpdateDictionary(ctx, &store.Dictionary{ID: "d1", OrgID: "o", Name: "renamed"})
		}},
		{"DeleteDictionary", func(ctx context.Context, s *memory.Store) error { return s.DeleteDictionary(ctx, "o", "gone") }},
		{"ListDictionaries", func(ctx context.Context, s *memory.Store) error {
			return page(s.ListDictionaries(ctx, "o", 10, nil))
		}},
		{"CreateRule", func(ctx context.Context, s *memory.Store) error {
			return s.CreateRule(ctx, &store.PronunciationRule{ID: "r2", OrgID: "o", DictionaryID: "d1", Word: "w2", Replacement: "x"}, 10)
		}},
		{"GetRule", func(ctx context.Context, s *memory.Store) error { return first(s.GetRule(ctx, "o", "d1", "r1")) }},
		{"UpdateRule", func(ctx context.Context, s *memory.Store) error {
			return s.UpdateRule(ctx, &store.PronunciationRule{ID: "r1", OrgID: "o", DictionaryID: "d1", Word: "w", Replacement: "y"})
		}},
		{"DeleteRule", func(ctx context.Context, s *memory.Store) error { return s.DeleteRule(ctx, "o", "d1", "gone") }},
		{"ListRules", func(ctx context.Context, s *memory.Store) error { return page(s.ListRules(ctx, "o", "d1", 10, nil)) }},
		{"DictionaryRules", func(ctx context.Context, s *memory.Store) error {
			_, _, err := s.DictionaryRules(ctx, "o", []string{"d1"})
			return err
		}},
		{"CreateJob", func(ctx context.Context, s *memory.Store) error {
			return s.CreateJob(ctx, &store.Job{ID: "j2", OrgID: "o"}, []store.JobChunk{{Text: "b"}})
		}},
		{"GetJob", func(ctx context.Context, s *memory.Store) error { _, err := s.GetJob(ctx, "o", "j1"); return err }},
		{"ListJobs", func(ctx context.Context, s *memory.Store) error { return page(s.ListJobs(ctx, "o", 10, nil)) }},
		{"CancelJob", func(ctx context.Context, s *memory.Store) error { _, err := s.CancelJob(ctx, "o", "gone"); return err }},
		{"LeaseJob", func(ctx context.Context, s *memory.Store) error {
			_, err := s.LeaseJob(ctx, "w", time.Minute, 0)
			return err
		}},
		{"RenewJobLease", func(ctx context.Context, s *memory.Store) error {
			_, err := s.RenewJobLease(ctx, "j1", "w", time.Minute)
			return leaseAnswer(err)
		}},
		{"JobChunks", func(ctx context.Context, s *memory.Store) error { _, err := s.JobChunks(ctx, "j1", 0, 10); return err }},
		{"CheckpointJobChunk", func(ctx context.Context, s *memory.Store) error {
			return leaseAnswer(s.CheckpointJobChunk(ctx, "j1", "w", &store.JobChunk{}))
		}},
		{"FinishJob", func(ctx context.Context, s *memory.Store) error {
			return leaseAnswer(s.FinishJob(ctx, "j1", "w", store.JobFinish{State: store.JobFailed}))
		}},
		{"RecordJobDelivery", func(ctx context.Context, s *memory.Store) error {
			return leaseAnswer(s.RecordJobDelivery(ctx, "j1", "w", store.JobDelivery{}, time.Time{}))
		}},
		{"DeleteJob", func(ctx context.Context, s *memory.Store) error {
			_, err := s.DeleteJob(ctx, "o", "j1")
			if errors.Is(err, store.ErrJobLive) {
				return nil // the seeded job is queued: the call's answer
			}
			return err
		}},
		{"ExpiredJobs", func(ctx context.Context, s *memory.Store) error {
			_, err := s.ExpiredJobs(ctx, time.Now(), 10)
			return err
		}},
		{"LeaseJobSweep", func(ctx context.Context, s *memory.Store) error {
			_, err := s.LeaseJobSweep(ctx, "w", time.Minute)
			return err
		}},
	}
}

// leaseAnswer makes a lost lease, the answer a job's worker writes get
// when it holds none, an expected answer.
func leaseAnswer(err error) error {
	if errors.Is(err, store.ErrLeaseLost) {
		return nil
	}
	return err
}

// seeded returns a store holding the records calls reads.
func seeded(t *testing.T) *memory.Store {
	t.Helper()
	ctx := context.Background()
	s := memory.New(store.Options{})
	t.Cleanup(func() { s.Close() })
	for _, err := range []error{
		s.CreateKey(ctx, &store.APIKey{ID: "k1", OrgID: "o", Hash: []byte("h1")}),
		s.CreateOrg(ctx, &store.Org{ID: "o"}),
		s.CreateVoice(ctx, &store.Voice{ID: "v1", OrgID: "o"}),
		s.PutMedia(ctx, &store.Media{ID: "m1", OrgID: "o"}, []byte("RIFF")),
		s.PutSecret(ctx, "o", "openai", []byte("sealed")),
		s.AppendLogs(ctx, []store.LogRow{{RequestID: "r1", OrgID: "o", Status: 200}}),
		s.CreateDictionary(ctx, &store.Dictionary{ID: "d1", OrgID: "o", Name: "D"}, 10),
		s.CreateRule(ctx, &store.PronunciationRule{ID: "r1", OrgID: "o", DictionaryID: "d1", Word: "w", Replacement: "x"}, 10),
		s.CreateJob(ctx, &store.Job{ID: "j1", OrgID: "o"}, []store.JobChunk{{Text: "a"}}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// expectedAnswer reports whether an error from a call against seeded is
// only the answer of that call (not found), not a failure of the store.
func expectedAnswer(err error) bool { return err == nil || errors.Is(err, store.ErrNotFound) }

// TestCallsListsEveryMethod: the table above, and the names FailNext and
// Calls take, are every method of store.Backend that returns an error.
func TestCallsListsEveryMethod(t *testing.T) {
	var want []string
	typ := reflect.TypeFor[store.Backend]()
	errType := reflect.TypeFor[error]()
	for i := range typ.NumMethod() {
		m := typ.Method(i)
		if n := m.Type.NumOut(); n > 0 && m.Type.Out(n-1) == errType && m.Name != "Close" {
			want = append(want, m.Name)
		}
	}
	var got []string
	s := memory.New(store.Options{})
	for _, c := range calls() {
		got = append(got, c.name)
		_ = s.Calls(c.name) // panics for a name the store does not know
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("calls cover %v\nthe contract has %v", got, want)
	}
}

// TestSetDown: while down, every call fails with store.ErrUnavailable and
// changes nothing; once up, every call works on the records as they were.
func TestSetDown(t *testing.T) {
	ctx := context.Background()
	s := seeded(t)
	s.SetDown(true)
	for _, c := range calls() {
		if err := c.do(ctx, s); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s while down = %v, want store.ErrUnavailable", c.name, err)
		}
	}
	s.SetDown(false)
	for _, c := range calls() {
		if err := c.do(ctx, s); !expectedAnswer(err) {
			t.Errorf("%s once up again = %v", c.name, err)
		}
	}
	// Nothing was written while down: each write above succeeded once up,
	// so none had happened before.
	if keys, _ := s.ListKeys(ctx, "o"); len(keys) != 2 {
		t.Errorf("%d keys, want k1 and k2", len(keys))
	}
}

// TestFailNext: every method can be made to fail, with the error given,
// the given number of times, changing nothing; then it works again.
func TestFailNext(t *testing.T) {
	ctx := context.Background()
	errBoom := errors.New("boom")
	for _, c := range calls() {
		t.Run(c.name, func(t *testing.T) {
			s := seeded(t)
			s.FailNext(c.name, 2, errBoom)
			before := s.Calls(c.name)
			for i := range 2 {
				if err := c.do(ctx, s); !errors.Is(err, errBoom) || !strings.Contains(err.Error(), c.name) {
					t.Fatalf("call %d = %v, want boom naming %s", i, err, c.name)
				}
			}
			// No other method was made to fail.
			for _, other := range calls() {
				if other.name != c.name && !strings.HasPrefix(other.name, "Create") && !strings.HasPrefix(other.name, "Put") &&
					other.name != "AppendLogs" && other.name != "DefaultDictionary" {
					if err := other.do(ctx, s); !expectedAnswer(err) {
						t.Fatalf("%s = %v while only %s should fail", other.name, err, c.name)
					}
				}
			}
			if err := c.do(ctx, s); !expectedAnswer(err) {
				t.Fatalf("third call = %v, want success", err)
			}
			if got := s.Calls(c.name) - before; got != 3 {
				t.Errorf("Calls counted %d, want 3", got)
			}
		})
	}
}

func TestFailNextOptions(t *testing.T) {
	ctx := context.Background()
	s := seeded(t)
	// A nil error is the store being unavailable.
	s.FailNext("GetVoice", 1, nil)
	if _, err := s.GetVoice(ctx, "o", "v1"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("nil error: %v, want store.ErrUnavailable", err)
	}
	// A full disk, as bbolt reports one, matches both of its errors.
	s.FailNext("PutMedia", 1, fmt.Errorf("%w: %w", store.ErrUnavailable, store.ErrFull))
	if err := s.PutMedia(ctx, &store.Media{ID: "m9", OrgID: "o"}, nil); !errors.Is(err, store.ErrFull) || !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("a full disk: %v, want store.ErrFull and store.ErrUnavailable", err)
	}
	// 0 clears what was pending.
	s.FailNext("GetVoice", 5, nil)
	s.FailNext("GetVoice", 0, nil)
	if _, err := s.GetVoice(ctx, "o", "v1"); err != nil {
		t.Errorf("after clearing: %v", err)
	}
	// A failed batch of rows writes none of them, nor their usage.
	s.FailNext("AppendLogs", 1, nil)
	if err := s.AppendLogs(ctx, []store.LogRow{{RequestID: "lost", OrgID: "o2", Status: 200}}); err == nil {
		t.Fatal("AppendLogs did not fail")
	}
	if rows, _, _, _ := s.ListLogs(ctx, "o2", store.LogFilter{}, 10, nil); len(rows) != 0 {
		t.Errorf("a failed batch wrote %d rows", len(rows))
	}
	if u, _ := s.Usage(ctx, "o2", day, day.Add(store.UsageDay)); len(u) != 0 {
		t.Errorf("a failed batch counted usage: %+v", u)
	}
	// A misspelt method is a mistake in the test.
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "GetVoice") {
			t.Errorf("FailNext of an unknown method: recovered %v, want a panic naming the methods", r)
		}
	}()
	s.FailNext("GetVoices", 1, nil)
}

func TestClosed(t *testing.T) {
	ctx := context.Background()
	s := seeded(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range calls() {
		if err := c.do(ctx, s); err == nil || errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s after Close = %v, want an error (not ErrUnavailable: nothing will bring it back)", c.name, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

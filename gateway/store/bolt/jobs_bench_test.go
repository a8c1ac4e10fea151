package bolt

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/voxgate/voxgate/gateway/store"
)

// BenchmarkExpiredJobs is the retention sweeper's one store read,
// ExpiredJobs, on a file holding 100,000 finished jobs (one a second, in
// 20 organizations), asking for a page of 100: when 100 have expired, and
// when none has (the sweeper's usual round, every tenth of the
// retention). The jobs' records carry a spec of a realistic size.
func BenchmarkExpiredJobs(b *testing.B) {
	const n = 100_000
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := Open(filepath.Join(b.TempDir(), "jobs.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	spec := []byte(`{"voice":{"model":"espeak/espeak-ng","voice":"en-us"},"output":{"format":"mp3","sample_rate":24000,"bitrate":96},"captions":["srt","vtt"],"webhook":{"url":"https://hooks.example.com/voxgate/jobs"}}`)
	const batch = 10_000
	for from := 0; from < n; from += batch {
		err := s.db.Update(func(tx *bbolt.Tx) error {
			for i := from; i < from+batch; i++ {
				created := base.Add(time.Duration(i) * time.Second)
				j := &store.Job{ID: fmt.Sprintf("4c1d2e3f-0000-4000-8000-%012d", i), OrgID: fmt.Sprintf("org-%d", i%20),
					State: store.JobSucceeded, Spec: spec, ChunksTotal: 12, ChunksDone: 12, Characters: 24_000, AudioMS: 1_500_000,
					OutputBytes: 18_000_000, CreatedAt: created, UpdatedAt: created.Add(time.Minute),
					StartedAt: created.Add(time.Second), FinishedAt: created.Add(time.Minute)}
				if err := putJob(tx, j); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		expired int
	}{{"100_of_100k_expired", 100}, {"none_of_100k_expired", 0}} {
		cut := base.Add(time.Duration(c.expired)*time.Second + time.Minute)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				got, err := s.ExpiredJobs(ctx, cut, 100)
				if err != nil || len(got) != c.expired {
					b.Fatalf("%d expired jobs (%v), want %d", len(got), err, c.expired)
				}
			}
		})
	}
}

package reqlog_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
	"github.com/voxgate/voxgate/gateway/store/reqlog"
)

// BenchmarkRecord measures the request-path cost of logging one row against
// a live writer on a real file. Once the disk falls behind, Record takes its
// drop path instead; both must stay allocation-free and non-blocking.
func BenchmarkRecord(b *testing.B) {
	for _, parallel := range []bool{false, true} {
		name := "serial"
		if parallel {
			name = "parallel"
		}
		b.Run(name, func(b *testing.B) {
			s, err := bolt.Open(filepath.Join(b.TempDir(), "db"), store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			w := reqlog.New(s, reqlog.Options{PurgeInterval: -1})
			w.Start()
			r := row("org-bench", 1)
			b.ReportAllocs()
			b.ResetTimer()
			if parallel {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						w.Record(r)
					}
				})
			} else {
				for b.Loop() {
					w.Record(r)
				}
			}
			b.StopTimer()
			if err := w.Close(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(w.Dropped())/float64(w.Dropped()+w.Written()), "dropped/row")
		})
	}
}

package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
)

// TestImportJobRefusesWithoutWriting: ImportJob writes a job whole or
// not at all. A taken id is store.ErrExists and leaves the stored job as
// it is; chunks that do not match the job, or unstorable text, are
// refused before anything is written.
func TestImportJobRefusesWithoutWriting(t *testing.T) {
	ctx := context.Background()
	s := open(t, server.NewDatabaseT(t), store.Options{})
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	j := store.Job{ID: "j1", OrgID: "acme", State: store.JobRunning, ChunksTotal: 2, ChunksDone: 1, CreatedAt: at, UpdatedAt: at, StartedAt: at}
	chunks := []store.JobChunk{{Text: "a", Done: true, AudioMS: 10}, {Index: 1, Text: "b"}}
	if err := s.ImportJob(ctx, &j, chunks); err != nil {
		t.Fatal(err)
	}
	again := j
	again.ChunksDone, again.State = 2, store.JobSucceeded
	if err := s.ImportJob(ctx, &again, []store.JobChunk{{Text: "a", Done: true}, {Index: 1, Text: "b", Done: true}}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("import of a taken id: %v, want ErrExists", err)
	}
	if got, err := s.GetJob(ctx, "acme", "j1"); err != nil || got.State != store.JobRunning || got.ChunksDone != 1 {
		t.Fatalf("after the refused import: %+v, %v; want the first import's", got, err)
	}
	if cs, err := s.JobChunks(ctx, "j1", 0, 10); err != nil || len(cs) != 2 || cs[1].Done {
		t.Fatalf("chunks after the refused import: %+v, %v", cs, err)
	}

	for _, tc := range []struct {
		name   string
		job    store.Job
		chunks []store.JobChunk
		want   string
	}{
		{"fewer chunks than the job says", store.Job{ID: "j2", OrgID: "acme", State: store.JobQueued, ChunksTotal: 3, CreatedAt: at, UpdatedAt: at},
			chunks, "2 chunks, the job says 3"},
		{"chunks out of order", store.Job{ID: "j3", OrgID: "acme", State: store.JobQueued, ChunksTotal: 2, CreatedAt: at, UpdatedAt: at},
			[]store.JobChunk{{Index: 1, Text: "b"}, {Text: "a"}}, "has index 1"},
		{"a NUL in an error detail", store.Job{ID: "j4", OrgID: "acme", State: store.JobFailed, ErrorDetail: "bad\x00", ChunksTotal: 2, CreatedAt: at, UpdatedAt: at},
			chunks, "error_detail"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.ImportJob(ctx, &tc.job, tc.chunks)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
			if _, err := s.GetJob(ctx, "acme", tc.job.ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the refused job was stored: %v", err)
			}
		})
	}
}

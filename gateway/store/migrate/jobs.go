package migrate

import (
	"context"
	"fmt"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
)

// jobPage is how many jobs are listed at once, chunkPage how many of a
// job's chunks are read at once (a job of two million characters has
// about a thousand).
const (
	jobPage   = 100
	chunkPage = 1000
)

// jobs copies every long-form job of the file, of every organization
// that has one, with its chunks: each job in one transaction, skipped
// when PostgreSQL has it (a second run copies none twice, and never
// overwrites what a gateway on PostgreSQL has done with a job since).
//
// Leases are not copied. The file is locked while it is migrated, so no
// instance on it holds a lease any more, and its worker is gone: a job
// that was running is copied running with its lease released, so the
// first PostgreSQL instance's worker takes it over at once and resumes it
// at its first chunk not done (re-rendering the done chunks whose audio
// is not in that instance's jobs.dir), as it would a job whose instance
// died. A finished job whose webhook was being delivered is likewise
// retried. Files are not moved: they stay in the old instance's jobs.dir
// (docs/jobs.md says what to do with it).
func (m *migration) jobs(ctx context.Context) error {
	orgs, err := m.src.JobOrgs(ctx)
	if err != nil {
		return err
	}
	c := m.count("jobs")
	for _, org := range orgs {
		n := 0
		var after store.Position
		for {
			page, next, more, err := m.src.ListJobs(ctx, org, jobPage, after)
			if err != nil {
				return fmt.Errorf("organization %q: %w", org, err)
			}
			for i := range page {
				if err := m.job(ctx, &page[i], c); err != nil {
					return fmt.Errorf("organization %q: job %s: %w", org, page[i].ID, err)
				}
				n++
			}
			if !more {
				break
			}
			after = next
		}
		m.say(fmt.Sprintf("org %s: %d jobs done", org, n))
	}
	return nil
}

// job copies j and its chunks, then counts it verified when PostgreSQL
// holds it with as many chunks.
func (m *migration) job(ctx context.Context, j *store.Job, c *Count) error {
	var chunks []store.JobChunk
	for from := 0; from < j.ChunksTotal; from += chunkPage {
		page, err := m.src.JobChunks(ctx, j.ID, from, chunkPage)
		if err != nil {
			return err
		}
		if len(page) == 0 {
			break
		}
		chunks = append(chunks, page...)
	}
	j.LeaseOwner, j.LeaseUntil = "", time.Time{}
	if err := skipExisting(m.dst.ImportJob(ctx, j, chunks)); err != nil {
		return err
	}
	c.Source++
	if got, err := m.dst.GetJob(ctx, j.OrgID, j.ID); err == nil && got.ChunksTotal == j.ChunksTotal {
		c.Verified++
	}
	return nil
}

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/postgres"
	"github.com/voxgate/voxgate/gateway/store/reqlog"
	"github.com/voxgate/voxgate/internal/pgtest"
)

// The PostgreSQL phases measure the shared backend against the embedded
// one, each figure next to its baseline in the same run:
//
//   - pg-seq: a whole clip through a gateway on PostgreSQL over the same
//     through the load gateway on bbolt, requests alternating; the same
//     config but the storage, so the difference is what the backend costs
//     a request (the auth cache and the log writer's enqueue are in
//     memory either way; the writer's batches run beside).
//   - pg-logs: GET /v1/logs pages and a GET /v1/usage query at 1M rows
//     over 10k rows, on the same rows as the bbolt fixture, loaded with
//     the backend's own AppendLogs (COPY, and the usage rollup).
//   - pg-writer: request-log rows a second the gateway's log writer
//     (reqlog.Writer, in this process) puts into PostgreSQL, offered at a
//     rate above the target and counted for drops, then as fast as the
//     database takes them.
//
// The server is a throwaway one (internal/pgtest) with fsync on, as in
// production.

// pgWriterOffered is the rate the paced writer run offers, above the
// 20,000 rows/s target so that keeping up proves the target.
const pgWriterOffered = 25_000

type pgResult struct {
	// Seq compares the gateway on bbolt (baseline) and on PostgreSQL.
	Seq struct {
		Bolt  latency `json:"bolt"`
		PG    latency `json:"postgres"`
		Ratio float64 `json:"ratio_p50"`
	} `json:"sequential"`
	Pages         []logPage `json:"pages"`
	Usage         []logPage `json:"usage_queries"`
	FixtureSecs   float64   `json:"fixture_load_seconds"`
	Paced         pgWriter  `json:"writer_paced"`
	Unpaced       pgWriter  `json:"writer_unpaced"`
	WriterQueue   int       `json:"writer_queue_size"`
	WriterBatch   int       `json:"writer_batch_size"`
	ServerVersion string    `json:"server"`
}

// pgWriter is one run of the log writer into PostgreSQL.
type pgWriter struct {
	Offered    float64 `json:"offered_rows_per_sec,omitempty"`
	Rows       int     `json:"rows"`
	Seconds    float64 `json:"seconds"`
	RowsPerSec float64 `json:"rows_per_sec"`
	Dropped    uint64  `json:"dropped"`
	MaxQueue   int     `json:"max_queue_depth"`
}

// pgBench holds the PostgreSQL server and the gateway on it while the
// load phases run.
type pgBench struct {
	srv     *pgtest.Server
	logsDSN string
	gw      *gatewayProc
	key     string
	built   time.Time
}

// startPG starts the server, loads the request-log fixture into one
// database and serves a load gateway on another. It runs before the load
// phases, so its disk writes stay out of their measurements.
func startPG(ctx context.Context, bin, dir string, ups *upstreams, o options, p plan, res *Results) (*pgBench, error) {
	srv, err := pgtest.StartDurable()
	if err != nil {
		return nil, err
	}
	pb := &pgBench{srv: srv}
	if pb.logsDSN, err = srv.NewDatabase(); err != nil {
		pb.close()
		return nil, err
	}
	start := time.Now()
	pb.built = time.Now().UTC().Truncate(time.Second)
	if err := loadPGFixture(ctx, pb.logsDSN, pb.built, pb.orgs(p)); err != nil {
		pb.close()
		return nil, fmt.Errorf("postgres fixture: %w", err)
	}
	res.Postgres.FixtureSecs = time.Since(start).Seconds()
	logf("postgres: fixture loaded in %s", time.Since(start).Round(100*time.Millisecond))

	loadDSN, err := srv.NewDatabase()
	if err != nil {
		pb.close()
		return nil, err
	}
	if pb.gw, err = startGateway(ctx, bin, dir, "load-pg", loadConfig(ups, gwOptions{accessLog: o.accessLog, directHTTP: o.directHTTP, dsn: loadDSN})); err != nil {
		pb.close()
		return nil, err
	}
	if pb.key, err = pb.gw.createKey(ctx, benchOrg); err != nil {
		pb.close()
		return nil, err
	}
	if err := pb.gw.serve(ctx); err != nil {
		pb.close()
		return nil, err
	}
	return pb, nil
}

func (pb *pgBench) close() {
	if pb.gw != nil {
		pb.gw.stop()
	}
	pb.srv.Close()
}

// orgs are the fixture's organizations with their row counts scaled by
// the plan.
func (pb *pgBench) orgs(p plan) []fixtureOrg {
	out := make([]fixtureOrg, len(fixtureOrgs))
	for i, o := range fixtureOrgs {
		out[i] = fixtureOrg{org: o.org, rows: o.rows / max(1, p.PGFixtureDiv)}
	}
	return out
}

// loadPGFixture appends the fixture's rows (fixtureRow, as for bbolt)
// oldest first in batches of 50,000.
func loadPGFixture(ctx context.Context, dsn string, built time.Time, orgs []fixtureOrg) error {
	total := 0
	for _, o := range orgs {
		total += o.rows
	}
	logf("postgres: loading the request-log fixture (%d rows)", total)
	s, err := postgres.Open(ctx, dsn, postgres.Options{OpTimeout: 5 * time.Minute})
	if err != nil {
		return err
	}
	defer s.Close()
	const batch = 50_000
	rows := make([]store.LogRow, 0, batch)
	for _, o := range orgs {
		for i := o.rows - 1; i >= 0; i-- {
			rows = append(rows, fixtureRow(o.org, i, built))
			if len(rows) == batch || i == 0 {
				if err := s.AppendLogs(ctx, rows); err != nil {
					return err
				}
				rows = rows[:0]
			}
		}
	}
	return nil
}

// pgSequential alternates whole clips between the load gateway (bbolt)
// and the gateway on PostgreSQL, one at a time, the order flipping every
// pair.
func (l *load) pgSequential(ctx context.Context, pb *pgBench, res *Results) error {
	pgT := l.gateway
	pgT.name, pgT.uri, pgT.auth = "gateway-pg", "http://"+pb.gw.addr+"/v1/audio/speech", pb.key
	pgT.hc = &fasthttp.HostClient{Addr: pb.gw.addr, MaxConns: 4, ReadTimeout: 60 * time.Second, NoDefaultUserAgentHeader: true, ReadBufferSize: 16 << 10}
	defer pgT.hc.CloseIdleConnections()
	reqB, reqP := fasthttp.AcquireRequest(), fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(reqB)
	defer fasthttp.ReleaseRequest(reqP)
	defer fasthttp.ReleaseResponse(resp)
	l.gateway.prepare(reqB)
	pgT.prepare(reqP)
	for range l.p.WarmUp / 2 {
		if _, err := l.clip(&pgT, reqP, resp); err != nil {
			return err
		}
	}
	n := l.p.SeqRounds * l.p.SeqPerRound / 2
	b, p := make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	for i := range n {
		for k := range 2 {
			if (i+k)%2 == 0 {
				d, err := l.clip(&l.gateway, reqB, resp)
				if err != nil {
					return err
				}
				b = append(b, d)
			} else {
				d, err := l.clip(&pgT, reqP, resp)
				if err != nil {
					return err
				}
				p = append(p, d)
			}
		}
		if i%100 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	s := &res.Postgres.Seq
	s.Bolt, s.PG = summarize(b), summarize(p)
	s.Ratio = s.PG.P50 / s.Bolt.P50
	return nil
}

// pgLogsConfig serves only the log API of the fixture's organizations
// from PostgreSQL.
func pgLogsConfig(dsn string) func(listen, dir, bin string) string {
	return func(listen, dir, bin string) string {
		cfg := fmt.Sprintf(`server:
  listen: %s
storage:
  driver: postgres
  dsn: %s
  path: %s
plugins:
  dir: %s
secrets:
  key_file: %s
orgs:
`, listen, dsn, filepath.Join(dir, "voxgate.db"), filepath.Join(bin, "plugins"), filepath.Join(dir, "secrets.key"))
		for _, o := range fixtureOrgs {
			cfg += fmt.Sprintf("  %s:\n    providers: {}\n", o.org)
		}
		return cfg
	}
}

// pgLogs times the log pages of the fixture on PostgreSQL.
func (pb *pgBench) logs(ctx context.Context, bin, dir string, p plan, res *Results) error {
	gw, err := startGateway(ctx, bin, dir, "logs-pg", pgLogsConfig(pb.logsDSN))
	if err != nil {
		return err
	}
	defer gw.stop()
	keys := map[string]string{}
	for _, o := range fixtureOrgs {
		if keys[o.org], err = gw.createKey(ctx, o.org); err != nil {
			return err
		}
	}
	if err := gw.serve(ctx); err != nil {
		return err
	}
	if res.Postgres.Pages, err = timeLogPages(gw, keys, pb.built, pb.orgs(p), p); err != nil {
		return err
	}
	if res.Postgres.Usage, err = timeUsage(gw, keys, pb.orgs(p), p); err != nil {
		return err
	}
	return gw.shutdown(nil)
}

// writer runs the request-log writer into a fresh database twice: paced
// at pgWriterOffered rows a second for d, then unpaced (the bench waits
// while the queue is more than half full, so nothing is dropped and the
// figure is what the database takes).
func (pb *pgBench) writer(ctx context.Context, d time.Duration, res *Results) error {
	dsn, err := pb.srv.NewDatabase()
	if err != nil {
		return err
	}
	st, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	opts := reqlog.Options{QueueSize: 8192, BatchSize: 512, Logger: zap.NewNop()} // the config's defaults
	res.Postgres.WriterQueue, res.Postgres.WriterBatch = opts.QueueSize, opts.BatchSize
	w := reqlog.New(st, opts)
	w.Start()
	defer w.Close(context.Background())

	next := 0 // row numbers go on across runs: request ids stay unique
	run := func(paced bool) (pgWriter, error) {
		var r pgWriter
		written0, dropped0 := w.Written(), w.Dropped()
		start := time.Now()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		first, i := next, next
		defer func() { next = i }()
		for time.Since(start) < d {
			if paced {
				<-tick.C
				// Catch up to the schedule (ticks may be late or coalesced).
				due := first + int(time.Since(start).Seconds()*pgWriterOffered)
				for ; i < due; i++ {
					w.Record(benchRow(i))
				}
			} else {
				for w.QueueLen() > opts.QueueSize/2 {
					time.Sleep(100 * time.Microsecond)
				}
				for range 256 {
					w.Record(benchRow(i))
					i++
				}
			}
			r.MaxQueue = max(r.MaxQueue, w.QueueLen())
			if err := ctx.Err(); err != nil {
				return r, err
			}
		}
		fctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := w.Flush(fctx); err != nil {
			return r, err
		}
		r.Seconds = time.Since(start).Seconds()
		r.Rows = int(w.Written() - written0)
		r.Dropped = w.Dropped() - dropped0
		r.RowsPerSec = float64(r.Rows) / r.Seconds
		if paced {
			r.Offered = pgWriterOffered
		}
		return r, nil
	}
	if res.Postgres.Paced, err = run(true); err != nil {
		return err
	}
	res.Postgres.Unpaced, err = run(false)
	return err
}

// benchRow is request-log row i as a speech request writes it now.
func benchRow(i int) store.LogRow {
	now := time.Now().UTC()
	r := fixtureRow(benchOrg, i, now)
	r.RequestID = fmt.Sprintf("5d2a9c1e-3b4f-4a6d-8e7f-%012d", i)
	r.TS = now
	return r
}

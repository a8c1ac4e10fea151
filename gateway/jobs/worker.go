package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/observe/metrics"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/provenance"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/sdk"
)

// Options configure the jobs service (config section jobs:, and
// limits.max_job_chars).
type Options struct {
	// Dir holds the jobs' chunk files and finished files, a folder per
	// job.
	Dir string
	// Owner names this instance's worker in leases; it must differ
	// between instances (default: a new uuid).
	Owner string
	// MaxChars is the longest text of a job (limits.max_job_chars).
	MaxChars int
	// ChunkChars caps a chunk's characters below the model's limit.
	ChunkChars int
	// Rate is the sample rate chunks are rendered at.
	Rate int
	// PerInstance is how many jobs this instance renders at once;
	// PerOrg how many of one organization run at once across instances.
	PerInstance, PerOrg int
	// Lease is how long a lease lasts unless renewed (renewed every
	// third of it): an instance that dies holds its jobs this long.
	Lease time.Duration
	// Poll is how often an idle worker looks for work.
	Poll time.Duration
	// ChunkRetries is how many times a failing chunk is tried again
	// (each try goes through the voice's fallbacks) before the job
	// fails; RetryBackoff the first wait, doubled each time.
	ChunkRetries int
	RetryBackoff time.Duration
	// WebhookBackoff is the wait before a failed delivery's first retry,
	// doubled each time (at most an hour); WebhookRetryFor how long
	// after the job ended deliveries are tried.
	WebhookBackoff, WebhookRetryFor time.Duration
	// WebhookAllowPrivate allows webhooks to loopback, private and
	// link-local addresses; WebhookAllowHTTP plain http.
	WebhookAllowPrivate, WebhookAllowHTTP bool
	// WebhookTimeout bounds one delivery.
	WebhookTimeout time.Duration
	// Retention is how long a finished job (its record and files) is
	// kept before the sweeper deletes it; 0 keeps jobs until they are
	// deleted (DELETE /v1/audio/jobs/{id}).
	Retention time.Duration
	// LocalSweep is how often this instance removes from Dir the
	// folders of jobs the store no longer holds (deleted on another
	// instance), whatever Retention says (jobs.dir_sweep; default: a
	// minute).
	LocalSweep time.Duration
}

func (o *Options) defaults() {
	if o.Owner == "" {
		o.Owner = uuid.NewString()
	}
	if o.MaxChars <= 0 {
		o.MaxChars = 2_000_000
	}
	if o.ChunkChars <= 0 {
		o.ChunkChars = 2000
	}
	if o.Rate <= 0 {
		o.Rate = 24000
	}
	if o.PerInstance <= 0 {
		o.PerInstance = 2
	}
	if o.Lease <= 0 {
		o.Lease = 30 * time.Second
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.ChunkRetries < 0 {
		o.ChunkRetries = 0
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = time.Second
	}
	if o.WebhookBackoff <= 0 {
		o.WebhookBackoff = 30 * time.Second
	}
	if o.WebhookRetryFor <= 0 {
		o.WebhookRetryFor = 24 * time.Hour
	}
	if o.WebhookTimeout <= 0 {
		o.WebhookTimeout = 10 * time.Second
	}
	if o.LocalSweep <= 0 {
		o.LocalSweep = time.Minute
	}
}

// Deps are the Service's collaborators.
type Deps struct {
	Store Store
	// Speaker returns the speech service requests are served with now (a
	// reload replaces it); nil when there is none.
	Speaker func() Speaker
	// Record writes a chunk's request-log row.
	Record func(store.LogRow)
	Logger *zap.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Provenance marks finished files and signs their records (nil:
	// neither); Unmarked says an organization turned marks off.
	Provenance *provenance.Service
	Unmarked   func(org string) bool
	// NoRecords says an organization turned signed records off
	// (orgs.<id>.provenance.records): its files keep their mark but get
	// no record and no fingerprint.
	NoRecords func(org string) bool
	// OrgLoudness is an organization's default loudness target (nil:
	// none). Its chunks are leveled to it as PCM clips, with no room for
	// an encoder's overshoot, so a lossy file of a job without a
	// loudness of its own is leveled to it again at the join and
	// measured after its encoder, as a job's own target is.
	OrgLoudness func(org string) (audio.LoudnessTarget, bool)
}

// Service makes, lists and cancels jobs, and runs this instance's worker.
type Service struct {
	opts     Options
	store    Store
	speaker  func() Speaker
	record   func(store.LogRow)
	log      *zap.Logger
	now      func() time.Time
	guard    guard
	client   *http.Client
	wake     chan struct{}
	prov     *provenance.Service
	unmarked func(org string) bool
	// noRecords is Deps.NoRecords.
	noRecords func(org string) bool
	// orgLoudness is Deps.OrgLoudness.
	orgLoudness func(org string) (audio.LoudnessTarget, bool)
	metrics     *metrics.JobMetrics
	// running counts the jobs this instance renders (for metrics and
	// tests); rendering holds their ids, whose folders the local sweep
	// leaves alone while a worker may write them.
	mu        sync.Mutex
	running   int
	rendering map[string]struct{}
	// sweptTo is the last folder the local sweep looked at: the next
	// round goes on after it (only the sweeping goroutine uses it).
	sweptTo string
}

// New returns a Service; Run starts its worker.
func New(o Options, d Deps) *Service {
	o.defaults()
	s := &Service{opts: o, store: d.Store, speaker: d.Speaker, record: d.Record, log: d.Logger, now: d.Now,
		guard: guard{allowPrivate: o.WebhookAllowPrivate}, wake: make(chan struct{}, 1), prov: d.Provenance, unmarked: d.Unmarked, noRecords: d.NoRecords,
		orgLoudness: d.OrgLoudness, rendering: map[string]struct{}{}}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.record == nil {
		s.record = func(store.LogRow) {}
	}
	s.client = s.guard.client(o.WebhookTimeout)
	return s
}

// SetMetrics sets the series the service counts into (its Running is
// one of them, so they are made after it); call before Run.
func (s *Service) SetMetrics(m *metrics.JobMetrics) { s.metrics = m }

// Options returns the service's options, defaults filled in.
func (s *Service) Options() Options { return s.opts }

// Wake tells an idle worker to look for work now (a job was made).
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Running is the number of jobs this instance is rendering.
func (s *Service) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// Run leases and runs jobs until ctx ends: up to PerInstance at once, each
// in its own goroutine; webhook deliveries beside them. It returns once
// every job it started has stopped (their leases are left to run out, so
// another instance, or the next start, takes them over).
func (s *Service) Run(ctx context.Context) {
	slots := make(chan struct{}, s.opts.PerInstance)
	var wg sync.WaitGroup
	defer wg.Wait()
	if s.opts.Retention > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.runSweeper(ctx)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.runLocalSweeper(ctx)
	}()
	t := time.NewTicker(s.opts.Poll)
	defer t.Stop()
	for {
		// Take work while there is some and a slot is free.
		for {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			j, err := s.store.LeaseJob(ctx, s.opts.Owner, s.opts.Lease, s.opts.PerOrg)
			if err != nil {
				<-slots
				if !errors.Is(err, store.ErrNotFound) && ctx.Err() == nil {
					s.log.Warn("jobs: lease", zap.Error(err))
				}
				break
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				if store.JobTerminal(j.State) {
					s.deliver(ctx, j)
					return
				}
				s.runJob(ctx, j)
				s.Wake() // a slot is free, and this org's next job may run
			}()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wake:
		}
	}
}

// errCancelled stops a job's run when its lease is lost: the job was
// cancelled, or another instance took it over.
var errCancelled = errors.New("job lease lost")

// runJob renders job j's chunks not yet done, joins them and ends the
// job, renewing the lease meanwhile.
func (s *Service) runJob(ctx context.Context, j *store.Job) {
	s.mu.Lock()
	s.running++
	s.rendering[j.ID] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running--
		delete(s.rendering, j.ID)
		s.mu.Unlock()
	}()
	log := s.log.With(zap.String("job", j.ID), zap.String("org", j.OrgID))
	log.Info("job leased", zap.String("owner", s.opts.Owner), zap.Int("chunks_done", j.ChunksDone), zap.Int("chunks_total", j.ChunksTotal), zap.Int("leases", j.Leases))
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go s.renew(rctx, cancel, j.ID)
	out, err := s.render(rctx, j, log)
	switch {
	case errors.Is(context.Cause(rctx), errCancelled), errors.Is(err, errCancelled):
		// Cancelled (or taken over): the files of a cancelled job go.
		if cur, gerr := s.store.GetJob(context.WithoutCancel(ctx), j.OrgID, j.ID); gerr == nil && cur.State == store.JobCancelled {
			_ = removeJobDir(s.opts.Dir, j.ID)
			log.Info("job cancelled")
			s.countFinished(j, store.JobCancelled)
		}
		return
	case ctx.Err() != nil:
		return // shutting down: the lease runs out and the job resumes elsewhere or at the next start
	case errors.Is(err, store.ErrUnavailable):
		// The store is away (PostgreSQL down, a full disk): the job is not
		// failed for it; its lease runs out and a worker resumes it once
		// the store answers.
		log.Warn("job paused: the store is unavailable", zap.Error(err))
		return
	}
	f := store.JobFinish{State: store.JobSucceeded}
	if err != nil {
		pe := problem.From(err, "")
		f = store.JobFinish{State: store.JobFailed, ErrorCode: string(pe.Code), ErrorDetail: store.SanitizeText(pe.Detail)}
		log.Warn("job failed", zap.String("code", f.ErrorCode), zap.String("detail", f.ErrorDetail))
	} else {
		f.OutputBytes, f.Warnings = out.size, out.warnings
	}
	if spec, serr := decodeSpec(j.Spec); serr == nil && spec.Webhook != nil {
		f.WebhookDue = s.now().UTC()
	}
	if err := s.store.FinishJob(context.WithoutCancel(ctx), j.ID, s.opts.Owner, f); err != nil {
		log.Warn("jobs: finish", zap.Error(err))
		return
	}
	s.countFinished(j, f.State)
	if f.State == store.JobSucceeded {
		removeChunkFiles(s.opts.Dir, j.ID)
		log.Info("job succeeded", zap.Int64("bytes", f.OutputBytes), zap.Strings("warnings", f.Warnings))
	}
	if !f.WebhookDue.IsZero() {
		s.Wake()
	}
}

// renew extends the lease every third of its length; a lost lease
// cancels the run.
func (s *Service) renew(ctx context.Context, cancel context.CancelCauseFunc, id string) {
	t := time.NewTicker(s.opts.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_, err := s.store.RenewJobLease(ctx, id, s.opts.Owner, s.opts.Lease)
		if errors.Is(err, store.ErrLeaseLost) {
			cancel(errCancelled)
			return
		}
	}
}

// chunkPage is how many chunk records the worker reads at once.
const chunkPage = 32

// render renders every chunk of j not done yet, then joins them; it
// returns the finished file's size and the job's warnings.
func (s *Service) render(ctx context.Context, j *store.Job, log *zap.Logger) (joined, error) {
	spec, err := decodeSpec(j.Spec)
	if err != nil {
		return joined{}, problem.Wrap(problem.Internal, err, "the job's record cannot be read")
	}
	dir := jobDir(s.opts.Dir, j.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return joined{}, problem.Wrap(problem.Internal, err, "the job's folder cannot be made")
	}
	caller, err := s.caller(ctx, j)
	if err != nil {
		return joined{}, err
	}
	ctx = speech.WithCaller(ctx, caller)
	for from := 0; from < j.ChunksTotal; from += chunkPage {
		page, err := s.store.JobChunks(ctx, j.ID, from, chunkPage)
		if err != nil {
			return joined{}, s.leaseOr(ctx, err)
		}
		for i := range page {
			c := &page[i]
			if c.Done && chunkOnDisk(dir, c.Index) {
				continue
			}
			if err := s.renderChunk(ctx, j, spec, c, dir); err != nil {
				return joined{}, s.leaseOr(ctx, err)
			}
		}
	}
	return s.join(ctx, j, spec, dir)
}

// leaseOr returns err, or the cancellation when the lease was lost.
func (s *Service) leaseOr(ctx context.Context, err error) error {
	if errors.Is(err, store.ErrLeaseLost) || ctx.Err() != nil {
		return errCancelled
	}
	return err
}

// caller is the API key the job was made with, whose scope and budget
// every chunk is rendered under.
func (s *Service) caller(ctx context.Context, j *store.Job) (speech.Caller, error) {
	if j.KeyID == "" {
		return speech.Caller{}, nil
	}
	keys, err := s.store.ListKeys(ctx, j.OrgID)
	if err != nil {
		return speech.Caller{}, err
	}
	for _, k := range keys {
		if k.ID != j.KeyID {
			continue
		}
		if !k.Active() || k.Scope.Expired(s.now()) {
			return speech.Caller{}, problem.New(problem.Unauthorized, "the API key that made this job was revoked or has expired")
		}
		scope := k.Scope
		return speech.Caller{KeyID: k.ID, Scope: &scope}, nil
	}
	// A development key or one of gateway.yaml: no scope of its own.
	return speech.Caller{KeyID: j.KeyID}, nil
}

// renderChunk renders chunk c through the speech pipeline, retrying,
// writes its PCM (and timestamps) to disk and checkpoints it.
func (s *Service) renderChunk(ctx context.Context, j *store.Job, spec *Spec, c *store.JobChunk, dir string) error {
	sp := s.speaker()
	if sp == nil {
		return problem.New(problem.Unavailable, "no provider is configured")
	}
	v, err := spec.voice(c.Voice)
	if err != nil {
		return problem.Wrap(problem.Internal, err, "the job's record names a voice it lacks")
	}
	ep := speech.DeliverClip
	if spec.Captions {
		ep = speech.DeliverTimestamps
	}
	var out *speech.Spoken
	wait := s.opts.RetryBackoff
	for try := 0; ; try++ {
		start := s.now()
		out, err = sp.Speak(ctx, j.OrgID, v.request(c.Text, spec.Rate, spec.Captions), ep)
		s.recordRows(j, out, err, start)
		if err == nil || try >= s.opts.ChunkRetries || !retryable(err) || ctx.Err() != nil {
			break
		}
		if s.metrics != nil {
			s.metrics.ChunkRetries.Inc()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
	if err != nil {
		return err
	}
	res := out.Result
	defer res.Release()
	mt, perr := audio.ParseMediaType(res.MediaType)
	if perr != nil || mt.Format != audio.FormatPCM || mt.Rate != spec.Rate {
		return problem.New(problem.Internal, "chunk %d came as %q, not PCM at %d Hz", c.Index, res.MediaType, spec.Rate)
	}
	if err := writeChunk(dir, c.Index, res.Audio, res.Timestamps, spec.Captions); err != nil {
		return problem.Wrap(problem.Internal, err, "a chunk's audio cannot be written to disk")
	}
	done := *c
	done.Done = true
	done.AudioMS = int64(len(res.Audio)) * 1000 / int64(2*spec.Rate)
	done.Credits = int64(out.Row.CreditsUsed)
	done.Characters = int64(out.Row.CharCount)
	done.Served = out.VoiceTarget()
	done.Fallback = len(out.Attempts) > 0
	if err := s.store.CheckpointJobChunk(ctx, j.ID, s.opts.Owner, &done); err != nil {
		return err
	}
	if s.metrics != nil {
		s.metrics.ChunksRendered.Inc()
		if done.Fallback {
			s.metrics.ChunkFallbacks.Inc()
		}
	}
	return nil
}

// countFinished counts job j ended in state, and its time since it was
// made.
func (s *Service) countFinished(j *store.Job, state string) {
	if s.metrics == nil {
		return
	}
	s.metrics.Finished.WithLabelValues(state).Inc()
	s.metrics.Duration.WithLabelValues(state).Observe(s.now().Sub(j.CreatedAt).Seconds())
}

// retryable reports whether a chunk that failed with err may succeed if
// tried again: a provider or the store that failed, not a request that
// is wrong or not allowed.
func retryable(err error) bool {
	var pe *problem.Error
	if !errors.As(err, &pe) {
		return true
	}
	switch pe.Code {
	case problem.ProviderError, problem.ProviderUnavailable, problem.ProviderTimeout, problem.RateLimited,
		problem.Unavailable, problem.StorageUnavailable, problem.Internal, problem.BudgetUnavailable:
		return true
	}
	return false
}

// recordRows writes the request-log rows of one chunk's attempt: the
// rows of failed fallback targets, then the attempt's own, its credits
// settled with the budgets. The job's text is not in them (log rows
// never hold text).
func (s *Service) recordRows(j *store.Job, out *speech.Spoken, err error, start time.Time) {
	if out == nil {
		return
	}
	path := "/v1/audio/jobs/" + j.ID
	for _, row := range out.Attempts {
		row.RequestID, row.OrgID, row.KeyID, row.Path, row.TS = store.NewRequestID(), j.OrgID, j.KeyID, path, start.UTC()
		s.record(row)
	}
	row := out.Row
	row.RequestID, row.OrgID, row.KeyID, row.Path, row.TS = store.NewRequestID(), j.OrgID, j.KeyID, path, start.UTC()
	row.LatencyMS = s.now().Sub(start).Milliseconds()
	row.Status = 200
	if err != nil {
		pe := problem.From(err, "")
		row.Status, row.ErrorCode, row.ErrorDetail = pe.Status(), string(pe.Code), pe.Detail
		row.CreditsUsed, row.Cost = 0, 0
	} else if out.Result != nil {
		row.AudioMS = audio.Length(out.Result.Audio, out.Result.MediaType).Milliseconds()
	}
	if out.Charge != nil {
		out.Charge.SettleAmount(context.Background(), speech.Amount(&row))
	}
	s.record(row)
}

// Files. A job's folder holds c<index>.pcm (raw 16-bit PCM at the job's
// rate) and c<index>.json (its word timestamps) per chunk, then the
// finished file and captions; a chunk file is written to a temporary
// name, synced and renamed before the chunk is checkpointed, so a
// checkpointed chunk's file is whole.

func jobDir(root, id string) string { return filepath.Join(root, id) }

func chunkPath(dir string, i int, ext string) string {
	return filepath.Join(dir, fmt.Sprintf("c%06d.%s", i, ext))
}

func chunkOnDisk(dir string, i int) bool {
	_, err := os.Stat(chunkPath(dir, i, "pcm"))
	return err == nil
}

func writeChunk(dir string, i int, pcm []byte, ts []sdk.WordTimestamp, withTimestamps bool) error {
	if withTimestamps {
		b, err := json.Marshal(ts)
		if err != nil {
			return err
		}
		if err := writeSynced(chunkPath(dir, i, "json"), b); err != nil {
			return err
		}
	}
	return writeSynced(chunkPath(dir, i, "pcm"), pcm)
}

// writeSynced writes b to path whole or not at all.
func writeSynced(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func removeJobDir(root, id string) error {
	if id == "" {
		return nil
	}
	return os.RemoveAll(jobDir(root, id))
}

// removeChunkFiles removes a finished job's chunk files, keeping the
// finished file and captions.
func removeChunkFiles(root, id string) {
	for _, pat := range []string{"c*.pcm", "c*.json"} {
		files, _ := filepath.Glob(filepath.Join(jobDir(root, id), pat))
		for _, f := range files {
			_ = os.Remove(f)
		}
	}
}

package edge

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/jobs"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/resources"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
)

// Long-form jobs (gateway/jobs): POST /v1/audio/jobs answers 202 with the
// queued job; the worker of some instance renders it. The job's text is
// never logged: the access log and request-log rows name the route, not
// the body.

// jobRequestJSON is the body of POST /v1/audio/jobs.
type jobRequestJSON struct {
	Text            *string                 `json:"text"`
	MediaID         string                  `json:"mediaId"`
	TextFormat      string                  `json:"textFormat"`
	VoiceID         string                  `json:"voiceId"`
	Model           string                  `json:"model"`
	Voice           string                  `json:"voice"`
	ProviderOptions json.RawMessage         `json:"providerOptions"`
	Speed           *float64                `json:"speed"`
	Voices          map[string]jobVoiceJSON `json:"voices"`
	Output          outputField             `json:"output"`
	Captions        bool                    `json:"captions"`
	Webhook         *jobWebhookJSON         `json:"webhook"`
	Loudness        *loudnessJSON           `json:"loudness"`
}

type jobVoiceJSON struct {
	VoiceID         string          `json:"voiceId"`
	Model           string          `json:"model"`
	Voice           string          `json:"voice"`
	ProviderOptions json.RawMessage `json:"providerOptions"`
	Speed           *float64        `json:"speed"`
}

func (v jobVoiceJSON) domain() jobs.VoiceSpec {
	return jobs.VoiceSpec{VoiceID: v.VoiceID, Model: v.Model, Voice: v.Voice, ProviderOptions: v.ProviderOptions, Speed: v.Speed}
}

type jobWebhookJSON struct {
	URL    string `json:"url"`
	Secret string `json:"secret"`
}

// jobJSON is the Job resource.
type jobJSON struct {
	ID          string `json:"id"`
	State       string `json:"state"`
	ChunksDone  int    `json:"chunks_done"`
	ChunksTotal int    `json:"chunks_total"`
	Characters  int64  `json:"characters"`
	Credits     int64  `json:"credits"`
	// DurationMS is the audio rendered so far (the file's length once
	// succeeded, pauses apart).
	DurationMS int64 `json:"duration_ms"`
	// Fallbacks counts the chunks a fallback voice rendered.
	Fallbacks int `json:"fallbacks"`
	// EstimatedSecondsLeft is null until a chunk of a running job is done.
	EstimatedSecondsLeft *float64         `json:"estimated_seconds_left"`
	Format               string           `json:"format"`
	Captions             bool             `json:"captions"`
	Chapters             []string         `json:"chapters"`
	Error                *jobErrorJSON    `json:"error"`
	Webhook              *jobWebhookOut   `json:"webhook"`
	AudioURL             string           `json:"audio_url,omitempty"`
	Bytes                int64            `json:"bytes,omitempty"`
	CreatedAt            time.Time        `json:"created_at"`
	StartedAt            *time.Time       `json:"started_at"`
	FinishedAt           *time.Time       `json:"finished_at"`
	Leases               int              `json:"leases"`
	Loudness             *loudnessJSON    `json:"loudness,omitempty"`
	Deliveries           []jobDeliveryOut `json:"-"`
	// Warnings say where the finished file is not what the job asked
	// for (a loudness target out of reach): [] when none, as a speech
	// answer's warnings are.
	Warnings []string `json:"warnings"`
}

type jobErrorJSON struct {
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// jobWebhookOut is a job's webhook as shown: never its secret.
type jobWebhookOut struct {
	URL        string           `json:"url"`
	Deliveries []jobDeliveryOut `json:"deliveries"`
}

type jobDeliveryOut struct {
	At     time.Time `json:"at"`
	Event  string    `json:"event"`
	Status int       `json:"status"`
	Error  string    `json:"error,omitempty"`
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func jobOut(j *store.Job) jobJSON {
	out := jobJSON{ID: j.ID, State: j.State, ChunksDone: j.ChunksDone, ChunksTotal: j.ChunksTotal, Characters: j.Characters,
		Credits: j.Credits, DurationMS: j.AudioMS, Fallbacks: j.Fallbacks, CreatedAt: j.CreatedAt, StartedAt: optTime(j.StartedAt),
		FinishedAt: optTime(j.FinishedAt), Leases: j.Leases, Chapters: []string{}, Warnings: nonNil(j.Warnings)}
	if spec, err := jobs.SpecOf(j); err == nil {
		out.Format, out.Captions = spec.Format, spec.Captions
		if l := spec.Loudness; l != nil {
			out.Loudness = &loudnessJSON{Integrated: &l.Integrated, TruePeak: &l.TruePeak}
		}
		for _, c := range spec.Chapters {
			out.Chapters = append(out.Chapters, c.Title)
		}
		if spec.Webhook != nil {
			out.Webhook = &jobWebhookOut{URL: spec.Webhook.URL, Deliveries: []jobDeliveryOut{}}
			for _, d := range j.Deliveries {
				out.Webhook.Deliveries = append(out.Webhook.Deliveries, jobDeliveryOut(d))
			}
		}
	}
	if j.ErrorCode != "" {
		out.Error = &jobErrorJSON{Code: j.ErrorCode, Detail: j.ErrorDetail}
	}
	if j.State == store.JobSucceeded {
		out.AudioURL, out.Bytes = "/v1/audio/jobs/"+j.ID+"/audio", j.OutputBytes
	}
	if j.State == store.JobRunning && j.ChunksDone > 0 && !j.StartedAt.IsZero() {
		// The time per chunk so far, times the chunks left.
		per := j.UpdatedAt.Sub(j.StartedAt).Seconds() / float64(j.ChunksDone)
		left := max(per*float64(j.ChunksTotal-j.ChunksDone), 0)
		left = float64(int64(left*10+0.5)) / 10
		out.EstimatedSecondsLeft = &left
	}
	return out
}

// jobProblem maps the store's answers about a job to the API's.
func jobProblem(id string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return problem.New(problem.NotFound, "no job %s in this organization", id)
	}
	return err
}

func (s *Server) createJob(ctx *fasthttp.RequestCtx, c *exchange) error {
	nj, err := s.decodeJob(ctx, c)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(c.ctx, s.opts.RequestTimeout)
	defer cancel()
	j, err := s.jobs.Create(cctx, c.p.OrgID, c.p.KeyID, jobSpeaker(c), nj)
	if err != nil {
		return err
	}
	ctx.Response.Header.Set(fasthttp.HeaderLocation, "/v1/audio/jobs/"+j.ID)
	return s.writeJSON(ctx, fasthttp.StatusAccepted, envelope[jobJSON]{jobOut(j)})
}

// jobSpeaker is the speech service a job is checked and quoted with.
func jobSpeaker(c *exchange) jobs.Speaker {
	if c.live.Speech != nil {
		return c.live.Speech
	}
	return nil
}

// jobQuoteJSON is the answer of POST /v1/audio/jobs/quote: a speech
// quote's, the calls grouped per provider and model (count: how many),
// with the job's number of chunks.
type jobQuoteJSON struct {
	Cost     json.Number        `json:"cost"`
	Currency string             `json:"currency"`
	Chunks   int                `json:"chunks"`
	Calls    []jobQuoteCallJSON `json:"calls"`
}

type jobQuoteCallJSON struct {
	quoteCallJSON
	Count int `json:"count"`
}

// quoteJob serves POST /v1/audio/jobs/quote: the body of POST
// /v1/audio/jobs, priced chunk by chunk without making the job.
func (s *Server) quoteJob(ctx *fasthttp.RequestCtx, c *exchange) error {
	nj, err := s.decodeJob(ctx, c)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(c.ctx, s.opts.RequestTimeout)
	defer cancel()
	q, err := s.jobs.Quote(cctx, c.p.OrgID, jobSpeaker(c), nj)
	if err != nil {
		return err
	}
	out := jobQuoteJSON{Cost: money(q.Cost), Currency: q.Currency, Chunks: q.Chunks, Calls: make([]jobQuoteCallJSON, len(q.Calls))}
	for i, call := range q.Calls {
		sq := quoteOut(&speech.Quoted{Calls: []speech.Call{call.Call}})
		out.Calls[i] = jobQuoteCallJSON{quoteCallJSON: sq.Calls[0], Count: call.Count}
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, envelope[jobQuoteJSON]{out})
}

// decodeJob reads the body of POST /v1/audio/jobs (and its quote).
func (s *Server) decodeJob(ctx *fasthttp.RequestCtx, c *exchange) (*jobs.NewJob, error) {
	var body jobRequestJSON
	if err := s.decodeJSON(ctx, &body); err != nil {
		return nil, err
	}
	out, err := decodeOutput(body.Output)
	if err != nil {
		return nil, err
	}
	nj := &jobs.NewJob{Spec: jobs.Spec{Captions: body.Captions,
		Voice: jobVoiceJSON{VoiceID: body.VoiceID, Model: body.Model, Voice: body.Voice, ProviderOptions: body.ProviderOptions, Speed: body.Speed}.domain()}}
	if out != nil {
		nj.Spec.Format = out.Format
		if out.SampleRate != nil {
			nj.Spec.Rate = *out.SampleRate
		}
		if out.Bitrate != nil {
			nj.Spec.Bitrate = *out.Bitrate
		}
	}
	if len(body.Voices) > 0 {
		nj.Spec.Voices = make(map[string]jobs.VoiceSpec, len(body.Voices))
		for k, v := range body.Voices {
			nj.Spec.Voices[k] = v.domain()
		}
	}
	nj.Loudness = body.Loudness.domain()
	if body.Webhook != nil {
		nj.Spec.Webhook = &jobs.Webhook{URL: body.Webhook.URL, Secret: body.Webhook.Secret}
	}
	switch body.TextFormat {
	case "", "plain":
	case "markdown":
		nj.Markdown = true
	default:
		return nil, problem.Validation(problem.Field(`must be "plain" or "markdown"`, "textFormat"))
	}
	switch {
	case body.Text != nil && body.MediaID != "":
		return nil, problem.Validation(problem.Field("give text or mediaId, not both", "mediaId"))
	case body.MediaID != "":
		text, md, err := s.jobText(c, body.MediaID)
		if err != nil {
			return nil, err
		}
		nj.Text, nj.Markdown = text, nj.Markdown || md
	case body.Text != nil:
		nj.Text = *body.Text
	}
	return nj, nil
}

// jobText reads a job's text from an uploaded text/plain or
// text/markdown media object.
func (s *Server) jobText(c *exchange, id string) (string, bool, error) {
	m, err := c.live.Resources.Media(c.ctx, c.p.OrgID, id)
	if err != nil {
		return "", false, err
	}
	if m.MediaType != resources.TextPlain && m.MediaType != resources.TextMarkdown {
		return "", false, problem.Validation(problem.Field("must be a text/plain or text/markdown upload, not "+m.MediaType, "mediaId"))
	}
	data, err := s.jobs.MediaData(c.ctx, c.p.OrgID, id)
	if err != nil {
		return "", false, jobProblem(id, err)
	}
	return string(data), m.MediaType == resources.TextMarkdown, nil
}

func (s *Server) listJobs(ctx *fasthttp.RequestCtx, c *exchange) error {
	q, limit, err := pageQuery(ctx)
	if err != nil {
		return err
	}
	return servePage(s, ctx, c, q, limit, "jobs", func(after store.Position) ([]store.Job, store.Position, bool, error) {
		return s.jobs.List(c.ctx, c.p.OrgID, limit, after)
	}, jobOut)
}

func (s *Server) getJob(ctx *fasthttp.RequestCtx, c *exchange) error {
	j, err := s.jobs.Get(c.ctx, c.p.OrgID, pathID(ctx))
	if err != nil {
		return jobProblem(pathID(ctx), err)
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, envelope[jobJSON]{jobOut(j)})
}

func (s *Server) cancelJob(ctx *fasthttp.RequestCtx, c *exchange) error {
	j, err := s.jobs.Cancel(c.ctx, c.p.OrgID, pathID(ctx))
	if err != nil {
		return jobProblem(pathID(ctx), err)
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, envelope[jobJSON]{jobOut(j)})
}

// deleteJob deletes a finished job, its record and files: 204. A queued
// or running job is 409 (cancel it first), another organization's 404.
func (s *Server) deleteJob(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	id := pathID(ctx)
	if _, err := s.jobs.Delete(c.ctx, c.p.OrgID, id); err != nil {
		if errors.Is(err, store.ErrJobLive) {
			return problem.New(problem.Conflict, "job %s is queued or running: cancel it first (POST /v1/audio/jobs/%s/cancel), then delete it", id, id)
		}
		return jobProblem(id, err)
	}
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

// finishedJob returns org's job id when it succeeded, else the problem.
func (s *Server) finishedJob(c *exchange, id string) (*store.Job, *jobs.Spec, error) {
	j, err := s.jobs.Get(c.ctx, c.p.OrgID, id)
	if err != nil {
		return nil, nil, jobProblem(id, err)
	}
	if j.State != store.JobSucceeded {
		return nil, nil, problem.New(problem.Conflict, "job %s is %s: its file is there once it has succeeded", id, j.State)
	}
	spec, err := jobs.SpecOf(j)
	if err != nil {
		return nil, nil, err
	}
	return j, spec, nil
}

// jobAudio serves a finished job's file, with Range.
func (s *Server) jobAudio(ctx *fasthttp.RequestCtx, c *exchange) error {
	j, spec, err := s.finishedJob(c, pathID(ctx))
	if err != nil {
		return err
	}
	return s.serveJobFile(ctx, jobs.OutputPath(s.jobs.Options().Dir, j.ID, spec.Format), jobs.MediaType(spec.Format))
}

// jobCaptions serves a finished job's captions: ?format=vtt (default) or
// srt.
func (s *Server) jobCaptions(ctx *fasthttp.RequestCtx, c *exchange) error {
	q, err := parseQuery(ctx, "format")
	if err != nil {
		return err
	}
	format := q["format"]
	switch format {
	case "":
		format = speech.CaptionsVTT
	case speech.CaptionsVTT, speech.CaptionsSRT:
	default:
		return problem.Validation(problem.Field(`must be "vtt" or "srt"`, "format"))
	}
	j, spec, err := s.finishedJob(c, pathID(ctx))
	if err != nil {
		return err
	}
	if !spec.Captions {
		return problem.New(problem.NotFound, "job %s was made without captions (captions: true asks for them)", j.ID)
	}
	mt := "text/vtt; charset=utf-8"
	if format == speech.CaptionsSRT {
		mt = "application/x-subrip; charset=utf-8"
	}
	return s.serveJobFile(ctx, jobs.CaptionsPath(s.jobs.Options().Dir, j.ID, format), mt)
}

// serveJobFile sends a file of a finished job, the byte range asked for
// when Range names one (206), else whole. Several ranges are answered
// with the whole file, as RFC 9110 allows.
func (s *Server) serveJobFile(ctx *fasthttp.RequestCtx, path, mediaType string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return problem.New(problem.NotFound, "the file is not on this instance: instances that share a store share jobs.dir to serve each other's files")
	}
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	size := int(fi.Size())
	ctx.Response.Header.SetContentType(mediaType)
	ctx.Response.Header.Set(fasthttp.HeaderAcceptRanges, "bytes")
	if r := ctx.Request.Header.Peek(fasthttp.HeaderRange); len(r) > 0 {
		start, end, err := fasthttp.ParseByteRange(r, size)
		if err != nil {
			f.Close()
			ctx.Response.Header.Set(fasthttp.HeaderContentRange, "bytes */"+strconv.Itoa(size))
			return problem.New(problem.RangeNotSatisfiable, "the range %q is not within the file's %d bytes", r, size)
		}
		ctx.Response.Header.Set(fasthttp.HeaderContentRange, "bytes "+strconv.Itoa(start)+"-"+strconv.Itoa(end)+"/"+strconv.Itoa(size))
		ctx.SetStatusCode(fasthttp.StatusPartialContent)
		ctx.SetBodyStream(readCloser{io.NewSectionReader(f, int64(start), int64(end-start+1)), f}, end-start+1)
		return nil
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetBodyStream(f, size)
	return nil
}

// readCloser reads from a section of a file and closes the file.
type readCloser struct {
	io.Reader
	c io.Closer
}

func (r readCloser) Close() error { return r.c.Close() }

// jobProvenance returns the signed provenance record of the caller's
// finished job id (GET /v1/provenance/{jobId}).
func (s *Server) jobProvenance(c *exchange, id string) (string, error) {
	if s.jobs == nil {
		return "", store.ErrNotFound
	}
	return s.jobs.Provenance(c.ctx, c.p.OrgID, id)
}

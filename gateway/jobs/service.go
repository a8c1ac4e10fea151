package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
)

// Store is what the jobs package reads and writes: the jobs, and the API
// keys whose scope a job's chunks are rendered under. Any store backend
// satisfies it.
type Store interface {
	store.JobStore
	ListKeys(ctx context.Context, orgID string) ([]store.APIKey, error)
	MediaData(ctx context.Context, orgID, id string) ([]byte, error)
}

// Speaker renders a speech request: the speech service, whose pipeline
// (budget, quota, moderation, fallbacks, log rows) every chunk goes
// through like any clip.
type Speaker interface {
	Speak(ctx context.Context, org string, req *speech.Request, ep speech.Delivery) (*speech.Spoken, error)
	CheckVoice(ctx context.Context, org string, req *speech.Request) (int, error)
	// Quote prices a request without running it (POST
	// /v1/audio/jobs/quote prices each chunk with it).
	Quote(ctx context.Context, org string, req *speech.Request, ep speech.Delivery) (*speech.Quoted, error)
}

// Formats are the formats a job's file may have: those the gateway
// encodes as a stream (the file is encoded once, from the joined PCM, a
// piece at a time) and that hold hours of audio (not raw PCM or G.711).
var Formats = []string{audio.FormatMP3, audio.FormatOpus, audio.FormatWAV}

// NewJob is a job as POST /v1/audio/jobs asks for it.
type NewJob struct {
	// Text is what to say; Markdown reads its headings as chapters.
	Text     string
	Markdown bool
	Spec     Spec
	// Loudness is the request's loudness object (nil: none); a valid one
	// becomes Spec.Loudness.
	Loudness *audio.LoudnessParams
}

// Create checks nj for org, cuts its text into chunks within every one of
// its voices' limits, and stores the job, queued. keyID is the API key
// that asked (its scope and budget apply to every chunk). Failures are
// *problem.Error values.
func (s *Service) Create(ctx context.Context, org, keyID string, sp Speaker, nj *NewJob) (*store.Job, error) {
	chunks, err := s.plan(ctx, org, sp, nj)
	if err != nil {
		return nil, err
	}
	spec, err := json.Marshal(nj.Spec)
	if err != nil {
		return nil, err
	}
	j := &store.Job{ID: uuid.NewString(), OrgID: org, KeyID: keyID, Spec: spec, Characters: int64(utf8.RuneCountInString(nj.Text))}
	if err := s.store.CreateJob(ctx, j, chunks); err != nil {
		return nil, fmt.Errorf("create job: %w", err)
	}
	s.Wake()
	return j, nil
}

// plan checks nj for org and cuts its text into chunks within every one
// of its voices' limits (setting nj.Spec.Chapters): what Create stores
// and Quote prices.
func (s *Service) plan(ctx context.Context, org string, sp Speaker, nj *NewJob) ([]store.JobChunk, error) {
	if err := s.validate(nj); err != nil {
		return nil, err
	}
	if sp == nil {
		return nil, problem.New(problem.Unavailable, "no provider is configured")
	}
	limit := s.opts.ChunkChars
	labels := map[string]bool{}
	check := func(v VoiceSpec, path ...string) error {
		n, err := sp.CheckVoice(ctx, org, v.request("", nj.Spec.Rate, false))
		if err != nil {
			var pe *problem.Error
			if errors.As(err, &pe) {
				for i := range pe.Validation {
					pe.Validation[i].Path = append(append([]string{}, path...), pe.Validation[i].Path...)
				}
			}
			return err
		}
		limit = min(limit, n)
		return nil
	}
	if err := check(nj.Spec.Voice); err != nil {
		return nil, err
	}
	for label, v := range nj.Spec.Voices {
		if err := check(v, "voices", label); err != nil {
			return nil, err
		}
		labels[label] = true
	}
	chapters, chunks := Split(nj.Text, SplitOptions{Markdown: nj.Markdown, Limit: limit, Labels: labels})
	if len(chunks) == 0 {
		return nil, problem.Validation(problem.Field("has nothing to say", "text"))
	}
	nj.Spec.Chapters = chapters
	return chunks, nil
}

// Quote is what a job will cost before it is made (POST
// /v1/audio/jobs/quote).
type Quote struct {
	// Cost is the calls' sum, in nano-units of Currency.
	Cost     int64
	Currency string
	// Chunks is how many chunks the job's text is cut into.
	Chunks int
	// Calls are the provider calls of the chunks grouped per provider
	// and model, in the order the job first makes them: units and cost
	// summed, Count the calls.
	Calls []QuoteCall
}

// QuoteCall is the calls to one provider and model a job would make.
type QuoteCall struct {
	speech.Call
	Count int
}

// Quote prices nj for org without making it: its text is cut into the
// chunks Create would store, and each chunk is priced as the worker will
// render it (Speaker.Quote: the voice's first choice, as a speech quote
// does), with nothing stored, reserved or rendered. The sum is what the
// job's chunks reserve from budgets in money, one chunk at a time.
func (s *Service) Quote(ctx context.Context, org string, sp Speaker, nj *NewJob) (*Quote, error) {
	chunks, err := s.plan(ctx, org, sp, nj)
	if err != nil {
		return nil, err
	}
	ep := speech.DeliverClip
	if nj.Spec.Captions {
		ep = speech.DeliverTimestamps
	}
	q := &Quote{Chunks: len(chunks), Calls: []QuoteCall{}}
	at := map[string]int{}
	for i := range chunks {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		v, err := nj.Spec.voice(chunks[i].Voice)
		if err != nil {
			return nil, problem.Wrap(problem.Internal, err, "a chunk names a voice the job lacks")
		}
		cq, err := sp.Quote(ctx, org, v.request(chunks[i].Text, nj.Spec.Rate, nj.Spec.Captions), ep)
		if err != nil {
			return nil, err
		}
		q.Currency = cq.Currency
		for _, c := range cq.Calls {
			k := c.Provider + "/" + c.Model
			n, ok := at[k]
			if !ok {
				n, at[k] = len(q.Calls), len(q.Calls)
				q.Calls = append(q.Calls, QuoteCall{Call: speech.Call{Provider: c.Provider, Model: c.Model, Prices: c.Prices}})
			}
			g := &q.Calls[n]
			g.Units.Add(c.Units)
			g.Cost += c.Cost
			g.Count++
			q.Cost += c.Cost
		}
	}
	return q, nil
}

// validate checks what needs no catalog: text, format, voices' shape,
// webhook.
func (s *Service) validate(nj *NewJob) error {
	var fe []problem.FieldError
	n := utf8.RuneCountInString(nj.Text)
	switch {
	case strings.TrimSpace(nj.Text) == "":
		fe = append(fe, problem.Field("is required and must not be blank (or give mediaId)", "text"))
	case !utf8.ValidString(nj.Text) || !store.ValidText(nj.Text):
		fe = append(fe, problem.Field("must be valid UTF-8 without U+0000", "text"))
	case n > s.opts.MaxChars:
		return problem.New(problem.TextTooLong, "text has %d characters; a job may have at most %d (limits.max_job_chars)", n, s.opts.MaxChars)
	}
	fe = append(fe, checkVoice(nj.Spec.Voice)...)
	for label, v := range nj.Spec.Voices {
		if strings.TrimSpace(label) == "" || strings.ContainsAny(label, ":\n") || utf8.RuneCountInString(label) > 100 || !store.ValidText(label) {
			fe = append(fe, problem.Field("a label is 1 to 100 characters, without ':' or a line break", "voices", label))
		}
		fe = append(fe, checkVoice(v, "voices", label)...)
	}
	if len(nj.Spec.Voices) > 100 {
		fe = append(fe, problem.Field("at most 100 labelled voices", "voices"))
	}
	switch {
	case nj.Spec.Format == "":
		nj.Spec.Format = audio.FormatMP3
	case !contains(Formats, nj.Spec.Format):
		fe = append(fe, problem.Field(fmt.Sprintf("must be one of %s", strings.Join(Formats, ", ")), "output", "format"))
	}
	if nj.Spec.Rate == 0 {
		nj.Spec.Rate = s.opts.Rate
	}
	if nj.Spec.Rate < 8000 || nj.Spec.Rate > 48000 {
		fe = append(fe, problem.Field("must be from 8000 to 48000 (the rate the chunks are rendered and joined at)", "output", "sampleRate"))
	}
	if len(fe) == 0 && !bitrateOK(nj.Spec.Format, nj.Spec.Bitrate, nj.Spec.Rate) {
		fe = append(fe, problem.Field("this bitrate is not one the format takes", "output", "bitrate"))
	}
	if l := nj.Loudness; l != nil {
		for _, e := range l.Validate("loudness") {
			fe = append(fe, problem.Field(e.Message, e.Path...))
		}
		if len(fe) == 0 {
			t := l.Target()
			nj.Spec.Loudness = &Loudness{Integrated: t.Integrated, TruePeak: t.TruePeak}
		}
	}
	if w := nj.Spec.Webhook; w != nil {
		if msg := s.checkWebhookURL(w.URL); msg != "" {
			fe = append(fe, problem.Field(msg, "webhook", "url"))
		}
		if l := len(w.Secret); l < 16 || l > 256 || !store.ValidText(w.Secret) {
			fe = append(fe, problem.Field("must be 16 to 256 characters (the key the signature is made with)", "webhook", "secret"))
		}
	}
	if len(fe) > 0 {
		return problem.Validation(fe...)
	}
	return nil
}

// bitrateOK reports whether the file's encoder takes kbps (0: its
// default) in format from PCM at rate. An MP3 bitrate must be one of some
// MP3 sample rate's (checked first: Output.Resolve assumes one).
func bitrateOK(format string, kbps, rate int) bool {
	if kbps == 0 {
		return true
	}
	if format == audio.FormatMP3 {
		found := false
		for _, r := range audio.MP3SampleRates() {
			found = found || slices.Contains(audio.MP3Bitrates(r), kbps)
		}
		if !found {
			return false
		}
	}
	_, err := (audio.Output{Format: format, Bitrate: kbps}).Resolve(rate)
	return err == nil
}

func checkVoice(v VoiceSpec, path ...string) []problem.FieldError {
	at := func(f string) []string { return append(append([]string{}, path...), f) }
	switch {
	case v.VoiceID != "" && (v.Model != "" || v.Voice != ""):
		return []problem.FieldError{problem.Field("give either voiceId or model and voice, not both", at("voiceId")...)}
	case v.VoiceID == "" && v.Model == "" && v.Voice == "":
		return []problem.FieldError{problem.Field("give voiceId, or model and voice", at("voiceId")...)}
	case v.VoiceID == "" && (v.Model == "" || v.Voice == ""):
		return []problem.FieldError{problem.Field("model and voice go together", at("model")...)}
	}
	return nil
}

// checkWebhookURL returns why u cannot be a webhook target, or "".
// Addresses are checked again when a delivery connects (see dialGuard):
// a name may resolve differently then.
func (s *Service) checkWebhookURL(u string) string {
	p, err := url.Parse(u)
	switch {
	case err != nil || p.Host == "" || (p.Scheme != "https" && p.Scheme != "http"):
		return "must be an absolute http or https URL"
	case p.User != nil:
		return "must not hold credentials"
	case len(u) > 2048:
		return "must be at most 2048 characters"
	case p.Scheme == "http" && !s.opts.WebhookAllowHTTP:
		return "must be https (jobs.webhook_allow_http allows http)"
	}
	if msg := s.guard.checkHost(p.Hostname()); msg != "" {
		return msg
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Get returns org's job id (store.ErrNotFound for another
// organization's).
func (s *Service) Get(ctx context.Context, org, id string) (*store.Job, error) {
	return s.store.GetJob(ctx, org, id)
}

// List pages org's jobs, newest first.
func (s *Service) List(ctx context.Context, org string, limit int, after store.Position) ([]store.Job, store.Position, bool, error) {
	return s.store.ListJobs(ctx, org, limit, after)
}

// Cancel cancels org's job id; its worker stops at its next lease
// renewal or checkpoint and removes the job's files.
//
// The files are removed here when no worker holds the job: it had not
// started, or its worker died (its lease had run out).
func (s *Service) Cancel(ctx context.Context, org, id string) (*store.Job, error) {
	before, err := s.store.GetJob(ctx, org, id)
	if err != nil {
		return nil, err
	}
	j, err := s.store.CancelJob(ctx, org, id)
	if err == nil && j.State == store.JobCancelled && !store.JobTerminal(before.State) && before.LeaseUntil.Before(s.now()) {
		_ = removeJobDir(s.opts.Dir, j.ID)
	}
	return j, err
}

// MediaData returns the bytes of org's media id (a job's text upload).
func (s *Service) MediaData(ctx context.Context, org, id string) ([]byte, error) {
	return s.store.MediaData(ctx, org, id)
}

// SpecOf decodes j's spec.
func SpecOf(j *store.Job) (*Spec, error) { return decodeSpec(j.Spec) }

func pcmOutput(rate int) *audio.OutputParams {
	return &audio.OutputParams{Format: audio.FormatPCM, SampleRate: &rate}
}

package jobs

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/testenv"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// jobsConfig is a gateway with eSpeak and a quick jobs worker: short
// leases and polls, webhooks to loopback allowed (the test's receiver).
const jobsConfig = `
server:
  listen: 127.0.0.1:0
  max_body_bytes: 4000000
storage:
  path: %DIR%/voxgate.db
  log_batch_size: 64
plugins:
  dir: %BIN%/plugins
providers:
  espeak: {plugin: voxgate-espeak, managed: true, instances: 2, credits_per_1k_chars: 2}
limits:
  max_job_chars: 400000
jobs:
  per_instance: 2
  per_org: 2
  lease: 3s
  poll: 100ms
  retry_backoff: 100ms
  webhook_backoff: 200ms
  webhook_allow_private: true
  webhook_allow_http: true
orgs:
  acme:
    providers: {espeak: {enabled: true}}
  globex:
    providers: {espeak: {enabled: true}}
`

// job is the Job resource as the tests read it.
type job struct {
	ID          string   `json:"id"`
	State       string   `json:"state"`
	ChunksDone  int      `json:"chunks_done"`
	ChunksTotal int      `json:"chunks_total"`
	Characters  int      `json:"characters"`
	Credits     int      `json:"credits"`
	DurationMS  int64    `json:"duration_ms"`
	Fallbacks   int      `json:"fallbacks"`
	Estimated   *float64 `json:"estimated_seconds_left"`
	Chapters    []string `json:"chapters"`
	Warnings    []string `json:"warnings"`
	Leases      int      `json:"leases"`
	Loudness    *struct {
		Integrated *float64 `json:"integrated"`
		TruePeak   *float64 `json:"truePeak"`
	} `json:"loudness"`
	AudioURL string `json:"audio_url"`
	Bytes    int64  `json:"bytes"`
	Error    *struct {
		Code   string `json:"code"`
		Detail string `json:"detail"`
	} `json:"error"`
	Webhook *struct {
		URL        string `json:"url"`
		Deliveries []struct {
			Event  string `json:"event"`
			Status int    `json:"status"`
			Error  string `json:"error"`
		} `json:"deliveries"`
	} `json:"webhook"`
}

func decodeJob(t *testing.T, r *harness.Response, status int) job {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	var env struct{ Data job }
	r.JSON(t, &env)
	return env.Data
}

// book is a Markdown text of about n characters in chapters, each
// chapter's paragraphs made of LongText's sentences.
func book(n, chapters int) (string, []string) {
	var b strings.Builder
	var titles []string
	per := n / chapters
	for c := range chapters {
		title := fmt.Sprintf("Chapter %d", c+1)
		titles = append(titles, title)
		fmt.Fprintf(&b, "# %s\n\n", title)
		body := harness.LongText(per - 20)
		words := strings.Fields(body)
		for i := 0; i < len(words); i += 60 { // paragraphs of 60 words
			b.WriteString(strings.Join(words[i:min(i+60, len(words))], " "))
			b.WriteString("\n\n")
		}
	}
	return b.String(), titles
}

// waitJob polls job id until done says so (or a few minutes pass).
func waitJob(t *testing.T, get func() job, done func(job) bool) job {
	t.Helper()
	deadline := time.Now().Add(6 * time.Minute)
	for {
		j := get()
		if done(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s (%d/%d chunks)", j.ID, j.State, j.ChunksDone, j.ChunksTotal)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func finished(j job) bool { return j.State != "queued" && j.State != "running" }

// probe is what ffprobe says of a file: its duration and chapters.
type probe struct {
	Format struct {
		Duration string `json:"duration"`
	} `json:"format"`
	Streams []struct {
		Codec      string `json:"codec_name"`
		SampleRate string `json:"sample_rate"`
	} `json:"streams"`
	Chapters []struct {
		Start string `json:"start_time"`
		End   string `json:"end_time"`
		Tags  struct {
			Title string `json:"title"`
		} `json:"tags"`
	} `json:"chapters"`
}

func ffprobe(t *testing.T, data []byte, ext string) probe {
	t.Helper()
	bin := testenv.NeedTool(t, "ffprobe")
	path := filepath.Join(t.TempDir(), "out."+ext)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-v", "error", "-show_format", "-show_streams", "-show_chapters", "-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	var p probe
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func seconds(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// TestBookOnESpeak renders a 300,000-character Markdown book of twelve
// chapters on eSpeak into one MP3 with captions, and checks it with
// ffprobe: its length is the chunks' audio plus the pauses between them,
// and it has the chapters, titled and in order. The captions end with
// the audio; a Range request gets its bytes; the text is in no log line.
func TestBookOnESpeak(t *testing.T) {
	t.Parallel()
	tg := startBuilt(t)
	text, titles := book(300_000, 12)
	start := time.Now()
	r := tg.Do("POST", "/v1/audio/jobs", "acme", map[string]any{
		"text": text, "textFormat": "markdown", "model": "espeak/espeak-ng", "voice": "en", "speed": 2.5,
		"output": map[string]any{"format": "mp3", "sampleRate": 22050}, "captions": true,
	})
	j := decodeJob(t, r, 202)
	if j.State != "queued" || j.ChunksTotal < 60 || j.Characters < 290_000 || r.Header.Get("Location") != "/v1/audio/jobs/"+j.ID {
		t.Fatalf("created %+v (Location %q)", j, r.Header.Get("Location"))
	}
	if strings.Join(j.Chapters, "|") != strings.Join(titles, "|") {
		t.Errorf("chapters %q, want %q", j.Chapters, titles)
	}
	sawEstimate := false
	j = waitJob(t, func() job { return decodeJob(t, tg.Do("GET", "/v1/audio/jobs/"+j.ID, "acme", nil), 200) }, func(j job) bool {
		sawEstimate = sawEstimate || j.Estimated != nil
		return finished(j)
	})
	t.Logf("%d characters in %d chunks: %s", j.Characters, j.ChunksTotal, time.Since(start).Round(time.Millisecond))
	if j.State != "succeeded" || j.ChunksDone != j.ChunksTotal || j.Credits == 0 || j.Leases != 1 || j.AudioURL == "" {
		t.Fatalf("finished %+v", j)
	}
	if !sawEstimate {
		t.Error("no estimated_seconds_left while the job ran")
	}
	audio := tg.Do("GET", j.AudioURL, "acme", nil)
	if audio.Status != 200 || audio.Header.Get("Content-Type") != "audio/mpeg" || int64(len(audio.Body)) != j.Bytes {
		t.Fatalf("audio: %d %s, %d bytes (job says %d)", audio.Status, audio.Header.Get("Content-Type"), len(audio.Body), j.Bytes)
	}
	p := ffprobe(t, audio.Body, "mp3")
	pauses := float64(j.ChunksTotal-1)*0.25 + float64(len(titles)-1)*0.75
	want := float64(j.DurationMS)/1000 + pauses
	if got := seconds(p.Format.Duration); math.Abs(got-want) > 0.01*want+0.5 {
		t.Errorf("ffprobe: %.1f s, want %.1f s (the chunks' audio and the pauses)", got, want)
	}
	if len(p.Streams) != 1 || p.Streams[0].Codec != "mp3" || p.Streams[0].SampleRate != "22050" {
		t.Errorf("streams %+v", p.Streams)
	}
	if len(p.Chapters) != len(titles) {
		t.Fatalf("ffprobe found %d chapters, want %d", len(p.Chapters), len(titles))
	}
	for i, c := range p.Chapters {
		if c.Tags.Title != titles[i] {
			t.Errorf("chapter %d titled %q, want %q", i, c.Tags.Title, titles[i])
		}
		if i > 0 && math.Abs(seconds(c.Start)-seconds(p.Chapters[i-1].End)) > 0.002 {
			t.Errorf("chapter %d starts at %s, the one before ends at %s", i, c.Start, p.Chapters[i-1].End)
		}
	}
	if first, last := seconds(p.Chapters[0].Start), seconds(p.Chapters[len(titles)-1].End); first != 0 || math.Abs(last-want) > 0.5 {
		t.Errorf("chapters span %.3f to %.3f s, want 0 to %.1f", first, last, want)
	}

	// A range of the file.
	part := tg.Do("GET", j.AudioURL, "acme", nil, "Range", "bytes=1000-1999")
	if part.Status != 206 || !bytes.Equal(part.Body, audio.Body[1000:2000]) || part.Header.Get("Content-Range") != fmt.Sprintf("bytes 1000-1999/%d", len(audio.Body)) {
		t.Errorf("range: %d, %d bytes, Content-Range %q", part.Status, len(part.Body), part.Header.Get("Content-Range"))
	}
	tg.Do("GET", j.AudioURL, "acme", nil, "Range", fmt.Sprintf("bytes=%d-", len(audio.Body)+10)).Problem(t, 416, "range_not_satisfiable")

	// Captions, aligned to the whole file: the last cue ends with the
	// last words, in the last seconds of the file.
	vtt := tg.Do("GET", "/v1/audio/jobs/"+j.ID+"/captions?format=vtt", "acme", nil)
	srt := tg.Do("GET", "/v1/audio/jobs/"+j.ID+"/captions?format=srt", "acme", nil)
	if vtt.Status != 200 || !strings.HasPrefix(string(vtt.Body), "WEBVTT\n\n1\n00:00:00") || srt.Status != 200 || !strings.HasPrefix(string(srt.Body), "1\n00:00:00,") {
		t.Fatalf("captions: %d %.80q / %d %.80q", vtt.Status, vtt.Body, srt.Status, srt.Body)
	}
	ends := regexp.MustCompile(`--> (\d\d):(\d\d):(\d\d)\.(\d\d\d)`).FindAllStringSubmatch(string(vtt.Body), -1)
	last := ends[len(ends)-1]
	h, _ := strconv.Atoi(last[1])
	m, _ := strconv.Atoi(last[2])
	s, _ := strconv.Atoi(last[3])
	ms, _ := strconv.Atoi(last[4])
	if end := float64(h*3600+m*60+s) + float64(ms)/1000; end > want+0.5 || end < want-3 {
		t.Errorf("the last cue ends at %.1f s; the file is %.1f s long", end, want)
	}
	if n := strings.Count(string(vtt.Body), " --> "); n < j.ChunksTotal*3 {
		t.Errorf("%d cues for %d chunks", n, j.ChunksTotal)
	}

	// The text is never logged: a sentence of it is in no log line.
	for line := range strings.Lines(tg.Log() + tg.Stdout()) {
		if strings.Contains(line, "fishing boats") {
			t.Fatalf("a log line holds the job's text: %.200s", line)
		}
	}
}

// checkSigned checks a webhook delivery's Voxgate-Signature as a
// receiver would, computed here and not with the gateway's code: the
// hex HMAC-SHA256 with secret of "<t>.<body>", t within a minute; and
// the body against the OpenAPI document's webhook (JobEvent).
func checkSigned(t *testing.T, what, secret string, header http.Header, body []byte) {
	t.Helper()
	harness.CheckSchema(t, "JobEvent", body)
	sig := header.Get("Voxgate-Signature")
	m := regexp.MustCompile(`^t=(\d+),v1=([0-9a-f]{64})$`).FindStringSubmatch(sig)
	if m == nil {
		t.Fatalf("%s: signature %q", what, sig)
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(m[1] + "." + string(body)))
	if !hmac.Equal([]byte(m[2]), []byte(hex.EncodeToString(mac.Sum(nil)))) {
		t.Errorf("%s: the signature does not verify", what)
	}
	ts, _ := strconv.ParseInt(m[1], 10, 64)
	if d := time.Since(time.Unix(ts, 0)); d < 0 || d > time.Minute {
		t.Errorf("%s: signed at %s", what, time.Unix(ts, 0))
	}
}

// startBuilt starts bin/voxgate on jobsConfig in a process of its own,
// for the tests whose jobs level or encode hours of audio: in this test
// binary the gateway is built with the race detector, which makes that
// work about ten times slower (TestLoudness and TestBookOnESpeak took
// 99 to 136 s each under -race on a loaded machine). The gateway's
// concurrency is race-checked by the in-process tests.
func startBuilt(t *testing.T) *harness.Process {
	t.Helper()
	yaml := strings.NewReplacer("127.0.0.1:0", "%ADDR%", "  acme:\n", "  acme:\n    dev_key: true\n").Replace(jobsConfig)
	return harness.StartProcess(t, t.TempDir(), yaml, nil)
}

// TestCancel cancels a running job: it stops within a lease renewal, its
// files go, and its audio is never served.
func TestCancel(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, jobsConfig)
	text, _ := book(60_000, 2)
	j := decodeJob(t, tg.Do("POST", "/v1/audio/jobs", "acme", map[string]any{"text": text, "textFormat": "markdown", "model": "espeak/espeak-ng", "voice": "en"}), 202)
	get := func() job { return decodeJob(t, tg.Do("GET", "/v1/audio/jobs/"+j.ID, "acme", nil), 200) }
	waitJob(t, get, func(j job) bool { return j.ChunksDone >= 2 || finished(j) })
	c := decodeJob(t, tg.Do("POST", "/v1/audio/jobs/"+j.ID+"/cancel", "acme", nil), 200)
	if c.State != "cancelled" {
		t.Fatalf("cancel answered %+v", c)
	}
	dir := filepath.Join(tg.Dir, "jobs", j.ID)
	harness.WaitFor(t, "the cancelled job's files to go", func() bool {
		_, err := os.Stat(dir)
		return os.IsNotExist(err)
	})
	done := get().ChunksDone
	time.Sleep(1500 * time.Millisecond)
	if after := get(); after.State != "cancelled" || after.ChunksDone != done {
		t.Errorf("after the cancel: %s, %d chunks (then %d)", after.State, after.ChunksDone, done)
	}
	tg.Do("GET", "/v1/audio/jobs/"+j.ID+"/audio", "acme", nil).Problem(t, 409, "conflict")
	// Cancelling again changes nothing.
	if again := decodeJob(t, tg.Do("POST", "/v1/audio/jobs/"+j.ID+"/cancel", "acme", nil), 200); again.State != "cancelled" {
		t.Errorf("second cancel: %+v", again)
	}
	// The text is never logged, at debug level either (TestBookOnESpeak
	// reads a built gateway's log, written at info): a sentence of it is
	// in no line of the chunks rendered before the cancel.
	for _, e := range tg.Logs.All() {
		line := e.Message
		for k, v := range e.ContextMap() {
			line += fmt.Sprintf(" %s=%v", k, v)
		}
		if strings.Contains(line, "fishing boats") {
			t.Fatalf("a log line holds the job's text: %.200s", line)
		}
	}
}

// TestWebhookSigned: the job's end is POSTed to its webhook with an
// HMAC-SHA256 signature the receiver checks with the secret (computed
// here, not with the gateway's code); a receiver that fails first gets
// the event again, and both attempts are listed on the job. The job has
// no warnings, and the body says so with [] (TestLoudness has one that
// warns).
func TestWebhookSigned(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, jobsConfig)
	const secret = "whsec_test_0123456789abcdef"
	type hit struct {
		header http.Header
		body   []byte
	}
	var mu sync.Mutex
	var hits []hit
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		hits = append(hits, hit{r.Header.Clone(), body})
		n := len(hits)
		mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()
	j := decodeJob(t, tg.Do("POST", "/v1/audio/jobs", "acme", map[string]any{
		"text": "Short. A job with a webhook.", "model": "espeak/espeak-ng", "voice": "en", "output": "wav",
		"webhook": map[string]any{"url": recv.URL + "/hook", "secret": secret},
	}), 202)
	get := func() job { return decodeJob(t, tg.Do("GET", "/v1/audio/jobs/"+j.ID, "acme", nil), 200) }
	j = waitJob(t, get, func(j job) bool { return j.Webhook != nil && len(j.Webhook.Deliveries) >= 2 })
	if j.State != "succeeded" || j.Webhook.URL != recv.URL+"/hook" {
		t.Fatalf("job %+v", j)
	}
	if d := j.Webhook.Deliveries; d[0].Status != 503 || d[0].Error == "" || d[1].Status != 204 || d[1].Error != "" || d[0].Event != "job.succeeded" {
		t.Errorf("deliveries %+v", d)
	}
	if strings.Contains(string(tg.Do("GET", "/v1/audio/jobs/"+j.ID, "acme", nil).Body), secret) {
		t.Error("the job's answer shows the webhook secret")
	}
	mu.Lock()
	defer mu.Unlock()
	for i, h := range hits {
		checkSigned(t, fmt.Sprintf("delivery %d", i), secret, h.header, h.body)
		if h.header.Get("Voxgate-Event") != "job.succeeded" || h.header.Get("Content-Type") != "application/json" || h.header.Get("Voxgate-Delivery") == "" {
			t.Errorf("delivery %d headers %v", i, h.header)
		}
		var ev struct {
			Type string `json:"type"`
			Data struct {
				ID       string          `json:"id"`
				State    string          `json:"state"`
				Warnings json.RawMessage `json:"warnings"`
			} `json:"data"`
		}
		if err := json.Unmarshal(h.body, &ev); err != nil || ev.Type != "job.succeeded" || ev.Data.ID != j.ID || ev.Data.State != "succeeded" {
			t.Errorf("delivery %d body %s", i, h.body)
		}
		// A job without warnings says so with [], as the job does
		// (present, not null or left out).
		if string(ev.Data.Warnings) != "[]" || j.Warnings == nil || len(j.Warnings) != 0 {
			t.Errorf("delivery %d: warnings %s (the job's %q), want []", i, ev.Data.Warnings, j.Warnings)
		}
	}
	// A tampered body does not verify.
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("1." + string(hits[0].body) + " "))
	if strings.Contains(hits[0].header.Get("Voxgate-Signature"), hex.EncodeToString(mac.Sum(nil))) {
		t.Error("a tampered body verifies")
	}
	// The WAV file has the one chapter as a cue point.
	wav := tg.Do("GET", "/v1/audio/jobs/"+j.ID+"/audio", "acme", nil)
	if wav.Status != 200 || !bytes.Contains(wav.Body, []byte("cue ")) || !bytes.Contains(wav.Body, []byte("labl")) {
		t.Errorf("wav: %d, %d bytes, cue chunk %v", wav.Status, len(wav.Body), bytes.Contains(wav.Body, []byte("cue ")))
	}
	if p := ffprobe(t, wav.Body, "wav"); seconds(p.Format.Duration) < 1 {
		t.Errorf("wav: %s s", p.Format.Duration)
	}
}

// TestBadInputs: every bad job request gets its documented problem, and
// another organization's job is not found.
func TestBadInputs(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, jobsConfig)
	voice := func(m map[string]any) map[string]any {
		out := map[string]any{"model": "espeak/espeak-ng", "voice": "en"}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	for _, tt := range []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"no text", voice(map[string]any{}), 400, "validation_failed"},
		{"blank text", voice(map[string]any{"text": "  \n "}), 400, "validation_failed"},
		{"text and media", voice(map[string]any{"text": "a", "mediaId": "m"}), 400, "validation_failed"},
		{"no voice", map[string]any{"text": "Hello."}, 400, "validation_failed"},
		{"unknown field", voice(map[string]any{"text": "Hello.", "chapters": 3}), 400, "validation_failed"},
		{"flac", voice(map[string]any{"text": "Hello.", "output": "flac"}), 400, "validation_failed"},
		{"sample rate", voice(map[string]any{"text": "Hello.", "output": map[string]any{"format": "wav", "sampleRate": 4000}}), 400, "validation_failed"},
		{"mp3 bitrate", voice(map[string]any{"text": "Hello.", "output": map[string]any{"format": "mp3", "bitrate": 7}}), 400, "validation_failed"},
		{"speed", voice(map[string]any{"text": "Hello.", "speed": 9}), 400, "validation_failed"},
		{"bad text format", voice(map[string]any{"text": "Hello.", "textFormat": "html"}), 400, "validation_failed"},
		{"too long", voice(map[string]any{"text": strings.Repeat("a ", 200_001)}), 422, "text_too_long"},
		{"unknown model", map[string]any{"text": "Hello.", "model": "espeak/nope", "voice": "en"}, 422, "unknown_model"},
		{"bad label voice", voice(map[string]any{"text": "Hello.", "voices": map[string]any{"ANNA": map[string]any{"model": "nope/x", "voice": "y"}}}), 422, "unknown_provider"},
		{"webhook not a URL", voice(map[string]any{"text": "Hello.", "webhook": map[string]any{"url": "ftp://x", "secret": "0123456789abcdef"}}), 400, "validation_failed"},
		{"webhook secret short", voice(map[string]any{"text": "Hello.", "webhook": map[string]any{"url": "http://127.0.0.1:9/h", "secret": "short"}}), 400, "validation_failed"},
		{"unknown media", voice(map[string]any{"mediaId": "nope"}), 404, "media_not_found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tg.Do("POST", "/v1/audio/jobs", "acme", tt.body).Problem(t, tt.status, tt.code)
		})
	}
	tg.Do("POST", "/v1/audio/jobs", "", voice(map[string]any{"text": "Hello."})).Problem(t, 401, "unauthorized")

	// A job from a text/markdown upload; globex sees none of it.
	up := tg.Upload("acme", "text/markdown", []byte("# One\n\nUploaded text.\n\n# Two\n\nMore of it."))
	var media struct {
		ID string `json:"id"`
	}
	up.JSON(t, &media)
	if up.Status != 201 || media.ID == "" {
		t.Fatalf("upload: %d %s", up.Status, up.Body)
	}
	j := decodeJob(t, tg.Do("POST", "/v1/audio/jobs", "acme", voice(map[string]any{"mediaId": media.ID, "output": "opus"})), 202)
	if strings.Join(j.Chapters, "|") != "One|Two" {
		t.Errorf("chapters of the upload %q", j.Chapters)
	}
	tg.Do("POST", "/v1/audio/jobs", "globex", voice(map[string]any{"mediaId": media.ID})).Problem(t, 404, "media_not_found")
	for _, path := range []string{"", "/audio", "/captions"} {
		tg.Do("GET", "/v1/audio/jobs/"+j.ID+path, "globex", nil).Problem(t, 404, "not_found")
	}
	tg.Do("POST", "/v1/audio/jobs/"+j.ID+"/cancel", "globex", nil).Problem(t, 404, "not_found")
	var page struct {
		Data []job `json:"data"`
	}
	tg.Do("GET", "/v1/audio/jobs", "globex", nil).JSON(t, &page)
	if len(page.Data) != 0 {
		t.Errorf("globex lists %d jobs", len(page.Data))
	}
	j = waitJob(t, func() job { return decodeJob(t, tg.Do("GET", "/v1/audio/jobs/"+j.ID, "acme", nil), 200) }, finished)
	if j.State != "succeeded" {
		t.Fatalf("the upload's job: %+v", j)
	}
	ogg := tg.Do("GET", j.AudioURL, "acme", nil)
	if p := ffprobe(t, ogg.Body, "ogg"); len(p.Streams) != 1 || p.Streams[0].Codec != "opus" {
		t.Errorf("opus file: %+v", p)
	} else if len(p.Chapters) != 2 || p.Chapters[0].Tags.Title != "One" || p.Chapters[1].Tags.Title != "Two" || seconds(p.Chapters[1].Start) < 1 {
		t.Errorf("opus chapters: %+v", p.Chapters)
	}
	tg.Do("GET", "/v1/audio/jobs/"+j.ID+"/captions", "acme", nil).Problem(t, 404, "not_found") // made without captions
	tg.Do("GET", "/v1/audio/jobs/"+j.ID+"/captions?format=txt", "acme", nil).Problem(t, 400, "validation_failed")
	tg.Do("GET", "/v1/audio/jobs?cursor=forged", "acme", nil).Problem(t, 400, "invalid_cursor")

	// Paging: newest first, by a signed cursor.
	second := decodeJob(t, tg.Do("POST", "/v1/audio/jobs", "acme", voice(map[string]any{"text": "Another."})), 202)
	var p1, p2 struct {
		Data       []job  `json:"data"`
		NextCursor string `json:"next_cursor"`
		HasMore    bool   `json:"has_more"`
	}
	tg.Do("GET", "/v1/audio/jobs?limit=1", "acme", nil).JSON(t, &p1)
	if len(p1.Data) != 1 || p1.Data[0].ID != second.ID || !p1.HasMore {
		t.Fatalf("first page %+v", p1)
	}
	tg.Do("GET", "/v1/audio/jobs?limit=1&cursor="+p1.NextCursor, "acme", nil).JSON(t, &p2)
	if len(p2.Data) != 1 || p2.Data[0].ID != j.ID || p2.HasMore {
		t.Errorf("second page %+v", p2)
	}
	tg.Do("GET", "/v1/audio/jobs?limit=1&cursor="+p1.NextCursor, "globex", nil).Problem(t, 400, "invalid_cursor")
}

// fallbackConfig runs the test kit, whose requests fail on demand, with
// eSpeak as its fallback.
const fallbackConfig = `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
  log_batch_size: 8
plugins:
  dir: %BIN%/plugins
providers:
  espeak: {plugin: voxgate-espeak, managed: true}
  testkit: {plugin: %BIN%/testplugins/voxgate-testplugin, managed: true, timeout: 5s}
fallbacks:
  testkit/test:
    - model: espeak/espeak-ng
      voice: en
jobs:
  lease: 3s
  poll: 100ms
  retry_backoff: 100ms
  chunk_chars: 100
orgs:
  acme:
    providers: {espeak: {enabled: true}, testkit: {enabled: true}}
`

// TestProviderFailsMidJob: the job's provider fails (the test kit, told
// to answer 503 unavailable); every chunk is rendered by the voice's
// fallback (eSpeak) through the speech pipeline, the job succeeds and
// records the fallbacks, and the request log has each failed attempt.
func TestProviderFailsMidJob(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, fallbackConfig)
	text := "The first paragraph is short.\n\nThe second paragraph is a little longer than the first one was.\n\nThe third ends it."
	j := decodeJob(t, tg.Do("POST", "/v1/audio/jobs", "acme", map[string]any{
		"text": text, "model": "testkit/test", "voice": "alpha", "output": "wav",
		"providerOptions": map[string]any{"fail": map[string]any{"kind": "unavailable", "message": "down for maintenance"}},
	}), 202)
	j = waitJob(t, func() job { return decodeJob(t, tg.Do("GET", "/v1/audio/jobs/"+j.ID, "acme", nil), 200) }, finished)
	if j.State != "succeeded" || j.ChunksTotal < 2 || j.Fallbacks != j.ChunksTotal {
		t.Fatalf("job %+v, want succeeded with every chunk by the fallback", j)
	}
	tg.FlushLogs()
	var failed, served int
	for _, row := range tg.LogsWhere("acme", "") {
		if row.Path != "/v1/audio/jobs/"+j.ID {
			continue
		}
		switch {
		case row.Provider == "testkit" && row.Status >= 500:
			failed++
		case row.Provider == "espeak" && row.Status == 200:
			served++
		}
	}
	if failed != j.ChunksTotal || served != j.ChunksTotal {
		t.Errorf("log rows: %d failed attempts on the test kit, %d served by eSpeak; want %d of each", failed, served, j.ChunksTotal)
	}
}

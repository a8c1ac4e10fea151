package jobs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/memory"
)

// fakeSpeaker answers chunks with a tone of 100 ms per word, failing as
// failures says: the speech service's seam, whose real pipeline the
// end-to-end tests (test/e2e/jobs) run.
type fakeSpeaker struct {
	mu sync.Mutex
	// fail returns the error of call n (from 0) of text, or nil.
	fail func(n int, text string) error
	// fellBack makes every answer one served by a fallback.
	fellBack bool
	calls    map[string]int
}

func (f *fakeSpeaker) CheckVoice(context.Context, string, *speech.Request) (int, error) {
	return 60, nil
}

func (f *fakeSpeaker) Quote(context.Context, string, *speech.Request, speech.Delivery) (*speech.Quoted, error) {
	return &speech.Quoted{}, nil
}

func (f *fakeSpeaker) Speak(_ context.Context, _ string, req *speech.Request, _ speech.Delivery) (*speech.Spoken, error) {
	f.mu.Lock()
	n := f.calls[*req.Text]
	f.calls[*req.Text]++
	f.mu.Unlock()
	out := &speech.Spoken{Row: store.LogRow{CharCount: len(*req.Text), CreditsUsed: 3}}
	if f.fail != nil {
		if err := f.fail(n, *req.Text); err != nil {
			return out, err
		}
	}
	rate := *req.Output.SampleRate
	samples := rate / 10 * len(strings.Fields(*req.Text))
	pcm := make([]byte, 2*samples)
	for i := range samples {
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(int16(8000*((i/20)%2*2-1))))
	}
	if f.fellBack {
		out.Attempts = []store.LogRow{{ErrorCode: "provider_unavailable"}}
	}
	out.Result = &speech.Result{Audio: pcm, MediaType: "audio/pcm;rate=" + itoa(rate)}
	return out, nil
}

func itoa(n int) string {
	var b []byte
	for n > 0 || len(b) == 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

func newTestService(t *testing.T, sp *fakeSpeaker) (*Service, *memory.Store, *[]store.LogRow) {
	t.Helper()
	st := memory.New(store.Options{})
	var mu sync.Mutex
	var rows []store.LogRow
	sp.calls = map[string]int{}
	s := New(Options{Dir: t.TempDir(), Rate: 8000, Lease: 3 * time.Second, Poll: 10 * time.Millisecond, ChunkRetries: 2,
		RetryBackoff: time.Millisecond, WebhookAllowPrivate: true, WebhookAllowHTTP: true},
		Deps{Store: st, Speaker: func() Speaker { return sp }, Record: func(r store.LogRow) {
			mu.Lock()
			rows = append(rows, r)
			mu.Unlock()
		}})
	return s, st, &rows
}

func runUntil(t *testing.T, s *Service, st *memory.Store, id string, done func(*store.Job) bool) *store.Job {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	go func() { s.Run(ctx); close(finished) }()
	defer func() { cancel(); <-finished }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		j, err := st.GetJob(context.Background(), "o", id)
		if err != nil {
			t.Fatal(err)
		}
		if done(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %+v did not finish", j)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func create(t *testing.T, s *Service, sp Speaker, text string, spec Spec) *store.Job {
	t.Helper()
	if spec.Voice.Model == "" && spec.Voice.VoiceID == "" {
		spec.Voice = VoiceSpec{Model: "p/m", Voice: "v"}
	}
	j, err := s.Create(context.Background(), "o", "", sp, &NewJob{Text: text, Markdown: true, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

const threeChapters = "# One\n\nThe first chapter has words.\n\n# Two\n\nThe second one has more words in it.\n\n# Three\n\nLast."

func TestWorkerRetriesThenRecordsFallbacks(t *testing.T) {
	sp := &fakeSpeaker{fellBack: true, fail: func(n int, text string) error {
		if strings.HasPrefix(text, "Two") && n < 2 {
			return problem.New(problem.ProviderUnavailable, "down")
		}
		return nil
	}}
	s, st, rows := newTestService(t, sp)
	j := create(t, s, sp, threeChapters, Spec{Format: "wav"})
	j = runUntil(t, s, st, j.ID, func(j *store.Job) bool { return store.JobTerminal(j.State) })
	if j.State != store.JobSucceeded || j.ChunksDone != 3 || j.Fallbacks != 3 || j.Credits != 9 {
		t.Fatalf("job %+v", j)
	}
	if sp.calls["Two.\n\nThe second one has more words in it."] != 3 {
		t.Errorf("calls %v: the failing chunk was not tried three times", sp.calls)
	}
	// Two failed tries, three renderings, and each one's fallback row.
	var failed, ok int
	for _, r := range *rows {
		switch {
		case r.ErrorCode == "provider_unavailable" && r.Status == 503:
			failed++
		case r.Status == 200:
			ok++
		}
		if !strings.HasPrefix(r.Path, "/v1/audio/jobs/"+j.ID) || r.OrgID != "o" {
			t.Errorf("row %+v", r)
		}
	}
	if failed != 2 || ok != 3 {
		t.Errorf("%d failed and %d good rows, want 2 and 3 (rows %+v)", failed, ok, *rows)
	}
	wav, err := os.ReadFile(OutputPath(s.opts.Dir, j.ID, "wav"))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(wav)) != j.OutputBytes || string(wav[:4]) != "RIFF" || string(wav[8:16]) != "WAVEfmt " {
		t.Fatalf("wav of %d bytes, job says %d", len(wav), j.OutputBytes)
	}
	// The cue points are at the chapters' starts, labelled.
	cue := bytes.Index(wav, []byte("cue "))
	if cue < 0 || binary.LittleEndian.Uint32(wav[cue+8:]) != 3 {
		t.Fatal("no cue chunk of three points")
	}
	// Chunks of 6, 9 and 2 words (the titles are spoken) at 8 kHz (800
	// samples a word), a second's pause before each chapter.
	var starts []uint32
	for i := range 3 {
		starts = append(starts, binary.LittleEndian.Uint32(wav[cue+12+24*i+20:]))
	}
	if want := []uint32{0, 6*800 + 8000, 15*800 + 16000}; starts[0] != want[0] || starts[1] != want[1] || starts[2] != want[2] {
		t.Errorf("cue points at %v, want %v", starts, want)
	}
	for _, title := range []string{"One\x00", "Two\x00", "Three\x00"} {
		if !bytes.Contains(wav[cue:], []byte(title)) {
			t.Errorf("no label %q", title)
		}
	}
	dataLen := binary.LittleEndian.Uint32(wav[40:])
	if want := uint32(2 * (17*800 + 16000)); dataLen != want {
		t.Errorf("data of %d bytes, want %d", dataLen, want)
	}
	if riff := binary.LittleEndian.Uint32(wav[4:]); int(riff) != len(wav)-8 {
		t.Errorf("RIFF size %d of a %d-byte file", riff, len(wav))
	}
	if files, _ := os.ReadDir(jobDir(s.opts.Dir, j.ID)); len(files) != 1 {
		t.Errorf("the finished job's folder holds %d files, want the output only", len(files))
	}
}

func TestWorkerFailsAChunkThatCannotBeRendered(t *testing.T) {
	sp := &fakeSpeaker{fail: func(n int, text string) error {
		if strings.HasPrefix(text, "Three") {
			return problem.New(problem.ModerationBlocked, "blocked")
		}
		return nil
	}}
	s, st, _ := newTestService(t, sp)
	j := create(t, s, sp, threeChapters, Spec{Format: "mp3"})
	j = runUntil(t, s, st, j.ID, func(j *store.Job) bool { return store.JobTerminal(j.State) })
	if j.State != store.JobFailed || j.ErrorCode != "content_moderation_blocked" || j.ChunksDone != 2 {
		t.Fatalf("job %+v", j)
	}
	if sp.calls["Three.\n\nLast."] != 1 {
		t.Errorf("a refused chunk was tried %d times; a refusal is not retried", sp.calls["Three.\n\nLast."])
	}
}

// TestWorkerResumesFromCheckpoints: a job whose first chunks were
// checkpointed by a worker that died is taken over once the lease runs
// out, and only the rest is rendered.
func TestWorkerResumesFromCheckpoints(t *testing.T) {
	sp := &fakeSpeaker{}
	s, st, _ := newTestService(t, sp)
	j := create(t, s, sp, threeChapters, Spec{Format: "wav"})
	// A worker "dead" leases the job and renders the first chunk.
	ctx := context.Background()
	dead := New(Options{Dir: s.opts.Dir, Owner: "dead", Rate: 8000, Lease: 50 * time.Millisecond}, Deps{Store: st, Speaker: func() Speaker { return sp }})
	lj, err := st.LeaseJob(ctx, "dead", 50*time.Millisecond, 0)
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := decodeSpec(lj.Spec)
	first, _ := st.JobChunks(ctx, j.ID, 0, 1)
	if err := os.MkdirAll(jobDir(s.opts.Dir, j.ID), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := dead.renderChunk(ctx, lj, spec, &first[0], jobDir(s.opts.Dir, j.ID)); err != nil {
		t.Fatal(err)
	}
	j = runUntil(t, s, st, j.ID, func(j *store.Job) bool { return store.JobTerminal(j.State) })
	if j.State != store.JobSucceeded || j.Leases != 2 {
		t.Fatalf("job %+v", j)
	}
	for text, n := range sp.calls {
		if n != 1 {
			t.Errorf("%q rendered %d times", text, n)
		}
	}
}

func TestCancelStopsTheWorker(t *testing.T) {
	block := make(chan struct{})
	sp := &fakeSpeaker{fail: func(n int, text string) error {
		if strings.HasPrefix(text, "Two") {
			<-block
		}
		return nil
	}}
	s, st, _ := newTestService(t, sp)
	s.opts.Lease = 90 * time.Millisecond
	j := create(t, s, sp, threeChapters, Spec{Format: "wav"})
	runUntil(t, s, st, j.ID, func(j *store.Job) bool {
		if j.ChunksDone == 1 {
			if _, err := s.Cancel(context.Background(), "o", j.ID); err != nil {
				t.Fatal(err)
			}
			close(block)
			return true
		}
		return false
	})
	time.Sleep(200 * time.Millisecond)
	j, _ = st.GetJob(context.Background(), "o", j.ID)
	if j.State != store.JobCancelled || j.ChunksDone > 2 {
		t.Errorf("job %+v", j)
	}
}

func TestWebhookURLs(t *testing.T) {
	s := New(Options{}, Deps{Store: memory.New(store.Options{})})
	for u, ok := range map[string]bool{
		"https://hooks.example.com/x":      true,
		"http://hooks.example.com/x":       false, // http not allowed
		"https://127.0.0.1/x":              false,
		"https://[::1]/x":                  false,
		"https://10.1.2.3/x":               false,
		"https://169.254.169.254/latest":   false, // cloud metadata
		"https://localhost/x":              false,
		"https://user:pw@hooks.example/x":  false,
		"ftp://hooks.example.com/x":        false,
		"/relative":                        false,
		"https://100.64.1.1/carrier-grade": false,
	} {
		if got := s.checkWebhookURL(u) == ""; got != ok {
			t.Errorf("%s accepted %v, want %v (%s)", u, got, ok, s.checkWebhookURL(u))
		}
	}
	g := guard{}
	for _, a := range []string{"127.0.0.1:80", "[::ffff:10.0.0.1]:443", "169.254.169.254:80", "0.0.0.0:80"} {
		if g.control("tcp", a, nil) == nil {
			t.Errorf("dialling %s allowed", a)
		}
	}
	if err := g.control("tcp", "93.184.216.34:443", nil); err != nil {
		t.Errorf("a public address refused: %v", err)
	}
	if (guard{allowPrivate: true}).forbidden(netip.MustParseAddr("127.0.0.1")) {
		t.Error("webhook_allow_private does not allow loopback")
	}
}

func TestSign(t *testing.T) {
	// The value a receiver computes: HMAC-SHA256 of "<t>.<body>", hex.
	got := Sign("secret", time.Unix(1700000000, 0), []byte(`{"a":1}`))
	const want = "t=1700000000,v1=" // and 64 hex digits
	if !strings.HasPrefix(got, want) || len(got) != len(want)+64 {
		t.Fatalf("Sign = %q", got)
	}
	if Sign("secret", time.Unix(1700000000, 0), []byte(`{"a":2}`)) == got || Sign("other", time.Unix(1700000000, 0), []byte(`{"a":1}`)) == got {
		t.Error("the signature does not depend on the body and the secret")
	}
}

func TestID3Chapters(t *testing.T) {
	tag := id3Chapters([]chapterMark{{title: "Eins", start: 0, end: 8000}, {title: "Zwei", start: 8000, end: 24000}}, 8000)
	if string(tag[:5]) != "ID3\x04\x00" {
		t.Fatalf("header % x", tag[:10])
	}
	size := int(tag[6])<<21 | int(tag[7])<<14 | int(tag[8])<<7 | int(tag[9])
	if size != len(tag)-10 {
		t.Errorf("tag size %d, %d bytes follow", size, len(tag)-10)
	}
	body := tag[10:]
	if !bytes.HasPrefix(body, []byte("CTOC")) || bytes.Count(body, []byte("CHAP")) != 2 || bytes.Count(body, []byte("TIT2")) != 2 {
		t.Fatalf("frames % q", body)
	}
	ch1 := bytes.Index(body, []byte("CHAP\x00\x00\x00"))
	// "CHAP" size(4) flags(2) "ch0\0" start end
	if start, end := binary.BigEndian.Uint32(body[ch1+14:]), binary.BigEndian.Uint32(body[ch1+18:]); start != 0 || end != 1000 {
		t.Errorf("first chapter %d-%d ms, want 0-1000", start, end)
	}
	if id3Chapters(nil, 8000) != nil {
		t.Error("a tag without chapters")
	}
}

// TestCancelOfAnOrphanRemovesItsFiles: a job whose worker died (its
// lease ran out) has no worker to remove its files when it is
// cancelled; Cancel does.
func TestCancelOfAnOrphanRemovesItsFiles(t *testing.T) {
	sp := &fakeSpeaker{}
	s, st, _ := newTestService(t, sp)
	j := create(t, s, sp, threeChapters, Spec{Format: "wav"})
	if _, err := st.LeaseJob(context.Background(), "dead", time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	dir := jobDir(s.opts.Dir, j.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeSynced(chunkPath(dir, 0, "pcm"), []byte{1, 2}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if c, err := s.Cancel(context.Background(), "o", j.ID); err != nil || c.State != store.JobCancelled {
		t.Fatalf("cancel: %+v %v", c, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the orphan's folder is still there: %v", err)
	}
	if _, err := s.Cancel(context.Background(), "other", j.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another organization's cancel: %v", err)
	}
}

// TestStoreOutagePausesAJob: a checkpoint the store cannot take (it is
// away) does not fail the job: its lease runs out and it is resumed.
func TestStoreOutagePausesAJob(t *testing.T) {
	sp := &fakeSpeaker{}
	s, st, _ := newTestService(t, sp)
	s.opts.Lease = 150 * time.Millisecond
	j := create(t, s, sp, threeChapters, Spec{Format: "wav"})
	st.FailNext("CheckpointJobChunk", 1, fmt.Errorf("test outage: %w", store.ErrUnavailable))
	j = runUntil(t, s, st, j.ID, func(j *store.Job) bool { return store.JobTerminal(j.State) })
	if j.State != store.JobSucceeded || j.Leases != 2 {
		t.Fatalf("job %+v, want succeeded on a second lease", j)
	}
}

// TestQuietFileWarns: a job whose file ends quieter than its loudness
// target finishes with a warning that says so (it was only logged); a
// target the file reaches leaves none. The fake voice is a square wave,
// whose peaks stand where its loudness does: under a ceiling of -9 dBTP
// no limiting lifts it to -5 LUFS, in a lossy file (measured after its
// encoder) as in a lossless one (its plan missed). A lossy file held to
// its organization's default says whose target it missed.
func TestQuietFileWarns(t *testing.T) {
	for _, tc := range []struct {
		format               string
		integrated, truePeak float64
		orgDefault           bool   // the organization's target, not the job's
		want                 string // "" for no warning
	}{
		{"opus", -5, -9, false, "The file could not reach the job's loudness target, -5 LUFS under a true peak of -9 dBTP: it is at "},
		{"mp3", -5, -9, false, "The file could not reach the job's loudness target, -5 LUFS under a true peak of -9 dBTP: it is at "},
		{"wav", -5, -9, false, "The file could not reach the job's loudness target, -5 LUFS under a true peak of -9 dBTP: it is at "},
		{"opus", -5, -9, true, "The file could not reach the organization's loudness target, -5 LUFS under a true peak of -9 dBTP: it is at "},
		{"opus", -24, -1, false, ""},
		{"wav", -24, -1, false, ""},
	} {
		t.Run(fmt.Sprintf("%s %g LUFS %g dBTP default %v", tc.format, tc.integrated, tc.truePeak, tc.orgDefault), func(t *testing.T) {
			sp := &fakeSpeaker{}
			s, st, _ := newTestService(t, sp)
			target := audio.LoudnessTarget{Integrated: tc.integrated, TruePeak: tc.truePeak}
			spec := Spec{Format: tc.format, Loudness: &Loudness{Integrated: tc.integrated, TruePeak: tc.truePeak}}
			if tc.orgDefault {
				spec.Loudness = nil
				s.orgLoudness = func(string) (audio.LoudnessTarget, bool) { return target, true }
			}
			j := create(t, s, sp, threeChapters, spec)
			j = runUntil(t, s, st, j.ID, func(j *store.Job) bool { return store.JobTerminal(j.State) })
			if j.State != store.JobSucceeded {
				t.Fatalf("job %+v", j)
			}
			if tc.want == "" {
				if len(j.Warnings) != 0 {
					t.Errorf("warnings %q of a file at its target", j.Warnings)
				}
				return
			}
			t.Logf("warnings %q", j.Warnings)
			if len(j.Warnings) != 1 || !strings.HasPrefix(j.Warnings[0], tc.want) || !strings.HasSuffix(j.Warnings[0], "LUFS, as loud as the ceiling allows, and quieter than asked.") {
				t.Fatalf("warnings %q, want one starting %q", j.Warnings, tc.want)
			}
			// The loudness it names is the file's, under the target by
			// more than a lossy file's tolerance.
			var got float64
			if _, err := fmt.Sscanf(j.Warnings[0][len(tc.want):], "%g", &got); err != nil || got > tc.integrated-lossyJobToleranceLU {
				t.Errorf("the warning names %g LUFS (%v), want under %g", got, err, tc.integrated-lossyJobToleranceLU)
			}
		})
	}
}

package migrate_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
	"github.com/voxgate/voxgate/gateway/store/migrate"
	"github.com/voxgate/voxgate/gateway/store/postgres"
	"github.com/voxgate/voxgate/internal/pgtest"
)

// server is the package's one PostgreSQL server; each test gets a fresh
// database on it (a server per test would cost an initdb each).
var server *pgtest.Server

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &server)) }

const (
	acme = "acme"
	beta = "beta"
	// gamma is declared in gateway.yaml and has made a job and nothing
	// else: the file has no organization bucket for it.
	gamma = "gamma"
)

// orgs are the organizations the source fixture has data in.
var orgs = []string{acme, beta, gamma}

// The fixture's long-form jobs, one in each state.
const (
	jobSucceeded = "44444444-0000-4000-8000-000000000001"
	jobFailed    = "44444444-0000-4000-8000-000000000002"
	jobCancelled = "44444444-0000-4000-8000-000000000003"
	jobRunning   = "44444444-0000-4000-8000-000000000004"
	jobQueued    = "44444444-0000-4000-8000-000000000005"
	jobGamma     = "44444444-0000-4000-8000-000000000006"
	// jobWarning is the succeeded job's warning.
	jobWarning = "The file could not reach the job's loudness target, -14 LUFS under a true peak of -1 dBTP: it is at -15.7 LUFS, as loud as the ceiling allows, and quieter than asked."
)

// source is a closed bbolt file with some of every kind of record, and
// what it holds.
type source struct {
	path string
	// keys maps each issued key's text to its id: what a client presents.
	keys map[string]string
	// mediaIDs are the media ids of each organization.
	mediaIDs map[string][]string
	// want is the file's content as read back through bolt.
	want snapshot
	// counts is the number of records of each kind.
	counts map[string]int
}

// newSource writes the fixture. Log rows span several UTC days, some
// older than the default 30-day retention and one from 1970, the oldest
// time bbolt can key.
func newSource(t *testing.T) *source {
	t.Helper()
	ctx := context.Background()
	src := &source{path: filepath.Join(t.TempDir(), "voxgate.db"), keys: map[string]string{}, mediaIDs: map[string][]string{}}
	s, err := bolt.Open(src.path, migrate.StoreOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UTC().Round(0)
	day := 24 * time.Hour

	for _, k := range []struct {
		text string
		key  store.APIKey
	}{
		{"vg_live_aaaaaaaaaaaaaaaaaaaaaaaa", store.APIKey{ID: "key-active", OrgID: acme, Name: "ci", Prefix: "vg_live_aaaa", CreatedAt: now.Add(-400 * day)}},
		{"vg_live_bbbbbbbbbbbbbbbbbbbbbbbb", store.APIKey{ID: "key-scoped", OrgID: acme, Name: "narrow", Prefix: "vg_live_bbbb", CreatedAt: now.Add(-2 * day),
			Scope: store.KeyScope{ExpiresAt: now.Add(90 * day), Providers: []string{"espeak"}, Models: []string{"espeak/default"}, Budget: 500, BudgetPeriod: "month"}}},
		{"vg_live_cccccccccccccccccccccccc", store.APIKey{ID: "key-revoked", OrgID: beta, Name: "old", Prefix: "vg_live_cccc", CreatedAt: now.Add(-40 * day)}},
	} {
		sum := sha256.Sum256([]byte(k.text))
		k.key.Hash = sum[:]
		must(s.CreateKey(ctx, &k.key))
		src.keys[k.text] = k.key.ID
	}
	_, err = s.RevokeKey(ctx, "key-revoked")
	must(err)
	// An organization made through the admin API, and its admin key.
	off := false
	must(s.CreateOrg(ctx, &store.Org{ID: "team-x", Name: "Team X", Budget: 100, BudgetPeriod: "day", RatePerMinute: 30, CreatedAt: now.Add(-day), UpdatedAt: now,
		Providers: map[string]store.OrgProvider{"espeak": {Enabled: true, Managed: &off}}}))
	adminSum := sha256.Sum256([]byte("vxk_admin"))
	must(s.CreateKey(ctx, &store.APIKey{ID: "key-admin", OrgID: store.AdminOrg, Name: "ops", Prefix: "vxk_ad", Hash: adminSum[:], CreatedAt: now, Admin: true}))

	for i, v := range []store.Voice{
		{ID: "11111111-0000-4000-8000-000000000001", OrgID: acme, Title: "Narrator", Provider: "espeak", Model: "default", VoiceID: "en-us",
			Tags: []string{"calm", "en"}, Gender: "f", Description: "d", ProviderOptions: map[string]any{"rate": 1.5, "pitch": "low"},
			MediaID: "22222222-0000-4000-8000-000000000001", Fallbacks: []store.VoiceTarget{{Provider: "piper", Model: "m", VoiceID: "amy"}}},
		{ID: "11111111-0000-4000-8000-000000000002", OrgID: acme, Title: "Second", Provider: "espeak", Model: "default", VoiceID: "en-gb"},
		{ID: "11111111-0000-4000-8000-000000000003", OrgID: acme, Title: "Third", Provider: "piper", Model: "m", VoiceID: "joe"},
		{ID: "11111111-0000-4000-8000-000000000004", OrgID: beta, Title: "Beta's", Provider: "espeak", Model: "default", VoiceID: "de"},
	} {
		v.CreatedAt = now.Add(-time.Duration(10-i) * day)
		must(s.CreateVoice(ctx, &v))
	}

	for _, m := range []struct {
		org, id string
		size    int
	}{
		{acme, "22222222-0000-4000-8000-000000000001", 200 << 10},
		{acme, "22222222-0000-4000-8000-000000000002", 0}, // an empty upload
		{beta, "22222222-0000-4000-8000-000000000003", 1 << 10},
	} {
		data := make([]byte, m.size)
		_, _ = rand.Read(data)
		must(s.PutMedia(ctx, &store.Media{ID: m.id, OrgID: m.org, Filename: m.id + ".wav", MediaType: "audio/wav", DurationMS: 1234, CreatedAt: now.Add(-3 * day)}, data))
		src.mediaIDs[m.org] = append(src.mediaIDs[m.org], m.id)
	}

	// Sealed secrets are opaque bytes to the store: every byte value, and
	// random ones, must arrive unchanged.
	every := make([]byte, 256)
	for i := range every {
		every[i] = byte(i)
	}
	random := func(n int) []byte { b := make([]byte, n); _, _ = rand.Read(b); return b }
	must(s.PutSecret(ctx, acme, "openai", every))
	must(s.PutSecret(ctx, acme, "elevenlabs", random(60)))
	must(s.PutSecret(ctx, beta, "openai", random(60)))

	def, err := s.DefaultDictionary(ctx, acme, &store.Dictionary{ID: "33333333-0000-4000-8000-000000000001", Name: store.DefaultDictionaryName})
	must(err)
	must(s.CreateDictionary(ctx, &store.Dictionary{ID: "33333333-0000-4000-8000-000000000002", OrgID: acme, Name: "Brands", Description: "d"}, 10))
	must(s.CreateRule(ctx, &store.PronunciationRule{ID: "r1", OrgID: acme, DictionaryID: def.ID, Word: "AWS", Replacement: "a w s"}, 10))
	must(s.CreateRule(ctx, &store.PronunciationRule{ID: "r2", OrgID: acme, DictionaryID: def.ID, Word: "jq", Replacement: "jay cue"}, 10))
	must(s.CreateRule(ctx, &store.PronunciationRule{ID: "r3", OrgID: acme, DictionaryID: "33333333-0000-4000-8000-000000000002", Word: "Voxgate", Replacement: "vox gate", CaseSensitive: true}, 10))

	full := store.LogRow{
		RequestID: "a-now", OrgID: acme, TS: now.Add(-time.Minute), Path: "/v1/text-to-speech", Status: 200,
		Provider: "espeak", Model: "default", VoiceID: "en-us", VoiceRef: "11111111-0000-4000-8000-000000000001",
		CharCount: 42, CreditsUsed: 42, LatencyMS: 321, ProviderOptions: `{"rate":1.5}`,
		ModerationDecision: "allow", ModerationReasonType: "none", ModerationReasonDetail: "-", ModerationConfidence: 0.25,
		ModerationLatencyMS: 7, TimeToFirstAudioMS: 90, KeyID: "key-active", AudioMS: 2500, Cache: "miss",
		Transcoded: "pcm_24000->mp3_24000_96", Sanitized: true,
	}
	rows := []store.LogRow{full}
	for _, r := range []struct {
		id, org string
		ts      time.Time
	}{
		{"a-1h", acme, now.Add(-time.Hour)},
		{"a-1d", acme, now.Add(-25 * time.Hour)},
		{"a-2d-1", acme, now.Add(-49 * time.Hour)},
		{"a-2d-2", acme, now.Add(-50 * time.Hour)},
		{"a-29d", acme, now.Add(-29 * day)},
		{"a-31d", acme, now.Add(-31 * day)},
		{"a-45d", acme, now.Add(-45 * day)},
		{"a-400d", acme, now.Add(-400 * day)},
		{"a-1970", acme, time.Unix(1, 0).UTC()},
		{"b-1d", beta, now.Add(-day)},
		{"b-90d", beta, now.Add(-90 * day)},
	} {
		rows = append(rows, store.LogRow{RequestID: r.id, OrgID: r.org, TS: r.ts, Path: "/v1/audio/speech", Status: 502, Provider: "piper", ErrorCode: "provider_error", ErrorDetail: "down"})
	}
	rows[1].ParentRequestID = "a-now" // a conversation's child row
	must(s.AppendLogs(ctx, rows))
	// The identify index: an answer's fingerprint in each organization.
	must(s.PutFingerprint(ctx, &store.Fingerprint{OrgID: acme, RequestID: "a-now", TS: now, Values: []uint32{1, 2, 3}, Keys: []uint32{1}}))
	must(s.PutFingerprint(ctx, &store.Fingerprint{OrgID: beta, RequestID: "b-1d", TS: now.Add(-day), Values: []uint32{4}, Keys: []uint32{4, 5}}))

	addJobs(t, s, now)

	src.want = take(t, s, src.mediaIDs)
	// The running job's lease is live in the file (its instance was
	// stopped a moment ago); the copy releases every lease, so that a
	// PostgreSQL instance's worker takes the job over at once.
	if j := src.want.job(acme, jobRunning); j == nil || j.LeaseOwner != "old-instance" || !j.LeaseUntil.After(now) {
		t.Fatalf("the fixture's running job is not leased: %+v", j)
	}
	for org := range src.want.Jobs {
		for i := range src.want.Jobs[org] {
			src.want.Jobs[org][i].Job.LeaseOwner, src.want.Jobs[org][i].Job.LeaseUntil = "", time.Time{}
		}
	}
	src.counts = map[string]int{"orgs": 1, "keys": 4, "voices": 4, "media": 3, "secrets": 3, "dictionaries": 2, "rules": 3, "logs": len(rows), "fingerprints": 2, "jobs": 6}
	if n := len(src.want.Logs[acme]) + len(src.want.Logs[beta]); n != len(rows) {
		t.Fatalf("the fixture lists %d of its %d log rows", n, len(rows))
	}
	return src
}

// snapshot is a store's content in comparable form: times in UTC, byte
// slices as strings (nil and empty are the same content), log rows by
// request id (the copy reverses the order of rows with equal times).
type snapshot struct {
	Orgs    []store.Org
	Keys    []store.APIKey
	Voices  map[string][]store.Voice
	Media   map[string]store.Media
	Data    map[string]string
	Secrets map[string]string
	Dicts   map[string][]store.Dictionary
	Rules   map[string][]store.PronunciationRule
	Logs    map[string][]store.LogRow
	// Jobs are each organization's jobs, newest first, with their chunks.
	Jobs map[string][]jobCopy
}

// jobCopy is a job and its chunks.
type jobCopy struct {
	Job    store.Job
	Chunks []store.JobChunk
}

// job returns org's job id in sn, or nil.
func (sn *snapshot) job(org, id string) *store.Job {
	for i := range sn.Jobs[org] {
		if sn.Jobs[org][i].Job.ID == id {
			return &sn.Jobs[org][i].Job
		}
	}
	return nil
}

// addJobs writes a job in each state: finished ones with their webhook
// delivered or due, a running one whose instance holds its lease (it was
// stopped to migrate), a queued one; the last in an organization that has
// nothing else in the file.
func addJobs(t *testing.T, s *bolt.Store, now time.Time) {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	spec := []byte(`{"voice":{"voiceId":"11111111-0000-4000-8000-000000000001"},"format":"mp3","webhook":{"url":"https://example.com/h"}}`)
	create := func(id, org string, age time.Duration, chunks ...store.JobChunk) {
		t.Helper()
		for i := range chunks {
			chunks[i].Index = i
		}
		must(s.CreateJob(ctx, &store.Job{ID: id, OrgID: org, KeyID: "key-active", Spec: spec, Characters: 120, CreatedAt: now.Add(-age)}, chunks))
	}
	lease := func(id, owner string, d time.Duration) {
		t.Helper()
		j, err := s.LeaseJob(ctx, owner, d, 0)
		if err != nil || j.ID != id {
			t.Fatalf("lease %s: %+v, %v", id, j, err)
		}
	}
	checkpoint := func(id, owner string, c store.JobChunk) {
		t.Helper()
		c.Done = true
		must(s.CheckpointJobChunk(ctx, id, owner, &c))
	}

	create(jobSucceeded, acme, 5*time.Hour, store.JobChunk{Text: "Chapter one."}, store.JobChunk{Chapter: 1, Voice: "guest", Text: "Chapter two."})
	lease(jobSucceeded, "old-instance", time.Minute)
	checkpoint(jobSucceeded, "old-instance", store.JobChunk{Index: 0, Text: "Chapter one.", AudioMS: 1200, Credits: 12, Characters: 12, Served: "espeak/default"})
	checkpoint(jobSucceeded, "old-instance", store.JobChunk{Index: 1, Chapter: 1, Voice: "guest", Text: "Chapter two.", AudioMS: 1300, Credits: 12, Characters: 12, Served: "piper/m", Fallback: true})
	must(s.FinishJob(ctx, jobSucceeded, "old-instance", store.JobFinish{State: store.JobSucceeded, OutputBytes: 40960, WebhookDue: now.Add(-time.Minute),
		Warnings: []string{jobWarning}}))
	lease(jobSucceeded, "old-instance", time.Minute) // its webhook, delivered
	must(s.RecordJobDelivery(ctx, jobSucceeded, "old-instance", store.JobDelivery{At: now.Add(-50 * time.Second), Event: "job.succeeded", Status: 204}, time.Time{}))

	create(jobFailed, acme, 4*time.Hour, store.JobChunk{Text: "Never said."})
	lease(jobFailed, "old-instance", time.Minute)
	must(s.FinishJob(ctx, jobFailed, "old-instance", store.JobFinish{State: store.JobFailed, ErrorCode: "provider_error", ErrorDetail: "espeak: exit status 1", WebhookDue: now.Add(-time.Minute)}))
	lease(jobFailed, "old-instance", time.Minute) // its webhook failed: retried in an hour
	must(s.RecordJobDelivery(ctx, jobFailed, "old-instance", store.JobDelivery{At: now.Add(-40 * time.Second), Event: "job.failed", Status: 502, Error: "the receiver answered 502"}, now.Add(time.Hour)))

	create(jobCancelled, beta, 3*time.Hour, store.JobChunk{Text: "Cancelled."})
	_, err := s.CancelJob(ctx, beta, jobCancelled)
	must(err)

	create(jobRunning, acme, 2*time.Hour, store.JobChunk{Text: "One."}, store.JobChunk{Text: "Two."}, store.JobChunk{Chapter: 1, Text: "Three."})
	lease(jobRunning, "old-instance", time.Hour)
	checkpoint(jobRunning, "old-instance", store.JobChunk{Index: 0, Text: "One.", AudioMS: 400, Credits: 4, Characters: 4, Served: "espeak/default"})

	create(jobQueued, acme, time.Hour, store.JobChunk{Text: "Later."}, store.JobChunk{Voice: "guest", Text: "Much later."})
	create(jobGamma, gamma, 30*time.Minute, store.JobChunk{Text: "Gamma's only record."})
}

// take reads everything of orgs from s (media by the source's ids).
func take(t *testing.T, s store.Backend, mediaIDs map[string][]string) snapshot {
	t.Helper()
	ctx := context.Background()
	sn := snapshot{Voices: map[string][]store.Voice{}, Media: map[string]store.Media{}, Data: map[string]string{},
		Secrets: map[string]string{}, Dicts: map[string][]store.Dictionary{}, Rules: map[string][]store.PronunciationRule{}, Logs: map[string][]store.LogRow{},
		Jobs: map[string][]jobCopy{}}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	stored, err := s.ListOrgs(ctx)
	must(err)
	for _, o := range stored {
		o.CreatedAt, o.UpdatedAt = o.CreatedAt.UTC(), o.UpdatedAt.UTC()
		sn.Orgs = append(sn.Orgs, o)
	}
	keys, err := s.ListKeys(ctx, "")
	must(err)
	for _, k := range keys {
		k.CreatedAt, k.RevokedAt, k.Scope.ExpiresAt = k.CreatedAt.UTC(), k.RevokedAt.UTC(), k.Scope.ExpiresAt.UTC()
		sn.Keys = append(sn.Keys, k)
	}
	for _, org := range orgs {
		for _, v := range all(t, func(after store.Position) ([]store.Voice, store.Position, bool, error) {
			return s.ListVoices(ctx, org, 2, after)
		}) {
			v.CreatedAt, v.UpdatedAt = v.CreatedAt.UTC(), v.UpdatedAt.UTC()
			sn.Voices[org] = append(sn.Voices[org], v)
		}
		for _, id := range mediaIDs[org] {
			m, err := s.GetMedia(ctx, org, id)
			must(err)
			m.CreatedAt = m.CreatedAt.UTC()
			sn.Media[org+"/"+id] = *m
			data, err := s.MediaData(ctx, org, id)
			must(err)
			sn.Data[org+"/"+id] = string(data)
		}
		names, err := s.ListSecretNames(ctx, org)
		must(err)
		for _, name := range names {
			v, err := s.GetSecret(ctx, org, name)
			must(err)
			sn.Secrets[org+"/"+name] = string(v)
		}
		for _, d := range all(t, func(after store.Position) ([]store.Dictionary, store.Position, bool, error) {
			return s.ListDictionaries(ctx, org, 1, after)
		}) {
			d.CreatedAt, d.UpdatedAt = d.CreatedAt.UTC(), d.UpdatedAt.UTC()
			sn.Dicts[org] = append(sn.Dicts[org], d)
			for _, r := range all(t, func(after store.Position) ([]store.PronunciationRule, store.Position, bool, error) {
				return s.ListRules(ctx, org, d.ID, 1, after)
			}) {
				r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
				sn.Rules[org+"/"+d.ID] = append(sn.Rules[org+"/"+d.ID], r)
			}
		}
		for _, r := range all(t, func(after store.Position) ([]store.LogRow, store.Position, bool, error) {
			return s.ListLogs(ctx, org, store.LogFilter{}, 4, after)
		}) {
			r.TS = r.TS.UTC()
			sn.Logs[org] = append(sn.Logs[org], r)
		}
		sort.Slice(sn.Logs[org], func(i, j int) bool { return sn.Logs[org][i].RequestID < sn.Logs[org][j].RequestID })
		for _, j := range all(t, func(after store.Position) ([]store.Job, store.Position, bool, error) {
			return s.ListJobs(ctx, org, 2, after)
		}) {
			for _, tm := range []*time.Time{&j.CreatedAt, &j.UpdatedAt, &j.StartedAt, &j.FinishedAt, &j.LeaseUntil, &j.WebhookDue} {
				*tm = tm.UTC()
			}
			for i := range j.Deliveries {
				j.Deliveries[i].At = j.Deliveries[i].At.UTC()
			}
			chunks, err := s.JobChunks(ctx, j.ID, 0, 1000)
			must(err)
			sn.Jobs[org] = append(sn.Jobs[org], jobCopy{Job: j, Chunks: chunks})
		}
	}
	return sn
}

// all pages through a list method.
func all[T any](t *testing.T, list func(after store.Position) ([]T, store.Position, bool, error)) []T {
	t.Helper()
	var out []T
	var after store.Position
	for {
		page, next, more, err := list(after)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page...)
		if !more {
			return out
		}
		after = next
	}
}

// openDst opens the database at dsn the way the migration does, seeing
// every log row whatever its age.
func openDst(t *testing.T, dsn string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn, postgres.Options{Options: migrate.StoreOptions()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// migrateFile runs the migration as `voxgate migrate` does, returning its
// progress lines too.
func migrateFile(ctx context.Context, src *source, dsn string, progress func(string)) (*migrate.Report, []string, error) {
	var lines []string
	rep, err := migrate.BoltToPostgres(ctx, src.path, dsn, func(line string) {
		lines = append(lines, line)
		if progress != nil {
			progress(line)
		}
	})
	return rep, lines, err
}

// checkCounts wants the report to count want's records of each kind it
// names, all verified.
func checkCounts(t *testing.T, rep *migrate.Report, want map[string]int) {
	t.Helper()
	if rep == nil {
		t.Fatal("no report")
	}
	got := map[string]migrate.Count{}
	for _, c := range rep.Counts {
		got[c.Kind] = c
	}
	for kind, n := range want {
		if c := got[kind]; c.Source != n || c.Verified != n {
			t.Errorf("%s: %d in the file, %d verified; want %d and %d", kind, c.Source, c.Verified, n, n)
		}
	}
}

// checkCopied wants dst to hold exactly what the source holds, and the
// issued keys to authenticate against it.
func checkCopied(t *testing.T, src *source, dst *postgres.Store) {
	t.Helper()
	got := take(t, dst, src.mediaIDs)
	w, g := reflect.ValueOf(src.want), reflect.ValueOf(got)
	for i := range w.NumField() {
		if !reflect.DeepEqual(w.Field(i).Interface(), g.Field(i).Interface()) {
			t.Errorf("%s differ:\nbolt:     %+v\npostgres: %+v", w.Type().Field(i).Name, w.Field(i).Interface(), g.Field(i).Interface())
		}
	}
	for text, id := range src.keys {
		sum := sha256.Sum256([]byte(text))
		k, err := dst.KeyByHash(context.Background(), sum[:])
		if err != nil {
			t.Errorf("key %s does not authenticate after the migration: %v", id, err)
			continue
		}
		if k.ID != id || !strings.HasPrefix(text, k.Prefix) || k.Active() != (id != "key-revoked") {
			t.Errorf("key %s authenticates as %+v", id, k)
		}
	}
}

// TestMigrateCopiesEverything copies a file with every kind of record,
// log rows as old as 1970 included, and runs again: the second run finds
// everything there, copies nothing and verifies the same counts.
func TestMigrateCopiesEverything(t *testing.T) {
	migrate.SetLogBatch(t, 4)
	src := newSource(t)
	dsn := server.NewDatabaseT(t)
	ctx := context.Background()
	for run := range 2 {
		rep, lines, err := migrateFile(ctx, src, dsn, nil)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		checkCounts(t, rep, src.counts)
		checkCopied(t, src, openDst(t, dsn))
		copied := map[int]string{0: "org acme: 10 log rows copied now, 10 in all", 1: "org acme: 0 log rows copied now, 10 in all"}[run]
		if !slices.Contains(lines, copied) {
			t.Errorf("run %d said %q, want %q among them", run, lines, copied)
		}
	}
	// The rows past the default retention are there, on days of their own.
	dst := openDst(t, dsn)
	for _, id := range []string{"a-31d", "a-45d", "a-400d", "a-1970"} {
		if _, err := dst.GetLog(ctx, acme, id); err != nil {
			t.Errorf("row %s: %v", id, err)
		}
	}
	days := map[string]bool{}
	for _, r := range src.want.Logs[acme] {
		days[r.TS.Format(time.DateOnly)] = true
	}
	if len(days) < 7 {
		t.Errorf("the fixture's rows fall on %d days; the test means several partitions", len(days))
	}
}

// TestMigrateResumesAfterAnInterruption stops a migration at each step
// (the context is cancelled as the step reports) and runs it again: the
// second run completes the copy, with every count verified and no row
// twice.
func TestMigrateResumesAfterAnInterruption(t *testing.T) {
	migrate.SetLogBatch(t, 3)
	src := newSource(t)
	for _, tc := range []struct {
		name   string
		stopAt string // progress line prefix at which the context is cancelled
		// resumed are lines the second run must print.
		resumed []string
	}{
		{name: "after keys", stopAt: "keys:"},
		{name: "after voices", stopAt: "org acme: voices done"},
		{name: "after media", stopAt: "org acme: 2 media done"},
		{name: "after secrets", stopAt: "org acme: 2 secrets done"},
		{name: "after dictionaries", stopAt: "org acme: dictionaries done"},
		{name: "between log batches", stopAt: "org acme: 3 log rows copied so far",
			resumed: []string{"org acme: resuming logs", "org acme: 7 log rows copied now, 10 in all"}},
		{name: "between organizations' jobs", stopAt: "org acme: 4 jobs done",
			resumed: []string{"org acme: 4 jobs done", "org beta: 1 jobs done", "org gamma: 1 jobs done"}},
		{name: "after the first organization", stopAt: "org beta: voices done",
			resumed: []string{"org acme: resuming logs", "org acme: 0 log rows copied now, 10 in all", "org beta: 2 log rows copied now, 2 in all"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := server.NewDatabaseT(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stopped := false
			rep, _, err := migrateFile(ctx, src, dsn, func(line string) {
				if strings.HasPrefix(line, tc.stopAt) {
					stopped = true
					cancel()
				}
			})
			if !stopped {
				t.Fatalf("no progress line starts with %q", tc.stopAt)
			}
			if !errors.Is(err, context.Canceled) || rep != nil {
				t.Fatalf("interrupted run: %v, report %+v; want context.Canceled and none", err, rep)
			}
			rep, lines, err := migrateFile(context.Background(), src, dsn, nil)
			if err != nil {
				t.Fatalf("resumed run: %v", err)
			}
			checkCounts(t, rep, src.counts)
			checkCopied(t, src, openDst(t, dsn))
			for _, want := range tc.resumed {
				if !slices.Contains(lines, want) {
					t.Errorf("resumed run said %q, want %q among them", lines, want)
				}
			}
		})
	}
}

// TestMigrateFinishesARunThatHidOldRows is the retention bug: a migration
// whose stores hide rows older than 30 days (how BoltToPostgres opened
// them before) copies and counts only the recent rows, and its check
// passes. Running the fixed migration afterwards resumes from that run's
// checkpoint, which is where the older rows start, and copies them.
func TestMigrateFinishesARunThatHidOldRows(t *testing.T) {
	ctx := context.Background()
	src := newSource(t)
	dsn := server.NewDatabaseT(t)
	func() {
		s, err := bolt.Open(src.path, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		d, err := postgres.Open(ctx, dsn, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		rep, err := migrate.Run(ctx, s, d, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range rep.Counts {
			if c.Kind == "logs" && (c.Source != 7 || c.Verified != 7) {
				t.Errorf("the 30-day run counted %+v; want the 7 recent rows", c)
			}
		}
	}()
	if _, err := openDst(t, dsn).GetLog(ctx, acme, "a-31d"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after the 30-day run, row a-31d: %v; want it missing", err)
	}
	rep, lines, err := migrateFile(ctx, src, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, rep, src.counts)
	checkCopied(t, src, openDst(t, dsn))
	if want := "org acme: 4 log rows copied now, 10 in all"; !slices.Contains(lines, want) {
		t.Errorf("the fixed run said %q, want %q among them", lines, want)
	}
}

// TestMigrateVerification changes the destination after a complete
// migration and runs it again. What a run copies again (a deleted voice)
// verifies; what it cannot (a log row behind the checkpoint, whatever its
// age; media whose content differs) fails the check with ErrUnverified and
// a report that says which kind is short.
func TestMigrateVerification(t *testing.T) {
	src := newSource(t)
	for _, tc := range []struct {
		name   string
		tamper string
		short  string // the kind the check finds short, "" for none
	}{
		{"a deleted voice is copied again", `DELETE FROM voices WHERE id = '11111111-0000-4000-8000-000000000002'`, ""},
		{"a deleted recent log row", `DELETE FROM request_logs WHERE request_id = 'a-1h'`, "logs"},
		{"a deleted log row older than the retention", `DELETE FROM request_logs WHERE request_id = 'a-400d'`, "logs"},
		{"changed media", `UPDATE media SET sha256 = repeat('0', 64) WHERE id = '22222222-0000-4000-8000-000000000003'`, "media"},
		{"a deleted fingerprint is copied again", `DELETE FROM fingerprints WHERE request_id = 'b-1d'`, ""},
		{"a deleted job is copied again, chunks and all", `DELETE FROM jobs WHERE id = '` + jobSucceeded + `'`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dsn := server.NewDatabaseT(t)
			if _, _, err := migrateFile(ctx, src, dsn, nil); err != nil {
				t.Fatal(err)
			}
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			tag, err := conn.Exec(ctx, tc.tamper)
			conn.Close(ctx)
			if err != nil || tag.RowsAffected() != 1 {
				t.Fatalf("%s: %v, %d rows", tc.tamper, err, tag.RowsAffected())
			}
			rep, _, err := migrateFile(ctx, src, dsn, nil)
			if tc.short == "" {
				if err != nil {
					t.Fatal(err)
				}
				checkCounts(t, rep, src.counts)
				checkCopied(t, src, openDst(t, dsn))
				return
			}
			if !errors.Is(err, migrate.ErrUnverified) || !strings.Contains(err.Error(), tc.short+": ") {
				t.Fatalf("err = %v; want ErrUnverified naming %s", err, tc.short)
			}
			want := map[string]int{}
			for kind, n := range src.counts {
				want[kind] = n
			}
			delete(want, tc.short)
			checkCounts(t, rep, want)
			for _, c := range rep.Counts {
				if c.Kind == tc.short && (c.Source != src.counts[c.Kind] || c.Verified != c.Source-1) {
					t.Errorf("%s: %+v; want one short of %d", c.Kind, c, src.counts[c.Kind])
				}
			}
		})
	}
}

// TestMigrateDictionaries copies pronunciation dictionaries and their
// rules, ids and all, into a PostgreSQL database whose gateway already
// made a default dictionary of its own; a second run changes nothing.
func TestMigrateDictionaries(t *testing.T) {
	ctx := context.Background()
	src, err := bolt.Open(filepath.Join(t.TempDir(), "v.db"), migrate.StoreOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	def, err := src.DefaultDictionary(ctx, "acme", &store.Dictionary{ID: "11111111-1111-4111-8111-111111111111", Name: store.DefaultDictionaryName})
	must(err)
	must(src.CreateDictionary(ctx, &store.Dictionary{ID: "22222222-2222-4222-8222-222222222222", OrgID: "acme", Name: "Brands", Description: "d"}, 10))
	must(src.CreateRule(ctx, &store.PronunciationRule{ID: "r1", OrgID: "acme", DictionaryID: def.ID, Word: "AWS", Replacement: "a w s"}, 10))
	must(src.CreateRule(ctx, &store.PronunciationRule{ID: "r2", OrgID: "acme", DictionaryID: def.ID, Word: "jq", Replacement: "jay cue"}, 10))
	must(src.CreateRule(ctx, &store.PronunciationRule{ID: "r3", OrgID: "acme", DictionaryID: "22222222-2222-4222-8222-222222222222", Word: "Voxgate", Replacement: "vox gate", CaseSensitive: true}, 10))

	dst, err := postgres.Open(ctx, server.NewDatabaseT(t), postgres.Options{Options: migrate.StoreOptions()})
	must(err)
	defer dst.Close()
	// The PostgreSQL gateway ran before: its own default, with "jq".
	theirs, err := dst.DefaultDictionary(ctx, "acme", &store.Dictionary{ID: "33333333-3333-4333-8333-333333333333", Name: store.DefaultDictionaryName})
	must(err)
	must(dst.CreateRule(ctx, &store.PronunciationRule{ID: "r9", OrgID: "acme", DictionaryID: theirs.ID, Word: "JQ", Replacement: "jquery"}, 10))

	for run := range 2 {
		rep, err := migrate.Run(ctx, src, dst, nil)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		for _, c := range rep.Counts {
			if (c.Kind == "dictionaries" && (c.Source != 2 || c.Verified != 2)) || (c.Kind == "rules" && (c.Source != 3 || c.Verified != 3)) {
				t.Errorf("run %d: %+v", run, c)
			}
		}
	}
	brands, err := dst.GetDictionary(ctx, "acme", "22222222-2222-4222-8222-222222222222")
	if err != nil || brands.Name != "Brands" || brands.Description != "d" || brands.RuleCount != 1 {
		t.Fatalf("Brands in PostgreSQL: %+v, %v", brands, err)
	}
	defs, byID, err := dst.DictionaryRules(ctx, "acme", []string{brands.ID})
	if err != nil {
		t.Fatal(err)
	}
	words := map[string]string{}
	for _, r := range defs {
		words[r.Word] = r.Replacement
	}
	// The destination's default kept its own "JQ" and gained "AWS".
	if len(defs) != 2 || words["AWS"] != "a w s" || words["JQ"] != "jquery" {
		t.Errorf("default rules after migration: %+v", defs)
	}
	if len(byID[0]) != 1 || byID[0][0].ID != "r3" || !byID[0][0].CaseSensitive {
		t.Errorf("Brands' rules: %+v", byID[0])
	}
}

// TestMigrateJobs copies long-form jobs in every state, of three
// organizations (one with nothing but a job), and checks what becomes of
// them on PostgreSQL: they read back equal through the PostgreSQL driver
// (every field, the chunks' results, deliveries and times), the running
// job's lease is released so that a PostgreSQL instance's worker resumes
// it at its first chunk not done, the finished-time index serves the
// retention sweeper, and a second run copies nothing twice nor undoes
// what a PostgreSQL gateway did with a job meanwhile.
func TestMigrateJobs(t *testing.T) {
	ctx := context.Background()
	src := newSource(t)
	dsn := server.NewDatabaseT(t)
	rep, lines, err := migrateFile(ctx, src, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, rep, map[string]int{"jobs": 6})
	for _, want := range []string{"org acme: 4 jobs done", "org beta: 1 jobs done", "org gamma: 1 jobs done"} {
		if !slices.Contains(lines, want) {
			t.Errorf("the run said %q, want %q among them", lines, want)
		}
	}
	dst := openDst(t, dsn)
	got := take(t, dst, src.mediaIDs)
	if !reflect.DeepEqual(src.want.Jobs, got.Jobs) {
		t.Fatalf("jobs differ:\nbolt:     %+v\npostgres: %+v", src.want.Jobs, got.Jobs)
	}
	if j := got.job(acme, jobSucceeded); j == nil || !slices.Equal(j.Warnings, []string{jobWarning}) {
		t.Errorf("the succeeded job on PostgreSQL: %+v; want its warning", j)
	}

	// The retention sweeper finds the finished jobs on PostgreSQL by
	// their finish times, as it did on the file.
	expired, err := dst.ExpiredJobs(ctx, time.Now().Add(time.Minute), 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range expired {
		ids = append(ids, j.ID)
	}
	if want := []string{jobSucceeded, jobFailed, jobCancelled}; !slices.Equal(ids, want) {
		t.Errorf("expired jobs on PostgreSQL: %v, want %v (finished first, first)", ids, want)
	}

	// A PostgreSQL instance's worker takes the running job over at once,
	// with its checkpoint; then the queued ones. None is leased twice.
	j, err := dst.LeaseJob(ctx, "pg-1", time.Minute, 0)
	if err != nil || j.ID != jobRunning || j.State != store.JobRunning || j.ChunksDone != 1 || j.Leases != 2 || j.LeaseOwner != "pg-1" {
		t.Fatalf("first lease on PostgreSQL: %+v, %v; want the running job, 1 chunk done, its second lease", j, err)
	}
	if chunks, err := dst.JobChunks(ctx, jobRunning, 0, 10); err != nil || len(chunks) != 3 || !chunks[0].Done || chunks[1].Done {
		t.Fatalf("the running job's chunks on PostgreSQL: %+v, %v", chunks, err)
	}
	c := store.JobChunk{Index: 1, Text: "Two.", Done: true, AudioMS: 500, Credits: 4, Characters: 4, Served: "espeak/default"}
	if err := dst.CheckpointJobChunk(ctx, jobRunning, "pg-1", &c); err != nil {
		t.Fatal(err)
	}
	if j, err := dst.LeaseJob(ctx, "pg-2", time.Minute, 0); err != nil || j.ID != jobQueued {
		t.Fatalf("second lease on PostgreSQL: %+v, %v; want the queued job", j, err)
	}
	if j, err := dst.LeaseJob(ctx, "pg-3", time.Minute, 0); err != nil || j.ID != jobGamma {
		t.Fatalf("third lease on PostgreSQL: %+v, %v; want gamma's queued job", j, err)
	}
	if j, err := dst.LeaseJob(ctx, "pg-4", time.Minute, 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("fourth lease on PostgreSQL: %+v, %v; want none (the failed job's webhook is due in an hour)", j, err)
	}

	// A second run copies nothing twice and leaves the PostgreSQL
	// worker's progress as it is.
	rep, _, err = migrateFile(ctx, src, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, rep, map[string]int{"jobs": 6})
	j, err = dst.GetJob(ctx, acme, jobRunning)
	if err != nil || j.ChunksDone != 2 || j.LeaseOwner != "pg-1" || j.Credits != 8 {
		t.Errorf("the running job after a second run: %+v, %v; want pg-1's lease and its 2 chunks done", j, err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var jobs, chunks int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM job_chunks)`).Scan(&jobs, &chunks); err != nil {
		t.Fatal(err)
	}
	if jobs != 6 || chunks != 10 {
		t.Errorf("PostgreSQL holds %d jobs and %d chunks after two runs, want 6 and 10", jobs, chunks)
	}
}

// recordFileSigningKey records fp as the file's provenance signing key,
// as a gateway's first start on it does.
func recordFileSigningKey(t *testing.T, src *source, fp []byte) {
	t.Helper()
	s, err := bolt.Open(src.path, migrate.StoreOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.RecordSigningKey(context.Background(), fp, false); err != nil || !slices.Equal(got, fp) {
		t.Fatalf("record the file's signing key: %x, %v", got, err)
	}
}

// TestMigrateSigningKey: the fingerprint of the provenance signing key
// the file records is recorded on PostgreSQL, so that the PostgreSQL
// gateways' key guard checks the key that signed the file's records; a
// second run leaves the row as it is (not even rewritten). A database
// that records another key fails the migration before anything is
// copied, naming both keys and the way out, and keeps its own; a file
// that records none records none.
func TestMigrateSigningKey(t *testing.T) {
	ctx := context.Background()
	fileKey := sha256.Sum256([]byte("the file's public key"))
	otherKey := sha256.Sum256([]byte("another deployment's public key"))
	// rowVersion is the transaction that last wrote the database's
	// record (xmin), "" when there is none.
	rowVersion := func(t *testing.T, dsn string) (fp []byte, version string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		err = conn.QueryRow(ctx, "SELECT value, xmin::text FROM voxgate_meta WHERE name = 'signing_key_fingerprint'").Scan(&fp, &version)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, ""
		}
		if err != nil {
			t.Fatal(err)
		}
		return fp, version
	}

	t.Run("copied once", func(t *testing.T) {
		src := newSource(t)
		recordFileSigningKey(t, src, fileKey[:])
		dsn := server.NewDatabaseT(t)
		rep, lines, err := migrateFile(ctx, src, dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkCounts(t, rep, src.counts)
		if want := "provenance signing key: key id " + hex.EncodeToString(fileKey[:8]) + " recorded"; !slices.Contains(lines, want) {
			t.Errorf("the run said %q, want %q among them", lines, want)
		}
		fp, version := rowVersion(t, dsn)
		if !slices.Equal(fp, fileKey[:]) {
			t.Fatalf("PostgreSQL records %x, want the file's %x", fp, fileKey)
		}
		// What a PostgreSQL gateway's start meets: the file's key passes,
		// another is answered with the file's.
		dst := openDst(t, dsn)
		if got, err := dst.RecordSigningKey(ctx, otherKey[:], false); err != nil || !slices.Equal(got, fileKey[:]) {
			t.Errorf("a start with another key is answered %x, %v; want the file's key", got, err)
		}
		if _, _, err := migrateFile(ctx, src, dsn, nil); err != nil {
			t.Fatalf("second run: %v", err)
		}
		if fp2, version2 := rowVersion(t, dsn); !slices.Equal(fp2, fileKey[:]) || version2 != version {
			t.Errorf("after a second run PostgreSQL records %x written by transaction %s; want %x as the first run wrote it (%s)", fp2, version2, fileKey, version)
		}
	})

	t.Run("another key on PostgreSQL", func(t *testing.T) {
		src := newSource(t)
		recordFileSigningKey(t, src, fileKey[:])
		dsn := server.NewDatabaseT(t)
		if _, err := openDst(t, dsn).RecordSigningKey(ctx, otherKey[:], false); err != nil {
			t.Fatal(err)
		}
		rep, _, err := migrateFile(ctx, src, dsn, nil)
		if !errors.Is(err, migrate.ErrSigningKeyDiffers) || rep != nil {
			t.Fatalf("migration into a database with another key: %+v, %v; want ErrSigningKeyDiffers", rep, err)
		}
		for _, want := range []string{
			"key id " + hex.EncodeToString(fileKey[:8]), hex.EncodeToString(fileKey[:]),
			"key id " + hex.EncodeToString(otherKey[:8]), hex.EncodeToString(otherKey[:]),
			"nothing was copied", "provenance.rotate_key: true",
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error lacks %q: %v", want, err)
			}
		}
		if fp, _ := rowVersion(t, dsn); !slices.Equal(fp, otherKey[:]) {
			t.Errorf("PostgreSQL records %x after the refusal, want its own %x", fp, otherKey)
		}
		if keys, err := openDst(t, dsn).ListKeys(ctx, ""); err != nil || len(keys) != 0 {
			t.Errorf("PostgreSQL holds %d keys after the refusal (%v), want none copied", len(keys), err)
		}
	})

	t.Run("none in the file", func(t *testing.T) {
		src := newSource(t)
		dsn := server.NewDatabaseT(t)
		_, lines, err := migrateFile(ctx, src, dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(lines, "provenance signing key: none recorded in the file") {
			t.Errorf("the run said %q", lines)
		}
		if fp, _ := rowVersion(t, dsn); fp != nil {
			t.Errorf("PostgreSQL records %x; the file records no key", fp)
		}
	})
}

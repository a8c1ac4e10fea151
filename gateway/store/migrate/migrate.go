// Package migrate copies a bbolt file into PostgreSQL (voxgate migrate):
// keys, voices, media, encrypted secrets, pronunciation dictionaries with
// their rules, request logs, the provenance fingerprint index and long-form
// jobs with their chunks (records only: a job's files stay in jobs.dir; see
// jobs.go), and the fingerprint of the provenance signing key (see
// signingkey.go).
//
// It is resumable: records that are already in PostgreSQL are skipped
// (their ids are unique there), and log rows go in batches that commit
// together with a per-organization progress marker, so a copy that stops
// anywhere starts again where it stopped without duplicating a row. At the
// end every kind is counted on both sides; a shortfall is an error
// (ErrUnverified).
//
// Every request-log row is copied, however old: both stores are opened
// with StoreOptions, whose log retention hides no row, whatever
// storage.log_retain_days says. A PostgreSQL gateway started afterwards
// purges what its own retention no longer keeps, as it would have on the
// file.
//
// Secrets are copied as ciphertext. The PostgreSQL deployment must use the
// same sealing key (secrets.key_env or secrets.key_file) to read them.
package migrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
	"github.com/voxgate/voxgate/gateway/store/postgres"
)

// logBatch is the number of log rows copied per transaction. A variable so
// tests can interrupt a copy between batches without writing thousands of
// rows.
var logBatch = 5000

// everyLog is a log retention that hides no row. Both stores filter
// ListLogs to rows newer than now minus their retention, and a store opened
// with the default (or storage.log_retain_days) would silently leave older
// rows out of both the copy and the counts. The longest Duration reaches
// back about 292 years: before the Unix epoch, below which bbolt keeps no
// timestamp (its keys are unsigned nanoseconds), yet after 1678, so the
// bound still fits the int64 nanoseconds PostgreSQL compares.
const everyLog = time.Duration(math.MaxInt64)

// StoreOptions are the options Run's source and destination must be opened
// with: a log retention that hides no row, so every row of the file is
// listed, copied and counted on both sides.
func StoreOptions() store.Options {
	return store.Options{LogRetention: everyLog}
}

// ErrUnverified is wrapped by Run's error when the final count finds
// records of the source missing from the destination.
var ErrUnverified = errors.New("migration not verified")

// Count is how many records of one kind the source had and how many of
// them the destination holds.
type Count struct {
	Kind     string
	Source   int
	Verified int
}

// Report is the outcome of a migration.
type Report struct {
	Counts []Count
}

// Run copies src into dst and verifies the copy. progress, if not nil,
// receives a line per step (and per batch of log rows).
//
// Both stores must have been opened with StoreOptions; with a shorter log
// retention, rows older than it would be neither copied nor counted and
// the check would still pass. Run never purges either store.
func Run(ctx context.Context, src *bolt.Store, dst *postgres.Store, progress func(string)) (*Report, error) {
	if progress == nil {
		progress = func(string) {}
	}
	m := &migration{src: src, dst: dst, say: progress, counts: map[string]*Count{}}
	if err := m.signingKey(ctx); err != nil { // first: a mismatch copies nothing
		return nil, err
	}
	if err := m.keys(ctx); err != nil {
		return nil, err
	}
	orgs, err := src.Orgs(ctx)
	if err != nil {
		return nil, err
	}
	for _, org := range orgs {
		for _, step := range []func(context.Context, string) error{m.voices, m.media, m.secrets, m.dictionaries, m.logs} {
			if err := step(ctx, org); err != nil {
				return nil, fmt.Errorf("organization %q: %w", org, err)
			}
		}
	}
	if err := m.fingerprints(ctx); err != nil {
		return nil, err
	}
	if err := m.jobs(ctx); err != nil {
		return nil, err
	}
	r := &Report{}
	var short []string
	for _, kind := range []string{"orgs", "keys", "voices", "media", "secrets", "dictionaries", "rules", "logs", "fingerprints", "jobs"} {
		c := m.count(kind)
		r.Counts = append(r.Counts, *c)
		if c.Verified < c.Source {
			short = append(short, fmt.Sprintf("%s: %d of %d", kind, c.Verified, c.Source))
		}
	}
	if len(short) > 0 {
		return r, fmt.Errorf("%w: PostgreSQL lacks records (%v); run the migration again to resume", ErrUnverified, short)
	}
	return r, nil
}

type migration struct {
	src    *bolt.Store
	dst    *postgres.Store
	say    func(string)
	counts map[string]*Count
}

func (m *migration) count(kind string) *Count {
	c := m.counts[kind]
	if c == nil {
		c = &Count{Kind: kind}
		m.counts[kind] = c
	}
	return c
}

// skipExisting treats "already there" as copied: that is what makes a
// second run resume.
func skipExisting(err error) error {
	if errors.Is(err, store.ErrExists) {
		return nil
	}
	return err
}

// orgs copies the organizations made through the admin API.
func (m *migration) orgs(ctx context.Context) error {
	orgs, err := m.src.ListOrgs(ctx)
	if err != nil {
		return err
	}
	for i := range orgs {
		if err := skipExisting(m.dst.CreateOrg(ctx, &orgs[i])); err != nil {
			return fmt.Errorf("org %s: %w", orgs[i].ID, err)
		}
	}
	copied, err := m.dst.ListOrgs(ctx)
	if err != nil {
		return err
	}
	c := m.count("orgs")
	c.Source += len(orgs)
	for i := range orgs {
		if slices.ContainsFunc(copied, func(o store.Org) bool { return o.ID == orgs[i].ID }) {
			c.Verified++
		}
	}
	m.say(fmt.Sprintf("orgs: %d copied", len(orgs)))
	return nil
}

func (m *migration) keys(ctx context.Context) error {
	if err := m.orgs(ctx); err != nil {
		return err
	}
	keys, err := m.src.ListKeys(ctx, "")
	if err != nil {
		return err
	}
	for i := range keys {
		if err := skipExisting(m.dst.CreateKey(ctx, &keys[i])); err != nil {
			return fmt.Errorf("key %s: %w", keys[i].ID, err)
		}
	}
	copied, err := m.dst.ListKeys(ctx, "")
	if err != nil {
		return err
	}
	c := m.count("keys")
	c.Source += len(keys)
	for i := range keys {
		if slices.ContainsFunc(copied, func(k store.APIKey) bool { return k.ID == keys[i].ID }) {
			c.Verified++
		}
	}
	m.say(fmt.Sprintf("keys: %d copied", len(keys)))
	return nil
}

func (m *migration) voices(ctx context.Context, org string) error {
	var after store.Position
	c := m.count("voices")
	for {
		page, next, more, err := m.src.ListVoices(ctx, org, 500, after)
		if err != nil {
			return err
		}
		for i := range page {
			v := page[i]
			if err := skipExisting(m.dst.CreateVoice(ctx, &v)); err != nil {
				return fmt.Errorf("voice %s: %w", v.ID, err)
			}
			c.Source++
			if _, err := m.dst.GetVoice(ctx, org, v.ID); err == nil {
				c.Verified++
			}
		}
		if !more {
			break
		}
		after = next
	}
	m.say(fmt.Sprintf("org %s: voices done", org))
	return nil
}

func (m *migration) media(ctx context.Context, org string) error {
	ids, err := m.src.MediaIDs(ctx, org)
	if err != nil {
		return err
	}
	c := m.count("media")
	for _, id := range ids {
		meta, err := m.src.GetMedia(ctx, org, id)
		if err != nil {
			return err
		}
		data, err := m.src.MediaData(ctx, org, id)
		if err != nil {
			return err
		}
		if err := skipExisting(m.dst.PutMedia(ctx, meta, data)); err != nil {
			return fmt.Errorf("media %s: %w", id, err)
		}
		c.Source++
		if got, err := m.dst.GetMedia(ctx, org, id); err == nil && got.SHA256 == meta.SHA256 {
			c.Verified++
		}
	}
	m.say(fmt.Sprintf("org %s: %d media done", org, len(ids)))
	return nil
}

func (m *migration) secrets(ctx context.Context, org string) error {
	names, err := m.src.ListSecretNames(ctx, org)
	if err != nil {
		return err
	}
	c := m.count("secrets")
	for _, name := range names {
		v, err := m.src.GetSecret(ctx, org, name)
		if err != nil {
			return err
		}
		if err := m.dst.PutSecret(ctx, org, name, v); err != nil {
			return fmt.Errorf("secret %q: %w", name, err)
		}
		c.Source++
		if got, err := m.dst.GetSecret(ctx, org, name); err == nil && string(got) == string(v) {
			c.Verified++
		}
	}
	m.say(fmt.Sprintf("org %s: %d secrets done", org, len(names)))
	return nil
}

// fingerprints copies the acoustic fingerprints behind POST
// /v1/provenance/identify (PutFingerprint replaces, so a second run
// rewrites what the first copied), then counts those PostgreSQL has
// with the same values.
func (m *migration) fingerprints(ctx context.Context) error {
	c := m.count("fingerprints")
	src := map[[2]string]int{}
	err := m.src.ForEachFingerprint(ctx, func(f *store.Fingerprint) error {
		if err := m.dst.PutFingerprint(ctx, f); err != nil {
			return fmt.Errorf("fingerprint of %s: %w", f.RequestID, err)
		}
		src[[2]string{f.OrgID, f.RequestID}] = len(f.Values)
		c.Source++
		return nil
	})
	if err != nil {
		return err
	}
	err = m.dst.ForEachFingerprint(ctx, func(f *store.Fingerprint) error {
		if n, ok := src[[2]string{f.OrgID, f.RequestID}]; ok && n == len(f.Values) {
			c.Verified++
		}
		return nil
	})
	if err != nil {
		return err
	}
	m.say(fmt.Sprintf("%d fingerprints done", c.Source))
	return nil
}

// logs copies org's rows newest first, from its checkpoint on. The
// checkpoint is the source position of the last row copied.
func (m *migration) logs(ctx context.Context, org string) error {
	mark := "logs/" + org
	after, err := m.dst.Checkpoint(ctx, mark)
	if err != nil {
		return err
	}
	if after != nil {
		m.say(fmt.Sprintf("org %s: resuming logs", org))
	}
	copied := 0
	for {
		rows, next, more, err := m.src.ListLogs(ctx, org, store.LogFilter{}, logBatch, store.Position(after))
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			break
		}
		// A file written before bbolt refused unstorable text may hold
		// rows with a NUL that PostgreSQL cannot: they are copied with it
		// replaced and marked, as the request-log writer does.
		for i := range rows {
			rows[i].Sanitize()
		}
		if err := m.dst.ImportLogs(ctx, rows, mark, next); err != nil {
			return err
		}
		copied += len(rows)
		after = next
		// A large log takes minutes; say where it is, batch by batch.
		m.say(fmt.Sprintf("org %s: %d log rows copied so far", org, copied))
		if !more {
			break
		}
	}
	// Verify by counts: every row of the source (this run's and earlier
	// runs') against the rows PostgreSQL lists for the organization.
	src, err := countLogs(ctx, m.src, org)
	if err != nil {
		return err
	}
	dst, err := countLogs(ctx, m.dst, org)
	if err != nil {
		return err
	}
	c := m.count("logs")
	c.Source += src
	c.Verified += min(src, dst)
	m.say(fmt.Sprintf("org %s: %d log rows copied now, %d in all", org, copied, src))
	return nil
}

// countLogs counts org's listable rows: all of them, in a store opened
// with StoreOptions.
func countLogs(ctx context.Context, s store.LogStore, org string) (int, error) {
	var after store.Position
	n := 0
	for {
		rows, next, more, err := s.ListLogs(ctx, org, store.LogFilter{}, 10000, after)
		if err != nil {
			return n, err
		}
		n += len(rows)
		if !more {
			return n, nil
		}
		after = next
	}
}

// BoltToPostgres opens the bbolt file at path and the database at dsn and
// runs the migration between them. The file must not be held by a running
// gateway (store.ErrLocked). Holding its lock for the whole run is also
// what keeps a gateway's retention purge off the file while it is copied.
func BoltToPostgres(ctx context.Context, path, dsn string, progress func(string)) (*Report, error) {
	src, err := bolt.Open(path, StoreOptions())
	if err != nil {
		return nil, err
	}
	defer src.Close()
	dst, err := postgres.Open(ctx, dsn, postgres.Options{Options: StoreOptions()})
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	return Run(ctx, src, dst, progress)
}

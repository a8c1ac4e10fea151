// Package store is the gateway's persistent state: one bbolt file holding
// API keys, per-organization voices, media, encrypted provider secrets and
// request logs.
//
// # Layout
//
// Top-level buckets:
//
//	meta         "schema" -> uint64 layout version; "secret" -> 32 random bytes;
//	             "job_sweep" -> the job sweeper's lease (see jobs.go)
//	keys         key id -> APIKey JSON
//	key_hashes   sha256(key) -> key id           (authentication lookup)
//	orgs         org id -> nested bucket per organization (below)
//	org_records  org id -> Org JSON, the organizations made through the
//	             admin API (created when a file is opened; older files
//	             read as having none)
//	jobs, jobs_by_org, jobs_active, job_chunks, jobs_finished
//	             long-form jobs, their chunks and indexes (see jobs.go;
//	             created when a file is opened; jobs_finished filled by the
//	             schema-4 upgrade)
//
// Each organization's bucket holds only that organization's data, so an id
// of another organization is simply absent (ErrNotFound), and no read can
// cross organizations:
//
//	voices       created_at ns (8B BE) + voice id -> Voice JSON
//	voice_ids    voice id -> key in voices
//	media        media id -> Media JSON
//	media_data   media id -> bytes
//	secrets      name -> ciphertext (encrypted by the caller)
//	logs         ts ns (8B BE) + sequence (8B BE) -> row (protobuf wire format)
//	logs_by_parent           len16 + parent_request_id + logs key -> ""
//	logs_by_provider         len16 + provider + logs key          -> ""
//	logs_by_provider_status  len16 + provider + status16 + logs key -> ""
//	logs_by_status           status16 + logs key                  -> ""
//	usage        day ns (8B BE) + len16 provider + len16 model + len16 key id
//	             -> usage counts (protobuf wire format; see usage.go)
//	logs_by_request          len16 + request_id + logs key        -> ""  (schema 2)
//
// # Invariants
//
// List endpoints read only what they return. bbolt keys are sorted bytes,
// and every list-ordered key starts with a big-endian time, so "newest
// first" is a backwards cursor walk from one seek: ListVoices and ListLogs
// touch O(log n) pages to find their start and then only the page they
// return plus one peeked entry for has_more. Page time stays flat as an
// organization's data grows (see BenchmarkListLogs).
//
// A list position (the `after`/`next` bytes) is the primary key of the
// last returned record. A walk resumes at the greatest key below it, so
// paging neither repeats nor skips records; records created meanwhile have
// newer keys and appear on a fresh first page instead of shifting pages.
// Log positions are primary keys in every index: an index key is its
// filter-value prefix plus the primary key, so a position resumes in
// whichever index a filter selects. Positions are not authenticated here;
// the HTTP layer signs them into org-bound cursors.
//
// Every filter of GET /v1/logs reads only matching rows: the walk picks the
// most selective index (parent > provider+status > provider > status >
// primary), treats since/until as key bounds inside it and checks any other
// predicate per row. Each log row and all its index entries are written in
// the same transaction and deleted in the same transaction by PurgeLogs, so
// an index entry always has its row.
//
// The usage rollup is written in the transaction of the log rows it
// counts (AppendLogs), so it always equals the aggregate of the top-level
// rows written, and GET /v1/usage reads O(days x providers x models x
// keys) entries whatever the log's size. PurgeLogs keeps
// store.UsageRetention of it, longer than the rows themselves.
//
// User data (voices, media, keys, secrets) is committed with fsync before a
// write method returns. Log rows arrive in batches (package reqlog) and a
// batch is one transaction. ListLogs never returns rows older than
// LogRetention even before PurgeLogs has removed them.
package bolt

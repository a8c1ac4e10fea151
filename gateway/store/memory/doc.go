// Package memory is a storage backend that keeps everything in the
// process's memory: the store.Backend of unit tests, and of
// `storage.driver: memory` for trying the gateway out. Nothing is written
// anywhere; every record is gone when the Store is dropped or the process
// exits. It is the peer of store/bolt and store/postgres, as Vault's
// physical/inmem is of its disk and database backends, and passes the same
// conformance suite (store/storetest).
//
// # Layout
//
// One Store holds global keys and one org per organization. An
// organization's records live only in its org, so an id of another
// organization is simply absent (store.ErrNotFound) and no read can cross
// organizations:
//
//	keys, keyHashes    key id -> APIKey; string(sha256) -> key id
//	orgs[org]
//	  voices           voice id -> Voice; voiceOrder lists (created_at, id)
//	  media            media id -> metadata and bytes
//	  secrets          name -> ciphertext
//	  logs             every row in (ts, seq) order; the same rows by parent,
//	                   provider, provider+status and status; the newest row
//	                   of each request id
//	  usage            UTC day -> (provider, model, key id) -> counts
//	  dicts            dictionary id -> dictionary, its rules in (created_at,
//	                   id) order and its words; dictOrder, dictNames, the
//	                   default's id, and rule id -> dictionary id
//
// The ordered lists are sorted slices searched with binary search
// (createdList, logList), hand-written over the standard library's slices
// and sort: records and rows arrive nearly in order, so an insert is almost
// always an append, and a list page is one search and a walk over what it
// returns. A B-tree would add a dependency for no gain at the sizes a
// process's memory holds.
//
// # Invariants
//
// The rules are the contract's (store.Backend) and bbolt's (store/bolt),
// kept the same way:
//   - One sync.RWMutex guards everything: a write is atomic and isolated (a
//     batch of log rows, its usage rollup, a dictionary with its rules),
//     reads run in parallel. Every check a write makes (text, ids,
//     uniqueness, bounds) is done before it changes anything, so a failed
//     write leaves the store as it was.
//   - Nothing is shared with callers: records are copied in and copied out
//     (voices' tags, provider options and fallbacks, keys' hash and scope,
//     media bytes, secrets). A voice's provider options are stored as JSON
//     decodes them (numbers become float64), as the other backends return
//     them. Times are kept in UTC.
//   - List positions have bbolt's shapes: 8 bytes of big-endian creation
//     nanoseconds and the id for voices, dictionaries and rules; 8 bytes of
//     timestamp nanoseconds and 8 of sequence for log rows. A list resumes
//     strictly below its position, so records created while a client pages
//     sort newer than it and paging neither repeats nor skips.
//   - Every log index is ordered like the rows, so a filtered page walks the
//     most selective index from one search, and PurgeLogs cuts the same
//     prefix off the rows and each index that holds them.
//   - The usage rollup is updated under the lock that appends the rows it
//     counts, so it always equals their aggregate; PurgeLogs keeps
//     store.UsageRetention of it.
//
// # Fault injection
//
// Tests can make the store fail the way a real one does: SetDown(true)
// makes every call fail with store.ErrUnavailable, as PostgreSQL's do while
// its server is away, until SetDown(false); FailNext makes the next n calls
// of one method fail with a given error; Calls counts the calls of a
// method, to tell what a cache read from the store. An injected failure
// comes before anything else the call does, so the call changes nothing.
//
// # Watching
//
// Store does not implement store.Watcher (nor store.KeyWatcher): like a
// bbolt file it has no writers but its own process, whose callers see
// their own writes, so the gateway keeps it as it keeps bbolt.
package memory

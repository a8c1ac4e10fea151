package bolt

// Hooks for the benchmark fixture builder only: a fixture of a million log
// rows is built without fsync and with full pages, which production must
// not do.

// SetNoSyncForTest disables fsync on commit.
func SetNoSyncForTest(s *Store, noSync bool) { s.db.NoSync = noSync }

// SetLogFillForTest sets the log buckets' page fill ratio.
func SetLogFillForTest(s *Store, fill float64) { s.logFill = fill }

// SyncForTest flushes the file to disk.
func SyncForTest(s *Store) error { return s.db.Sync() }

package migrate

import "testing"

// SetLogBatch makes the migration copy n log rows per transaction until
// the test ends, so a test can stop a copy between batches with a few
// rows instead of thousands.
func SetLogBatch(t testing.TB, n int) {
	old := logBatch
	logBatch = n
	t.Cleanup(func() { logBatch = old })
}

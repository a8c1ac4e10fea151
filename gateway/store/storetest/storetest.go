// Package storetest is the conformance suite of the storage contract
// (gateway/store.Backend), as sdk/sdktest is for provider plugins. Every
// backend runs it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, opts store.Options) store.Backend {
//			return openFreshBackend(t, opts) // empty, closed by t.Cleanup
//		})
//	}
//
// It checks what the contract's doc comments promise and the HTTP layer
// relies on: keys (uniqueness, revocation, listing, admin keys, updates
// of name and scope only), the admin API's organizations, voices (CRUD, paging
// newest first without repeats or skips while voices are added, positions
// that are not the backend's rejected), media (bytes and digests, empty
// uploads), secrets (replace, byte-ordered names), request logs (every
// filter of GET /v1/logs alone and combined against a brute-force model,
// paging while rows arrive, equal timestamps in write order, the retention
// window, purges, atomic batches, every field round-tripped, one row by
// request id), the usage rollup (equal to aggregating the log rows, per
// window and organization, kept past the rows' purge, exact under
// concurrent batches), pronunciation dictionaries and rules (uniqueness,
// bounds under concurrent writers, cascades, the default dictionary, the
// rules a synthesis request reads), text no backend can hold (U+0000,
// invalid UTF-8) refused in every kind of record with a typed error and
// nothing written, while any other text round-trips byte for byte,
// organization isolation for every kind, concurrent writers, the shared
// secret, and a canceled context.
// Each case opens its own empty backend with a clock the
// case controls.
package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
)

// Opener returns a new, empty backend that uses opts (its clock and log
// retention). It registers the backend's Close with t.Cleanup.
type Opener func(t *testing.T, opts store.Options) store.Backend

// Run runs every conformance case against backends made by open, each as
// a subtest.
func Run(t *testing.T, open Opener) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open) })
	}
}

var cases = []struct {
	name string
	fn   func(*testing.T, Opener)
}{
	{"Keys", testKeys},
	{"Secrets", testSecrets},
	{"SealFingerprint", testSealFingerprint},
	{"Media", testMedia},
	{"VoiceCRUD", testVoiceCRUD},
	{"ListVoicesOrgIsolation", testListVoicesOrgIsolation},
	{"ListVoicesPagination", testListVoicesPagination},
	{"ListVoicesRejectsBadInput", testListVoicesRejectsBadInput},
	{"ListLogsFilters", testListLogsFilters},
	{"ListLogsPagingWhileAppending", testListLogsPagingWhileAppending},
	{"ListLogsRetentionWindowMoves", testListLogsRetentionWindowMoves},
	{"ListLogsConfiguredRetention", testListLogsConfiguredRetention},
	{"VoiceConsentRoundTrip", testVoiceConsentRoundTrip},
	{"Fingerprints", testFingerprints},
	{"FingerprintsPurged", testFingerprintsPurged},
	{"SigningKey", testSigningKey},
	{"LogRowRoundTrip", testLogRowRoundTrip},
	{"AppendLogsValidation", testAppendLogsValidation},
	{"PurgeLogs", testPurgeLogs},
	{"ConcurrentWriters", testConcurrentWriters},
	{"UsageMatchesLog", testUsageMatchesLog},
	{"UsageOutlivesLogs", testUsageOutlivesLogs},
	{"UsageRejectsBadWindow", testUsageRejectsBadWindow},
	{"Secret", testSecret},
	{"CanceledContext", testCanceledContext},
	{"GetLog", testGetLog},
	{"UpdateVoice", testUpdateVoice},
	{"Dictionaries", testDictionaries},
	{"DefaultDictionary", testDefaultDictionary},
	{"Rules", testRules},
	{"ListDictionariesAndRulesPaging", testDictionaryPaging},
	{"DictionaryRules", testDictionaryRules},
	{"DictionaryBoundsUnderConcurrency", testDictionaryBoundsConcurrent},
	{"LogRowInvalidText", testLogRowInvalidText},
	{"VoiceInvalidText", testVoiceInvalidText},
	{"RecordsInvalidText", testRecordsInvalidText},
	{"UnusualTextRoundTrips", testUnusualTextRoundTrips},
	{"KeyUpdateAndAdmin", testKeyUpdateAndAdmin},
	{"Orgs", testOrgs},
	{"JobRecords", testJobRecords},
	{"JobLeases", testJobLeases},
	{"JobLeasesConcurrent", testJobLeasesConcurrent},
	{"JobDelete", testJobDelete},
	{"JobRetention", testJobRetention},
}

// clock is a settable time source for Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward and returns the new time.
func (c *clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// openWith opens a backend on clk (nil: the real clock).
func openWith(t *testing.T, open Opener, clk *clock) store.Backend {
	t.Helper()
	var opts store.Options
	if clk != nil {
		opts.Now = clk.Now
	}
	return open(t, opts)
}

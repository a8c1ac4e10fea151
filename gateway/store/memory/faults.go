package memory

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/voxgate/voxgate/gateway/store"
)

// method names a call of the contract, for fault injection and counting.
type method uint8

// The methods of store.Backend that can fail (Secret and Close cannot).
// TestMethodNames checks that the list is the contract's.
const (
	mCreateKey method = iota
	mKeyByHash
	mListKeys
	mRevokeKey
	mCreateVoice
	mGetVoice
	mDeleteVoice
	mUpdateVoice
	mListVoices
	mPutMedia
	mGetMedia
	mMediaData
	mDeleteMedia
	mPutSecret
	mGetSecret
	mDeleteSecret
	mListSecretNames
	mSealFingerprint
	mRecordSealFingerprint
	mAppendLogs
	mListLogs
	mGetLog
	mPurgeLogs
	mUsage
	mCreateDictionary
	mDefaultDictionary
	mGetDictionary
	mUpdateDictionary
	mDeleteDictionary
	mListDictionaries
	mCreateRule
	mGetRule
	mUpdateRule
	mDeleteRule
	mListRules
	mDictionaryRules
	mUpdateKey
	mCreateOrg
	mGetOrg
	mUpdateOrg
	mListOrgs
	mCreateJob
	mGetJob
	mListJobs
	mCancelJob
	mLeaseJob
	mRenewJobLease
	mJobChunks
	mCheckpointJobChunk
	mFinishJob
	mRecordJobDelivery
	mDeleteJob
	mExpiredJobs
	mLeaseJobSweep
	numMethods
)

// methodNames are the methods' Go names, in the order above.
var methodNames = [numMethods]string{
	"CreateKey", "KeyByHash", "ListKeys", "RevokeKey",
	"CreateVoice", "GetVoice", "DeleteVoice", "UpdateVoice", "ListVoices",
	"PutMedia", "GetMedia", "MediaData", "DeleteMedia",
	"PutSecret", "GetSecret", "DeleteSecret", "ListSecretNames", "SealFingerprint", "RecordSealFingerprint",
	"AppendLogs", "ListLogs", "GetLog", "PurgeLogs", "Usage",
	"CreateDictionary", "DefaultDictionary", "GetDictionary", "UpdateDictionary", "DeleteDictionary", "ListDictionaries",
	"CreateRule", "GetRule", "UpdateRule", "DeleteRule", "ListRules", "DictionaryRules",
	"UpdateKey", "CreateOrg", "GetOrg", "UpdateOrg", "ListOrgs",
	"CreateJob", "GetJob", "ListJobs", "CancelJob", "LeaseJob", "RenewJobLease", "JobChunks", "CheckpointJobChunk", "FinishJob", "RecordJobDelivery",
	"DeleteJob", "ExpiredJobs", "LeaseJobSweep",
}

func (m method) String() string { return methodNames[m] }

// methodNamed returns the method called name. An unknown name is a
// mistake in the test that gave it, so it panics, naming the known ones.
func methodNamed(name string) method {
	for i, n := range methodNames {
		if n == name {
			return method(i)
		}
	}
	panic(fmt.Sprintf("memory store: no method %q of store.Backend can fail; the methods are %s", name, strings.Join(methodNames[:], ", ")))
}

// faults is what a test asked to fail, and the calls counted.
type faults struct {
	calls [numMethods]atomic.Int64
	down  atomic.Bool
	// armed counts the methods with failures pending, so that a call
	// with none pending anywhere takes no lock.
	armed atomic.Int32

	mu      sync.Mutex
	pending [numMethods]pendingFault
}

type pendingFault struct {
	n   int
	err error
}

// errDown is what every call fails with while the store is down.
var errDown = fmt.Errorf("taken down by SetDown: %w", store.ErrUnavailable)

// check counts a call of m and returns the failure injected for it, if
// any.
func (f *faults) check(m method) error {
	f.calls[m].Add(1)
	if f.down.Load() {
		return fmt.Errorf("memory store: %s: %w", m, errDown)
	}
	if f.armed.Load() == 0 {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p := &f.pending[m]
	if p.n == 0 {
		return nil
	}
	p.n--
	err := p.err
	if p.n == 0 {
		p.err = nil
		f.armed.Add(-1)
	}
	return fmt.Errorf("memory store: %s: injected failure: %w", m, err)
}

// SetDown takes the store away (down true) or brings it back: while it
// is down every call fails with an error matching store.ErrUnavailable,
// as a PostgreSQL backend's do while its server cannot be reached, and
// changes nothing. The records stay and are there again once it is up.
func (s *Store) SetDown(down bool) { s.faults.down.Store(down) }

// FailNext makes the next n calls of the method called name (its Go name
// in store.Backend, e.g. "AppendLogs") fail with err, wrapped so that
// errors.Is(returned, err) holds; a nil err means store.ErrUnavailable.
// A bbolt disk that is full, say, is
// fmt.Errorf("%w: %w", store.ErrUnavailable, store.ErrFull). The failing
// calls change nothing. n replaces what was pending for the
// method; 0 clears it. A name that is not a method of store.Backend that
// returns an error panics: it is a mistake in the test.
func (s *Store) FailNext(name string, n int, err error) {
	m := methodNamed(name)
	if err == nil {
		err = store.ErrUnavailable
	}
	n = max(n, 0)
	f := &s.faults
	f.mu.Lock()
	defer f.mu.Unlock()
	p := &f.pending[m]
	switch {
	case p.n == 0 && n > 0:
		f.armed.Add(1)
	case p.n > 0 && n == 0:
		f.armed.Add(-1)
	}
	p.n, p.err = n, err
	if n == 0 {
		p.err = nil
	}
}

// Calls returns how many times the method called name (as for FailNext)
// has been called, whatever the outcome: a test can tell, for instance,
// whether a cache in front of the store read it.
func (s *Store) Calls(name string) int64 { return s.faults.calls[methodNamed(name)].Load() }

package memory

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
)

// logEntry is a stored log row: its row (TS in UTC, OrgID set) and its
// place in the organization's log, (ns, seq), where seq counts the
// organization's rows so that rows of one timestamp keep the order they
// were written in.
type logEntry struct {
	ns  int64
	seq uint64
	row store.LogRow
}

// logPositionLen is the length of a log position: 8 bytes of big-endian
// timestamp nanoseconds and 8 of sequence, as bbolt's log keys.
const logPositionLen = 16

func (e *logEntry) position() store.Position {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(make([]byte, 0, logPositionLen), uint64(e.ns)), e.seq)
}

// logList is a list of entries in (ns, seq) order, oldest first. Rows are
// logged as requests end, so an insert is nearly always an append.
type logList []*logEntry

// below returns how many entries sort before (ns, seq).
func (l logList) below(ns int64, seq uint64) int {
	return sort.Search(len(l), func(i int) bool {
		e := l[i]
		return e.ns > ns || (e.ns == ns && e.seq >= seq)
	})
}

func (l *logList) insert(e *logEntry) {
	s := *l
	if n := len(s); n == 0 || s[n-1].ns < e.ns || (s[n-1].ns == e.ns && s[n-1].seq < e.seq) {
		*l = append(s, e)
		return
	}
	*l = slices.Insert(s, s.below(e.ns, e.seq), e)
}

// cut removes the entries older than ns (a prefix) and reports whether
// the list is left empty.
func (l *logList) cut(ns int64) (empty bool) {
	*l = slices.Delete(*l, 0, l.below(ns, 0))
	return len(*l) == 0
}

// providerStatus is the key of the provider+status index.
type providerStatus struct {
	provider string
	status   int
}

// orgLogs is an organization's log: every row, the same rows by the
// values GET /v1/logs filters on, each list in the rows' order, and the
// newest row of each request id. A row is in an index only with a value
// for it (a non-empty string, a non-zero status).
type orgLogs struct {
	seq              uint64
	all              logList
	byParent         map[string]logList
	byProvider       map[string]logList
	byProviderStatus map[providerStatus]logList
	byStatus         map[int]logList
	// newestOf holds only the newest row of a request id (ids rarely
	// repeat; GetLog returns the newest): the rows of an id older than it
	// are purged before it, never after.
	newestOf map[string]*logEntry
}

func newOrgLogs() orgLogs {
	return orgLogs{
		byParent:         map[string]logList{},
		byProvider:       map[string]logList{},
		byProviderStatus: map[providerStatus]logList{},
		byStatus:         map[int]logList{},
		newestOf:         map[string]*logEntry{},
	}
}

// eachIndex calls the functions given for every index list e belongs in,
// with its key (and map).
func (ol *orgLogs) eachIndex(e *logEntry, str func(map[string]logList, string), ps func(providerStatus), st func(int)) {
	r := &e.row
	if r.ParentRequestID != "" {
		str(ol.byParent, r.ParentRequestID)
	}
	if r.Provider != "" {
		str(ol.byProvider, r.Provider)
		if r.Status != 0 {
			ps(providerStatus{r.Provider, r.Status})
		}
	}
	if r.Status != 0 {
		st(r.Status)
	}
}

func (ol *orgLogs) add(e *logEntry) {
	ol.all.insert(e)
	ol.eachIndex(e,
		func(m map[string]logList, k string) { l := m[k]; l.insert(e); m[k] = l },
		func(k providerStatus) { l := ol.byProviderStatus[k]; l.insert(e); ol.byProviderStatus[k] = l },
		func(k int) { l := ol.byStatus[k]; l.insert(e); ol.byStatus[k] = l })
	if id := e.row.RequestID; id != "" {
		if cur := ol.newestOf[id]; cur == nil || cur.ns < e.ns || (cur.ns == e.ns && cur.seq < e.seq) {
			ol.newestOf[id] = e
		}
	}
}

// purge removes the rows older than ns and returns how many. The rows
// removed are a prefix of every list that holds one, so each index list
// a removed row is in loses its own prefix, and an emptied list its key.
func (ol *orgLogs) purge(ns int64) int {
	n := ol.all.below(ns, 0)
	for _, e := range ol.all[:n] {
		ol.eachIndex(e,
			func(m map[string]logList, k string) { cutIndex(m, k, ns) },
			func(k providerStatus) { cutIndex(ol.byProviderStatus, k, ns) },
			func(k int) { cutIndex(ol.byStatus, k, ns) })
		if ol.newestOf[e.row.RequestID] == e {
			delete(ol.newestOf, e.row.RequestID)
		}
	}
	ol.all.cut(ns)
	return n
}

// cutIndex cuts the rows older than ns off the list of key k, once: a
// list whose first row is not older has been cut already.
func cutIndex[K comparable](m map[K]logList, k K, ns int64) {
	l, ok := m[k]
	if !ok || l[0].ns >= ns {
		return
	}
	if l.cut(ns) {
		delete(m, k)
		return
	}
	m[k] = l
}

// choose returns the list a filtered listing walks: the most selective
// index the filter allows (a conversation's children are few;
// provider+status is exact for the dashboard's common choice), or every
// row. No list means no row has the value.
func (ol *orgLogs) choose(f *store.LogFilter) logList {
	switch {
	case f.ParentRequestID != "":
		return ol.byParent[f.ParentRequestID]
	case f.Provider != "" && f.Status != 0:
		return ol.byProviderStatus[providerStatus{f.Provider, f.Status}]
	case f.Provider != "":
		return ol.byProvider[f.Provider]
	case f.Status != 0:
		return ol.byStatus[f.Status]
	}
	return ol.all
}

// AppendLogs implements store.LogStore: the rows and their usage rollup
// under one lock. Rows with a zero TS get the current time; a row without
// an organization or with text the store cannot hold fails the batch,
// which then writes nothing.
func (s *Store) AppendLogs(ctx context.Context, rows []store.LogRow) error {
	if err := s.enter(ctx, mAppendLogs); err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil
	}
	for i := range rows {
		if rows[i].OrgID == "" {
			return fmt.Errorf("memory store: append logs: row %d (request %q) has no org id", i, rows[i].RequestID)
		}
		if err := rows[i].CheckText(); err != nil {
			return fmt.Errorf("memory store: append logs: row %d: %w", i, err)
		}
	}
	now := s.now()
	usage := store.RollUp(rows, now)
	// One allocation for the batch's entries: they are purged together
	// too, being close in time.
	entries := make([]logEntry, len(rows))
	s.mu.Lock()
	defer s.mu.Unlock()
	var o *org
	for i := range rows {
		r := &rows[i]
		if o == nil || r.OrgID != rows[i-1].OrgID {
			o = s.orgForWrite(r.OrgID)
		}
		ts := r.TS
		if ts.IsZero() {
			ts = now
		}
		o.logs.seq++
		e := &entries[i]
		e.ns, e.seq, e.row = unixNanos(ts), o.logs.seq, *r
		e.row.TS = time.Unix(0, e.ns).UTC()
		o.logs.add(e)
	}
	for i := range usage {
		s.orgs[usage[i].OrgID].addUsage(&usage[i].Row)
	}
	return nil
}

// ListLogs implements store.LogStore: a search in the most selective list
// for the filter (choose), then a walk back over the page, stopping at
// Since or the retention and peeking one row past the page for hasMore.
func (s *Store) ListLogs(ctx context.Context, orgID string, f store.LogFilter, limit int, after store.Position) (rows []store.LogRow, next store.Position, hasMore bool, err error) {
	if err := s.enter(ctx, mListLogs); err != nil {
		return nil, nil, false, err
	}
	if limit < 1 {
		return nil, nil, false, fmt.Errorf("memory store: list logs: limit %d must be positive", limit)
	}
	if after != nil && len(after) != logPositionLen {
		return nil, nil, false, fmt.Errorf("memory store: list logs: %w", store.ErrInvalidPosition)
	}
	since := s.now().Add(-s.retention)
	if f.Since.After(since) {
		since = f.Since
	}
	if !f.Until.IsZero() && !f.Until.After(since) {
		return nil, nil, false, nil
	}
	lo := unixNanos(since)
	s.mu.RLock()
	defer s.mu.RUnlock()
	o := s.org(orgID)
	if o == nil {
		return nil, nil, false, nil
	}
	l := o.logs.choose(&f)
	end := len(l)
	if !f.Until.IsZero() {
		end = l.below(unixNanos(f.Until), 0)
	}
	if after != nil {
		end = min(end, l.below(int64(binary.BigEndian.Uint64(after)), binary.BigEndian.Uint64(after[8:])))
	}
	var last *logEntry
	for i := end - 1; i >= 0 && l[i].ns >= lo; i-- {
		e := l[i]
		if !f.Matches(&e.row) {
			continue
		}
		if len(rows) == limit {
			hasMore = true
			break
		}
		if rows == nil {
			rows = make([]store.LogRow, 0, min(limit, 256))
		}
		rows = append(rows, e.row)
		last = e
	}
	if last != nil {
		next = last.position()
	}
	return rows, next, hasMore, nil
}

// GetLog implements store.LogStore: the newest row of the request id, by
// one map lookup.
func (s *Store) GetLog(ctx context.Context, orgID, requestID string) (*store.LogRow, error) {
	if err := s.enter(ctx, mGetLog); err != nil {
		return nil, err
	}
	lo := unixNanos(s.now().Add(-s.retention))
	s.mu.RLock()
	defer s.mu.RUnlock()
	if o := s.org(orgID); o != nil && requestID != "" {
		if e := o.logs.newestOf[requestID]; e != nil && e.ns >= lo {
			r := e.row
			return &r, nil
		}
	}
	return nil, fmt.Errorf("memory store: get log %q: %w", requestID, store.ErrNotFound)
}

// PurgeLogs implements store.LogStore: every organization's rows older
// than olderThan go, and its usage rollup of the days before
// store.UsageRetention.
func (s *Store) PurgeLogs(ctx context.Context, olderThan time.Time) (int, error) {
	if err := s.enter(ctx, mPurgeLogs); err != nil {
		return 0, err
	}
	cutoff := unixNanos(olderThan)
	usageCutoff := unixNanos(store.UsageDayOf(s.now().Add(-store.UsageRetention)))
	s.purgeFingerprints(cutoff)
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, o := range s.orgs {
		n += o.logs.purge(cutoff)
		for day := range o.usage {
			if day < usageCutoff {
				delete(o.usage, day)
			}
		}
	}
	return n, nil
}

// unixNanos returns t in nanoseconds since the epoch, saturated outside
// the years 1678 to 2262 that an int64 holds (where t.UnixNano is
// undefined), so that order is kept for every time.
func unixNanos(t time.Time) int64 {
	const maxSec = math.MaxInt64 / int64(time.Second)
	switch sec := t.Unix(); {
	case sec > maxSec-1:
		return math.MaxInt64
	case sec < -maxSec+1:
		return math.MinInt64
	}
	return t.UnixNano()
}

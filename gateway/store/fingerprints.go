package store

import (
	"context"
	"time"
)

// Fingerprint is the acoustic fingerprint of one answer's audio, kept so
// that POST /v1/provenance/identify finds the answer again from audio
// that was re-encoded or trimmed (gateway/provenance).
type Fingerprint struct {
	OrgID, RequestID string
	// TS is when the answer was made (zero means now on write).
	TS time.Time
	// Values are the raw Chromaprint values, one per ~124 ms.
	Values []uint32
	// Keys are the distinct index keys of Values (provenance.Keys), by
	// which MatchFingerprints finds candidates.
	Keys []uint32
}

// FingerprintStore stores fingerprints indexed by their keys. Every
// driver implements it; it is an extra of its own rather than part of
// Backend so that the request path's other consumers need not know it.
type FingerprintStore interface {
	// PutFingerprint stores f, replacing any of the same request; f must
	// name its organization and request.
	PutFingerprint(ctx context.Context, f *Fingerprint) error
	// MatchFingerprints returns up to limit fingerprints of orgID that
	// share at least one key with keys, those sharing the most first
	// (ties newest first). Another organization's are never returned.
	MatchFingerprints(ctx context.Context, orgID string, keys []uint32, limit int) ([]Fingerprint, error)
	// DeleteFingerprint removes orgID's fingerprint of requestID (a job's
	// id for a job's file), if any: nil when there is none.
	DeleteFingerprint(ctx context.Context, orgID, requestID string) error
	// ForEachFingerprint calls fn with every fingerprint, organization
	// by organization (for voxgate migrate); fn's error stops it.
	ForEachFingerprint(ctx context.Context, fn func(*Fingerprint) error) error
}

// Fingerprints are purged with the log rows: every driver's PurgeLogs
// deletes the fingerprints older than its cutoff too, so that identify
// never finds an answer whose record is gone.

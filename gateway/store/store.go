// Package store defines the gateway's persistent state, independent of
// where it is kept: the records (API keys, voices, media, encrypted provider
// secrets, request log rows), the errors every backend reports, and the
// Backend contract that each storage implementation satisfies.
//
// Implementations live in sub-packages and are peers behind this contract,
// in the manner of Vault's physical.Backend:
//
//	store/bolt      one bbolt file, the embedded single-machine default
//	store/postgres  PostgreSQL, shared by several gateway instances
//	store/memory    the process's memory: unit tests (with fault
//	                injection) and trying the gateway out; nothing kept
//
// All pass one conformance suite, store/storetest. Nothing outside the
// storage packages names a backend's types: the gateway opens a Backend
// through store/driver and hands each consumer only the few methods it uses,
// through small interfaces declared by that consumer (auth's key lookups,
// reqlog's sink, credentials' secrets, the speech service's voices and
// media, the HTTP layer's list reads).
//
// The records carry no wire encoding: the HTTP layer renders them in its
// own types, and each backend encodes them in its own format.
package store

import (
	"errors"
	"slices"
	"time"
)

// Sentinel errors. Callers compare with errors.Is; backends wrap them with
// context (which id, which operation).
var (
	// ErrNotFound is returned when a record does not exist in the caller's
	// organization. A record of another organization is indistinguishable
	// from a missing one.
	ErrNotFound = errors.New("not found")
	// ErrLocked is returned when another process holds an embedded
	// database.
	ErrLocked = errors.New("database is locked by another process")
	// ErrExists is returned when creating a record whose id is already taken.
	ErrExists = errors.New("already exists")
	// ErrInvalidPosition is returned by the list methods when an `after`
	// position is not one they could have produced.
	ErrInvalidPosition = errors.New("invalid list position")
	// ErrUnavailable is matched by failures that are expected to pass:
	// a networked backend that cannot be reached (a PostgreSQL server
	// that is down or unreachable), or a disk that is full (ErrFull). The
	// HTTP layer answers 503 for it instead of 500, and the request-log
	// writer holds its rows and retries: the request may succeed later.
	ErrUnavailable = errors.New("storage unavailable")
	// ErrFull is matched, together with ErrUnavailable, by a write that
	// failed because the file system holding an embedded database is out
	// of space or quota (ENOSPC, EDQUOT). The transaction was rolled
	// back; reads still work, and writes succeed again once space is
	// freed, without a restart.
	ErrFull = errors.New("storage full")
)

// DefaultLogRetention is how long request log rows are kept unless the
// deployment says otherwise (storage.log_retain_days).
const DefaultLogRetention = 30 * 24 * time.Hour

// Position is an opaque place in a list: the `after` a list method resumes
// from and the `next` it returns. Each backend defines its encoding and
// rejects positions it could not have produced with ErrInvalidPosition.
// Positions are not authenticated here; the HTTP layer signs them into
// cursors bound to an organization.
type Position []byte

// APIKey is a gateway API key. Only the SHA-256 of the key is stored; the
// key itself is shown once, when it is issued.
type APIKey struct {
	// ID identifies the key for listing and revocation.
	ID string
	// OrgID is the organization the key authenticates as.
	OrgID string
	// Name is a human label.
	Name string
	// Prefix is the first characters of the key, for display.
	Prefix string
	// Hash is sha256(key).
	Hash []byte
	// CreatedAt is the issue time.
	CreatedAt time.Time
	// RevokedAt is the revocation time, zero while the key is active.
	RevokedAt time.Time
	// Scope restricts what the key may do; the zero value restricts
	// nothing.
	Scope KeyScope
	// Admin marks an admin key: it authenticates the admin API
	// (/v1/admin/) and nothing else. Its OrgID is AdminOrg.
	Admin bool
}

// AdminOrg is the OrgID of admin keys. It is not a valid organization id
// (ids are lower-case letters, digits, - and _), so no organization can
// be named like it and an admin key never authenticates as one.
const AdminOrg = "*admin"

// KeyScope is what an API key may do beyond authenticating its
// organization.
type KeyScope struct {
	// ExpiresAt ends the key's validity; zero means it never expires.
	ExpiresAt time.Time
	// Providers lists the provider ids the key may synthesize with, and
	// Models the "provider/model" pairs; an empty list allows any.
	Providers []string
	Models    []string
	// Budget caps the credits the key may spend per BudgetPeriod ("day" or
	// "month", UTC); 0 means no cap of its own (the organization's still
	// holds).
	Budget       int64
	BudgetPeriod string
	// BudgetCost caps the money the key may spend per BudgetPeriod, in
	// nano-units of the gateway's currency; 0 means none of its own.
	BudgetCost int64
	// RatePerMinute caps the requests the key makes per minute, beside its
	// organization's rate limits; 0 means no limit of its own.
	RatePerMinute int
}

// Allows reports whether the scope lets a key use provider's model; a nil
// scope allows everything.
func (s *KeyScope) Allows(provider, model string) bool {
	if s == nil {
		return true
	}
	if len(s.Providers) > 0 && !slices.Contains(s.Providers, provider) {
		return false
	}
	return len(s.Models) == 0 || slices.Contains(s.Models, provider+"/"+model)
}

// Expired reports whether the scope's expiry is at or before now.
func (s *KeyScope) Expired(now time.Time) bool {
	return !s.ExpiresAt.IsZero() && !now.Before(s.ExpiresAt)
}

// Active reports whether the key has not been revoked.
func (k *APIKey) Active() bool { return k.RevokedAt.IsZero() }

// Org is an organization made through the admin API. Organizations
// declared in gateway.yaml are not stored: the file stays their source.
type Org struct {
	// ID is the organization's id (lower-case letters, digits, - and _).
	ID string
	// Name is a human label.
	Name string
	// Disabled refuses the organization's keys (403) while set.
	Disabled bool
	// Budget caps the credits spent per BudgetPeriod ("day" or "month");
	// 0 means none.
	Budget       int64
	BudgetPeriod string
	// BudgetCost caps the money spent per BudgetPeriod, in nano-units of
	// the gateway's currency; 0 means none.
	BudgetCost int64
	// RatePerMinute caps the organization's synthesis requests per
	// minute; 0 means no limit.
	RatePerMinute int
	// Providers is the organization's access by provider id; a provider
	// it does not list is not enabled for it. Never nil when read back.
	Providers map[string]OrgProvider
	// Loudness is the organization's default EBU R128 target for clips
	// and conversations that ask for none; nil means none.
	Loudness *OrgLoudness
	// FailoverWindowMs is how much audio (ms) a realtime context may have
	// sent and still move to a fallback; nil means the gateway's default.
	FailoverWindowMs *int
	// Provenance is the organization's provenance settings; the zero
	// value is the default (marked, consent required, records signed).
	Provenance OrgProvenance
	// CreatedAt and UpdatedAt are the creation and last change.
	CreatedAt, UpdatedAt time.Time
}

// OrgProvenance is an organization's provenance settings, each named so
// that false is the default (docs/provenance.md).
type OrgProvenance struct {
	// Unmarked turns the in-file mark off.
	Unmarked bool
	// ConsentOptional lets a voice be cloned without a consent attestation.
	ConsentOptional bool
	// NoRecords turns the signed record off (no SHA-256, no signature).
	NoRecords bool
}

// OrgLoudness is a loudness target: integrated LUFS, true-peak dBTP.
type OrgLoudness struct {
	Integrated, TruePeak float64
}

// OrgProvider is an organization's access to one provider, as an
// organization of gateway.yaml says it under orgs.<id>.providers.
type OrgProvider struct {
	Enabled bool
	// BYOK says the organization brings its own key, stored with
	// PUT /v1/api-keys/{provider}.
	BYOK bool
	// Managed, when set, narrows the provider's managed flag for this
	// organization (it can turn the gateway's key off, never on).
	Managed *bool
}

// Voice is a saved voice of an organization.
type Voice struct {
	// ID is the voice's uuid, the `voiceId` of speech requests.
	ID string
	// OrgID is the owning organization.
	OrgID string
	// Title is the display name.
	Title string
	// Provider is the provider id (e.g. "espeak").
	Provider string
	// Model is the provider's model id.
	Model string
	// VoiceID is the provider-side voice identifier.
	VoiceID string
	// Tags are free-form labels; never nil when read back.
	Tags []string
	// Gender is free-form.
	Gender string
	// Description is free-form.
	Description string
	// ProviderOptions is passed to the provider on every use of the voice;
	// never nil when read back.
	ProviderOptions map[string]any
	// MediaID links the uploaded media the voice was cloned from, if any.
	MediaID string
	// Fallbacks are equivalent voices on other providers, tried in order
	// when this one's provider is down; never nil when read back.
	Fallbacks []VoiceTarget
	// CreatedAt orders the voice list (newest first).
	CreatedAt time.Time
	// UpdatedAt is the last change.
	UpdatedAt time.Time
	// Consent is the attestation given when the voice was cloned from
	// uploaded media; nil when none was (a provider voice, or an
	// organization where consent is optional). It goes into the
	// provenance record of every clip made with the voice.
	Consent *VoiceConsent
}

// VoiceConsent attests that the person whose voice was cloned agreed.
type VoiceConsent struct {
	// AttestedBy names who attests; Relation is theirs to the speaker
	// ("self", "employer", "agent", "guardian", ...); Statement is what
	// they attest; Time is when.
	AttestedBy, Relation, Statement string
	Time                            time.Time
}

// VoiceTarget is a provider voice a saved voice can fall back to.
type VoiceTarget struct {
	Provider, Model, VoiceID string
}

// Media is the metadata of an uploaded audio file (for voice cloning).
type Media struct {
	// ID is the media id (uuid).
	ID string
	// OrgID is the owning organization.
	OrgID string
	// Filename is the client's file name, if it sent one.
	Filename string
	// MediaType is the Content-Type of the upload.
	MediaType string
	// Bytes is the size of the data.
	Bytes int64
	// DurationMS is the audio duration, if known.
	DurationMS int64
	// SHA256 is the lowercase hex digest of the data.
	SHA256 string
	// CreatedAt is the upload time.
	CreatedAt time.Time
}

// LogRow is one request log row.
type LogRow struct {
	// RequestID is the request's id.
	RequestID string
	// ParentRequestID is set on the per-turn child rows of a conversation.
	ParentRequestID string
	// OrgID is the organization.
	OrgID string
	// TS is the request time; it orders the log (zero means "now" on write).
	TS time.Time
	// Path is the request path.
	Path string
	// Status is the HTTP status code.
	Status int
	// Provider is the provider id.
	Provider string
	// Model is the model id.
	Model string
	// VoiceID is the provider-side voice id.
	VoiceID string
	// VoiceRef is the saved voice id, if one was used.
	VoiceRef string
	// CharCount is the number of characters synthesized.
	CharCount int
	// CreditsUsed is the credits charged.
	CreditsUsed int
	// LatencyMS is the request latency.
	LatencyMS int64
	// ErrorCode is the problem code of a failed request.
	ErrorCode string
	// ErrorDetail is the problem detail of a failed request.
	ErrorDetail string
	// ProviderOptions is the request's providerOptions as JSON text.
	ProviderOptions string
	// ModerationDecision is the moderation outcome.
	ModerationDecision string
	// ModerationReasonType is the moderation reason type.
	ModerationReasonType string
	// ModerationReasonDetail is the moderation reason detail.
	ModerationReasonDetail string
	// ModerationConfidence is the moderation confidence.
	ModerationConfidence float64
	// ModerationLatencyMS is the moderation check latency.
	ModerationLatencyMS int64
	// TimeToFirstAudioMS is, for a realtime context, the time from its
	// first text to its first audio on the socket; 0 elsewhere.
	TimeToFirstAudioMS int64
	// TextWaitMS is, for a realtime context, the time from its first
	// text until its input aggregation cut the first segment: the
	// sentence buffer's share of TimeToFirstAudioMS; 0 elsewhere.
	TextWaitMS int64
	// KeyID is the id of the API key that made the request ("" in rows
	// written before keys were logged).
	KeyID string
	// AudioMS is the length of the audio sent, in milliseconds (0 when
	// none was, or the format's length could not be told).
	AudioMS int64
	// Cache is the response cache's outcome ("hit", "miss", "bypass" for
	// Cache-Control: no-cache, or "" when the cache is off or not asked).
	Cache string
	// Transcoded says what the gateway converted the provider's audio
	// from and to ("pcm_24000->mp3_24000_96"); "" when the provider's
	// bytes went to the client untouched.
	Transcoded string
	// Sanitized marks a row that the store refused as it was and that was
	// written with its unstorable text (NUL, invalid UTF-8) replaced by
	// U+FFFD (see LogRow.Sanitize): its strings are not byte for byte what
	// the request carried.
	Sanitized bool
	// Provenance is the answer's signed provenance record (JSON of
	// provenance.Signed); "" for answers without audio.
	Provenance string
	// Cost is what the request cost in money, in nano-units of Currency
	// (see package pricing): the provider calls it made, priced at the
	// model's prices; 0 for a failure, a cache hit or an unpriced model.
	Cost int64
	// Currency is Cost's currency ("USD"); "" in rows written before
	// costs were logged.
	Currency string
	// CostEstimate is what the request was quoted before its calls were
	// made; Cost differs from it where the answer's length or the
	// provider's own figure replaced the estimate.
	CostEstimate int64
}

// LogFilter selects log rows. Zero fields do not filter.
type LogFilter struct {
	// Provider keeps rows of one provider.
	Provider string
	// Status keeps rows with this HTTP status (0 = any).
	Status int
	// ParentRequestID keeps the child rows of one conversation request.
	ParentRequestID string
	// Since is the inclusive lower bound on TS.
	Since time.Time
	// Until is the exclusive upper bound on TS.
	Until time.Time
}

// Matches checks the equality predicates of f (not the time range).
func (f *LogFilter) Matches(r *LogRow) bool {
	return (f.Provider == "" || r.Provider == f.Provider) &&
		(f.Status == 0 || r.Status == f.Status) &&
		(f.ParentRequestID == "" || r.ParentRequestID == f.ParentRequestID)
}

// Options are what every backend takes when it is opened.
type Options struct {
	// Now returns the current time. Nil means time.Now. Tests set it to
	// control the retention window and default timestamps.
	Now func() time.Time
	// LogRetention is how long log rows are listed and kept; zero means
	// DefaultLogRetention.
	LogRetention time.Duration
}

// Clock returns o.Now, or time.Now when it is nil.
func (o Options) Clock() func() time.Time {
	if o.Now == nil {
		return time.Now
	}
	return o.Now
}

// Retention returns o.LogRetention, or DefaultLogRetention when it is zero.
func (o Options) Retention() time.Duration {
	if o.LogRetention <= 0 {
		return DefaultLogRetention
	}
	return o.LogRetention
}

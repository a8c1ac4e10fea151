// Package problem defines the gateway's error values and their mapping to
// RFC 9457 problem objects.
//
// Failures are created where they are understood, as *Error values with a
// Code; the HTTP edge turns any error into a problem object through From,
// so the code-to-status table lives here and nowhere else.
package problem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/sdk"
)

// Code is a machine-readable error code, the `code` of a problem object.
type Code string

// The codes of DESIGN.md's error table.
const (
	InvalidJSON             Code = "invalid_json"
	ValidationFailed        Code = "validation_failed"
	VoiceConflict           Code = "voice_conflict"
	ParamNotAllowedOnStream Code = "param_not_allowed_on_stream"
	InvalidCursor           Code = "invalid_cursor"
	Unauthorized            Code = "unauthorized"
	ProviderDisabled        Code = "provider_disabled"
	// OriginNotAllowed refuses a browser's CORS preflight from an origin
	// that is not in cors.allowed_origins.
	OriginNotAllowed Code = "origin_not_allowed"
	// NoAPIKey says the organization brings its own key for the provider
	// (BYOK) but has none stored, and may not use the gateway's managed
	// key: the documented code. Before docs/compatibility.md the same
	// situation was 422 provider_credentials_missing, its alias.
	NoAPIKey Code = "no_api_key"
	// BYOKNotAllowed refuses to store a key the organization's
	// configuration would never use (its byok flag is off).
	BYOKNotAllowed Code = "byok_not_allowed"
	// ProviderKeyRejected says the provider refused a key given to PUT
	// /v1/api-keys/{providerId}; the key was not stored.
	ProviderKeyRejected Code = "provider_key_rejected"
	// Conflict is the documented 409: a name or word already taken, or a
	// change the resource's state forbids.
	Conflict           Code = "conflict"
	DictionaryNotFound Code = "dictionary_not_found"
	RuleNotFound       Code = "rule_not_found"
	// LimitReached refuses a write that would take an organization or a
	// dictionary past a bound it may not pass.
	LimitReached         Code = "limit_reached"
	VoiceNotFound        Code = "voice_not_found"
	MediaNotFound        Code = "media_not_found"
	NotFound             Code = "not_found"
	MethodNotAllowed     Code = "method_not_allowed"
	PayloadTooLarge      Code = "payload_too_large"
	UnsupportedMediaType Code = "unsupported_media_type"
	VoiceIncomplete      Code = "voice_incomplete"
	UnknownProvider      Code = "unknown_provider"
	UnknownModel         Code = "unknown_model"
	UnknownVoice         Code = "unknown_voice"
	TextTooLong          Code = "text_too_long"
	// OutputTooLarge says whole-clip processing would produce a longer or
	// larger answer than limits.max_output_seconds / max_output_bytes.
	OutputTooLarge Code = "output_too_large"
	// OutputFormatUnsupported names a known audio format this gateway
	// cannot produce (AAC); the detail lists the formats it can.
	OutputFormatUnsupported Code = "output_format_unsupported"
	ProviderRejected        Code = "provider_rejected_request"
	// ModerationBlocked is the code of the moderation envelope; it appears
	// as a problem only inside a conversation's failedTurns.
	ModerationBlocked Code = "content_moderation_blocked"
	RateLimited       Code = "rate_limited"
	// TimestampsUnavailable says word timestamps could not be produced
	// for the request: the documented code and status. Before
	// docs/compatibility.md a model without timestamps was 501
	// timestamps_unsupported, its alias.
	TimestampsUnavailable Code = "timestamps_unavailable"
	StreamingUnsupported  Code = "streaming_unsupported"
	CloningUnsupported    Code = "cloning_unsupported"
	ProviderError         Code = "provider_error"
	ProviderUnavailable   Code = "provider_unavailable"
	ProviderTimeout       Code = "provider_timeout"
	Internal              Code = "internal_error"
	Unavailable           Code = "service_unavailable"
	// StorageUnavailable says the shared database could not be reached;
	// the request may succeed once it is back.
	StorageUnavailable Code = "storage_unavailable"
	// RequestTimeout says the gateway's own limit on a request
	// (server.request_timeout) ran out, as opposed to a provider's.
	RequestTimeout Code = "request_timeout"
	// ReadTimeout says the request itself did not arrive in time
	// (server.read_timeout): a slow or stalled client.
	ReadTimeout Code = "read_timeout"
	// HeaderTooLarge says the request's headers do not fit the buffer a
	// connection reads them into (fasthttp's, 4 KiB).
	HeaderTooLarge Code = "header_too_large"
	// BadRequest says the HTTP request itself is malformed (its framing,
	// not its body's content).
	BadRequest Code = "bad_request"
	// Cancelled marks work stopped before it finished: the client went
	// away, or a sibling turn of a conversation failed first. It appears in
	// log rows, with status 499 as nginx uses it; no response carries it.
	Cancelled Code = "cancelled"
	// KeyScopeDenied says the API key's scope does not allow the
	// provider or model asked for.
	KeyScopeDenied Code = "key_scope_denied"
	// BudgetExceeded says an organization's or a key's budget (credits or
	// money; the detail and the RateLimit-Policy name which) for
	// the period is spent; Retry-After says when it resets.
	BudgetExceeded Code = "budget_exceeded"
	// BudgetUnavailable says the shared budget counter could not be asked
	// and the deployment fails closed.
	BudgetUnavailable Code = "budget_unavailable"
	// RangeNotSatisfiable says a Range header asked for bytes outside a
	// file (a long-form job's audio or captions).
	RangeNotSatisfiable Code = "range_not_satisfiable"

	// The realtime WebSocket's own codes (docs/realtime.md): they travel
	// in error messages on the socket, except WebSocketRequired, the
	// answer to a plain GET of the realtime route.
	WebSocketRequired Code = "websocket_required"
	UnknownContext    Code = "unknown_context"
	ContextExists     Code = "context_exists"
	TooManyContexts   Code = "too_many_contexts"
	TextBufferFull    Code = "text_buffer_full"
	// SessionExpired says a dashboard session's time is up: sign in again.
	SessionExpired Code = "session_expired"
	// CSRFFailed says a dashboard request that changes something lacked
	// its session's CSRF token.
	CSRFFailed Code = "csrf_failed"
	// Forbidden says the key may not call the route: an organization's
	// key on the admin API, or an admin key anywhere else.
	Forbidden Code = "forbidden"
	// OrgDisabled says the key's organization was disabled through the
	// admin API.
	OrgDisabled Code = "org_disabled"
)

type meta struct {
	status int
	title  string
}

// table is the one code-to-status mapping of the gateway.
var table = map[Code]meta{
	InvalidJSON:             {400, "Request body is not valid JSON"},
	ValidationFailed:        {400, "Request validation failed"},
	VoiceConflict:           {400, "Give either voiceId or model and voice"},
	ParamNotAllowedOnStream: {400, "Parameter not allowed on the stream endpoint"},
	InvalidCursor:           {400, "Invalid cursor"},
	Unauthorized:            {401, "Missing or invalid API key"},
	ProviderDisabled:        {403, "Provider disabled for this organization"},
	OriginNotAllowed:        {403, "Origin not allowed"},
	NoAPIKey:                {403, "No provider key for this organization"},
	BYOKNotAllowed:          {403, "This organization does not bring its own key for this provider"},
	ProviderKeyRejected:     {400, "The provider rejected the key"},
	Conflict:                {409, "Conflict"},
	DictionaryNotFound:      {404, "Pronunciation dictionary not found"},
	LimitReached:            {400, "Limit reached"},
	RuleNotFound:            {404, "Pronunciation rule not found"},
	VoiceNotFound:           {404, "Voice not found"},
	MediaNotFound:           {404, "Media not found"},
	NotFound:                {404, "Not found"},
	MethodNotAllowed:        {405, "Method not allowed"},
	PayloadTooLarge:         {413, "Payload too large"},
	UnsupportedMediaType:    {415, "Unsupported media type"},
	VoiceIncomplete:         {422, "Saved voice is incomplete"},
	UnknownProvider:         {422, "Unknown provider"},
	UnknownModel:            {422, "Unknown model"},
	UnknownVoice:            {422, "Unknown provider voice"},
	TextTooLong:             {422, "Text too long"},
	OutputTooLarge:          {422, "Output too large"},
	OutputFormatUnsupported: {422, "Output format not supported"},
	ProviderRejected:        {422, "The provider rejected the request"},
	ModerationBlocked:       {422, "Blocked by content moderation"},
	RateLimited:             {429, "Rate limit exceeded"},
	TimestampsUnavailable:   {503, "Word timestamps unavailable"},
	StreamingUnsupported:    {501, "Streaming not supported by this model"},
	CloningUnsupported:      {501, "Voice cloning not supported by this provider"},
	ProviderError:           {502, "Provider error"},
	ProviderUnavailable:     {503, "Provider unavailable"},
	ProviderTimeout:         {504, "Provider timed out"},
	Internal:                {500, "Internal error"},
	Unavailable:             {503, "Service unavailable"},
	StorageUnavailable:      {503, "Storage unavailable"},
	RequestTimeout:          {504, "Request timed out"},
	ReadTimeout:             {408, "Request not received in time"},
	HeaderTooLarge:          {431, "Request headers too large"},
	BadRequest:              {400, "Malformed HTTP request"},
	Cancelled:               {499, "Cancelled before it finished"},
	KeyScopeDenied:          {403, "Not allowed for this API key"},
	BudgetExceeded:          {429, "Budget exceeded"},
	BudgetUnavailable:       {503, "Budget unavailable"},
	RangeNotSatisfiable:     {416, "Range not satisfiable"},
	WebSocketRequired:       {426, "WebSocket upgrade required"},
	UnknownContext:          {400, "No such open context"},
	ContextExists:           {409, "Context already open"},
	TooManyContexts:         {429, "Too many open contexts"},
	TextBufferFull:          {429, "Too much text waiting to be spoken"},
	SessionExpired:          {401, "Dashboard session expired"},
	CSRFFailed:              {403, "Missing or wrong CSRF token"},
	Forbidden:               {403, "Not allowed for this kind of key"},
	OrgDisabled:             {403, "Organization disabled"},
}

// FieldError is one entry of a problem's `validation` array.
type FieldError struct {
	Path    []string `json:"path"`
	Message string   `json:"message"`
}

// Error is a gateway failure with everything its problem object needs.
type Error struct {
	Code       Code
	Detail     string
	Validation []FieldError
	// Provider, UpstreamCode and UpstreamStatus describe a provider-side
	// failure.
	Provider       string
	UpstreamCode   string
	UpstreamStatus int
	// TurnIndex names the failed turn of a conversation; nil otherwise.
	TurnIndex *int
	// RetryAfter sets the Retry-After header when positive.
	RetryAfter time.Duration
	// Limit is the quota policy a 429 answer was refused by, reported in
	// the RateLimit-Policy and RateLimit header fields; nil for none.
	Limit *RateLimit
	// Err is the underlying cause, kept for logs; never shown to clients.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	s := string(e.Code)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Status returns the HTTP status of the error's code.
func (e *Error) Status() int { return StatusOf(e.Code) }

// Title returns the short human title of the error's code.
func (e *Error) Title() string {
	if m, ok := table[e.Code]; ok {
		return m.title
	}
	return "Error"
}

// StatusOf returns the HTTP status of a code (500 for unknown codes).
func StatusOf(c Code) int {
	if m, ok := table[c]; ok {
		return m.status
	}
	return 500
}

// Codes returns every code, sorted: what a client may meet in a problem
// object, a dialect's error or a log row (the OpenAPI document's test
// checks that it lists them all).
func Codes() []Code {
	out := make([]Code, 0, len(table))
	for c := range table {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// New returns an *Error with a formatted detail.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error with detail and cause.
func Wrap(code Code, err error, detail string) *Error {
	return &Error{Code: code, Detail: detail, Err: err}
}

// Validation returns a validation_failed error with one or more entries.
func Validation(fields ...FieldError) *Error {
	detail := "the request has invalid fields"
	if len(fields) == 1 {
		detail = fields[0].Message
	}
	return &Error{Code: ValidationFailed, Detail: detail, Validation: fields}
}

// Field returns a FieldError for a dotted path like "output", "format".
func Field(msg string, path ...string) FieldError {
	return FieldError{Path: path, Message: msg}
}

// WithTurn returns a copy of e that names a conversation turn.
func (e *Error) WithTurn(i int) *Error {
	c := *e
	c.TurnIndex = &i
	return &c
}

// From turns any error into an *Error: *Error values pass through, plugin
// errors (*sdk.Error) map to provider codes, context errors to timeouts, and
// anything else becomes internal_error. provider names the provider for
// plugin errors and may be empty.
func From(err error, provider string) *Error {
	if err == nil {
		return nil
	}
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	var se *sdk.Error
	if errors.As(err, &se) {
		return fromPlugin(se, provider, err)
	}
	var te *store.TextError
	switch {
	case errors.As(err, &te):
		// The edge checks what clients send (gateway/edge/textrule); text the
		// store refused got past it (a provider's answer, say): still the
		// request's text, not the gateway's failure.
		return Validation(Field("contains text the gateway cannot store: "+te.Reason, te.Field))
	case errors.Is(err, store.ErrInvalidText):
		return Validation(Field("contains text the gateway cannot store (U+0000 or invalid UTF-8)"))
	case errors.Is(err, store.ErrFull):
		// A full disk passes when an operator frees space; 503 with
		// Retry-After is what clients already retry (507 is WebDAV's,
		// and no SDK retries it).
		return &Error{Code: StorageUnavailable, Detail: "the gateway's storage is full; retry later", RetryAfter: 5 * time.Second, Err: err}
	case errors.Is(err, store.ErrUnavailable):
		// Checked before the context cases: a storage call that timed out
		// is the database's failure, not the provider's.
		return &Error{Code: StorageUnavailable, Detail: "the gateway's database cannot be reached; retry shortly", RetryAfter: time.Second, Err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: ProviderTimeout, Provider: provider, Detail: "the provider did not answer in time", Err: err}
	case errors.Is(err, context.Canceled):
		return &Error{Code: ProviderUnavailable, Provider: provider, Detail: "the request was cancelled", Err: err}
	}
	return &Error{Code: Internal, Detail: "an internal error occurred", Err: err}
}

// fromPlugin maps a plugin error kind to a problem code.
func fromPlugin(se *sdk.Error, provider string, cause error) *Error {
	e := &Error{
		Provider:       provider,
		UpstreamStatus: se.UpstreamStatus,
		UpstreamCode:   se.UpstreamCode,
		Detail:         se.Message,
		RetryAfter:     se.RetryAfter,
		Err:            cause,
	}
	switch se.Kind {
	case sdk.KindTimeout:
		e.Code = ProviderTimeout
	case sdk.KindUnavailable:
		e.Code = ProviderUnavailable
	case sdk.KindRateLimited:
		// Upstream throttling is the provider's failure, not the caller
		// exceeding our limit: 502 with upstream_status 429 keeps the two
		// apart, and Retry-After is passed on.
		e.Code = ProviderError
	case sdk.KindInvalidRequest:
		if se.Field != "" {
			// The plugin checked a providerOptions value against the
			// provider's documented types and ranges and refused it
			// before any call: a field of the caller's request is
			// invalid, named like any other.
			e.Code = ValidationFailed
			e.Validation = []FieldError{{Path: append([]string{"providerOptions"}, strings.Split(se.Field, ".")...), Message: se.Message}}
			break
		}
		// The provider refused what the caller asked for (an unknown
		// provider voice, a value it would not take): the caller's to
		// fix, so a 4xx rather than a gateway-side 502.
		e.Code = ProviderRejected
	default:
		e.Code = ProviderError
	}
	if e.Detail == "" {
		e.Detail = "the provider failed"
	}
	return e
}

// RetryAfterSeconds renders a Retry-After header value (at least 1).
func RetryAfterSeconds(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return strconv.FormatInt(s, 10)
}

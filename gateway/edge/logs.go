package edge

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/store"
)

// Page size bounds of the list endpoints (spec: Limits).
const (
	defaultLimit = 50
	maxLimit     = 200
)

// query holds a list endpoint's validated query parameters.
type query map[string]string

// parseQuery rejects unknown and repeated parameters, so a typo such as
// `limt=5` is an error instead of a silently ignored filter.
func parseQuery(ctx *fasthttp.RequestCtx, allowed ...string) (query, error) {
	q := query{}
	var fe []problem.FieldError
	ctx.QueryArgs().VisitAll(func(k, v []byte) {
		key := string(k)
		ok := false
		for _, a := range allowed {
			if a == key {
				ok = true
				break
			}
		}
		switch {
		case !ok:
			fe = append(fe, problem.Field("unknown query parameter (allowed: "+strings.Join(allowed, ", ")+")", key))
		case hasKey(q, key):
			fe = append(fe, problem.Field("given more than once", key))
		default:
			q[key] = string(v)
		}
	})
	if len(fe) > 0 {
		return nil, problem.Validation(fe...)
	}
	return q, nil
}

func hasKey(q query, k string) bool { _, ok := q[k]; return ok }

func (q query) limit() (int, error) {
	v, ok := q["limit"]
	if !ok {
		return defaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		return 0, problem.Validation(problem.Field(fmt.Sprintf("must be an integer from 1 to %d", maxLimit), "limit"))
	}
	return n, nil
}

// decodeCursor verifies the cursor parameter for the caller's org and scope.
func (s *Server) decodeCursor(c *exchange, scope string, q query) ([]byte, error) {
	v, ok := q["cursor"]
	if !ok {
		return nil, nil
	}
	if v == "" {
		return nil, problem.Validation(problem.Field("must not be empty", "cursor"))
	}
	pos, err := s.cursors.Decode(c.p.OrgID, scope, v)
	if err != nil {
		return nil, problem.New(problem.InvalidCursor, "the cursor is malformed, was tampered with, or belongs to another query or organization")
	}
	return pos, nil
}

// logFilter parses and validates the filters of GET /v1/logs.
func logFilter(q query) (store.LogFilter, error) {
	var f store.LogFilter
	var fe []problem.FieldError
	if v, ok := q["provider"]; ok {
		if v == "" {
			fe = append(fe, problem.Field("must not be empty", "provider"))
		}
		f.Provider = v
	}
	if v, ok := q["status"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 || n > 599 {
			fe = append(fe, problem.Field("must be an integer from 100 to 599", "status"))
		}
		f.Status = n
	}
	if v, ok := q["parent_request_id"]; ok {
		// A request id is the client's own X-Request-Id or a generated uuid.
		if !validRequestID([]byte(v)) {
			fe = append(fe, problem.Field(fmt.Sprintf("must be a request id: 1 to %d printable characters", maxRequestIDLen), "parent_request_id"))
		}
		f.ParentRequestID = v
	}
	parseTime := func(name string) time.Time {
		v, ok := q[name]
		if !ok {
			return time.Time{}
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			fe = append(fe, problem.Field("must be an ISO 8601 date-time such as 2026-01-02T15:04:05Z", name))
		}
		return t.UTC()
	}
	f.Since = parseTime("since")
	f.Until = parseTime("until")
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		fe = append(fe, problem.Field("must be after since", "until"))
	}
	if len(fe) > 0 {
		return f, problem.Validation(fe...)
	}
	return f, nil
}

// scope binds a logs cursor to the filters it was made for.
func logScope(f store.LogFilter) string {
	var b strings.Builder
	b.WriteString("logs|p=")
	b.WriteString(f.Provider)
	b.WriteString("|s=")
	b.WriteString(strconv.Itoa(f.Status))
	b.WriteString("|r=")
	b.WriteString(f.ParentRequestID)
	if !f.Since.IsZero() {
		b.WriteString("|since=")
		b.WriteString(strconv.FormatInt(f.Since.UnixNano(), 10))
	}
	if !f.Until.IsZero() {
		b.WriteString("|until=")
		b.WriteString(strconv.FormatInt(f.Until.UnixNano(), 10))
	}
	return b.String()
}

func (s *Server) listLogs(ctx *fasthttp.RequestCtx, c *exchange) error {
	q, err := parseQuery(ctx, "limit", "cursor", "provider", "status", "parent_request_id", "since", "until")
	if err != nil {
		return err
	}
	limit, err := q.limit()
	if err != nil {
		return err
	}
	f, err := logFilter(q)
	if err != nil {
		return err
	}
	scope := logScope(f)
	after, err := s.decodeCursor(c, scope, q)
	if err != nil {
		return err
	}
	rows, next, more, err := s.records.Logs(c.ctx, c.p.OrgID, f, limit, after)
	if errors.Is(err, store.ErrInvalidPosition) {
		return problem.New(problem.InvalidCursor, "the cursor does not point into this list")
	}
	if err != nil {
		return fmt.Errorf("list logs: %w", err)
	}
	out := page[logRowJSON]{Data: make([]logRowJSON, len(rows)), HasMore: more, Limit: limit}
	for i := range rows {
		out.Data[i] = logRowOut(&rows[i])
	}
	if more {
		out.NextCursor = s.cursors.Encode(c.p.OrgID, scope, next)
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, out)
}

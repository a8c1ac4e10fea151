package edge

import (
	"fmt"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/problem"
)

// getLog serves GET /v1/logs/{requestId}: one request-log row of the
// caller's organization, `{data: row}`. A request id is a generated uuid
// or the client's own X-Request-Id, so any valid request id is looked up;
// a row of another organization is 404, like a missing one.
func (s *Server) getLog(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	id, _ := ctx.UserValue("requestId").(string)
	if !validRequestID([]byte(id)) {
		return problem.Validation(problem.Field(fmt.Sprintf("must be a request id: 1 to %d printable characters", maxRequestIDLen), "requestId"))
	}
	row, err := s.records.Log(c.ctx, c.p.OrgID, id)
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, envelope[logRowJSON]{logRowOut(row)})
}

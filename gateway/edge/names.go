package edge

import (
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/edge/textrule"
	"github.com/voxgate/voxgate/gateway/problem"
)

// namesChecked wraps the handler of the route pattern: before it runs,
// the route's path parameters ({id}, {voice_id}, ...) and every query
// parameter, name and value, must be names by the edge's text rule
// (textrule.Name: valid UTF-8, no control character). A request such as
// /elevenlabs/v1/text-to-speech/en%00x is a validation failure naming the
// parameter, the same answer on every storage driver, instead of a NUL in
// a store lookup or in the request's log row.
//
// The router matches the path as sent, so a parameter is its raw bytes
// ("en%00x"), while the log row records the path decoded
// (fasthttp's Path): a parameter is checked both ways.
//
// A route without parameters, called without a query string (every
// speech request), costs one empty visit of the query arguments.
func namesChecked(pattern string, h handlerFunc) handlerFunc {
	params := pathParams(pattern)
	return func(ctx *fasthttp.RequestCtx, c *exchange) error {
		var fe []problem.FieldError
		for _, name := range params {
			v, _ := ctx.UserValue(name).(string)
			msg := textrule.Name(v)
			if msg == "" && strings.IndexByte(v, '%') >= 0 {
				if d, err := url.PathUnescape(v); err == nil {
					msg = textrule.Name(d)
				}
			}
			if msg != "" {
				fe = append(fe, problem.Field(msg, name))
			}
		}
		ctx.QueryArgs().VisitAll(func(k, v []byte) {
			msg := textrule.NameBytes(k)
			if msg == "" {
				msg = textrule.NameBytes(v)
			}
			if msg != "" {
				fe = append(fe, problem.Field(msg, string(k)))
			}
		})
		if len(fe) > 0 {
			return problem.Validation(fe...)
		}
		return h(ctx, c)
	}
}

// pathParams returns the names of a route pattern's parameters:
// "/v1/voices/{id}" has "id" (a "{name:regexp}" parameter has "name").
func pathParams(pattern string) []string {
	var out []string
	for _, seg := range strings.Split(pattern, "/") {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			name, _, _ = strings.Cut(strings.TrimSuffix(name, "}"), ":")
			out = append(out, name)
		}
	}
	return out
}

package edge

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/problem"
)

// registerProvenance adds the provenance routes (docs/provenance.md).
func (rt *routes) registerProvenance() {
	rt.GET("/v1/provenance/keys", "provenance.keys", rt.s.provenanceKeys)
	rt.GET("/v1/provenance/{requestId}", "provenance.get", rt.s.getProvenance)
}

// provenanceKeyJSON is the public key that checks signed records.
type provenanceKeyJSON struct {
	KeyID     string `json:"key_id"`
	Algorithm string `json:"algorithm"`
	// PublicKey is the raw 32-byte key, base64; PublicKeyPEM the same as
	// a SubjectPublicKeyInfo, which openssl reads.
	PublicKey    string `json:"public_key"`
	PublicKeyPEM string `json:"public_key_pem"`
}

// provenanceKeys serves GET /v1/provenance/keys: `{data: [key]}`, the key
// this gateway signs with.
func (s *Server) provenanceKeys(ctx *fasthttp.RequestCtx, c *exchange) error {
	if _, err := parseQuery(ctx); err != nil {
		return err
	}
	sg := s.prov.Signer()
	return s.writeJSON(ctx, fasthttp.StatusOK, envelope[[]provenanceKeyJSON]{[]provenanceKeyJSON{{
		KeyID: sg.KeyID(), Algorithm: "Ed25519",
		PublicKey: base64.StdEncoding.EncodeToString(sg.Public()), PublicKeyPEM: sg.PublicPEM(),
	}}})
}

// getProvenance serves GET /v1/provenance/{requestId}: `{data: signed}`,
// the signed record of one answer of the caller's organization. Another
// organization's request, or one that sent no audio, is 404.
func (s *Server) getProvenance(ctx *fasthttp.RequestCtx, c *exchange) error {
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
	if row.Provenance == "" {
		return problem.New(problem.NotFound, "request %s sent no audio: it has no provenance record", id)
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, envelope[json.RawMessage]{json.RawMessage(row.Provenance)})
}

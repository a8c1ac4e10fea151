package edge

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime"
	"strings"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/provenance"
)

// registerProvenance adds the provenance routes (docs/provenance.md).
func (rt *routes) registerProvenance() {
	rt.GET("/v1/provenance/keys", "provenance.keys", rt.s.provenanceKeys)
	rt.GET("/v1/provenance/{requestId}", "provenance.get", rt.s.getProvenance)
	rt.POST("/v1/provenance/identify", "provenance.identify", rt.s.identifyProvenance)
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
		// A long-form job's file has its record under the job's id.
		if signed, jerr := s.jobProvenance(c, id); jerr == nil {
			return s.writeJSON(ctx, fasthttp.StatusOK, envelope[json.RawMessage]{json.RawMessage(signed)})
		}
		return err
	}
	if row.Provenance == "" {
		return problem.New(problem.NotFound, "request %s sent no audio: it has no provenance record", id)
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, envelope[json.RawMessage]{json.RawMessage(row.Provenance)})
}

// identifiedJSON is one record identify found.
type identifiedJSON struct {
	json.RawMessage
	Score float64
}

// MarshalJSON writes the signed record's members and score.
func (m identifiedJSON) MarshalJSON() ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(m.RawMessage, &obj); err != nil {
		return nil, err
	}
	score, _ := json.Marshal(math.Round(m.Score*1000) / 1000)
	obj["score"] = score
	return json.Marshal(obj)
}

// identifyProvenance serves POST /v1/provenance/identify: the audio (the
// body with an audio media type, or a multipart form's `file` part) is
// fingerprinted and compared with the caller's organization's clips;
// `{data: [signed record + score]}`, best match first.
func (s *Server) identifyProvenance(ctx *fasthttp.RequestCtx, c *exchange) error {
	ct := string(ctx.Request.Header.ContentType())
	mt, params, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil {
		return problem.New(problem.UnsupportedMediaType, "send the audio with its Content-Type (audio/mpeg, audio/wav, audio/ogg, audio/pcm;rate=N), or multipart/form-data with a `file` part")
	}
	data, declared := ctx.PostBody(), mt
	if mt == "multipart/form-data" {
		if params["boundary"] == "" {
			return problem.New(problem.UnsupportedMediaType, "multipart/form-data needs a boundary")
		}
		if data, _, declared, err = uploadPart(data, params["boundary"], s.opts.MaxMediaBytes); err != nil {
			return err
		}
		if declared == "" || declared == "application/octet-stream" {
			declared = sniffAudio(data)
		}
	} else if !strings.HasPrefix(mt, "audio/") {
		return problem.New(problem.UnsupportedMediaType, "%s is not audio: send the audio with its Content-Type, or multipart/form-data with a `file` part", mt)
	} else {
		declared = ct
	}
	if len(data) > s.opts.MaxMediaBytes {
		return problem.New(problem.PayloadTooLarge, "the file is larger than %d bytes", s.opts.MaxMediaBytes)
	}
	if len(data) == 0 {
		return problem.Validation(problem.Field("no audio was sent", "file"))
	}
	matches, err := s.prov.Identify(c.ctx, c.p.OrgID, data, declared)
	if errors.Is(err, audio.ErrUnsupportedMediaType) {
		return problem.New(problem.UnsupportedMediaType, "%s cannot be decoded here: send WAV, MP3, Ogg Opus, FLAC, raw PCM (audio/pcm;rate=N) or G.711", declared)
	}
	if errors.Is(err, provenance.ErrNoAudio) || errors.Is(err, audio.ErrCorrupt) {
		return problem.Validation(problem.Field("is not audio that can be fingerprinted: "+err.Error(), "file"))
	}
	if errors.Is(err, provenance.ErrWorker) {
		s.log.Warn("identify: fingerprint worker failed", zap.String("request_id", c.reqID), zap.Error(err))
		return problem.New(problem.Unavailable, "the fingerprint worker failed on this file; try again (the gateway's log says why)")
	}
	if err != nil {
		return err
	}
	out := make([]identifiedJSON, 0, len(matches))
	for _, m := range matches {
		row, err := s.records.Log(c.ctx, c.p.OrgID, m.RequestID)
		if err != nil || row.Provenance == "" {
			// A long-form job's file is indexed under the job's id.
			if signed, jerr := s.jobProvenance(c, m.RequestID); jerr == nil {
				out = append(out, identifiedJSON{json.RawMessage(signed), m.Score})
			}
			continue // else its log row is past the retention
		}
		out = append(out, identifiedJSON{json.RawMessage(row.Provenance), m.Score})
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, envelope[[]identifiedJSON]{out})
}

// sniffAudio tells a multipart part's audio type from its first bytes.
func sniffAudio(b []byte) string {
	switch {
	case len(b) >= 4 && string(b[:4]) == "OggS":
		return "audio/ogg"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WAVE":
		return "audio/wav"
	case len(b) >= 4 && string(b[:4]) == "fLaC":
		return "audio/flac"
	}
	return "audio/mpeg"
}

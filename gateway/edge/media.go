package edge

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"path/filepath"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/edge/textrule"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/resources"
)

// maxUploadParts bounds the parts of an upload's multipart form.
const maxUploadParts = 32

// uploadPart returns the bytes, file name and declared type of the one
// part named `file` in a multipart body. It parses the body already in
// memory and copies only that part, once, into a buffer sized from the
// body: fasthttp's MultipartForm would copy every part first (and put
// large ones in temporary files) before the file was copied again.
func uploadPart(body []byte, boundary string, limit int) (data []byte, filename, declared string, err error) {
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	found := false
	for parts := 0; ; parts++ {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, "", "", problem.Validation(problem.Field("the multipart body could not be read: "+err.Error(), "file"))
		}
		if parts == maxUploadParts {
			// Each part costs a header map to parse: a body of many
			// tiny parts would cost far more than its size.
			return nil, "", "", problem.Validation(problem.Field(fmt.Sprintf("the form has more than %d parts; send the `file` part and few others", maxUploadParts), "file"))
		}
		if p.FormName() != "file" {
			continue // NextPart skips the rest of it
		}
		if found {
			return nil, "", "", problem.Validation(problem.Field("send exactly one part named `file`", "file"))
		}
		found = true
		// The part is no longer than the body; one byte past the limit
		// is enough to know it is too large.
		data = make([]byte, 0, min(len(body), limit+1))
		for len(data) < cap(data) {
			n, err := p.Read(data[len(data):cap(data)])
			data = data[:len(data)+n]
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, "", "", problem.Validation(problem.Field("the multipart body could not be read: "+err.Error(), "file"))
			}
		}
		if len(data) > limit {
			return nil, "", "", problem.New(problem.PayloadTooLarge, "the file is larger than %d bytes", limit)
		}
		filename, declared = filepath.Base(p.FileName()), p.Header.Get("Content-Type")
	}
	if !found {
		return nil, "", "", problem.Validation(problem.Field("send exactly one part named `file`", "file"))
	}
	return data, filename, declared, nil
}

// uploadMedia serves POST /v1/media: a multipart form with a `file` part,
// or the raw audio as the body with its Content-Type. What the audio must
// be is resources.UploadMedia's to check.
func (s *Server) uploadMedia(ctx *fasthttp.RequestCtx, c *exchange) error {
	limit := s.opts.MaxMediaBytes
	ct := string(ctx.Request.Header.ContentType())
	mt, params, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil {
		return problem.New(problem.UnsupportedMediaType, "send multipart/form-data with a `file` part, or the audio itself with Content-Type audio/wav or audio/mpeg")
	}
	var data []byte
	filename := ""
	declared := mt
	switch {
	case mt == "multipart/form-data":
		if params["boundary"] == "" {
			return problem.New(problem.UnsupportedMediaType, "multipart/form-data needs a boundary")
		}
		if data, filename, declared, err = uploadPart(ctx.PostBody(), params["boundary"], limit); err != nil {
			return err
		}
		if d, _, err := mime.ParseMediaType(declared); err == nil {
			declared = d
		}
	case strings.HasPrefix(mt, "audio/"), mt == resources.TextPlain, mt == resources.TextMarkdown:
		data = ctx.PostBody()
		if cd := string(ctx.Request.Header.Peek("Content-Disposition")); cd != "" {
			if _, p, err := mime.ParseMediaType(cd); err == nil {
				filename = filepath.Base(p["filename"])
			}
		}
	default:
		return problem.New(problem.UnsupportedMediaType, "%s is not an upload type: send multipart/form-data, audio/wav or audio/mpeg, or a job's text as text/plain or text/markdown", mt)
	}
	if len(data) > limit {
		return problem.New(problem.PayloadTooLarge, "the file is larger than %d bytes", limit)
	}
	if msg := textrule.Name(filename); msg != "" {
		// The name is kept with the media and shown back: a name by the
		// edge's text rule, like a path parameter.
		return problem.Validation(problem.Field("the file name "+msg, "filename"))
	}
	m, err := c.live.Resources.UploadMedia(c.ctx, c.p.OrgID, resources.Upload{Data: data, Filename: filename, Declared: declared}, time.Now().UTC())
	if err != nil {
		return err
	}
	ctx.Response.Header.Set(fasthttp.HeaderLocation, "/v1/media/"+m.ID)
	return s.writeJSON(ctx, fasthttp.StatusCreated, mediaJSON(*m))
}

func (s *Server) getMedia(ctx *fasthttp.RequestCtx, c *exchange) error {
	m, err := c.live.Resources.Media(c.ctx, c.p.OrgID, pathID(ctx))
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, mediaJSON(*m))
}

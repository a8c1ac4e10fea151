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

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/edge/textrule"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/store"
)

// mediaTypes are the upload formats the gateway accepts: the ones it can
// decode, so an upload is proven to be audio and its duration is known
// before a provider ever sees it.
var mediaTypes = map[string]string{
	"audio/wav": "audio/wav", "audio/x-wav": "audio/wav", "audio/wave": "audio/wav", "audio/vnd.wave": "audio/wav",
	"audio/mpeg": "audio/mpeg", "audio/mp3": "audio/mpeg",
}

// sniff returns the media type the bytes carry, "" if neither WAV nor MP3.
func sniff(data []byte) string {
	switch {
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WAVE":
		return "audio/wav"
	case len(data) >= 3 && string(data[:3]) == "ID3",
		len(data) >= 2 && data[0] == 0xFF && data[1]&0xE0 == 0xE0:
		return "audio/mpeg"
	}
	return ""
}

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
// or the raw audio as the body with its Content-Type.
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
	case strings.HasPrefix(mt, "audio/"):
		data = ctx.PostBody()
		if cd := string(ctx.Request.Header.Peek("Content-Disposition")); cd != "" {
			if _, p, err := mime.ParseMediaType(cd); err == nil {
				filename = filepath.Base(p["filename"])
			}
		}
	default:
		return problem.New(problem.UnsupportedMediaType, "%s is not an upload type: send multipart/form-data or audio/wav or audio/mpeg", mt)
	}
	if len(data) > limit {
		return problem.New(problem.PayloadTooLarge, "the file is larger than %d bytes", limit)
	}
	if len(data) == 0 {
		return problem.Validation(problem.Field("the file is empty", "file"))
	}
	kind := sniff(data)
	if want, ok := mediaTypes[strings.ToLower(declared)]; ok && kind != "" && want != kind {
		return problem.Validation(problem.Field(fmt.Sprintf("declared %s but the bytes are %s", declared, kind), "file"))
	} else if !ok && declared != "" && declared != "application/octet-stream" {
		return problem.New(problem.UnsupportedMediaType, "%s is not supported; upload WAV or MP3", declared)
	}
	if kind == "" {
		return problem.New(problem.UnsupportedMediaType, "the file is not WAV or MP3 audio")
	}
	clip, err := audio.Decode(data, kind)
	if err != nil || len(clip.Samples) == 0 {
		return problem.Validation(problem.Field("the file is not decodable audio", "file"))
	}
	if msg := textrule.Name(filename); msg != "" {
		// The name is kept with the media and shown back: a name by the
		// edge's text rule, like a path parameter.
		return problem.Validation(problem.Field("the file name "+msg, "filename"))
	}
	if filename == "" || filename == "." || filename == "/" {
		filename = "upload" + map[string]string{"audio/wav": ".wav", "audio/mpeg": ".mp3"}[kind]
	}
	m := &store.Media{
		ID:         uuid.NewString(),
		OrgID:      c.p.OrgID,
		Filename:   filename,
		MediaType:  kind,
		DurationMS: clip.Duration().Milliseconds(),
		CreatedAt:  time.Now().UTC(),
	}
	if err := s.store.PutMedia(c.ctx, m, bytes.Clone(data)); err != nil {
		return fmt.Errorf("store media: %w", err)
	}
	ctx.Response.Header.Set(fasthttp.HeaderLocation, "/v1/media/"+m.ID)
	return s.writeJSON(ctx, fasthttp.StatusCreated, mediaJSON(*m))
}

func (s *Server) getMedia(ctx *fasthttp.RequestCtx, c *exchange) error {
	m, err := s.store.GetMedia(c.ctx, c.p.OrgID, pathID(ctx))
	if errors.Is(err, store.ErrNotFound) {
		return problem.New(problem.MediaNotFound, "no media %s in this organization", pathID(ctx))
	}
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, fasthttp.StatusOK, mediaJSON(*m))
}

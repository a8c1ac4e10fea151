package resources

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/store"
)

// Media are audio clips an organization uploads to clone voices from.
// Only audio the gateway can decode is kept, so that an upload is proven
// to be audio and its duration is known before a provider ever sees it.

// mediaTypes are the upload formats the gateway accepts, by the media
// types a client may declare for them.
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

// Upload is an audio clip as a client sent it.
type Upload struct {
	// Data is the clip. UploadMedia copies what it keeps: the caller's
	// buffer (a request body) may be reused once it returns.
	Data []byte
	// Filename is the client's name for the clip ("": one is made up);
	// the edge has checked it against its text rule.
	Filename string
	// Declared is the media type the client declared, without parameters
	// ("" or application/octet-stream: none).
	Declared string
}

// UploadMedia keeps an uploaded clip for org: it must be WAV or MP3 (what
// the bytes are, and what the client declared, must agree) and decode to
// audio. The answer carries the clip's duration.
func (s *Service) UploadMedia(ctx context.Context, org string, u Upload, now time.Time) (*store.Media, error) {
	if len(u.Data) == 0 {
		return nil, problem.Validation(problem.Field("the file is empty", "file"))
	}
	if t := strings.ToLower(u.Declared); t == TextPlain || t == TextMarkdown {
		return s.uploadText(ctx, org, u, t, now)
	}
	kind := sniff(u.Data)
	if want, ok := mediaTypes[strings.ToLower(u.Declared)]; ok && kind != "" && want != kind {
		return nil, problem.Validation(problem.Field(fmt.Sprintf("declared %s but the bytes are %s", u.Declared, kind), "file"))
	} else if !ok && u.Declared != "" && u.Declared != "application/octet-stream" {
		return nil, problem.New(problem.UnsupportedMediaType, "%s is not supported; upload WAV or MP3", u.Declared)
	}
	if kind == "" {
		return nil, problem.New(problem.UnsupportedMediaType, "the file is not WAV or MP3 audio")
	}
	clip, err := audio.Decode(u.Data, kind)
	if err != nil || len(clip.Samples) == 0 {
		return nil, problem.Validation(problem.Field("the file is not decodable audio", "file"))
	}
	filename := u.Filename
	if filename == "" || filename == "." || filename == "/" {
		filename = "upload" + map[string]string{"audio/wav": ".wav", "audio/mpeg": ".mp3"}[kind]
	}
	m := &store.Media{
		ID:         uuid.NewString(),
		OrgID:      org,
		Filename:   filename,
		MediaType:  kind,
		DurationMS: clip.Duration().Milliseconds(),
		CreatedAt:  now,
	}
	if err := s.store.PutMedia(ctx, m, bytes.Clone(u.Data)); err != nil {
		return nil, fmt.Errorf("store media: %w", err)
	}
	return m, nil
}

// Text media types: a long-form job's text may be an upload of either
// (POST /v1/audio/jobs with mediaId).
const (
	TextPlain    = "text/plain"
	TextMarkdown = "text/markdown"
)

// uploadText keeps a text upload: valid UTF-8 without NUL, not empty.
func (s *Service) uploadText(ctx context.Context, org string, u Upload, kind string, now time.Time) (*store.Media, error) {
	if !store.ValidText(string(u.Data)) {
		return nil, problem.Validation(problem.Field("a text upload must be UTF-8 without U+0000", "file"))
	}
	filename := u.Filename
	if filename == "" || filename == "." || filename == "/" {
		filename = "upload" + map[string]string{TextPlain: ".txt", TextMarkdown: ".md"}[kind]
	}
	m := &store.Media{ID: uuid.NewString(), OrgID: org, Filename: filename, MediaType: kind, CreatedAt: now}
	if err := s.store.PutMedia(ctx, m, bytes.Clone(u.Data)); err != nil {
		return nil, fmt.Errorf("store media: %w", err)
	}
	return m, nil
}

// Media returns what is kept of media id of org (never its bytes).
// Another organization's media is not found.
func (s *Service) Media(ctx context.Context, org, id string) (*store.Media, error) {
	m, err := s.store.GetMedia(ctx, org, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, problem.New(problem.MediaNotFound, "no media %s in this organization", id)
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

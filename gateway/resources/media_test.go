package resources

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/problem"
)

// TestUploadMedia: only audio the gateway decodes is kept, as what its
// bytes are, and the kept bytes are a copy of the caller's.
func TestUploadMedia(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	good := wav(t)
	mp3Head := append([]byte("ID3"), make([]byte, 64)...)
	brokenWAV := append([]byte("RIFF\x00\x00\x00\x00WAVE"), make([]byte, 32)...)
	tests := []struct {
		name string
		u    Upload
		code problem.Code
		// filename and mediaType are what is kept.
		filename, mediaType string
	}{
		{name: "wav", u: Upload{Data: good, Filename: "me.wav", Declared: "audio/wav"}, filename: "me.wav", mediaType: "audio/wav"},
		{name: "undeclared, named for it", u: Upload{Data: good}, filename: "upload.wav", mediaType: "audio/wav"},
		{name: "octet-stream", u: Upload{Data: good, Filename: "x", Declared: "application/octet-stream"}, filename: "x", mediaType: "audio/wav"},
		{name: "alias of wav", u: Upload{Data: good, Filename: "x", Declared: "audio/x-wav"}, filename: "x", mediaType: "audio/wav"},
		{name: "empty", u: Upload{Data: nil, Declared: "audio/wav"}, code: problem.ValidationFailed},
		{name: "declared mp3, bytes wav", u: Upload{Data: good, Declared: "audio/mpeg"}, code: problem.ValidationFailed},
		{name: "declared another type", u: Upload{Data: good, Declared: "audio/ogg"}, code: problem.UnsupportedMediaType},
		{name: "not audio", u: Upload{Data: []byte("hello, world"), Declared: ""}, code: problem.UnsupportedMediaType},
		{name: "wav header, no audio", u: Upload{Data: brokenWAV, Declared: "audio/wav"}, code: problem.ValidationFailed},
		{name: "mp3 header, no audio", u: Upload{Data: mp3Head, Declared: "audio/mpeg"}, code: problem.ValidationFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := bytes.Clone(tt.u.Data)
			tt.u.Data = in
			m, err := f.s.UploadMedia(ctx, "acme", tt.u, time.Now().UTC())
			wantCode(t, err, tt.code)
			if tt.code != "" {
				return
			}
			if m.Filename != tt.filename || m.MediaType != tt.mediaType || m.DurationMS != 1000 || m.OrgID != "acme" {
				t.Errorf("kept %+v", m)
			}
			clear(in) // the caller's buffer is reused
			data, err := f.store.MediaData(ctx, "acme", m.ID)
			if err != nil || !bytes.Equal(data, good) {
				t.Errorf("the kept bytes are not the upload's (%v)", err)
			}
			got, err := f.s.Media(ctx, "acme", m.ID)
			if err != nil || got.ID != m.ID {
				t.Errorf("Media: %+v %v", got, err)
			}
			_, err = f.s.Media(ctx, "initech", m.ID)
			wantCode(t, err, problem.MediaNotFound)
		})
	}
}

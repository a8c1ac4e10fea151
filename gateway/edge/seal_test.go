package edge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/admission/auth"
	"github.com/voxgate/voxgate/gateway/provenance"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
)

// TestSealedClip answers a clip through answerClip and checks the row
// reaches the request log with a signed record of exactly the bytes
// written: for a pooled clip (raw PCM: a marked one is copied out of its
// buffer), whose buffer the pool scribbles over once it is back (so a
// hash made after the release would not match), and for a marked clip.
// An organization with records off gets its row without one.
func TestSealedClip(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mediaType string
		pooled    bool
		records   bool
	}{
		{"pooled pcm", "audio/pcm;rate=24000", true, true},
		{"owned pcm", "audio/pcm;rate=24000", false, true},
		{"pooled wav", "audio/wav", true, true},
		{"owned wav", "audio/wav", false, true},
		{"records off", "audio/pcm;rate=24000", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, w, _ := provServer(t, store.OrgProvenance{NoRecords: !tc.records})
			clip := wavClip(48000)
			if tc.mediaType != "audio/wav" {
				clip = clip[44:]
			}
			marked := tc.mediaType == "audio/wav"
			released := make(chan struct{})
			var release func()
			if tc.pooled {
				release = func() {
					for i := range clip {
						clip[i] = 0xEE // the pool hands the buffer to the next answer
					}
					close(released)
				}
			}
			id := "5f0c5d4e-1f2a-4b3c-8d9e-0f1a2b3c4d5e"
			c := &exchange{ctx: context.Background(), p: auth.Principal{OrgID: "acme"}, reqID: id, start: time.Now(), live: s.Live(), route: "speech"}
			var ctx fasthttp.RequestCtx
			ctx.Request.SetRequestURI("/v1/audio/speech")
			s.answerClip(&ctx, c, spokenClip(clip, tc.mediaType, release), speech.DeliverClip, func(res *speech.Result) { s.writeClip(&ctx, c, speech.DeliverClip, res) })
			if tc.pooled && !marked {
				select {
				case <-released:
					t.Fatal("the pooled buffer went back before its body was written")
				default:
				}
			}
			sent := bytes.Clone(ctx.Response.Body()) // fasthttp writes the body, then closes it
			if ctx.Response.Header.Peek(headerMark) == nil || len(sent) < 48000 || bytes.Contains(sent, []byte{0xEE, 0xEE, 0xEE, 0xEE}) {
				t.Fatalf("answer %q %.12q", ctx.Response.Header.Peek(headerMark), sent)
			}
			if err := s.sealers.wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			if tc.pooled {
				<-released
			}
			row, err := s.records.Log(context.Background(), "acme", id)
			if err != nil {
				t.Fatalf("the clip's log row: %v", err)
			}
			if !tc.records {
				if row.Provenance != "" {
					t.Errorf("records off, but the row has one: %s", row.Provenance)
				}
				return
			}
			signer, _ := provenance.NewSigner(make([]byte, 32))
			_, rec, err := signer.VerifyStored(row.Provenance)
			if err != nil {
				t.Fatalf("record %q: %v", row.Provenance, err)
			}
			sum := sha256.Sum256(sent)
			if rec.SHA256 != hex.EncodeToString(sum[:]) || rec.Bytes != int64(len(sent)) || !rec.Complete {
				b, _ := json.Marshal(rec)
				t.Errorf("record %s, want the SHA-256 of the %d bytes sent", b, len(sent))
			}
		})
	}
}

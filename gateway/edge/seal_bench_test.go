package edge

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/admission/auth"
	"github.com/voxgate/voxgate/gateway/admission/orgs"
	"github.com/voxgate/voxgate/gateway/observe/metrics"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/provenance"
	"github.com/voxgate/voxgate/gateway/providers/catalog"
	"github.com/voxgate/voxgate/gateway/records"
	"github.com/voxgate/voxgate/gateway/resources"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
	"github.com/voxgate/voxgate/gateway/store/reqlog"
	"github.com/voxgate/voxgate/sdk"
)

// provServer is a real server with provenance on (a signing key, no
// fingerprint index) and its log writer, started.
func provServer(tb testing.TB, prov store.OrgProvenance) (*Server, *reqlog.Writer, *bolt.Store) {
	tb.Helper()
	st, err := bolt.Open(filepath.Join(tb.TempDir(), "v.db"), store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	a, err := auth.New(context.Background(), st, func(o string) bool { return o == "acme" })
	if err != nil {
		tb.Fatal(err)
	}
	signer, err := provenance.NewSigner(make([]byte, 32))
	if err != nil {
		tb.Fatal(err)
	}
	w := reqlog.New(st, reqlog.Options{Logger: zap.NewNop(), PurgeInterval: -1})
	w.Start()
	tb.Cleanup(func() { _ = w.Close(context.Background()) })
	res := resources.New(resources.Deps{Store: st, CheckRule: func(*store.PronunciationRule) []problem.FieldError { return nil }})
	s := New(Deps{Options: Options{RequestTimeout: time.Minute, MaxBodyBytes: 1 << 20}, Logger: zap.NewNop(), Live: NewLive(LiveDeps{Resources: res}),
		Records: records.New(st), CursorSecret: st.Secret(), Auth: a, Logs: w, Metrics: metrics.New(),
		Provenance: provenance.NewService(signer, "gw", nil), Orgs: orgs.New([]orgs.File{{ID: "acme", Provenance: prov}})})
	return s, w, st
}

// wavClip is a 24 kHz 16-bit mono WAV file of n bytes of samples.
func wavClip(n int) []byte {
	b := make([]byte, 44+n)
	copy(b, "RIFF")
	binary.LittleEndian.PutUint32(b[4:], uint32(36+n))
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)
	binary.LittleEndian.PutUint16(b[20:], 1)
	binary.LittleEndian.PutUint16(b[22:], 1)
	binary.LittleEndian.PutUint32(b[24:], 24000)
	binary.LittleEndian.PutUint32(b[28:], 48000)
	binary.LittleEndian.PutUint16(b[32:], 2)
	binary.LittleEndian.PutUint16(b[34:], 16)
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], uint32(n))
	for i := 44; i < len(b); i++ {
		b[i] = byte(i * 7)
	}
	return b
}

// spokenClip is a rendered clip as the speech service hands it to the
// edge; pooled gives it a release, as a provider's pooled answer has.
func spokenClip(clip []byte, mediaType string, release func()) *speech.Spoken {
	r := &speech.Result{Audio: clip, MediaType: mediaType}
	if release != nil {
		r = speech.NewPooledResult(clip, mediaType, release)
	}
	return &speech.Spoken{Job: &speech.Job{Provider: &catalog.Provider{ID: "espeak"}, Model: &sdk.Model{ID: "espeak-ng"}},
		Result: r, Row: store.LogRow{Provider: "espeak", Model: "espeak-ng", Status: 200}}
}

// BenchmarkClipPath is the provenance part of answering a 144 KB clip
// (WAV, marked; raw PCM, which cannot be) on the request path: marking,
// hashing and signing (inline: the
// seal made on the request's goroutine, as before seals), or marking and
// handing the seal over (sealed). Each op is one request's handler time;
// the seal's own work is waited for outside the timer, so ns/op is the
// delay provenance adds before fasthttp can write the answer.
func BenchmarkClipPath(b *testing.B) {
	for _, tc := range []struct {
		name      string
		mediaType string
		slots     int
	}{{"wav/inline", "audio/wav", 0}, {"wav/sealed", "audio/wav", maxSealers},
		{"pcm/inline", "audio/pcm;rate=24000", 0}, {"pcm/sealed", "audio/pcm;rate=24000", maxSealers}} {
		clip := wavClip(144000)
		if tc.mediaType != "audio/wav" {
			clip = clip[44:]
		}
		b.Run(tc.name, func(b *testing.B) {
			s, _, _ := provServer(b, store.OrgProvenance{})
			s.sealers = newSealers(tc.slots)
			var ctx fasthttp.RequestCtx
			b.ReportAllocs()
			b.SetBytes(int64(len(clip)))
			for b.Loop() {
				c := &exchange{ctx: context.Background(), p: auth.Principal{OrgID: "acme"}, reqID: "0b0c5d4e-1f2a-4b3c-8d9e-0f1a2b3c4d5e",
					start: time.Now(), live: s.Live(), route: "speech"}
				out := spokenClip(clip, tc.mediaType, nil)
				s.answerClip(&ctx, c, out, speech.DeliverClip, func(res *speech.Result) { s.writeClip(&ctx, c, speech.DeliverClip, res) })
				b.StopTimer()
				_ = s.sealers.wait(context.Background())
				ctx.Response.Reset()
				b.StartTimer()
			}
		})
	}
}

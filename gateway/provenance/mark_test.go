package provenance

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testMark is the mark the tests write.
func testMark() *Mark {
	return &Mark{RequestID: "req-123", Gateway: "gw-test", Provider: "espeak", Model: "espeak-ng",
		Time: time.Date(2026, 11, 28, 7, 0, 0, 0, time.UTC)}
}

// ffmpegClip makes a short clip of format with ffmpeg (a sine sweep), as
// an encoder other than ours would write it.
func ffmpegClip(t *testing.T, format string, args ...string) []byte {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed (make deps installs it)")
	}
	out := filepath.Join(t.TempDir(), "in."+format)
	cmd := append([]string{"-v", "error", "-f", "lavfi", "-i", "sine=f=440:d=1.5", "-ar", "48000", "-ac", "1"}, args...)
	cmd = append(cmd, out)
	if b, err := exec.Command("ffmpeg", cmd...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// probeTags returns the format tags ffprobe reads from b, and fails the
// test if ffmpeg cannot decode all of b without an error.
func probeTags(t *testing.T, b []byte, ext string) map[string]string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "marked."+ext)
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ffprobe", "-v", "error", "-show_format", "-show_streams", "-of", "json", f).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	var probe struct {
		Format struct {
			Tags map[string]string `json:"tags"`
		} `json:"format"`
		Streams []struct {
			Tags map[string]string `json:"tags"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(out, &probe); err != nil {
		t.Fatal(err)
	}
	if errs, err := exec.Command("ffmpeg", "-v", "error", "-i", f, "-f", "null", "-").CombinedOutput(); err != nil || len(errs) > 0 {
		t.Fatalf("ffmpeg decoding the marked file: %v\n%s", err, errs)
	}
	tags := map[string]string{}
	// Ogg keeps stream tags on the stream, the others on the format.
	for _, s := range probe.Streams {
		for k, v := range s.Tags {
			tags[strings.ToUpper(k)] = v
		}
	}
	for k, v := range probe.Format.Tags {
		tags[strings.ToUpper(k)] = v
	}
	return tags
}

func TestInsertIsReadByFFprobe(t *testing.T) {
	if _, err := exec.LookPath("ffprobe"); err != nil {
		t.Skip("ffprobe not installed (make deps installs it)")
	}
	m := testMark()
	for _, tc := range []struct {
		format, ext string
		args        []string
		how         string
		want        map[string]string // ffprobe's tag name: value
	}{
		{"mp3", "mp3", []string{"-c:a", "libmp3lame", "-b:a", "64k"}, MarkedID3, map[string]string{
			FieldSourceType: DigitalSourceType, FieldRequestID: "req-123", FieldGateway: "gw-test",
			FieldProvider: "espeak", FieldModel: "espeak-ng", FieldTime: "2026-11-28T07:00:00Z", FieldAction: "c2pa.created",
			"COMMENT": m.Comment()}},
		// ffmpeg's WAV carries a LIST/INFO of its own (ISFT Lavf...).
		{"wav", "wav", []string{"-c:a", "pcm_s16le"}, MarkedRIFF, map[string]string{
			"COMMENT": m.Comment(), "DATE": "2026-11-28T07:00:00Z"}},
		{"flac", "flac", []string{"-c:a", "flac"}, MarkedVorbis, map[string]string{
			FieldSourceType: DigitalSourceType, FieldRequestID: "req-123", FieldModel: "espeak-ng", "COMMENT": m.Comment()}},
		{"opus", "opus", []string{"-c:a", "libopus", "-b:a", "32k"}, MarkedVorbis, map[string]string{
			FieldSourceType: DigitalSourceType, FieldRequestID: "req-123", FieldProvider: "espeak", "COMMENT": m.Comment()}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			in := ffmpegClip(t, tc.ext, tc.args...)
			orig := bytes.Clone(in)
			head, tail, how, err := Insert(in, tc.format, m, true)
			if err != nil {
				t.Fatal(err)
			}
			if how != tc.how {
				t.Errorf("how = %q, want %q", how, tc.how)
			}
			if !bytes.Equal(in, orig) {
				t.Fatal("Insert changed its input")
			}
			marked := append(bytes.Clone(head), in[tail:]...)
			tags := probeTags(t, marked, tc.ext)
			for k, v := range tc.want {
				if tags[k] != v {
					t.Errorf("ffprobe tag %s = %q, want %q (all: %v)", k, tags[k], v, tags)
				}
			}
			// The audio itself is untouched: at most its container's
			// pages or chunks before it were written again.
			if tail > len(in) || len(in)-tail < len(in)/2 {
				t.Errorf("tail %d of %d: the audio was not kept", tail, len(in))
			}
		})
	}
}

func TestInsertRawAndCutHeaders(t *testing.T) {
	m := testMark()
	if head, _, how, err := Insert([]byte{1, 2, 3, 4}, "pcm", m, true); head != nil || how != UnmarkedRaw || err != nil {
		t.Errorf("pcm: %v %q %v", head, how, err)
	}
	for _, tc := range []struct{ format, ext string }{{"wav", "wav"}, {"flac", "flac"}, {"opus", "opus"}} {
		t.Run(tc.format, func(t *testing.T) {
			in := ffmpegClip(t, tc.ext)
			if _, _, _, err := Insert(in[:20], tc.format, m, false); err == nil {
				t.Error("a header cut short was marked")
			}
		})
	}
}

func TestInsertOggStreamFirstPiece(t *testing.T) {
	in := ffmpegClip(t, "opus", "-c:a", "libopus")
	// The first two pages (OpusHead, OpusTags) and a little audio.
	first, _ := parseOggPage(in, 0)
	second, _ := parseOggPage(in, first.end)
	piece := in[:second.end+100]
	head, tail, _, err := Insert(piece, "opus", testMark(), false)
	if err != nil {
		t.Fatal(err)
	}
	marked := append(append(bytes.Clone(head), piece[tail:]...), in[len(piece):]...)
	if tags := probeTags(t, marked, "opus"); tags[FieldRequestID] != "req-123" {
		t.Errorf("tags %v", tags)
	}
}

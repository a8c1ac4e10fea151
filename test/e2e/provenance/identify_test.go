package provenance

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/testenv"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// identified is POST /v1/provenance/identify's answer.
type identified struct {
	Data []struct {
		Record map[string]any `json:"record"`
		Score  float64        `json:"score"`
	} `json:"data"`
}

// ffmpegFile runs ffmpeg on data (written as in.ext) and returns what it
// wrote to out.outExt.
func ffmpegFile(t *testing.T, data []byte, ext, outExt string, args ...string) []byte {
	t.Helper()
	ffmpeg := testenv.NeedTool(t, "ffmpeg")
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in."+ext), filepath.Join(dir, "out."+outExt)
	if err := os.WriteFile(in, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := append([]string{"-v", "error", "-i", in}, args...)
	if b, err := exec.Command(ffmpeg, append(cmd, out)...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v %s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// identify posts audio as the body (contentType) or, with multipart, as
// a form's file part.
func identify(t *testing.T, tg *harness.Gateway, org string, data []byte, contentType string, asForm bool) identified {
	t.Helper()
	body, ct := data, contentType
	if asForm {
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		part, _ := w.CreateFormFile("file", "clip")
		part.Write(data)
		w.Close()
		body, ct = buf.Bytes(), w.FormDataContentType()
	}
	req, _ := http.NewRequest("POST", tg.Base+"/v1/provenance/identify", bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Authorization", "Bearer "+tg.Keys[org])
	resp, err := tg.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out identified
	if resp.StatusCode != 200 || json.Unmarshal(raw, &out) != nil {
		t.Fatalf("identify: %d %s", resp.StatusCode, raw)
	}
	return out
}

// TestIdentifyAfterReencoding makes clips, re-encodes one with ffmpeg
// (Ogg Opus at 24 kbit/s; MP3 at another rate), trims 0.5 s off it, and
// identifies it: its own record comes first; the organization's other
// clip, another organization's clip of the very same text, unrelated
// audio and another organization's query find nothing.
func TestIdentifyAfterReencoding(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, config)
	text := "The quick brown fox jumps over the lazy dog, and then it runs far away into the forest."
	mine := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text, "output", map[string]any{"format": "mp3"}))
	other := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody("Seven silver swans swam silently seaward under a pale and distant winter moon.", "output", map[string]any{"format": "mp3"}))
	theirs := tg.Do("POST", "/v1/audio/speech", "initech", harness.SpeechBody(text, "output", map[string]any{"format": "mp3"}))
	for _, r := range []*harness.Response{mine, other, theirs} {
		if r.Status != 200 {
			t.Fatalf("speech: %d %s", r.Status, r.Body)
		}
	}
	mineID, otherID, theirsID := mine.Header.Get("X-Request-Id"), other.Header.Get("X-Request-Id"), theirs.Header.Get("X-Request-Id")
	// Fingerprints are computed after the answer, off the request path.
	harness.WaitFor(t, "the clip indexed", func() bool {
		tg.FlushLogs()
		got := identify(t, tg, "acme", mine.Body, "audio/mpeg", false)
		return len(got.Data) > 0 && got.Data[0].Record["request_id"] == mineID
	})

	for _, tc := range []struct {
		name, ext, ct string
		form          bool
		args          []string
	}{
		{"opus 24 kbit/s, trimmed 0.5 s, body", "opus", "audio/ogg", false, []string{"-ss", "0.5", "-c:a", "libopus", "-b:a", "24k"}},
		{"mp3 16 kHz, trimmed 0.5 s, form", "mp3", "", true, []string{"-ss", "0.5", "-ar", "16000", "-c:a", "libmp3lame", "-b:a", "48k"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			re := ffmpegFile(t, mine.Body, "mp3", tc.ext, tc.args...)
			got := identify(t, tg, "acme", re, tc.ct, tc.form)
			if len(got.Data) == 0 || got.Data[0].Record["request_id"] != mineID || got.Data[0].Score < 0.8 {
				t.Fatalf("identify: %+v", got.Data)
			}
			for _, d := range got.Data {
				if id := d.Record["request_id"]; id == otherID || id == theirsID {
					t.Errorf("matched %v (score %.3f): another clip, or another organization's", id, d.Score)
				}
				if d.Record["org"] != "acme" {
					t.Errorf("another organization's record: %v", d.Record)
				}
			}
			// Another organization asking finds none of acme's clips.
			for _, d := range identify(t, tg, "globex", re, tc.ct, tc.form).Data {
				t.Errorf("globex found %v", d.Record["request_id"])
			}
		})
	}
	// Unrelated audio: a tone.
	tone := ffmpegFile(t, harness.ToneWAV(16000, 4), "wav", "mp3", "-c:a", "libmp3lame")
	if got := identify(t, tg, "acme", tone, "audio/mpeg", false); len(got.Data) != 0 {
		t.Errorf("a tone matched %+v", got.Data)
	}
	// Bad input has a problem answer.
	tg.Do("POST", "/v1/provenance/identify", "acme", map[string]any{"a": 1}).Problem(t, 415, "unsupported_media_type")
}

// TestIdentifyJobFile makes a long-form job's file and identifies a
// re-encoded copy of it: the job's signed record comes back (the file is
// fingerprinted under the job's id when it is finished).
func TestIdentifyJobFile(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, strings.Replace(config, "orgs:\n", "jobs: {poll: 100ms, lease: 3s}\norgs:\n", 1))
	r := tg.Do("POST", "/v1/audio/jobs", "acme", map[string]any{"model": "espeak/espeak-ng", "voice": "en", "output": "mp3",
		"text": "A long-form job is a book read aloud. Its finished file is marked, signed and fingerprinted, so that a copy of it is recognized."})
	var j struct {
		Data struct {
			ID    string `json:"id"`
			State string `json:"state"`
			URL   string `json:"audio_url"`
		} `json:"data"`
	}
	r.JSON(t, &j)
	if r.Status != 202 || j.Data.ID == "" {
		t.Fatalf("job: %d %s", r.Status, r.Body)
	}
	id := j.Data.ID
	harness.WaitFor(t, "the job to finish", func() bool {
		tg.Do("GET", "/v1/audio/jobs/"+id, "acme", nil).JSON(t, &j)
		return j.Data.State == "succeeded" || j.Data.State == "failed"
	})
	if j.Data.State != "succeeded" {
		t.Fatalf("job %s", j.Data.State)
	}
	file := tg.Do("GET", j.Data.URL, "acme", nil).Body
	copyOf := ffmpegFile(t, file, "mp3", "ogg", "-c:a", "libopus", "-b:a", "24k")
	var got identified
	harness.WaitFor(t, "the job's file to be identified", func() bool {
		got = identify(t, tg, "acme", copyOf, "audio/ogg", false)
		return len(got.Data) > 0
	})
	if rec, _ := got.Data[0].Record["request_id"].(string); rec != id {
		t.Errorf("identified %v, want the job %s", got.Data[0].Record, id)
	}
	if other := identify(t, tg, "globex", copyOf, "audio/ogg", false); len(other.Data) != 0 {
		t.Errorf("another organization identified the job: %v", other.Data)
	}
}

package jobs

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/testenv"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// fileTags returns the tags ffprobe reads from a file (format and stream
// tags, names upper-cased) and how many chapters it has.
func fileTags(t *testing.T, data []byte, ext string) (map[string]string, int) {
	t.Helper()
	ffprobe := testenv.NeedTool(t, "ffprobe")
	path := filepath.Join(t.TempDir(), "job."+ext)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(ffprobe, "-v", "error", "-show_format", "-show_streams", "-show_chapters", "-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	var p struct {
		Format   struct{ Tags map[string]string }   `json:"format"`
		Streams  []struct{ Tags map[string]string } `json:"streams"`
		Chapters []json.RawMessage                  `json:"chapters"`
	}
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	tags := map[string]string{}
	for _, s := range p.Streams {
		for k, v := range s.Tags {
			tags[strings.ToUpper(k)] = v
		}
	}
	for k, v := range p.Format.Tags {
		tags[strings.ToUpper(k)] = v
	}
	return tags, len(p.Chapters)
}

// TestFilesMarkedAndSigned checks a job's finished file in each format
// carries the provenance mark beside its chapters (ffprobe reads both),
// and that GET /v1/provenance/{jobId} serves its signed record, whose
// signature verifies with the gateway's public key and whose hash is the
// file's, to the job's organization only.
func TestFilesMarkedAndSigned(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, jobsConfig)
	text, titles := book(1_500, 2)
	r := tg.Do("GET", "/v1/provenance/keys", "acme", nil)
	var keys struct {
		Data []struct {
			KeyID     string `json:"key_id"`
			PublicKey string `json:"public_key"`
		}
	}
	if r.Status != 200 || json.Unmarshal(r.Body, &keys) != nil || len(keys.Data) != 1 {
		t.Fatalf("keys: %d %s", r.Status, r.Body)
	}
	pub, _ := base64.StdEncoding.DecodeString(keys.Data[0].PublicKey)
	for _, tc := range []struct{ format, ext, marked string }{
		{"mp3", "mp3", "id3v2"}, {"wav", "wav", "riff-info+ixml"}, {"opus", "ogg", "vorbis-comment"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			t.Parallel()
			j := decodeJob(t, tg.Do("POST", "/v1/audio/jobs", "acme", map[string]any{
				"text": text, "textFormat": "markdown", "model": "espeak/espeak-ng", "voice": "en", "speed": 2.5, "output": tc.format,
			}), 202)
			j = waitJob(t, func() job { return decodeJob(t, tg.Do("GET", "/v1/audio/jobs/"+j.ID, "acme", nil), 200) }, finished)
			if j.State != "succeeded" {
				t.Fatalf("finished %+v", j)
			}
			file := tg.Do("GET", j.AudioURL, "acme", nil).Body
			tags, chapters := fileTags(t, file, tc.ext)
			if tags["VOXGATE_REQUEST_ID"] != j.ID && !strings.Contains(string(file), "<VOXGATE_REQUEST_ID>"+j.ID) {
				t.Errorf("the file names no request id %s: tags %v", j.ID, tags)
			}
			if tc.format != "wav" && (tags["DIGITAL_SOURCE_TYPE"] == "" || tags["VOXGATE_PROVIDER"] != "espeak") {
				t.Errorf("mark tags: %v", tags)
			}
			if tc.format != "wav" && chapters != len(titles) {
				t.Errorf("%d chapters beside the mark, want %d", chapters, len(titles))
			}

			pr := tg.Do("GET", "/v1/provenance/"+j.ID, "acme", nil)
			var rec struct {
				Data struct {
					Record       map[string]any `json:"record"`
					RecordBase64 string         `json:"record_base64"`
					KeyID        string         `json:"key_id"`
					Signature    string         `json:"signature"`
				}
			}
			if pr.Status != 200 || json.Unmarshal(pr.Body, &rec) != nil {
				t.Fatalf("provenance of the job: %d %s", pr.Status, pr.Body)
			}
			msg, _ := base64.StdEncoding.DecodeString(rec.Data.RecordBase64)
			sig, _ := base64.StdEncoding.DecodeString(rec.Data.Signature)
			if !ed25519.Verify(pub, msg, sig) || rec.Data.KeyID != keys.Data[0].KeyID {
				t.Fatalf("the job's record does not verify: %+v", rec.Data)
			}
			sum := sha256.Sum256(file)
			if got := rec.Data.Record; got["sha256"] != hex.EncodeToString(sum[:]) || got["request_id"] != j.ID ||
				got["marked"] != tc.marked || got["org"] != "acme" || got["provider"] != "espeak" || got["complete"] != true {
				t.Errorf("record %v", got)
			}
			if r := tg.Do("GET", "/v1/provenance/"+j.ID, "globex", nil); r.Status != 404 {
				t.Errorf("another organization read the job's record: %d", r.Status)
			}
		})
	}
}

// TestRecordsOffKeepsTheMark: an organization with records off gets its
// job files marked, and no signed record.
func TestRecordsOffKeepsTheMark(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, strings.Replace(jobsConfig, "  globex:\n", "  globex:\n    provenance: {records: false}\n", 1))
	text, _ := book(600, 1)
	j := decodeJob(t, tg.Do("POST", "/v1/audio/jobs", "globex", map[string]any{
		"text": text, "textFormat": "markdown", "model": "espeak/espeak-ng", "voice": "en", "speed": 2.5, "output": "mp3",
	}), 202)
	j = waitJob(t, func() job { return decodeJob(t, tg.Do("GET", "/v1/audio/jobs/"+j.ID, "globex", nil), 200) }, finished)
	if j.State != "succeeded" {
		t.Fatalf("finished %+v", j)
	}
	tags, _ := fileTags(t, tg.Do("GET", j.AudioURL, "globex", nil).Body, "mp3")
	if tags["VOXGATE_REQUEST_ID"] != j.ID || tags["DIGITAL_SOURCE_TYPE"] == "" {
		t.Errorf("the file lost its mark with records off: tags %v", tags)
	}
	if r := tg.Do("GET", "/v1/provenance/"+j.ID, "globex", nil); r.Status != 404 {
		t.Errorf("a record of the job with records off: %d %s", r.Status, r.Body)
	}
}

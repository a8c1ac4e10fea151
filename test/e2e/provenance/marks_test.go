package provenance

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

// config is the speech test config with a third organization that turned
// marking off, and the fingerprint index on.
var config = strings.Replace(harness.SpeechConfig, "orgs:\n  acme:\n", `provenance:
  fingerprints: true
orgs:
  initech:
    provenance: {mark: false, consent: optional}
    providers:
      espeak: {enabled: true}
      testkit: {enabled: true}
  acme:
    aliases:
      voices:
        narrator: {model: espeak/espeak-ng, voice: en}
`, 1)

// probeTags returns the tags ffprobe reads from data (format and stream
// tags, names upper-cased).
func probeTags(t *testing.T, data []byte, ext string) map[string]string {
	t.Helper()
	ffprobe := testenv.NeedTool(t, "ffprobe")
	path := filepath.Join(t.TempDir(), "clip."+ext)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(ffprobe, "-v", "error", "-show_format", "-show_streams", "-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	var p struct {
		Format  struct{ Tags map[string]string }   `json:"format"`
		Streams []struct{ Tags map[string]string } `json:"streams"`
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
	return tags
}

// signed is GET /v1/provenance/{id}'s data.
type signed struct {
	Record       map[string]any `json:"record"`
	RecordBase64 string         `json:"record_base64"`
	Algorithm    string         `json:"algorithm"`
	KeyID        string         `json:"key_id"`
	Signature    string         `json:"signature"`
}

// keyOf returns the gateway's signing key.
func keyOf(t *testing.T, tg *harness.Gateway, org string) (raw ed25519.PublicKey, pemText, id string) {
	t.Helper()
	r := tg.Do("GET", "/v1/provenance/keys", org, nil)
	var keys struct {
		Data []struct {
			KeyID        string `json:"key_id"`
			Algorithm    string `json:"algorithm"`
			PublicKey    string `json:"public_key"`
			PublicKeyPEM string `json:"public_key_pem"`
		}
	}
	if r.Status != 200 || json.Unmarshal(r.Body, &keys) != nil || len(keys.Data) != 1 {
		t.Fatalf("keys: %d %s", r.Status, r.Body)
	}
	k := keys.Data[0]
	b, err := base64.StdEncoding.DecodeString(k.PublicKey)
	if err != nil || len(b) != ed25519.PublicKeySize || k.Algorithm != "Ed25519" {
		t.Fatalf("key %+v", k)
	}
	return b, k.PublicKeyPEM, k.KeyID
}

// recordOf fetches request id's signed record and checks its signature.
func recordOf(t *testing.T, tg *harness.Gateway, org, id string) signed {
	t.Helper()
	var rec struct{ Data signed }
	harness.WaitFor(t, "the provenance record", func() bool {
		tg.FlushLogs()
		r := tg.Do("GET", "/v1/provenance/"+id, org, nil)
		return r.Status == 200 && json.Unmarshal(r.Body, &rec) == nil
	})
	pub, _, keyID := keyOf(t, tg, org)
	msg, _ := base64.StdEncoding.DecodeString(rec.Data.RecordBase64)
	sig, _ := base64.StdEncoding.DecodeString(rec.Data.Signature)
	if !ed25519.Verify(pub, msg, sig) || rec.Data.KeyID != keyID || rec.Data.Algorithm != "Ed25519" {
		t.Fatalf("record %s: signature does not verify: %+v", id, rec.Data)
	}
	return rec.Data
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestEveryClipIsMarkedAndSigned asks a clip in each format and checks
// the mark with ffprobe, and the signed record: its hash is the body's,
// it names the request, provider and model, and only the organization
// that made it can read it.
func TestEveryClipIsMarkedAndSigned(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, config)
	text := "Every clip says it is synthetic."
	for _, tc := range []struct {
		format, ext, how string
		marked           bool
	}{
		{"mp3", "mp3", "id3v2", true},
		{"wav", "wav", "riff-info+ixml", true},
		{"opus", "opus", "vorbis-comment", true},
		{"flac", "flac", "vorbis-comment", true},
		{"pcm", "", "none; raw audio cannot carry a mark", false},
		{"ulaw", "", "none; raw audio cannot carry a mark", false},
	} {
		t.Run(tc.format, func(t *testing.T) {
			r := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text, "output", map[string]any{"format": tc.format}))
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if got := r.Header.Get("X-Voxgate-Mark"); got != tc.how {
				t.Errorf("X-Voxgate-Mark = %q, want %q", got, tc.how)
			}
			id := r.Header.Get("X-Request-Id")
			if tc.marked {
				tags := probeTags(t, r.Body, tc.ext)
				if tc.format == "wav" {
					if !strings.Contains(tags["COMMENT"], "trainedAlgorithmicMedia") || !strings.Contains(tags["COMMENT"], id) {
						t.Errorf("WAV comment %q", tags["COMMENT"])
					}
				} else {
					for k, v := range map[string]string{
						"DIGITAL_SOURCE_TYPE": "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia",
						"VOXGATE_REQUEST_ID":  id, "VOXGATE_PROVIDER": "espeak", "VOXGATE_MODEL": "espeak-ng",
						"C2PA_ACTION": "c2pa.created", "AI_GENERATED": "true",
					} {
						if tags[k] != v {
							t.Errorf("ffprobe tag %s = %q, want %q (%v)", k, tags[k], v, tags)
						}
					}
				}
			}
			rec := recordOf(t, tg, "acme", id)
			for k, v := range map[string]any{"request_id": id, "org": "acme", "provider": "espeak", "model": "espeak-ng",
				"sha256": sha(r.Body), "bytes": float64(len(r.Body)), "complete": true, "marked": tc.how,
				"digital_source_type": "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia"} {
				if rec.Record[k] != v {
					t.Errorf("record %s = %v, want %v", k, rec.Record[k], v)
				}
			}
			if (rec.Record["mark"] != nil) != tc.marked {
				t.Errorf("record mark %v", rec.Record["mark"])
			}
			// Another organization's request is not found.
			tg.Do("GET", "/v1/provenance/"+id, "globex", nil).Problem(t, 404, "not_found")
		})
	}
	tg.Do("GET", "/v1/provenance/no-such-request", "acme", nil).Problem(t, 404, "not_found")
}

// TestSignatureVerifiesWithOpenSSL checks a record the way
// docs/provenance.md tells a third party to: openssl pkeyutl with the
// published PEM key over the record's exact bytes.
func TestSignatureVerifiesWithOpenSSL(t *testing.T) {
	t.Parallel()
	openssl := testenv.NeedTool(t, "openssl")
	tg := harness.Start(t, config)
	r := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody("Check me with openssl.", "output", map[string]any{"format": "mp3"}))
	rec := recordOf(t, tg, "acme", r.Header.Get("X-Request-Id"))
	_, pemText, _ := keyOf(t, tg, "acme")
	dir := t.TempDir()
	msg, _ := base64.StdEncoding.DecodeString(rec.RecordBase64)
	sig, _ := base64.StdEncoding.DecodeString(rec.Signature)
	files := map[string][]byte{"key.pem": []byte(pemText), "record.json": msg, "record.sig": sig, "forged.json": append([]byte(nil), msg...)}
	files["forged.json"][len(msg)/2] ^= 1
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	verify := func(in string) ([]byte, error) {
		cmd := exec.Command(openssl, "pkeyutl", "-verify", "-pubin", "-inkey", "key.pem", "-rawin", "-in", in, "-sigfile", "record.sig")
		cmd.Dir = dir
		return cmd.CombinedOutput()
	}
	if out, err := verify("record.json"); err != nil || !strings.Contains(string(out), "Signature Verified Successfully") {
		t.Fatalf("openssl: %v %s", err, out)
	}
	if out, err := verify("forged.json"); err == nil {
		t.Fatalf("openssl verified a changed record: %s", out)
	}
}

// TestStreamsAreMarkedAndHashed streams mp3 (an ID3 tag goes first) and
// checks the record made when the stream ended hashes the bytes sent.
func TestStreamsAreMarkedAndHashed(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, config)
	for _, tc := range []struct{ format, ext string }{{"mp3_22050_32", "mp3"}, {"opus_48000_64", "opus"}, {"wav_22050", "wav"}} {
		t.Run(tc.format, func(t *testing.T) {
			r := tg.Do("POST", "/elevenlabs/v1/text-to-speech/narrator/stream?output_format="+tc.format, "acme", map[string]any{"text": "A stream is marked at its start, hashed as it is written, and fingerprinted at its end."})
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			id := r.Header.Get("X-Request-Id")
			how := r.Header.Get("X-Voxgate-Mark")
			tags := probeTags(t, r.Body, tc.ext)
			if tc.ext != "wav" && tags["VOXGATE_REQUEST_ID"] != id {
				t.Errorf("mark %q: tags %v", how, tags)
			}
			if tc.ext == "wav" && !strings.Contains(tags["COMMENT"], id) {
				t.Errorf("mark %q: tags %v", how, tags)
			}
			rec := recordOf(t, tg, "acme", id)
			if rec.Record["sha256"] != sha(r.Body) || rec.Record["complete"] != true || rec.Record["marked"] != how {
				t.Errorf("record %v; body sha %s", rec.Record, sha(r.Body))
			}
			// The stream was fingerprinted when it ended.
			ct := r.Header.Get("Content-Type")
			harness.WaitFor(t, "the stream indexed", func() bool {
				got := identify(t, tg, "acme", r.Body, ct, false)
				return len(got.Data) > 0 && got.Data[0].Record["request_id"] == id
			})
		})
	}
}

// TestMarkingOff checks an organization that turned marking off gets its
// audio unmarked, says so, and still has a signed record.
func TestMarkingOff(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, config)
	r := tg.Do("POST", "/v1/audio/speech", "initech", harness.SpeechBody("Not marked.", "output", map[string]any{"format": "mp3"}))
	if r.Status != 200 || r.Header.Get("X-Voxgate-Mark") != "off; turned off for this organization" {
		t.Fatalf("%d %q", r.Status, r.Header.Get("X-Voxgate-Mark"))
	}
	if tags := probeTags(t, r.Body, "mp3"); tags["VOXGATE_REQUEST_ID"] != "" {
		t.Errorf("marked anyway: %v", tags)
	}
	rec := recordOf(t, tg, "initech", r.Header.Get("X-Request-Id"))
	if rec.Record["mark"] != nil || rec.Record["sha256"] != sha(r.Body) {
		t.Errorf("record %v", rec.Record)
	}
}

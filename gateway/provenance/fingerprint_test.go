package provenance

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/voxgate/voxgate/gateway/audio"
)

// speech renders text with espeak-ng as WAV.
func speech(t *testing.T, text string) string {
	t.Helper()
	if _, err := exec.LookPath("espeak-ng"); err != nil {
		t.Skip("espeak-ng not installed (make deps installs it)")
	}
	out := filepath.Join(t.TempDir(), "speech.wav")
	if b, err := exec.Command("espeak-ng", "-w", out, text).CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng: %v %s", err, b)
	}
	return out
}

// reencode runs ffmpeg on in with args and returns the output's bytes.
func reencode(t *testing.T, in, ext string, args ...string) []byte {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	out := filepath.Join(t.TempDir(), "out."+ext)
	cmd := append([]string{"-v", "error", "-i", in}, args...)
	if b, err := exec.Command("ffmpeg", append(cmd, out)...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v %s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFingerprintSurvivesReencoding fingerprints eSpeak speech, then the
// same speech re-encoded by ffmpeg (Opus at 24 kbit/s, MP3 at another
// rate, both trimmed by 0.5 s; FLAC, as it is and at 48 kHz in stereo,
// trimmed): they score above MatchThreshold and share
// index keys; other speech scores below it.
func TestFingerprintSurvivesReencoding(t *testing.T) {
	orig := speech(t, "The quick brown fox jumps over the lazy dog, and then it runs far away into the forest.")
	other := speech(t, "Seven silver swans swam silently seaward under a pale and distant winter moon.")
	data, _ := os.ReadFile(orig)
	ref, err := FingerprintAudio(data, "audio/wav")
	if err != nil {
		t.Fatal(err)
	}
	otherData, _ := os.ReadFile(other)
	unrelated, err := FingerprintAudio(otherData, "audio/wav")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, ext, mediaType string
		args                 []string
	}{
		{"opus 24k trimmed", "opus", "audio/ogg", []string{"-ss", "0.5", "-c:a", "libopus", "-b:a", "24k"}},
		{"mp3 16k trimmed", "mp3", "audio/mpeg", []string{"-ss", "0.5", "-ar", "16000", "-c:a", "libmp3lame", "-b:a", "48k"}},
		{"flac", "flac", "audio/flac", []string{"-c:a", "flac"}},
		{"flac 48k stereo 24-bit trimmed", "flac", "audio/flac", []string{"-ss", "0.5", "-ar", "48000", "-ac", "2", "-sample_fmt", "s32", "-c:a", "flac"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fp, err := FingerprintAudio(reencode(t, orig, tc.ext, tc.args...), tc.mediaType)
			if err != nil {
				t.Fatal(err)
			}
			s := Score(ref, fp)
			u := Score(unrelated, fp)
			t.Logf("score %.3f, unrelated %.3f, %d items", s, u, len(fp))
			if s < MatchThreshold || u >= MatchThreshold {
				t.Errorf("score %.3f (unrelated %.3f), threshold %.2f", s, u, MatchThreshold)
			}
			shared := 0
			rk := Keys(ref)
			for _, k := range Keys(fp) {
				if _, ok := slicesIndex(rk, k); ok {
					shared++
				}
			}
			if shared < 2 {
				t.Errorf("only %d shared index keys", shared)
			}
		})
	}
}

func slicesIndex(s []uint32, v uint32) (int, bool) {
	for i, x := range s {
		if x == v {
			return i, true
		}
	}
	return 0, false
}

// TestMP3DecoderAgreesWithFFmpeg fingerprints a 22050 Hz MP3 (MPEG-2, as
// the gateway encodes eSpeak's audio) decoded by libmpg123 and the same
// MP3 decoded by ffmpeg: they must agree as the same audio does.
func TestMP3DecoderAgreesWithFFmpeg(t *testing.T) {
	orig := speech(t, "The quick brown fox jumps over the lazy dog, and then it runs far away into the forest.")
	dir := t.TempDir()
	mp3 := filepath.Join(dir, "a.mp3")
	if err := os.WriteFile(mp3, reencode(t, orig, "mp3", "-ar", "22050", "-c:a", "libmp3lame", "-b:a", "32k"), 0o600); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(mp3)
	ours, err := FingerprintAudio(data, "audio/mpeg")
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := FingerprintAudio(reencode(t, mp3, "wav"), "audio/wav")
	if err != nil {
		t.Fatal(err)
	}
	if s := Score(ours, theirs); s < 0.9 {
		t.Errorf("libmpg123 and ffmpeg decodes score %.3f", s)
	}
}

// TestCorruptFLAC: bytes that start like FLAC but are not are refused as
// corrupt audio (identify answers 400), without a crash.
func TestCorruptFLAC(t *testing.T) {
	for _, data := range [][]byte{[]byte("fLaC"), append([]byte("fLaC\x00\x00\x00\x22"), make([]byte, 200)...), []byte("fLaC not flac at all, just text")} {
		if _, err := FingerprintAudio(data, "audio/flac"); !errors.Is(err, audio.ErrCorrupt) {
			t.Errorf("FingerprintAudio(%q) = %v, want ErrCorrupt", data[:min(len(data), 12)], err)
		}
	}
}
